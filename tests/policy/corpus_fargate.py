"""Corpus stacks for what Fargate refuses (the table in ``contracts/aws_limits.py``) and for every
way a stack launches a task on Fargate, in both providers' shapes.

* one bad and one good stack per table entry: a Fargate task definition carrying the parameter
  (launched by a Fargate service) against the accepted value, or the same parameter on an EC2
  task definition launched on EC2 (a vLLM container's ``sharedMemorySize`` on a GPU instance is
  what vLLM asks for, and legitimate);
* every launcher (service by launch type / strategy / cluster default, task set, EventBridge
  target and rule, Scheduler, Pipes, Step Functions in each definition form) running a task
  definition that declares no compatibility but carries ``sharedMemorySize``, on Fargate (bad)
  and on EC2 (good); Step Functions states whose launch is a run-time value (noted);
* AWS Batch job definitions on FARGATE with what Batch refuses there (bad) and on EC2 (good).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ecs_inference.contracts import aws_limits
from tests.policy.corpus import (
    A_BATCH,
    A_CLUSTER,
    A_EVENT_TARGET,
    A_SCHEDULE,
    A_TASKSET,
    GPU,
    HOST,
    N_BATCH,
    N_CLUSTER,
    N_RULE_EVENTS,
    N_SCHEDULE,
    N_TASKSET,
    Case,
    Ref,
    container,
    service_inputs,
    types,
)

A_PIPE = "aws:pipes/pipe:Pipe"
N_PIPE = "aws-native:pipes:Pipe"
A_SFN = "aws:sfn/stateMachine:StateMachine"
N_SFN = "aws-native:stepfunctions:StateMachine"
A_CCP = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"

IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/worker:1.0"
SHM = {"sharedMemorySize": 2048.0}

#: Per table path: (a value Fargate refuses, a value it accepts or None: only EC2 takes it).
VALUES: dict[str, tuple[Any, Any]] = {
    "ipcMode": ("host", None),
    "pidMode": ("host", "task"),
    "networkMode": ("host", "awsvpc"),
    "placementConstraints": ([{"type": "memberOf", "expression": "attribute:gpu == true"}], None),
    "inferenceAccelerators": ([{"deviceName": "ei", "deviceType": "eia2.medium"}], None),
    "volumes[].dockerVolumeConfiguration": ({"scope": "task", "driver": "local"}, None),
    "volumes[].host.sourcePath": ("/mnt/models", None),
    "containerDefinitions[].disableNetworking": (True, False),
    "containerDefinitions[].dnsSearchDomains": (["corp.internal"], None),
    "containerDefinitions[].dnsServers": (["10.0.0.2"], None),
    "containerDefinitions[].dockerSecurityOptions": (["apparmor:unconfined"], None),
    "containerDefinitions[].extraHosts": ([{"hostname": "db", "ipAddress": "10.0.0.5"}], None),
    "containerDefinitions[].hostname": ("model", None),
    "containerDefinitions[].links": (["sidecar"], None),
    "containerDefinitions[].privileged": (True, False),
    "containerDefinitions[].resourceRequirements": ([{"type": "GPU", "value": "1"}], None),
    "containerDefinitions[].linuxParameters.devices": (
        [{"hostPath": "/dev/neuron0", "containerPath": "/dev/neuron0"}],
        None,
    ),
    "containerDefinitions[].linuxParameters.sharedMemorySize": (2048.0, None),
    "containerDefinitions[].linuxParameters.tmpfs": (
        [{"containerPath": "/scratch", "size": 1024.0}],
        None,
    ),
    "containerDefinitions[].linuxParameters.maxSwap": (4096.0, None),
    "containerDefinitions[].linuxParameters.swappiness": (60.0, None),
    "containerDefinitions[].linuxParameters.capabilities.add[]": ("SYS_ADMIN", "CAP_SYS_PTRACE"),
    "containerDefinitions[].logConfiguration.logDriver": ("json-file", "awslogs"),
    "containerDefinitions[].firelensConfiguration.options.config-file-type": ("s3", "file"),
    "containerDefinitions[].startTimeout": (300.0, 120.0),
    "containerDefinitions[].stopTimeout": (300.0, 120.0),
}


def _set(target: dict[str, Any], steps: list[str], value: Any) -> None:
    """Set ``value`` at ``steps`` (``[]``: the first item, made when missing)."""
    head, rest = steps[0], steps[1:]
    key = head.removesuffix("[]")
    if head.endswith("[]") and not rest:
        target[key] = [value]
        return
    if head.endswith("[]"):
        items = target.setdefault(key, [{}])
        _set(items[0], rest, value)
        return
    if not rest:
        target[key] = value
        return
    _set(target.setdefault(key, {}), rest, value)


def task(native: bool, *, fargate: bool | None, family: str, **at: Any) -> dict[str, Any]:
    """A task definition of one container; ``at`` maps table paths to values. ``fargate``:
    FARGATE compatibility (None: no requiresCompatibilities)."""
    body: dict[str, Any] = {
        "family": family,
        "networkMode": "awsvpc",
        "containerDefinitions": [container("model", IMAGE, 8000)],
    }
    if fargate is not None:
        body["requiresCompatibilities"] = ["FARGATE"] if fargate else ["EC2"]
    if fargate:
        body.update(cpu="1024", memory="2048")
    for path, value in at.items():
        steps = path.split(".")
        if not native and path == "volumes[].host.sourcePath":
            steps = ["volumes[]", "hostPath"]
        if steps[0] == "volumes[]":
            body["volumes"] = [{"name": "data"}]
        _set(body, steps, value)
    containers = body["containerDefinitions"]
    body["containerDefinitions"] = containers if native else json.dumps(containers)
    return body


def _service(native: bool, td: str, launch_type: str) -> dict[str, Any]:
    return service_inputs(native, td=td, launch_type=launch_type)


def _table_cases() -> Iterator[Case]:
    assert VALUES.keys() == aws_limits.FARGATE_TASK_PARAMETERS.keys(), "a table entry lacks cases"
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        for path, (bad, good) in VALUES.items():
            if native is False and path == "inferenceAccelerators":
                continue  # pulumi-aws 7 removed the argument
            slug = path.replace("containerDefinitions[].", "").replace("[]", "").replace(".", "-")
            case = Case(f"fargate-{p}-{slug}-refused", {(HOST, "td"), (GPU, "svc")})
            case.add(t["TD"], "td", task(native, fargate=True, family="td", **{path: bad}))
            case.add(t["SVC"], "svc", _service(native, "td", "FARGATE"))
            yield case
            case = Case(f"fargate-{p}-{slug}-accepted", set())
            if good is not None:
                case.add(t["TD"], "td", task(native, fargate=True, family="td", **{path: good}))
                case.add(t["SVC"], "svc", _service(native, "td", "FARGATE"))
            else:  # the parameter where it belongs: an EC2 task (bridge mode) on EC2
                ec2 = task(native, fargate=False, family="td", **{path: bad})
                ec2["networkMode"] = "bridge"
                service = _service(native, "td", "EC2")
                del service["networkConfiguration"]
                case.add(t["TD"], "td", ec2)
                case.add(t["SVC"], "svc", service)
            yield case
    # networkMode unset on a Fargate task definition: ECS assumes bridge.
    for native in (False, True):
        t = types(native)
        body = task(native, fargate=True, family="td")
        del body["networkMode"]
        yield (
            Case(
                f"fargate-{'native' if native else 'aws'}-network-mode-unset",
                {(HOST, "td"), (GPU, "svc")},
            )
            .add(t["TD"], "td", body)
            .add(t["SVC"], "svc", _service(native, "td", "FARGATE"))
        )


# --- every launcher -----------------------------------------------------------------------------


def _strategy(native: bool, provider: str) -> dict[str, Any]:
    key = "capacityProviderStrategy" if native else "capacityProviderStrategies"
    return {key: [{"capacityProvider": provider, "weight": 1.0}]}


def _launcher_cases() -> Iterator[Case]:
    for native in (False, True):
        p = "native" if native else "aws"
        t = types(native)
        launchers = {
            "service-launch-type": (t["SVC"], lambda lt, n=native: _service(n, "td", lt)),
            "service-strategy": (
                t["SVC"],
                lambda lt, n=native: {
                    **_service(n, "td", ""),
                    **_strategy(n, "FARGATE_SPOT" if lt == "FARGATE" else "gpu-pool"),
                },
            ),
            "task-set": (
                N_TASKSET if native else A_TASKSET,
                lambda lt: {
                    "cluster": "c",
                    "service": "s",
                    "taskDefinition": Ref("td"),
                    "launchType": lt,
                },
            ),
            "schedule": (
                N_SCHEDULE if native else A_SCHEDULE,
                lambda lt: {
                    "scheduleExpression": "rate(1 hour)",
                    "flexibleTimeWindow": {"mode": "OFF"},
                    "target": {
                        "arn": "arn:aws:ecs:us-east-1:123456789012:cluster/batch",
                        "roleArn": "arn:aws:iam::123456789012:role/scheduler",
                        "ecsParameters": {"taskDefinitionArn": Ref("td"), "launchType": lt},
                    },
                },
            ),
            "pipe": (
                N_PIPE if native else A_PIPE,
                lambda lt: {
                    "roleArn": "arn:aws:iam::123456789012:role/pipe",
                    "source": "arn:aws:sqs:us-east-1:123456789012:jobs",
                    "target": "arn:aws:ecs:us-east-1:123456789012:cluster/batch",
                    "targetParameters": {
                        "ecsTaskParameters": {"taskDefinitionArn": Ref("td"), "launchType": lt}
                    },
                },
            ),
        }
        if native:
            launchers["events-rule"] = (
                N_RULE_EVENTS,
                lambda lt: {
                    "scheduleExpression": "rate(1 day)",
                    "targets": [
                        {
                            "id": "t",
                            "arn": "arn:aws:ecs:us-east-1:123456789012:cluster/batch",
                            "ecsParameters": {"taskDefinitionArn": Ref("td"), "launchType": lt},
                        }
                    ],
                },
            )
        else:
            launchers["event-target"] = (
                A_EVENT_TARGET,
                lambda lt: {
                    "rule": "nightly",
                    "arn": "arn:aws:ecs:us-east-1:123456789012:cluster/batch",
                    "ecsTarget": {"taskDefinitionArn": Ref("td"), "launchType": lt},
                },
            )
        for kind, (type_, inputs) in launchers.items():
            for lt, expect in (("FARGATE", {(GPU, "launcher")}), ("EC2", set())):
                on = "fargate" if lt == "FARGATE" else "ec2"
                case = Case(f"launch-{p}-{kind}-{on}-shared-memory", expect)
                case.add(t["TD"], "td", task(native, fargate=None, family="worker", **_SHM_PATH))
                case.add(type_, "launcher", inputs(lt))
                yield case
        yield from _cluster_default_cases(native)
        yield from _state_machine_cases(native)


_SHM_PATH = {"containerDefinitions[].linuxParameters.sharedMemorySize": 2048.0}


def _cluster_default_cases(native: bool) -> Iterator[Case]:
    p = "native" if native else "aws"
    t = types(native)
    for provider, expect in (("FARGATE", {(GPU, "svc")}), ("gpu-pool", set())):
        case = Case(f"launch-{p}-cluster-default-{provider.lower()}-shared-memory", expect)
        case.add(t["TD"], "td", task(native, fargate=None, family="worker", **_SHM_PATH))
        strategy = [{"capacityProvider": provider, "weight": 1.0}]
        if native:
            case.add(N_CLUSTER, "cluster", {"defaultCapacityProviderStrategy": strategy})
        else:
            case.add(A_CLUSTER, "cluster", {"name": "jobs"})
            case.add(
                A_CCP,
                "cluster-providers",
                {
                    "clusterName": Ref("cluster", "name"),
                    "capacityProviders": [provider],
                    "defaultCapacityProviderStrategies": strategy,
                },
            )
        svc = _service(native, "td", "")
        svc.pop("launchType", None)
        svc["cluster"] = Ref("cluster")
        case.add(t["SVC"], "svc", svc)
        yield case


def run_task_state(parameters: dict[str, Any], resource: str = ".sync") -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": f"arn:aws:states:::ecs:runTask{resource}",
        "Parameters": parameters,
        "End": True,
    }


def _definitions(launch_type: str) -> dict[str, dict[str, Any]]:
    """State machine definitions, one per form a state that runs ECS takes."""
    params = {
        "Cluster": "arn:aws:ecs:us-east-1:123456789012:cluster/jobs",
        "TaskDefinition": "worker",
    }
    params["LaunchType"] = launch_type
    strategy = {k: v for k, v in params.items() if k != "LaunchType"}
    strategy["CapacityProviderStrategy"] = [
        {"CapacityProvider": "FARGATE_SPOT" if launch_type == "FARGATE" else "gpu-pool"}
    ]
    return {
        "sync": {"StartAt": "Run", "States": {"Run": run_task_state(params)}},
        "wait-for-token": {
            "StartAt": "Run",
            "States": {"Run": run_task_state(params, ".waitForTaskToken")},
        },
        "strategy": {"StartAt": "Run", "States": {"Run": run_task_state(strategy, "")}},
        "jsonata": {
            "QueryLanguage": "JSONata",
            "StartAt": "Run",
            "States": {
                "Run": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::ecs:runTask.sync",
                    "Arguments": params,
                    "End": True,
                }
            },
        },
        "parallel": {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Parallel",
                    "End": True,
                    "Branches": [{"StartAt": "Run", "States": {"Run": run_task_state(params)}}],
                }
            },
        },
        "map": {
            "StartAt": "Each",
            "States": {
                "Each": {
                    "Type": "Map",
                    "End": True,
                    "ItemProcessor": {"StartAt": "Run", "States": {"Run": run_task_state(params)}},
                }
            },
        },
    }


def _state_machine(native: bool, definition: dict[str, Any], form: str) -> dict[str, Any]:
    role = "arn:aws:iam::123456789012:role/sfn"
    if not native:
        return {"roleArn": role, "definition": json.dumps(definition)}
    if form == "object":
        return {"roleArn": role, "definition": definition}
    if form == "yaml":
        import yaml

        return {"roleArn": role, "definitionString": yaml.safe_dump(definition)}
    return {"roleArn": role, "definitionString": json.dumps(definition)}


def _state_machine_cases(native: bool) -> Iterator[Case]:
    p = "native" if native else "aws"
    t = types(native)
    forms = ("string", "object", "yaml") if native else ("string",)
    for lt, expect in (("FARGATE", {(GPU, "sfn")}), ("EC2", set())):
        on = "fargate" if lt == "FARGATE" else "ec2"
        for name, definition in _definitions(lt).items():
            for form in forms:
                case = Case(f"sfn-{p}-{name}-{form}-{on}-shared-memory", expect)
                case.add(t["TD"], "td", task(native, fargate=None, family="worker", **_SHM_PATH))
                case.add(
                    N_SFN if native else A_SFN, "sfn", _state_machine(native, definition, form)
                )
                yield case
    # A launch type set from the state's input: the pack cannot tell, and says which field.
    runtime = {
        "jsonpath": run_task_state({"TaskDefinition": "worker", "LaunchType.$": "$.launchType"}),
        "jsonata": {
            "Type": "Task",
            "Resource": "arn:aws:states:::ecs:runTask.sync",
            "QueryLanguage": "JSONata",
            "Arguments": {"TaskDefinition": "worker", "LaunchType": "{% $states.input.lt %}"},
            "End": True,
        },
    }
    for name, state in runtime.items():
        case = Case(
            f"sfn-{p}-{name}-runtime-launch-type",
            set(),
            notes=("state 'Run' sets LaunchType",),
        )
        case.add(t["TD"], "td", task(native, fargate=None, family="worker", **_SHM_PATH))
        definition = {"StartAt": "Run", "States": {"Run": state}}
        case.add(N_SFN if native else A_SFN, "sfn", _state_machine(native, definition, "string"))
        yield case


# --- AWS Batch ------------------------------------------------------------------------------------

#: Batch container settings Fargate refuses (containerProperties), each with its EC2 twin.
BATCH_REFUSED: dict[str, dict[str, Any]] = {
    "privileged": {"privileged": True},
    "shared-memory": {"linuxParameters": {"sharedMemorySize": 2048}},
    "tmpfs": {"linuxParameters": {"tmpfs": [{"containerPath": "/scratch", "size": 64}]}},
    "ulimits": {"ulimits": [{"name": "nofile", "softLimit": 65535, "hardLimit": 65535}]},
    "gpu": {"resourceRequirements": [{"type": "GPU", "value": "1"}]},
    "host-volume": {"volumes": [{"name": "data", "host": {"sourcePath": "/mnt/data"}}]},
}


def _batch_cases() -> Iterator[Case]:
    base = {
        "image": IMAGE,
        "resourceRequirements": [
            {"type": "VCPU", "value": "1"},
            {"type": "MEMORY", "value": "2048"},
        ],
    }
    for native in (False, True):
        p = "native" if native else "aws"
        for name, extra in BATCH_REFUSED.items():
            properties = {**base, **extra}
            if name == "gpu":
                properties["resourceRequirements"] = [
                    *base["resourceRequirements"],
                    *extra["resourceRequirements"],
                ]
            for platform, expect in (("FARGATE", {(HOST, "job")}), ("EC2", set())):
                case = Case(f"batch-{p}-{name}-{platform.lower()}", expect)
                case.add(
                    N_BATCH if native else A_BATCH,
                    "job",
                    {
                        "type": "container",
                        "platformCapabilities": [platform],
                        "containerProperties": properties if native else json.dumps(properties),
                    },
                )
                yield case
        case = Case(f"batch-{p}-fargate-plain", set())
        case.add(
            N_BATCH if native else A_BATCH,
            "job",
            {
                "type": "container",
                "platformCapabilities": ["FARGATE"],
                "containerProperties": base if native else json.dumps(base),
            },
        )
        yield case


def cases() -> list[Case]:
    """Every case of this module."""
    return [*_table_cases(), *_launcher_cases(), *_batch_cases()]
