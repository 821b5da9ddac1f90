"""ECS: clusters, capacity providers, services and task definitions."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ecs_inference.contracts.aws_limits import TASK_DEFINITION_MAX_BYTES
from tools.aws_requests.ecs_native import native_deployment_problems
from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    as_int,
    drop_none,
    known,
    maps,
    rule,
    single,
    tags,
)
from tools.aws_shapes import UNKNOWN, container_definitions, register_task_definition_request


@maps("aws:ecs/cluster:Cluster")
def _ecs_cluster(i: Inputs, name: str | None) -> list[ApiRequest]:
    config = single(i.get("configuration"))
    if isinstance(config, Mapping):
        exec_config = single(config.get("executeCommandConfiguration"))
        if isinstance(exec_config, Mapping):
            exec_config = dict(exec_config)
            if (lc := single(exec_config.get("logConfiguration"))) is not None:
                exec_config["logConfiguration"] = lc
            config = {**config, "executeCommandConfiguration": exec_config}
    return [
        ApiRequest(
            "ecs",
            "CreateCluster",
            drop_none(
                {
                    "clusterName": name,
                    "settings": i.get("settings"),
                    "configuration": config,
                    "serviceConnectDefaults": single(i.get("serviceConnectDefaults")),
                    "tags": tags(i.get("tags"), "key", "value"),
                }
            ),
        )
    ]


@maps("aws:ecs/capacityProvider:CapacityProvider")
def _capacity_provider(i: Inputs, name: str | None) -> list[ApiRequest]:
    asg = single(i.get("autoScalingGroupProvider"))
    if isinstance(asg, Mapping):
        asg = dict(asg)
        if (scaling := single(asg.get("managedScaling"))) is not None:
            asg["managedScaling"] = scaling
    return [
        ApiRequest(
            "ecs",
            "CreateCapacityProvider",
            drop_none(
                {
                    "name": name,
                    "autoScalingGroupProvider": asg,
                    "managedInstancesProvider": single(i.get("managedInstancesProvider")),
                    "cluster": i.get("cluster"),
                    "tags": tags(i.get("tags"), "key", "value"),
                }
            ),
        )
    ]


@maps("aws:ecs/clusterCapacityProviders:ClusterCapacityProviders")
def _cluster_capacity_providers(i: Inputs, _name: str | None) -> list[ApiRequest]:
    return [
        ApiRequest(
            "ecs",
            "PutClusterCapacityProviders",
            {
                "cluster": i.get("clusterName"),
                "capacityProviders": i.get("capacityProviders") or [],
                "defaultCapacityProviderStrategy": i.get("defaultCapacityProviderStrategies") or [],
            },
        )
    ]


@rule("aws:ecs/clusterCapacityProviders:ClusterCapacityProviders")
def _cluster_capacity_provider_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    providers = i.get("capacityProviders")
    for item in i.get("defaultCapacityProviderStrategies") or []:
        name = item.get("capacityProvider")
        listed = isinstance(providers, list) and UNKNOWN not in providers
        if listed and known(name) and name not in providers:  # type: ignore[operator]
            yield f"default strategy names {name}, which is not among capacityProviders"


def _service_request(i: Inputs, name: str | None) -> dict[str, Any]:
    net = single(i.get("networkConfiguration"))
    awsvpc = None
    if isinstance(net, Mapping):
        public = net.get("assignPublicIp")
        awsvpc = {
            "awsvpcConfiguration": drop_none(
                {
                    "subnets": net.get("subnets"),
                    "securityGroups": net.get("securityGroups"),
                    "assignPublicIp": None
                    if not known(public)
                    else ("ENABLED" if public else "DISABLED"),
                }
            )
        }
    breaker = single(i.get("deploymentCircuitBreaker"))
    deployment = drop_none(
        {
            "maximumPercent": i.get("deploymentMaximumPercent"),
            "minimumHealthyPercent": i.get("deploymentMinimumHealthyPercent"),
            "deploymentCircuitBreaker": breaker,
            "alarms": single(i.get("alarms")),
            **_native_deployment(single(i.get("deploymentConfiguration"))),
        }
    )
    return drop_none(
        {
            "cluster": i.get("cluster"),
            "serviceName": name,
            "taskDefinition": i.get("taskDefinition"),
            "availabilityZoneRebalancing": i.get("availabilityZoneRebalancing"),
            "loadBalancers": i.get("loadBalancers"),
            "serviceRegistries": [single(i["serviceRegistries"])]
            if i.get("serviceRegistries")
            else None,
            "desiredCount": i.get("desiredCount"),
            "launchType": i.get("launchType"),
            "capacityProviderStrategy": i.get("capacityProviderStrategies"),
            "platformVersion": i.get("platformVersion"),
            "role": i.get("iamRole"),
            "deploymentConfiguration": deployment or None,
            "placementConstraints": i.get("placementConstraints"),
            "placementStrategy": i.get("orderedPlacementStrategies"),
            "networkConfiguration": awsvpc,
            "healthCheckGracePeriodSeconds": i.get("healthCheckGracePeriodSeconds"),
            "schedulingStrategy": i.get("schedulingStrategy"),
            "deploymentController": single(i.get("deploymentController")),
            "tags": tags(i.get("tags"), "key", "value"),
            "enableECSManagedTags": i.get("enableEcsManagedTags"),
            "propagateTags": i.get("propagateTags"),
            "enableExecuteCommand": i.get("enableExecuteCommand"),
            "serviceConnectConfiguration": _service_connect(
                single(i.get("serviceConnectConfiguration"))
            ),
        }
    )


def _minutes(value: Any) -> Any:
    """The provider takes the bake times as strings; the API as integers."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return as_int(value)


