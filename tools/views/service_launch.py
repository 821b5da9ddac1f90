"""The launch an ECS service stores after `up` when its program set neither a launch type nor a
capacity provider strategy.

ECS then uses the cluster's default capacity provider strategy, or the EC2 launch type when the
cluster has none, and DescribeServices answers with what it used: the strategy
(`capacityProviderStrategy`) or `launchType: EC2`. terraform-provider-aws stores that answer
(`internal/service/ecs/service.go`, the read: `d.Set("launch_type", service.LaunchType)` and
`d.Set("capacity_provider_strategy", flattenCapacityProviderStrategy(...))`), so the `update`
and `state` views hold it. The default strategy comes from the stack's
`aws:ecs/clusterCapacityProviders` for that cluster; a cluster outside
the stack has a default the preview cannot know, and nothing is stored (never guessed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tools.views.shape import strip_defaults

SERVICE = "aws:ecs/service:Service"
CLUSTER = "aws:ecs/cluster:Cluster"
CLUSTER_PROVIDERS = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
#: A cluster's identities a service's `cluster` (ARN) or an association's `clusterName` names.
_IDENTITIES = ("arn", "id", "name")


def store_described_launches(resources: Iterable[Any]) -> None:
    """Set, in place, the outputs of each pulumi-aws service that sets neither `launchType`
    nor `capacityProviderStrategies` to what DescribeServices returns (see the module)."""
    resources = list(resources)
    clusters = [r for r in resources if r.type == CLUSTER]
    defaults: dict[str, list[Any]] = {}
    for assoc in (r for r in resources if r.type == CLUSTER_PROVIDERS):
        strategy = list(assoc.inputs.get("defaultCapacityProviderStrategies") or ())
        for cluster in _named(assoc, "clusterName", clusters):
            defaults[cluster.urn] = strategy
    for service in (r for r in resources if r.type == SERVICE and r.custom):
        inputs = service.inputs
        if inputs.get("launchType") or inputs.get("capacityProviderStrategies"):
            continue
        named = _named(service, "cluster", clusters)
        if len(named) != 1:
            continue  # outside the stack (or the account's default cluster): not known
        strategy = defaults.get(named[0].urn)
        if strategy:
            service.outputs["capacityProviderStrategies"] = [
                {"base": 0.0, "weight": 0.0, **strip_defaults(dict(item))} for item in strategy
            ]
            service.outputs["launchType"] = ""
        else:
            service.outputs["launchType"] = "EC2"


def _named(resource: Any, key: str, clusters: list[Any]) -> list[Any]:
    """The clusters `resource`'s input `key` names: by recorded dependency, else by value."""
    urns = set((resource.property_dependencies or {}).get(key) or ())
    found = [c for c in clusters if c.urn in urns]
    if found:
        return found
    value = resource.inputs.get(key)
    return [c for c in clusters if value and value in _identities(c.outputs)]


def _identities(outputs: Mapping[str, Any]) -> set[Any]:
    return {outputs.get(key) for key in _IDENTITIES} - {None}
