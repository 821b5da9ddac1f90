"""Queue workers: visibility timeout, queue attributes, and backlog-per-task scaling.

The policies are checked twice: as requests AWS accepts (botocore's models for PutScalingPolicy,
PutMetricAlarm, CreateQueue, SetQueueAttributes, RegisterScalableTarget) and by what they do on
backlog tables (0, 1, a burst, a drain), evaluated with AWS's documented step and target
tracking rules over the generated values.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ecs_inference.contracts.aws_limits import SQS_VISIBILITY_TIMEOUT_MAX, STEP_ADJUSTMENTS_MAX
from ecs_inference.workers.decisions import WorkerScalingError, backlog_target, visibility_timeout
from ecs_inference.workers.input import WorkerConfig
from ecs_inference.workers.queues import queue_attribute_problems, queue_attributes
from ecs_inference.workers.scaling import (
    FROM_ZERO_THRESHOLD,
    TO_ZERO_THRESHOLD,
    WorkerScaling,
    desired_count,
    from_zero_steps,
    step_capacity,
)
from tests.aws_shapes import validate_shape

PATH = "platform.workers.summarise.maxJobSeconds"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/summarise:1.0"
QUEUE_ARN = "arn:aws:sqs:eu-west-1:111122223333:inference-summarise"
DLQ_ARN = "arn:aws:sqs:eu-west-1:111122223333:inference-summarise-dlq"
POLICY_ARN = (
    "arn:aws:autoscaling:eu-west-1:111122223333:scalingPolicy:0f3c-1a2b:resource/ecs/"
    "service/inference/summarise:policyName/summarise-from-zero"
)


def scaling(target: float = 10.0, min_count: int = 0, max_count: int = 8) -> WorkerScaling:
    worker = WorkerConfig(
        image=IMAGE,
        max_job_seconds=900,
        job_seconds=30,
        acceptable_latency_seconds=300,
        desired_count=min_count,
        min_count=min_count,
        max_count=max_count,
    )
    return WorkerScaling("inference-summarise", "inference", "summarise", target, worker)


# --------------------------------------------------------------------------------------------
# visibility timeout and queue attributes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "expected"),
    [(1, 31), (30, 60), (300, 330), (600, 660), (3600, 3960), (39272, 43200)],
)
def test_visibility_timeout_covers_the_longest_job_with_margin(job, expected):
    vt = visibility_timeout(job, path=PATH)
    assert vt.seconds == expected
    assert vt.seconds - vt.job_seconds >= 30
    assert str(job) in vt.summary()


@pytest.mark.parametrize("job", [39273, 43200, 86400])
def test_jobs_beyond_the_sqs_visibility_limit_fail_with_the_config_path(job):
    with pytest.raises(WorkerScalingError) as err:
        visibility_timeout(job, path=PATH)
    assert err.value.issue.path == PATH
    assert "43200 s (12 h)" in err.value.issue.message
    assert "39272 s" in err.value.issue.message  # what would fit


def test_non_positive_job_time_is_refused():
    with pytest.raises(WorkerScalingError):
        visibility_timeout(0, path=PATH)


@given(st.integers(1, 60_000))
def test_visibility_timeout_is_within_sqs_or_refused(job):
    try:
        vt = visibility_timeout(job, path=PATH)
    except WorkerScalingError:
        assert job + max(30, math.ceil(job * 0.1)) > SQS_VISIBILITY_TIMEOUT_MAX
    else:
        assert job < vt.seconds <= SQS_VISIBILITY_TIMEOUT_MAX


def test_queue_and_dlq_attributes_are_requests_sqs_accepts():
    vt = visibility_timeout(900, path=PATH)
    dlq = queue_attributes(visibility_timeout_seconds=vt.seconds, retention_seconds=1_209_600)
    main = queue_attributes(visibility_timeout_seconds=vt.seconds, dead_letter_arn=DLQ_ARN)
    for name, attrs in (("inference-summarise-dlq", dlq), ("inference-summarise", main)):
        validate_shape("sqs", "CreateQueue", {"QueueName": name, "Attributes": attrs})
        validate_shape("sqs", "SetQueueAttributes", {"QueueUrl": "u", "Attributes": attrs})
    assert main["SqsManagedSseEnabled"] == "true"
    assert json.loads(main["RedrivePolicy"]) == {
        "deadLetterTargetArn": DLQ_ARN,
        "maxReceiveCount": 3,
    }
    assert main["VisibilityTimeout"] == "990"
    kms = queue_attributes(visibility_timeout_seconds=30, kms_key_id="alias/queues")
    assert kms["KmsMasterKeyId"] == "alias/queues" and "SqsManagedSseEnabled" not in kms


@pytest.mark.parametrize(
    "kwargs",
    [
        {"visibility_timeout_seconds": 43201},
        {"visibility_timeout_seconds": 30, "retention_seconds": 59},
        {"visibility_timeout_seconds": 30, "retention_seconds": 1_209_601},
        {"visibility_timeout_seconds": 30, "receive_wait_seconds": 21},
        {"visibility_timeout_seconds": 30, "dead_letter_arn": DLQ_ARN, "max_receive_count": 0},
        {"visibility_timeout_seconds": 30, "max_receive_count": 1001},
    ],
)
def test_queue_attributes_outside_sqs_ranges_are_refused(kwargs):
    kwargs.pop("dead_letter_arn", None)
    assert len(queue_attribute_problems(**kwargs)) == 1
    assert queue_attribute_problems(visibility_timeout_seconds=30) == []


# --------------------------------------------------------------------------------------------
# target and requests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latency", "job", "concurrency", "target"),
    [(300, 30, 1, 10.0), (60, 120, 1, 0.5), (300, 30, 4, 40.0), (10, 10, 1, 1.0)],
)
def test_backlog_target_is_latency_over_job_time(latency, job, concurrency, target):
    assert backlog_target(latency, job, concurrency, path="p") == pytest.approx(target)


@pytest.mark.parametrize(("latency", "job", "concurrency"), [(0, 1, 1), (1, 0, 1), (1, 1, 0)])
def test_backlog_target_refuses_non_positive_inputs(latency, job, concurrency):
    with pytest.raises(WorkerScalingError) as err:
        backlog_target(latency, job, concurrency, path="platform.workers.w.acceptableLatency")
    assert err.value.issue.path == "platform.workers.w.acceptableLatency"


def _policy_request(name: str, policy_type: str, key: str, config: dict) -> dict:
    return {
        "PolicyName": name,
        "ServiceNamespace": "ecs",
        "ResourceId": "service/inference/summarise",
        "ScalableDimension": "ecs:service:DesiredCount",
        "PolicyType": policy_type,
        key: config,
    }


@pytest.mark.parametrize("max_count", [1, 3, 20, 21, 50, 500])
def test_policies_and_alarms_are_requests_aws_accepts(max_count):
    s = scaling(target=7.5, max_count=max_count)
    validate_shape(
        "application-autoscaling",
        "RegisterScalableTarget",
        {
            "ServiceNamespace": "ecs",
            "ResourceId": "service/inference/summarise",
            "ScalableDimension": "ecs:service:DesiredCount",
            "MinCapacity": s.worker.min_count,
            "MaxCapacity": s.worker.max_count,
        },
    )
    validate_shape(
        "application-autoscaling",
        "PutScalingPolicy",
        _policy_request(
            "summarise-backlog",
            "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration",
            s.target_tracking_configuration(),
        ),
    )
    for name, config in (
        ("summarise-from-zero", s.from_zero_policy_configuration()),
        ("summarise-to-zero", s.to_zero_policy_configuration()),
    ):
        validate_shape(
            "application-autoscaling",
            "PutScalingPolicy",
            _policy_request(name, "StepScaling", "StepScalingPolicyConfiguration", config),
        )
    validate_shape("cloudwatch", "PutMetricAlarm", s.from_zero_alarm("a-from-zero", POLICY_ARN))
    validate_shape("cloudwatch", "PutMetricAlarm", s.to_zero_alarm("a-to-zero", POLICY_ARN))
    assert len(s.from_zero_policy_configuration()["StepAdjustments"]) <= STEP_ADJUSTMENTS_MAX


def test_target_tracking_is_the_aws_documented_backlog_per_task_metric_math():
    config = scaling(target=12).target_tracking_configuration()
    queries = {q["Id"]: q for q in config["CustomizedMetricSpecification"]["Metrics"]}
    assert queries["backlog_per_task"]["Expression"] == "visible / running"
    assert [q["Id"] for q in queries.values() if q["ReturnData"]] == ["backlog_per_task"]
    visible = queries["visible"]["MetricStat"]["Metric"]
    assert (visible["Namespace"], visible["MetricName"]) == (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
    )
    assert visible["Dimensions"] == [{"Name": "QueueName", "Value": "inference-summarise"}]
    running = queries["running"]["MetricStat"]["Metric"]
    assert (running["Namespace"], running["MetricName"]) == (
        "ECS/ContainerInsights",
        "RunningTaskCount",
    )
    assert config["TargetValue"] == 12.0 and config["DisableScaleIn"] is False


def test_from_zero_alarm_only_sees_work_while_no_task_runs():
    alarm = scaling().from_zero_alarm("a", POLICY_ARN)
    (signal,) = [q for q in alarm["Metrics"] if q["ReturnData"]]
    assert signal["Expression"] == "IF(FILL(running, 0) < 1, visible, 0)"
    assert alarm["Threshold"] == FROM_ZERO_THRESHOLD
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    idle = scaling().to_zero_alarm("b", POLICY_ARN)
    (signal,) = [q for q in idle["Metrics"] if q["ReturnData"]]
    assert signal["Expression"] == "visible + in_flight"  # in-flight jobs keep the tasks
    assert idle["EvaluationPeriods"] == idle["DatapointsToAlarm"] == 15


def test_step_intervals_follow_aws_bounds_on_both_sides_of_the_threshold():
    to_zero = scaling().to_zero_policy_configuration()["StepAdjustments"]
    assert step_capacity(to_zero, TO_ZERO_THRESHOLD, 0) == 0
    assert step_capacity(to_zero, TO_ZERO_THRESHOLD, 1) is None
    steps = [
        {"MetricIntervalLowerBound": 0.0, "MetricIntervalUpperBound": 5.0, "ScalingAdjustment": 1},
        {"MetricIntervalLowerBound": 5.0, "ScalingAdjustment": 2},
    ]
    assert step_capacity(steps, 1.0, 1) == 1
    assert step_capacity(steps, 1.0, 5.99) == 1
    assert step_capacity(steps, 1.0, 6) == 2
    assert step_capacity(steps, 1.0, 0) is None


@settings(max_examples=200)
@given(st.floats(0.05, 500, allow_nan=False), st.integers(1, 300))
@example(1.9999999999999432, 2)  # a float target just below a whole number of messages
def test_from_zero_steps_are_contiguous_bounded_and_give_enough_tasks(target, max_count):
    steps = from_zero_steps(target, max_count)
    assert 1 <= len(steps) <= STEP_ADJUSTMENTS_MAX
    assert steps[0].lower == 0 and steps[-1].upper is None and steps[-1].capacity == max_count
    for before, after in itertools.pairwise(steps):
        assert before.upper == after.lower and before.capacity < after.capacity
    api = [s.api() for s in steps]
    previous = 0
    for visible in [*range(1, 60), 99, 100, 101, 1000, 10**6]:
        capacity = step_capacity(api, FROM_ZERO_THRESHOLD, visible)
        assert capacity is not None
        needed = min(max_count, math.ceil(visible / target - 1e-9))
        assert capacity >= needed  # never too few for the backlog
        assert capacity >= previous  # more work never gets fewer tasks
        previous = capacity
        if max_count <= STEP_ADJUSTMENTS_MAX:
            assert capacity == needed  # exact where the quota allows


# --------------------------------------------------------------------------------------------
# backlog tables
# --------------------------------------------------------------------------------------------


def run_table(s: WorkerScaling, minutes: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """Feed (visible, in flight) per minute; returns (running, desired, policy) per minute.

    The next minute runs what was decided, except that tasks still holding a message stay
    (ECS task scale-in protection, which the worker sets while it works on a job).
    """
    running, desired, idle, out = 0, 0, 0, []
    for visible, in_flight in minutes:
        running = max(desired, min(running, in_flight))
        idle = idle + 1 if visible + in_flight == 0 else 0
        decision = desired_count(
            s, visible=visible, in_flight=in_flight, running=running, idle_for_minutes=idle
        )
        desired = decision.count
        out.append((running, desired, decision.reason))
    return out


def test_table_empty_queue_stays_at_zero():
    assert [d for _, d, _ in run_table(scaling(), [(0, 0)] * 5)] == [0] * 5


def test_table_one_message_starts_one_task_that_finishes_its_job_then_zero():
    table = [(1, 0), (0, 1), (0, 1), (0, 0), (0, 0)]
    result = run_table(scaling(), table)
    assert result[0] == (0, 1, "scale out from zero (step)")
    # The job runs to its end on the protected task although nothing waits any more.
    assert [r for r, _, _ in result] == [0, 1, 1, 0, 0]
    assert [d for _, d, _ in result[1:]] == [0, 0, 0, 0]


def test_idle_step_brings_a_lingering_service_to_zero_only_when_nothing_is_in_flight():
    s = scaling()
    assert desired_count(s, visible=0, in_flight=0, running=2, idle_for_minutes=15) == (
        desired_count(s, visible=0, in_flight=0, running=5, idle_for_minutes=20)
    )
    d = desired_count(s, visible=0, in_flight=0, running=2, idle_for_minutes=15)
    assert (d.count, d.reason) == (0, "queue empty for 15 min (step)")
    busy = desired_count(s, visible=0, in_flight=1, running=2, idle_for_minutes=15)
    assert busy.reason == "target tracking"


def test_table_burst_from_zero_jumps_to_capacity_then_tracks():
    s = scaling(target=10, max_count=8)
    result = run_table(s, [(45, 0), (30, 5), (200, 3)])
    assert result == [
        (0, 5, "scale out from zero (step)"),  # ceil(45 / 10)
        (5, 3, "target tracking"),  # 30 waiting / 10 per task
        (3, 8, "target tracking"),  # 20 needed, capped at max
    ]


def test_table_burst_beyond_the_exact_steps_rounds_up():
    s = scaling(target=10, max_count=50)
    (_, count, reason), *_ = run_table(s, [(150, 0)])
    assert reason == "scale out from zero (step)"
    assert 15 <= count <= 18  # 15 needed; coarse band above 10 tasks rounds up


def test_table_drain_scales_in_with_the_backlog_and_ends_at_zero():
    s = scaling(target=10, max_count=8)
    drain = [(80, 0), (60, 8), (40, 8), (20, 6), (5, 4), (0, 2), (0, 0)]
    result = run_table(s, drain)
    desired = [d for _, d, _ in result]
    assert desired == [8, 6, 4, 2, 1, 0, 0]
    # Tasks still holding a message finish it before they stop: running trails desired by the
    # jobs in flight (8 busy tasks stay when 6 are desired, 2 when 0 are).
    assert [r for r, _, _ in result] == [0, 8, 8, 6, 4, 2, 0]


def test_min_count_above_zero_never_scales_to_zero():
    s = scaling(min_count=1)
    assert [d for _, d, _ in run_table(s, [(0, 0)] * 20)] == [1] * 20
    assert not s.scales_to_zero
    assert desired_count(s, visible=0, in_flight=0, running=1, idle_for_minutes=60).count == 1


@settings(max_examples=200)
@given(
    st.integers(0, 10_000),
    st.integers(0, 1_000),
    st.integers(0, 60),
    st.floats(0.1, 100),
    st.integers(1, 100),
)
def test_desired_count_stays_within_bounds_and_zero_only_without_waiting_work(
    visible, in_flight, running, target, max_count
):
    s = scaling(target=target, max_count=max_count)
    d = desired_count(s, visible=visible, in_flight=in_flight, running=running)
    assert 0 <= d.count <= max_count
    if visible >= 1:
        assert d.count >= 1  # waiting work always has a task