def _native_deployment(dc: Any) -> dict[str, Any]:
    """Pulumi's `deploymentConfiguration` block (strategy, bake, canary, linear, lifecycle
    hooks) as CreateService's DeploymentConfiguration members."""
    if not isinstance(dc, Mapping):
        return {}
    canary, linear = single(dc.get("canaryConfiguration")), single(dc.get("linearConfiguration"))
    hooks = dc.get("lifecycleHooks")
    return drop_none(
        {
            "strategy": dc.get("strategy"),
            "bakeTimeInMinutes": _minutes(dc.get("bakeTimeInMinutes")),
            "canaryConfiguration": drop_none(
                {
                    "canaryPercent": canary.get("canaryPercent"),
                    "canaryBakeTimeInMinutes": _minutes(canary.get("canaryBakeTimeInMinutes")),
                }
            )
            if isinstance(canary, Mapping)
            else None,
            "linearConfiguration": drop_none(
                {
                    "stepPercent": linear.get("stepPercent"),
                    "stepBakeTimeInMinutes": _minutes(linear.get("stepBakeTimeInMinutes")),
                }
            )
            if isinstance(linear, Mapping)
            else None,
            "lifecycleHooks": [_hook(h) for h in hooks if isinstance(h, Mapping)]
            if isinstance(hooks, list)
            else None,
        }
    )


def _hook(h: Mapping[str, Any]) -> dict[str, Any]:
    details = h.get("hookDetails")
    if isinstance(details, str):
        # An undecodable string stays a string: the document check refuses it.
        with contextlib.suppress(json.JSONDecodeError):
            details = json.loads(details)
    return drop_none(
        {
            "targetType": h.get("targetType"),
            "hookTargetArn": h.get("hookTargetArn"),
            "roleArn": h.get("roleArn"),
            "lifecycleStages": h.get("lifecycleStages"),
            "hookDetails": details,
            "timeoutConfiguration": single(h.get("timeoutConfiguration")),
        }
    )


def _service_connect(sc: Any) -> Any:
    """Pulumi's `serviceConnectConfiguration` as CreateService's: Terraform names the alias list
    `clientAlias` (the API `clientAliases`) and gives single blocks as objects or 1-item lists."""
    if not isinstance(sc, Mapping):
        return sc
    services = []
    for svc in sc.get("services") or []:
        if not isinstance(svc, Mapping):
            services.append(svc)
            continue
        svc = dict(svc)
        if "clientAlias" in svc:
            svc["clientAliases"] = svc.pop("clientAlias")
        for key in ("timeout", "tls"):
            if key in svc:
                svc[key] = single(svc[key])
        services.append(svc)
    return drop_none(
        {
            **{k: v for k, v in sc.items() if k not in ("services", "logConfiguration")},
            "services": services or None,
            "logConfiguration": single(sc.get("logConfiguration")),
        }
    )


@maps("aws:ecs/service:Service")
def _ecs_service(i: Inputs, name: str | None) -> list[ApiRequest]:
    return [ApiRequest("ecs", "CreateService", _service_request(i, name))]


@rule("aws:ecs/service:Service")
def _ecs_service_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    # CreateService: up to five target groups per service; a grace period only with a load
    # balancer; launchType and capacityProviderStrategy are mutually exclusive.
    lbs = i.get("loadBalancers")
    if isinstance(lbs, list) and len(lbs) > 5:
        yield f"{len(lbs)} load balancers, at most 5 target groups per service"
    if i.get("healthCheckGracePeriodSeconds") is not None and not lbs:
        yield "healthCheckGracePeriodSeconds is only valid with loadBalancers"
    if i.get("launchType") and i.get("capacityProviderStrategies"):
        yield "launchType and capacityProviderStrategies cannot both be set"
    if i.get("networkConfiguration") is None and _awsvpc_required(i):
        yield "a Fargate service needs networkConfiguration (awsvpc)"
    yield from native_deployment_problems(i)


def _awsvpc_required(i: Inputs) -> bool:
    strategies = i.get("capacityProviderStrategies") or []
    fargate = any(
        str(s.get("capacityProvider", "")).startswith("FARGATE")
        for s in strategies
        if isinstance(s, Mapping)
    )
    return i.get("launchType") == "FARGATE" or fargate


@maps("aws:ecs/taskDefinition:TaskDefinition")
def _task_definition(i: Inputs, _name: str | None) -> list[ApiRequest]:
    if i.get("containerDefinitions") == UNKNOWN:
        request = register_task_definition_request({**i, "containerDefinitions": "[]"})
        request["containerDefinitions"] = UNKNOWN
        return [ApiRequest("ecs", "RegisterTaskDefinition", request)]
    return [ApiRequest("ecs", "RegisterTaskDefinition", register_task_definition_request(i))]


@rule("aws:ecs/taskDefinition:TaskDefinition")
def _task_definition_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    raw = i.get("containerDefinitions")
    if not known(raw):
        return
    try:
        containers = container_definitions(raw)
    except json.JSONDecodeError as exc:
        yield f"containerDefinitions is not valid JSON: {exc}"
        return
    size = len(json.dumps(register_task_definition_request(i)).encode())
    if size > TASK_DEFINITION_MAX_BYTES:
        yield f"the request is {size} bytes, more than the {TASK_DEFINITION_MAX_BYTES} AWS accepts"
    names = Counter(c.get("name") for c in containers if isinstance(c, Mapping))
    for dup, count in names.items():
        if count > 1:
            yield f"container name {dup!r} is used {count} times"
    if not any(c.get("essential", True) for c in containers if isinstance(c, Mapping)):
        yield "at least one container must be essential"
