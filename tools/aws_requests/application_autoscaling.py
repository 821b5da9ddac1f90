"""Application Auto Scaling: scalable targets and scaling policies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    as_int,
    drop_none,
    known,
    maps,
    rule,
    single,
)


@maps("aws:appautoscaling/target:Target")
def _scalable_target(i: Inputs, _name: str | None) -> list[ApiRequest]:
    suspended = single(i.get("suspendedState"))
    return [
        ApiRequest(
            "application-autoscaling",
            "RegisterScalableTarget",
            drop_none(
                {
                    "ServiceNamespace": i.get("serviceNamespace"),
                    "ResourceId": i.get("resourceId"),
                    "ScalableDimension": i.get("scalableDimension"),
                    "MinCapacity": i.get("minCapacity"),
                    "MaxCapacity": i.get("maxCapacity"),
                    "RoleARN": i.get("roleArn"),
                    "SuspendedState": suspended,
                    "Tags": i.get("tags"),
                }
            ),
        )
    ]


@rule("aws:appautoscaling/target:Target")
def _scalable_target_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    lo, hi = i.get("minCapacity"), i.get("maxCapacity")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        yield f"minCapacity {as_int(lo)} is greater than maxCapacity {as_int(hi)}"


def _step_scaling(config: Any) -> Any:
    """The provider takes step bounds as strings (Terraform's schema); the API takes numbers."""
    if not isinstance(config, Mapping):
        return config
    steps = []
    for step in config.get("stepAdjustments") or []:
        step = dict(step)
        for key in ("metricIntervalLowerBound", "metricIntervalUpperBound"):
            value = step.get(key)
            if isinstance(value, str) and known(value):
                # Text that is no number stays text: botocore reports the type.
                with contextlib.suppress(ValueError):
                    step[key] = float(value)
        steps.append(step)
    return {**config, "stepAdjustments": steps} if steps else dict(config)


@maps("aws:appautoscaling/policy:Policy")
def _scaling_policy(i: Inputs, name: str | None) -> list[ApiRequest]:
    tt = single(i.get("targetTrackingScalingPolicyConfiguration"))
    if isinstance(tt, Mapping):
        tt = dict(tt)
        for key in ("predefinedMetricSpecification", "customizedMetricSpecification"):
            if (spec := single(tt.get(key))) is not None:
                tt[key] = spec
    return [
        ApiRequest(
            "application-autoscaling",
            "PutScalingPolicy",
            drop_none(
                {
                    "PolicyName": name,
                    "ServiceNamespace": i.get("serviceNamespace"),
                    "ResourceId": i.get("resourceId"),
                    "ScalableDimension": i.get("scalableDimension"),
                    "PolicyType": i.get("policyType"),
                    "StepScalingPolicyConfiguration": _step_scaling(
                        single(i.get("stepScalingPolicyConfiguration"))
                    ),
                    "TargetTrackingScalingPolicyConfiguration": tt,
                }
            ),
        )
    ]
