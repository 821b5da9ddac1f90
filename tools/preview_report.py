"""The offline preview's report: the resource tree with each resource's key settings, the
decisions and the cost the program exported, the engine views' and the policy pack's findings, as
text (`render_text`) or as a Mermaid graph (`render_mermaid`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tools.recording import UNKNOWN, RecordedResource

if TYPE_CHECKING:
    from tools.preview import PreviewResult

# What the tree shows for each resource type: the inputs that carry a decision a reviewer
# should see (sizing, timeouts, exposure), as (label, camelCase input path).
KEY_INPUTS: dict[str, tuple[tuple[str, str], ...]] = {
    "awsx:ec2:Vpc": (
        ("cidr", "cidrBlock"),
        ("azs", "numberOfAvailabilityZones"),
        ("nat", "natGateways.strategy"),
    ),
    "aws:ec2/vpcEndpoint:VpcEndpoint": (("service", "serviceName"), ("type", "vpcEndpointType")),
    "aws:ecs/cluster:Cluster": (("insights", "settings.0.value"),),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        ("type", "instanceType"),
        ("imds", "metadataOptions.httpTokens"),
        ("root GiB", "blockDeviceMappings.0.ebs.volumeSize"),
    ),
    "aws:autoscaling/group:Group": (
        ("min", "minSize"),
        ("max", "maxSize"),
        ("protect", "protectFromScaleIn"),
    ),
    "aws:ecs/capacityProvider:CapacityProvider": (
        ("target %", "autoScalingGroupProvider.managedScaling.targetCapacity"),
        ("draining", "autoScalingGroupProvider.managedDraining"),
    ),
    "aws:lb/loadBalancer:LoadBalancer": (
        ("internal", "internal"),
        ("idle timeout s", "idleTimeout"),
    ),
    "aws:lb/listener:Listener": (("port", "port"), ("protocol", "protocol"), ("ssl", "sslPolicy")),
    "aws:lb/listenerRule:ListenerRule": (
        ("priority", "priority"),
        ("first action", "actions.0.type"),
    ),
    "aws:lb/targetGroup:TargetGroup": (
        ("type", "targetType"),
        ("dereg delay s", "deregistrationDelay"),
        ("health", "healthCheck.path"),
    ),
    "aws:ecs/taskDefinition:TaskDefinition": (
        ("cpu", "cpu"),
        ("memory", "memory"),
        ("compat", "requiresCompatibilities"),
    ),
    "aws:ecs/service:Service": (
        ("desired", "desiredCount"),
        ("grace s", "healthCheckGracePeriodSeconds"),
        ("max %", "deploymentMaximumPercent"),
        ("min %", "deploymentMinimumHealthyPercent"),
    ),
    "aws:appautoscaling/policy:Policy": (
        ("target", "targetTrackingScalingPolicyConfiguration.targetValue"),
        ("out s", "targetTrackingScalingPolicyConfiguration.scaleOutCooldown"),
        ("in s", "targetTrackingScalingPolicyConfiguration.scaleInCooldown"),
        (
            "metric",
            "targetTrackingScalingPolicyConfiguration.predefinedMetricSpecification"
            ".predefinedMetricType",
        ),
        (
            "math",
            "targetTrackingScalingPolicyConfiguration.customizedMetricSpecification.metrics.2"
            ".expression",
        ),
    ),
    "aws:cloudwatch/metricAlarm:MetricAlarm": (
        ("metric", "metricName"),
        ("math", "metricQueries.2.expression"),
        ("threshold", "threshold"),
        ("periods", "evaluationPeriods"),
    ),
    "aws:cloudwatch/eventRule:EventRule": (("name", "name"),),
    "aws:cloudwatch/dashboard:Dashboard": (("name", "dashboardName"),),
    "aws:sns/topic:Topic": (("kms", "kmsMasterKeyId"),),
}


def lookup(inputs: Any, path: str) -> Any:
    """`a.b.0.c` into nested dicts/lists; None when absent."""
    value = inputs
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return None
    return value


def _fmt(value: Any) -> str:
    if value == UNKNOWN:
        return "(known after apply)"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ",".join(_fmt(v) for v in value)
    return str(value)


def summary(resource: RecordedResource) -> str:
    parts = []
    for label, path in KEY_INPUTS.get(resource.type, ()):
        value = lookup(resource.inputs, path)
        if value is not None:
            parts.append(f"{label}={_fmt(value)}")
    return " ".join(parts)


def render_tree(resources: list[RecordedResource]) -> list[str]:
    children: dict[str | None, list[RecordedResource]] = {}
    urns = {r.urn for r in resources}
    for r in resources:
        parent = r.parent if r.parent in urns else None
        children.setdefault(parent, []).append(r)

    lines: list[str] = []

    def walk(parent: str | None, prefix: str) -> None:
        # Registration order depends on when outputs resolve; sort for a stable, diffable tree.
        kids = sorted(children.get(parent, []), key=lambda r: (r.custom, r.type, r.name))
        for i, r in enumerate(kids):
            last = i == len(kids) - 1
            branch = "└─ " if last else "├─ "
            detail = summary(r)
            lines.append(f"{prefix}{branch}{r.type} {r.name}" + (f"  [{detail}]" if detail else ""))
            walk(r.urn, prefix + ("   " if last else "│  "))

    walk(None, "")
    return lines


def render_decisions(outputs: dict[str, Any]) -> list[str]:
    decisions = outputs.get("decisions")
    if not isinstance(decisions, dict):
        return []
    lines = []
    for subject, items in decisions.items():
        lines.append(f"  {subject}:")
        lines += [f"    - {item}" for item in items]
    return lines


def render_cost(outputs: dict[str, Any]) -> list[str]:
    """The program's `cost` output (components/cost.py `to_json`) as a table: one row per
    category, a column per scale point."""
    doc = outputs.get("cost")
    if not isinstance(doc, dict) or not isinstance(doc.get("points"), dict):
        return []
    points = [p for p in ("minimum", "steady", "maximum") if p in doc["points"]]
    categories: list[str] = []
    for p in points:
        categories += [c for c in doc["points"][p].get("byCategory", {}) if c not in categories]
    lines = [f"  {'':<22}" + "".join(f"{p:>14}" for p in points)]
    for c in categories:
        cells = [doc["points"][p].get("byCategory", {}).get(c, 0.0) for p in points]
        lines.append(
            f"  {c:<22}" + "".join(f"{'$' + format(v, '.3f'):>14}" for v in cells) + "  /h"
        )
    for label, key, fmt in (
        ("total per hour", "usdPerHour", ".2f"),
        ("total per month", "usdPerMonth", ",.0f"),
    ):
        cells = [doc["points"][p].get(key, 0.0) for p in points]
        lines.append(f"  {label:<22}" + "".join(f"{'$' + format(v, fmt):>14}" for v in cells))
    if doc.get("excursionToMaximumUsd") is not None:
        lines.append(
            f"  one excursion to maximum costs at least ${doc['excursionToMaximumUsd']:.2f} more: "
            f"extra instances stay {doc.get('scaleInLagMinutes', 15)} min after the load falls"
        )
    lines += [
        f"  one rollout of {r['service']} costs ~${r['usd']:.2f}: {r['how']}"
        for r in doc.get("rollouts", [])
    ]
    lines += [f"  note: {n}" for n in doc.get("notes", [])]
    lines += [f"  assumption: {a}" for a in doc.get("assumptions", [])]
    if doc.get("pricesAsOf"):
        lines.append(f"  prices as of {doc['pricesAsOf']}: {doc.get('pricesSource', '')}")
    return lines


def render_views(result: PreviewResult) -> list[str]:
    """The policy report of each view, and the mandatory verdicts that differ between views
    (a rule that decides differently on a first preview than on the deployed stack)."""
    lines: list[str] = []
    verdicts: dict[str, set[tuple[str, str | None]]] = {}
    for view in result.views:
        found = [v for v in result.violations if v.view == view]
        verdicts[view] = {
            (v.policy_name, v.urn) for v in found if v.enforcement_level == "mandatory"
        }
        lines += ["", f"Policy report ({view}: {VIEW_MEANING[view]}):", *render_policy(found)]
    every = set.union(*verdicts.values()) if verdicts else set()
    differ = sorted(
        (p, u or "") for p, u in every if any((p, u) not in v for v in verdicts.values())
    )
    if differ:
        lines += ["", "Mandatory verdicts that differ between views:"]
        for policy, urn in differ:
            where = urn.split("::")[-1] if urn else "(stack)"
            seen = [view for view, v in verdicts.items() if (policy, urn or None) in v]
            lines.append(f"  {policy} — {where}: only in {', '.join(seen)}")
    return lines


VIEW_MEANING = {
    "new": "first preview of a new stack",
    "update": "preview of the deployed stack",
    "state": "the deployed stack's stored state",
}


def render_policy(violations: list[Any]) -> list[str]:
    if not violations:
        return ["  no violations"]
    order = {"mandatory": 0, "remediate": 1, "advisory": 2}
    lines = []
    for v in sorted(violations, key=lambda v: (order.get(v.enforcement_level, 3), v.policy_name)):
        where = v.urn.split("::")[-1] if v.urn else "(stack)"
        lines.append(f"  [{v.enforcement_level}] {v.policy_name} — {where}")
        for line in (v.message or v.description).strip().splitlines():
            if line.strip():
                lines.append(f"      {line.strip()}")
    return lines


def render_mermaid(resources: list[RecordedResource]) -> str:
    """A flowchart of components and the resources that carry traffic or capacity."""
    shown = {
        "aws:lb/loadBalancer:LoadBalancer",
        "aws:lb/listener:Listener",
        "aws:lb/targetGroup:TargetGroup",
        "aws:ecs/service:Service",
        "aws:ecs/capacityProvider:CapacityProvider",
        "aws:autoscaling/group:Group",
        "aws:ecs/cluster:Cluster",
        "awsx:ec2:Vpc",
        "aws:cognito/userPool:UserPool",
        # AI gateway, private routes and queue workers
        "aws:servicediscovery/httpNamespace:HttpNamespace",
        "aws:sqs/queue:Queue",
        "aws:rds/cluster:Cluster",
        # day 2: what watches the services (its edges: the services and target groups it reads)
        "aws:cloudwatch/dashboard:Dashboard",
        "aws:sns/topic:Topic",
    }
    alarm = "aws:cloudwatch/metricAlarm:MetricAlarm"
    # Ids by URN order, not registration order (which varies with async resolution), so the
    # diagram diffs cleanly between runs.
    resources = sorted(resources, key=lambda r: r.urn)
    ids = {r.urn: f"n{i}" for i, r in enumerate(resources)}
    lines = ["flowchart TD"]
    by_urn = {r.urn: r for r in resources}
    alarm_edges: set[tuple[str, str]] = set()
    for r in resources:
        if not r.custom and r.type != "awsx:ec2:Vpc":
            lines.append(f'  subgraph {ids[r.urn]}["{r.type.split(":")[-1]} {r.name}"]')
            for kid in resources:
                if kid.parent == r.urn and kid.type in shown:
                    lines.append(f'    {ids[kid.urn]}["{kid.type.split(":")[-1]}<br/>{kid.name}"]')
            # Alarms as one node per component (a stack has dozens), pointing at what they
            # notify (the alarm topic) when it is drawn.
            alarms = [kid for kid in resources if kid.parent == r.urn and kid.type == alarm]
            if alarms:
                node = f"{ids[r.urn]}_alarms"
                lines.append(f'    {node}["{len(alarms)} MetricAlarms"]')
                notified = {
                    dep
                    for a in alarms
                    for dep in a.dependencies
                    if dep in by_urn and by_urn[dep].type in shown
                }
                alarm_edges.update((node, ids[dep]) for dep in notified)
            lines.append("  end")
    edges = {
        (ids[dep], ids[r.urn])
        for r in resources
        if r.type in shown
        for dep in r.dependencies
        if dep in by_urn and by_urn[dep].type in shown
    }
    lines += [f"  {a} --> {b}" for a, b in sorted(edges)]
    lines += [f"  {a} -.-> {b}" for a, b in sorted(alarm_edges)]
    return "\n".join(lines)


def render_text(result: PreviewResult) -> str:
    out = [f"Offline preview of stack '{result.stack}' (mock runtime, no cloud calls)", ""]
    if result.stack_notes:
        out += ["Stack config resolved offline:", *(f"  - {n}" for n in result.stack_notes), ""]
    if result.error:
        tail = (
            "Nothing would be created: the resources above are what the program declared."
            if result.findings
            else "No resources were registered."
        )
        out += [result.error, "", tail]
        return "\n".join(out)
    if not result.resources and result.views == ("state",):
        out[0] = f"Audit of the exported state of stack '{result.stack}' (no program run)"
    custom = sum(1 for r in result.resources if r.custom)
    out.append(f"Resources ({custom} to create, {len(result.resources) - custom} components):")
    out += render_tree(result.resources)
    decisions = render_decisions(result.outputs)
    if decisions:
        out += ["", "Decisions:", *decisions]
    cost = render_cost(result.outputs)
    if cost:
        out += ["", "Cost (USD, on-demand list prices):", *cost]
    plain_outputs = {k: v for k, v in result.outputs.items() if k not in ("decisions", "cost")}
    if plain_outputs:
        out += ["", "Outputs:"]
        out += [
            f"  {k}: {_fmt(v) if v == UNKNOWN else json.dumps(v) if not isinstance(v, str) else v}"
            for k, v in plain_outputs.items()
        ]
    if result.advisories:
        out += [
            "",
            "Plan advisories (decisions that predict an outage or a cross-region cost; `pulumi up` "
            "warns too):",
        ]
        out += [f"  [advisory] {a}" for a in result.advisories]
    if result.notes:
        out += ["", "Runtime rehearsal could not check (known after apply):"]
        out += [f"  - {n}" for n in result.notes]
    if result.views:
        out += render_views(result)
    else:
        # Every run of the pack names its views; none: the pack was not run.
        out += ["", "Policy report: the policy pack did not run (`--no-policy`, or no pack given)"]
    mandatory = sum(1 for v in result.violations if v.enforcement_level == "mandatory")
    advisory = sum(1 for v in result.violations if v.enforcement_level == "advisory")
    across = f" across {len(result.views)} views" if len(result.views) > 1 else ""
    planned = len(result.advisories)
    if planned:
        out += [
            "",
            f"{mandatory} mandatory, {advisory + planned} advisory finding(s): {planned} from "
            f"the plan, {advisory} from the policy pack{across}.",
        ]
    else:
        out += ["", f"{mandatory} mandatory, {advisory} advisory policy finding(s){across}."]
    if mandatory:
        out += mandatory_outcome(result.views)
    return "\n".join(out)


def mandatory_outcome(views: Sequence[str]) -> list[str]:
    """What mandatory violations do on each path that runs the pack (pulumi/pulumi
    pkg/backend/apply.go: `pulumi up` previews first unless `--skip-preview`; the engine runs
    stack policies, AnalyzeStack, after the last step of the operation it runs)."""
    if tuple(views) == ("state",):
        return [
            "Audit FAILED: the stack's state as deployed violates mandatory policies. An audit "
            "stops nothing (the resources exist): fix the program and update the stack."
        ]
    return [
        "Preview FAILED: mandatory policy violations. `pulumi preview --policy-pack policy` "
        "fails, and `pulumi up --policy-pack policy` stops in its own preview before any "
        "change; `pulumi up --skip-preview` (pulumi/actions' `command: up`) stops at a "
        "resource policy only at that resource, after what comes before it exists, and "
        "reports stack policies only after every change is made."
    ]


def rejection_outcome(checks: Iterable[str]) -> str:
    """What a real run does with findings of these kinds (`Finding.check`)."""
    kinds = set(checks)
    parts = []
    if "name" in kinds:
        parts.append("the provider refuses the names in `pulumi preview`")
    if kinds - {"name", "runtime"}:
        parts.append(
            "AWS refuses the requests during `pulumi up`, at that resource, after creating what "
            "comes before it"
        )
    if "runtime" in kinds:
        parts.append(
            "what the runtime rehearsal finds passes `pulumi up` and fails once the stack runs"
        )
    return "; ".join(parts)
