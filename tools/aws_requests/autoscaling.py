"""EC2 Auto Scaling: groups, warm pools and mixed instances policies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tools.aws_requests.registry import (
    ApiRequest,
    Inputs,
    Quotas,
    Resource,
    as_int,
    drop_none,
    maps,
    rule,
    single,
    stack_rule,
)
from tools.aws_shapes import UNKNOWN


@maps("aws:autoscaling/group:Group")
def _asg(i: Inputs, name: str | None) -> list[ApiRequest]:
    lt = single(i.get("launchTemplate"))
    zones = i.get("vpcZoneIdentifiers")
    create = drop_none(
        {
            "AutoScalingGroupName": name,
            "LaunchTemplate": drop_none(
                {
                    "LaunchTemplateId": lt.get("id"),
                    "LaunchTemplateName": lt.get("name"),
                    "Version": lt.get("version"),
                }
            )
            if isinstance(lt, Mapping)
            else None,
            "MixedInstancesPolicy": single(i.get("mixedInstancesPolicy")),
            "MinSize": i.get("minSize"),
            "MaxSize": i.get("maxSize"),
            "DesiredCapacity": i.get("desiredCapacity"),
            "DefaultCooldown": i.get("defaultCooldown"),
            "AvailabilityZones": i.get("availabilityZones"),
            "HealthCheckType": i.get("healthCheckType"),
            "HealthCheckGracePeriod": i.get("healthCheckGracePeriod"),
            "VPCZoneIdentifier": ",".join(zones)
            if isinstance(zones, list) and UNKNOWN not in zones
            else (UNKNOWN if zones else None),
            "TargetGroupARNs": i.get("targetGroupArns"),
            "TerminationPolicies": i.get("terminationPolicies"),
            "NewInstancesProtectedFromScaleIn": i.get("protectFromScaleIn"),
            "CapacityRebalance": i.get("capacityRebalance"),
            "MaxInstanceLifetime": i.get("maxInstanceLifetime"),
            "DefaultInstanceWarmup": i.get("defaultInstanceWarmup"),
            "Tags": [
                drop_none(
                    {
                        "Key": t.get("key"),
                        "Value": t.get("value"),
                        "PropagateAtLaunch": t.get("propagateAtLaunch"),
                    }
                )
                for t in i.get("tags") or []
            ]
            or None,
        }
    )
    if isinstance(create.get("MixedInstancesPolicy"), Mapping):
        create["MixedInstancesPolicy"] = _mixed_instances(create["MixedInstancesPolicy"])
    out = [ApiRequest("autoscaling", "CreateAutoScalingGroup", create)]
    warm = single(i.get("warmPool"))
    if isinstance(warm, Mapping):
        reuse = single(warm.get("instanceReusePolicy"))
        out.append(
            ApiRequest(
                "autoscaling",
                "PutWarmPool",
                drop_none(
                    {
                        "AutoScalingGroupName": name,
                        "MaxGroupPreparedCapacity": warm.get("maxGroupPreparedCapacity"),
                        "MinSize": warm.get("minSize"),
                        "PoolState": warm.get("poolState"),
                        "InstanceReusePolicy": {"ReuseOnScaleIn": reuse.get("reuseOnScaleIn")}
                        if isinstance(reuse, Mapping)
                        else None,
                    }
                ),
            )
        )
    return out


def _mixed_instances(policy: Mapping[str, Any]) -> dict[str, Any]:
    spec = single(policy.get("launchTemplate")) or {}
    lts = single(spec.get("launchTemplateSpecification")) or {}
    dist = single(policy.get("instancesDistribution"))
    return drop_none(
        {
            "LaunchTemplate": {
                "LaunchTemplateSpecification": drop_none(
                    {
                        "LaunchTemplateId": lts.get("launchTemplateId"),
                        "LaunchTemplateName": lts.get("launchTemplateName"),
                        "Version": lts.get("version"),
                    }
                ),
                "Overrides": [
                    drop_none(
                        {
                            "InstanceType": o.get("instanceType"),
                            "WeightedCapacity": o.get("weightedCapacity"),
                        }
                    )
                    for o in spec.get("overrides") or []
                ]
                or None,
            },
            "InstancesDistribution": dist,
        }
    )


@rule("aws:autoscaling/group:Group")
def _asg_limits(i: Inputs, _name: str | None) -> Iterable[str]:
    lo, hi, want = i.get("minSize"), i.get("maxSize"), i.get("desiredCapacity")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
        yield f"minSize {as_int(lo)} is greater than maxSize {as_int(hi)}"
    if isinstance(want, (int, float)) and isinstance(hi, (int, float)) and want > hi:
        yield f"desiredCapacity {as_int(want)} is greater than maxSize {as_int(hi)}"
    if isinstance(want, (int, float)) and isinstance(lo, (int, float)) and want < lo:
        yield f"desiredCapacity {as_int(want)} is less than minSize {as_int(lo)}"
    # Warm pools (Amazon EC2 Auto Scaling user guide, "Warm pools"): not with a mixed instances
    # policy or Spot instances.
    if i.get("warmPool") and i.get("mixedInstancesPolicy"):
        yield "a warm pool cannot be added to a group with a mixed instances policy"
    if (
        not i.get("launchTemplate")
        and not i.get("mixedInstancesPolicy")
        and not i.get("launchConfiguration")
    ):
        yield "needs a launchTemplate, mixedInstancesPolicy or launchConfiguration"


@stack_rule
def _warm_pool_spot(
    resources: Sequence[Resource], _quotas: Quotas
) -> Iterable[tuple[Resource, str]]:
    """A warm pool on a group whose launch template requests Spot instances (AWS refuses)."""
    templates = {r.outputs.get("id"): r for r in resources if r.type.endswith(":LaunchTemplate")}
    for r in resources:
        if r.type != "aws:autoscaling/group:Group" or not r.inputs.get("warmPool"):
            continue
        lt = single(r.inputs.get("launchTemplate")) or {}
        template = templates.get(lt.get("id"))
        if template is None:
            continue
        market = single(template.inputs.get("instanceMarketOptions"))
        if isinstance(market, Mapping) and market.get("marketType") == "spot":
            yield r, f"a warm pool cannot use Spot instances (launch template '{template.name}')"
