"""EFS against S3 weight loading: the documented limits, and when each wins."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_inference.contracts import aws_limits
from ecs_inference.sizing import weights as ws


def test_network_bound_instances_tie_and_keep_s3():
    # 10 Gbps = 1192 MiB/s, below both the streamer (16 x 80) and EFS's 1,500 per client
    result = ws.compare(140, engine_streams_from_s3=True, instance_network_gbps=10)
    assert result.s3.bottleneck == result.efs.bottleneck == "instance network"
    assert result.s3.seconds == pytest.approx(result.efs.seconds)
    assert result.faster is result.s3
    assert result.s3.seconds == pytest.approx(140 * 1024 / (10e9 / 8 / 2**20))


def test_efs_per_client_limit_binds_fast_instances():
    estimate = ws.load_estimate("efs", 64, instance_network_gbps=100)
    assert estimate.mib_per_second == aws_limits.EFS_ELASTIC_CLIENT_READ_MIBPS
    assert "per-client" in estimate.bottleneck
    assert estimate.seconds == pytest.approx(64 * 1024 / 1500)


def test_s3_streaming_wins_once_its_parallelism_passes_efs_per_client_limit():
    slow = ws.compare(64, engine_streams_from_s3=True, instance_network_gbps=100)
    assert slow.faster is slow.efs  # 16 x 80 MiB/s < 1,500 MiB/s
    fast = ws.compare(
        64, engine_streams_from_s3=True, instance_network_gbps=100, s3_connection_mib_per_second=120
    )
    assert fast.faster is fast.s3  # 16 x 120 = 1,920 MiB/s
    assert fast.s3.mib_per_second == pytest.approx(1920)


def test_staging_engines_pay_two_passes_so_efs_wins():
    result = ws.compare(16, engine_streams_from_s3=False, instance_network_gbps=25)
    assert result.s3.source == "s3-stage"
    assert result.faster is result.efs
    staged = 16 * 1024 / 1000 * 2  # write at 1,000 MiB/s (gp3 setting), read back at 1,000
    assert result.s3.seconds == pytest.approx(staged)


def test_concurrent_starts_share_the_file_system():
    one = ws.load_estimate("efs", 100, instance_network_gbps=400, concurrent_tasks=1)
    many = ws.load_estimate("efs", 100, instance_network_gbps=400, concurrent_tasks=40)
    assert many.mib_per_second == pytest.approx(20 * 1024 / 40)
    assert "shared by 40" in many.bottleneck
    assert many.seconds > one.seconds


def test_provisioned_efs_reads_at_three_times_the_provisioned_rate():
    estimate = ws.load_estimate(
        "efs",
        10,
        instance_network_gbps=100,
        efs_throughput_mode="provisioned",
        efs_provisioned_mib_per_second=100,
        concurrent_tasks=2,
    )
    assert estimate.mib_per_second == pytest.approx(150)  # 3 x 100 shared by 2
    with pytest.raises(ws.WeightStoreError, match="needs its MiB/s"):
        ws.load_estimate("efs", 10, instance_network_gbps=10, efs_throughput_mode="provisioned")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights_gib": 0}, "weights_gib must be a positive number"),
        ({"instance_network_gbps": -1}, "instance_network_gbps"),
        ({"concurrent_tasks": 1.5}, "concurrent_tasks must be a whole number"),
        ({"concurrent_tasks": True}, "concurrent_tasks must be a whole number"),
    ],
)
def test_bad_inputs_name_themselves(kwargs, message):
    args = {"weights_gib": 10, "instance_network_gbps": 10} | kwargs
    with pytest.raises(ws.WeightStoreError, match=message):
        ws.load_estimate("s3-stream", **args)


@settings(max_examples=200, deadline=None)
@given(
    weights=st.floats(0.1, 2000),
    network=st.floats(1, 3200),
    tasks=st.integers(1, 13),
    stream=st.booleans(),
)
def test_properties_over_the_input_space(weights, network, tasks, stream):
    result = ws.compare(
        weights,
        engine_streams_from_s3=stream,
        instance_network_gbps=network,
        concurrent_tasks=tasks,
    )
    for estimate in (result.s3, result.efs):
        # time is size over rate, and no path beats the instance's network
        assert estimate.seconds == pytest.approx(weights * 1024 / estimate.mib_per_second)
        assert estimate.mib_per_second <= network * ws.MIB_PER_SECOND_PER_GBPS + 1e-6
    assert result.faster.seconds <= min(result.s3.seconds, result.efs.seconds)
    if not stream:
        # up to 13 tasks EFS Elastic is never slower than staging on the default root volume
        assert result.faster is result.efs
    more = ws.compare(
        weights,
        engine_streams_from_s3=stream,
        instance_network_gbps=network,
        concurrent_tasks=tasks + 50,
    )
    assert more.efs.seconds >= result.efs.seconds
    assert more.s3.seconds >= result.s3.seconds
