"""What AWS services and the instances do with the stack's roles and resource policies.

- Every role is assumable by the service that uses it (the trust policy, evaluated for that
  service principal: `ecs-tasks` for task and execution roles, `ec2` for instance roles, `ecs`
  for the Managed Instances infrastructure role).
- A container instance, with its instance profile's role: the ECS agent registers and polls
  (`RegisterContainerInstance` on the cluster its `ECS_CLUSTER` names, `DiscoverPollEndpoint`,
  `Poll`, `SubmitTaskStateChange`), and what the user data runs calls AWS: `aws ecr
  get-login-password` and `docker pull` from ECR, `aws autoscaling ...` on its own group, the
  CloudWatch agent's `PutMetricData` in its configured namespace and its log streams.
- ECS, with a Managed Instances provider's infrastructure role, passes the instance role to EC2
  (`iam:PassRole` with `iam:PassedToService`).
- Elastic Load Balancing delivers access logs into the bucket (`s3:PutObject` under
  `<prefix>/AWSLogs/<account>/`, from the Region's ELB account or the log-delivery service
  principal) and refuses a bucket encrypted with anything but SSE-S3.
- CloudWatch alarms and EventBridge rules publish to their SNS topics (and EventBridge sends to
  SQS queues) through the topic's (queue's) policy, and through the key policy of an encrypted
  topic.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

from ecs_inference.endpoint.service import ELB_LOG_DELIVERY_ACCOUNTS, ELB_LOG_DELIVERY_SERVICE
from tools.aws_requests import Resource
from tools.rehearsal.calls import TASK_ID, Call, Refusal, Unverified, session_arn
from tools.rehearsal.deployments import ecs_roles
from tools.rehearsal.model import (
    CLUSTER,
    ROLE,
    TASK_DEFINITION,
    Role,
    StackModel,
    document,
    known,
    listify,
)
from tools.rehearsal.registry import ecr_repository
from tools.rehearsal.secrets import kms_key
from tools.rehearsal.tasks import LAUNCH_TEMPLATE, launch_template_of
from tools.rehearsal.userdata import Boots

Check = Call | Unverified | Refusal
ASG = "aws:autoscaling/group:Group"
INSTANCE_ID = "i-0123456789abcdef0"
CONTAINER_INSTANCE = "0123456789abcdef0123456789abcdef"
CW_AGENT_CONFIG_DIR = "/opt/aws/amazon-cloudwatch-agent/etc/"
_CLUSTER_SETTING = re.compile(r"^ECS_CLUSTER=(\S+)$", re.M)


def _trusts(
    model: StackModel, role: Role, service: str, subject: Resource, source: str | None
) -> Check:
    if role.trust is None or not known(role.trust) or role.arn is None:
        return Unverified(subject, f"role {role.label}", "trust policy unknown at preview")
    context = {"aws:SourceAccount": model.account_id}
    if source is not None:
        context["aws:SourceArn"] = source
    return Call(
        subject,
        f"role {role.label}",
        service,
        "sts:AssumeRole",
        role.arn,
        f"let {service} use the role",
        resource_policy=role.trust,
        context=context,
        account_id=model.account_id,
    )


def trust_checks(model: StackModel) -> Iterator[Check]:
    """Each role the stack hands to a service can be assumed by that service (ECS tasks assume
    theirs for a task, whose ARN is the request's aws:SourceArn)."""
    task_arn = model.arn("ecs", f"task/default/{TASK_ID}")
    used: dict[tuple[str, str | None], tuple[Role, Resource, str | None]] = {}
    for task in model.of(TASK_DEFINITION):
        for key in ("executionRoleArn", "taskRoleArn"):
            role = model.role(task.inputs.get(key))
            if role is not None:
                used.setdefault(("ecs-tasks.amazonaws.com", role.arn), (role, task, task_arn))
    for role, subject in _instance_roles(model):
        used.setdefault(("ec2.amazonaws.com", role.arn), (role, subject, None))
    for provider, infra in _infrastructure_roles(model):
        used.setdefault(("ecs.amazonaws.com", infra.arn), (infra, provider, None))
    for role, service in ecs_roles(model):
        used.setdefault(("ecs.amazonaws.com", role.arn), (role, service, None))
    for function in model.of("aws:lambda/function:Function"):
        role = model.role(function.inputs.get("role"))
        if role is not None:
            used.setdefault(("lambda.amazonaws.com", role.arn), (role, function, None))
    for (service, _), (role, subject, source) in used.items():
        yield _trusts(model, role, service, subject, source)


def _instance_roles(model: StackModel) -> Iterator[tuple[Role, Resource]]:
    for asg in model.of(ASG):
        template = launch_template_of(model, asg)
        profile = (template.inputs.get("iamInstanceProfile") or {}) if template else {}
        role = model.instance_profile_role(profile.get("arn") or profile.get("name"))
        if role is not None:
            yield role, asg
    for provider in model.of("aws:ecs/capacityProvider:CapacityProvider"):
        launch = (provider.inputs.get("managedInstancesProvider") or {}).get(
            "instanceLaunchTemplate"
        )
        if isinstance(launch, Mapping):
            role = model.instance_profile_role(launch.get("ec2InstanceProfileArn"))
            if role is not None:
                yield role, provider


def _infrastructure_roles(model: StackModel) -> Iterator[tuple[Resource, Role]]:
    for provider in model.of("aws:ecs/capacityProvider:CapacityProvider"):
        managed = provider.inputs.get("managedInstancesProvider")
        if isinstance(managed, Mapping):
            role = model.role(managed.get("infrastructureRoleArn"))
            if role is not None:
                yield provider, role


# -- container instances ----------------------------------------------------------------------
def _agent_calls(model: StackModel, cluster_name: str) -> list[tuple[str, str]]:
    cluster = model.arn("ecs", f"cluster/{cluster_name}")
    instance = model.arn("ecs", f"container-instance/{cluster_name}/{CONTAINER_INSTANCE}")
    return [
        ("ecs:RegisterContainerInstance", cluster),
        ("ecs:DiscoverPollEndpoint", "*"),
        ("ecs:Poll", instance),
        ("ecs:SubmitTaskStateChange", cluster),
    ]


def _user_data_calls(
    model: StackModel, asg: Resource, boots: Boots
) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(action, resource, context) of every AWS call the scripts that run on any boot make."""
    group = model.output(asg, "arn")
    # A call on the group carries its tags, which a grant may be conditioned on.
    tags = {
        f"{prefix}:ResourceTag/{t.get('key')}": str(t.get("value"))
        for t in listify(asg.inputs.get("tags"))
        if isinstance(t, Mapping) and known(t.get("value"))
        for prefix in ("aws", "autoscaling")
    }
    for script in boots.first + boots.later:
        for line in script.splitlines():
            words = _words(line)
            for i, word in enumerate(words):
                if word == "aws" and i + 2 < len(words):
                    yield from _cli_call(words[i + 1], words[i + 2], group, tags)
                if word == "docker" and words[i + 1 : i + 2] == ["pull"] and i + 2 < len(words):
                    repository = ecr_repository(words[i + 2], model.partition)
                    if repository is not None:
                        yield "ecr:BatchGetImage", repository, {}
                        yield "ecr:GetDownloadUrlForLayer", repository, {}
    for path, content in boots.files.items():
        if path.startswith(CW_AGENT_CONFIG_DIR) and path.endswith(".json"):
            yield from _cloudwatch_agent_calls(model, content)


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line.replace("|", " | "), comments=True)
    except ValueError:
        return line.split()


CLI_CALLS: dict[tuple[str, str], tuple[str, str]] = {
    ("ecr", "get-login-password"): ("ecr:GetAuthorizationToken", "*"),
    ("autoscaling", "describe-auto-scaling-instances"): (
        "autoscaling:DescribeAutoScalingInstances",
        "*",
    ),
    ("autoscaling", "complete-lifecycle-action"): ("autoscaling:CompleteLifecycleAction", "group"),
    ("autoscaling", "record-lifecycle-action-heartbeat"): (
        "autoscaling:RecordLifecycleActionHeartbeat",
        "group",
    ),
}
"""AWS CLI commands user data runs, as the IAM action and resource they are authorised on."""


def _cli_call(
    service: str, command: str, group: Any, tags: dict[str, str]
) -> Iterator[tuple[str, str, dict[str, str]]]:
    known_call = CLI_CALLS.get((service, command))
    if known_call is None:
        return
    action, resource = known_call
    on_group = resource == "group"
    yield action, (str(group) if on_group else resource), (tags if on_group else {})


def _cloudwatch_agent_calls(
    model: StackModel, content: str
) -> Iterator[tuple[str, str, dict[str, str]]]:
    try:
        config = json.loads(content)
    except json.JSONDecodeError:
        return
    metrics = config.get("metrics") or {}
    if metrics.get("metrics_collected"):
        namespace = metrics.get("namespace") or "CWAgent"
        yield "cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": namespace}
    logs = config.get("logs") or {}
    groups = [
        section.get("log_group_name")
        for section in (logs.get("metrics_collected") or {}).values()
        if isinstance(section, Mapping)
    ]
    groups += [
        f.get("log_group_name")
        for f in ((logs.get("logs_collected") or {}).get("files") or {}).get("collect_list") or []
    ]
    for group in (g for g in groups if isinstance(g, str)):
        arn = model.arn("logs", f"log-group:{group}")
        yield "logs:CreateLogStream", f"{arn}:log-stream:{INSTANCE_ID}", {}
        yield "logs:PutLogEvents", f"{arn}:log-stream:{INSTANCE_ID}", {}
        yield "logs:DescribeLogStreams", f"{arn}:log-stream:", {}


def _another_group(model: StackModel, asg: Resource) -> str:
    """A group of the account the stack does not own, named like the pool's own (another
    stack's copy of the same pool): what its instances must not act on."""
    group_id = "0f0e0d0c-0b0a-4009-8807-060504030201"
    name = f"{model.output(asg, 'name')}-other"
    return model.arn("autoscaling", f"autoScalingGroup:{group_id}:autoScalingGroupName/{name}")


def instance_checks(model: StackModel) -> Iterator[Check]:
    """The agent's and the user data's calls with each pool's instance role."""
    for asg in model.of(ASG):
        template = launch_template_of(model, asg)
        if template is None:
            continue
        profile = template.inputs.get("iamInstanceProfile") or {}
        role = model.instance_profile_role(profile.get("arn") or profile.get("name"))
        user_data = template.inputs.get("userData")
        if role is None or not isinstance(user_data, str) or not known(user_data):
            yield Unverified(
                asg, f"Auto Scaling group {asg.name}", "instance role or user data unknown"
            )
            continue
        boots = Boots.of(user_data)
        who = f"Auto Scaling group {asg.name} instance"
        principal = session_arn(role, model.account_id, INSTANCE_ID)
        clusters = {m.group(1) for m in _CLUSTER_SETTING.finditer("\n".join(boots.files.values()))}
        calls = [
            (action, resource, {}, "register with its cluster and run tasks")
            for name in sorted(clusters)
            for action, resource in _agent_calls(model, name)
        ]
        calls += [(a, r, c, "run its user data") for a, r, c in _user_data_calls(model, asg, boots)]
        for action, resource, context, why in calls:
            yield Call(
                asg,
                who,
                principal,
                action,
                resource,
                why,
                role=role,
                context=context,
                account_id=model.account_id,
            )
        for action in sorted({a for a, r, _, _ in calls if r == str(model.output(asg, "arn"))}):
            yield Call(
                asg,
                who,
                principal,
                action,
                _another_group(model, asg),
                "continue or abandon the launches of every other group of the account",
                role=role,
                account_id=model.account_id,
                forbidden="an instance acts on its own group only: allow it on "
                "autoScalingGroup:*:autoScalingGroupName/<its group>",
            )
    for provider in model.of("aws:ecs/capacityProvider:CapacityProvider"):
        managed = provider.inputs.get("managedInstancesProvider") or {}
        launch = managed.get("instanceLaunchTemplate") or {}
        role = model.instance_profile_role(launch.get("ec2InstanceProfileArn"))
        cluster = provider.inputs.get("cluster")
        if role is None or not known(cluster):
            continue
        principal = session_arn(role, model.account_id, INSTANCE_ID)
        for action, resource in _agent_calls(model, str(cluster).rsplit("/", 1)[-1]):
            yield Call(
                provider,
                f"capacity provider {provider.name} instance",
                principal,
                action,
                resource,
                "register with its cluster and run tasks",
                role=role,
                account_id=model.account_id,
            )


def managed_instances_checks(model: StackModel) -> Iterator[Check]:
    """ECS passes each Managed Instances provider's instance role to EC2 with the provider's
    infrastructure role."""
    for provider, infra in _infrastructure_roles(model):
        launch = (provider.inputs.get("managedInstancesProvider") or {}).get(
            "instanceLaunchTemplate"
        )
        instance = model.instance_profile_role((launch or {}).get("ec2InstanceProfileArn"))
        if instance is None or instance.arn is None:
            yield Unverified(
                provider, f"capacity provider {provider.name}", "instance profile not in the stack"
            )
            continue
        yield Call(
            provider,
            f"capacity provider {provider.name} (ECS)",
            session_arn(infra, model.account_id, "ecs-managed-instances"),
            "iam:PassRole",
            instance.arn,
            "hand the instance role to the instances it launches",
            role=infra,
            context={"iam:PassedToService": "ec2.amazonaws.com"},
            account_id=model.account_id,
        )


# -- resource policies that services use -------------------------------------------------------
def log_delivery_checks(model: StackModel) -> Iterator[Check]:
    """Each load balancer's access logs can be delivered into its bucket."""
    for lb in model.of("aws:lb/loadBalancer:LoadBalancer", "aws:alb/loadBalancer:LoadBalancer"):
        logs = lb.inputs.get("accessLogs")
        if (
            not isinstance(logs, Mapping)
            or not logs.get("enabled")
            or not known(logs.get("bucket"))
        ):
            continue
        bucket = str(logs["bucket"])
        who = f"load balancer {lb.name} access logs"
        encryption = _bucket_encryption(model, bucket)
        if encryption not in (None, "AES256"):
            yield Refusal(
                lb,
                who,
                f"bucket {bucket} is encrypted with {encryption}; "
                "ELB access logs need SSE-S3 (AES256)",
            )
        policy = _bucket_policy(model, bucket)
        if policy is None:
            yield Refusal(
                lb, who, f"bucket {bucket} has no bucket policy letting ELB write its logs"
            )
            continue
        account = ELB_LOG_DELIVERY_ACCOUNTS.get(model.region)
        principal = f"arn:aws:iam::{account}:root" if account else ELB_LOG_DELIVERY_SERVICE
        # AWS's own log-delivery account may write anywhere its bucket policy lets it.
        identity = ((f"ELB account {account}", _allow("s3:PutObject")),) if account else ()
        prefix = f"{logs['prefix']}/" if logs.get("prefix") else ""
        key = f"{prefix}AWSLogs/{model.account_id}/elasticloadbalancing/{model.region}/log.gz"
        yield Call(
            lb,
            who,
            principal,
            "s3:PutObject",
            f"arn:aws:s3:::{bucket}/{key}",
            "deliver the access logs",
            resource_policy=policy,
            context={"aws:SecureTransport": "true"},
            account_id=model.account_id,
            identity_policies=identity,
        )


def _allow(action: str) -> dict[str, Any]:
    statement = {"Effect": "Allow", "Action": action, "Resource": "*"}
    return {"Version": "2012-10-17", "Statement": [statement]}


def _bucket_encryption(model: StackModel, bucket: str) -> str | None:
    for config in model.of(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    ):
        if config.inputs.get("bucket") == bucket:
            for rule in listify(config.inputs.get("rules")):
                default = (rule or {}).get("applyServerSideEncryptionByDefault") or {}
                return default.get("sseAlgorithm")
    return None


def _bucket_policy(model: StackModel, bucket: str) -> Any:
    for policy in model.of("aws:s3/bucketPolicy:BucketPolicy"):
        if policy.inputs.get("bucket") == bucket:
            return document(policy.inputs.get("policy"))
    return None


def publish_checks(model: StackModel) -> Iterator[Check]:
    """Alarms and EventBridge rules can publish to their topics (and queues)."""
    for alarm in model.of("aws:cloudwatch/metricAlarm:MetricAlarm"):
        source = model.output(alarm, "arn")
        targets = {
            t
            for key in ("alarmActions", "okActions", "insufficientDataActions")
            for t in listify(alarm.inputs.get(key))
            if isinstance(t, str)
        }
        for target in sorted(targets):
            yield from _delivery(
                model, alarm, f"alarm {alarm.name}", "cloudwatch.amazonaws.com", source, target
            )
    for target in model.of("aws:cloudwatch/eventTarget:EventTarget"):
        rule = model.by_name(target.inputs.get("rule"), "aws:cloudwatch/eventRule:EventRule")
        source = model.output(rule, "arn") if rule is not None else None
        arn = target.inputs.get("arn")
        if known(source) and isinstance(arn, str) and not target.inputs.get("roleArn"):
            yield from _delivery(
                model,
                target,
                f"rule {target.inputs.get('rule')}",
                "events.amazonaws.com",
                source,
                arn,
            )


def _delivery(
    model: StackModel, subject: Resource, who: str, service: str, source: Any, target: str
) -> Iterator[Check]:
    context = {"aws:SourceArn": str(source), "aws:SourceAccount": model.account_id}
    if ":sns:" in target:
        topic = model.by_arn(target, "aws:sns/topic:Topic")
        if topic is None:
            yield Unverified(subject, who, f"topic {target} is not in this stack")
            return
        policy = next(
            (
                document(p.inputs.get("policy"))
                for p in model.of("aws:sns/topicPolicy:TopicPolicy")
                if p.inputs.get("arn") == target
            ),
            document(topic.inputs.get("policy")),
        )
        yield Call(
            subject,
            who,
            service,
            "sns:Publish",
            target,
            "notify the topic",
            resource_policy=policy or _owner_only(model, target),
            context=context,
            account_id=model.account_id,
        )
        yield from _topic_key(model, subject, who, service, topic, context)
    elif ":sqs:" in target:
        queue = model.by_arn(target, "aws:sqs/queue:Queue")
        policy = (
            next(
                (
                    document(p.inputs.get("policy"))
                    for p in model.of("aws:sqs/queuePolicy:QueuePolicy")
                    if p.inputs.get("queueUrl")
                    in (model.output(queue, "url"), model.output(queue, "id"))
                ),
                None,
            )
            if queue is not None
            else None
        )
        yield Call(
            subject,
            who,
            service,
            "sqs:SendMessage",
            target,
            "send to the queue",
            resource_policy=policy or _owner_only(model, target),
            context=context,
            account_id=model.account_id,
        )


def _owner_only(model: StackModel, arn: str) -> dict[str, Any]:
    """The default policy of a topic or queue without one: only its account may use it."""
    principal = {"AWS": f"arn:aws:iam::{model.account_id}:root"}
    statement = {"Effect": "Allow", "Principal": principal, "Action": "*", "Resource": arn}
    return {"Version": "2012-10-17", "Statement": [statement]}


def _topic_key(
    model: StackModel,
    subject: Resource,
    who: str,
    service: str,
    topic: Resource,
    context: dict[str, str],
) -> Iterator[Check]:
    ref = topic.inputs.get("kmsMasterKeyId")
    if not known(ref) or not ref or str(ref).startswith("alias/aws/"):
        return
    key = kms_key(model, ref)
    if key is None:
        yield Unverified(subject, who, f"topic key {ref} is not in this stack")
        return
    for action in ("kms:GenerateDataKey", "kms:Decrypt"):
        yield Call(
            subject,
            who,
            service,
            action,
            str(model.output(key, "arn")),
            "publish to the encrypted topic",
            resource_policy=document(key.inputs.get("policy")),
            context=context,
            account_id=model.account_id,
        )


def service_checks(model: StackModel) -> Iterator[Check]:
    yield from trust_checks(model)
    yield from instance_checks(model)
    yield from managed_instances_checks(model)
    yield from log_delivery_checks(model)
    yield from publish_checks(model)


__all__ = ["CLUSTER", "LAUNCH_TEMPLATE", "ROLE", "service_checks"]
