"""The recorded stack as the rehearsal reads it: roles with their policies, task definitions,
services and what they run on, and the resources whose own policies AWS consults.

Built once from the preview's recorded resources (type, inputs, and the ARNs and names the mocks
answered), for pulumi-aws resource types. A value unknown during preview stays `UNKNOWN`; the
checks that need it say so instead of guessing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tools.aws_requests import Resource
from tools.aws_shapes import UNKNOWN

AWS_MANAGED_POLICY = re.compile(r"^arn:aws[a-z-]*:iam::aws:policy/(?:.*/)?(?P<name>[^/]+)$")

ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ROLE_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
MANAGED_POLICY = "aws:iam/policy:Policy"
INSTANCE_PROFILE = "aws:iam/instanceProfile:InstanceProfile"
TASK_DEFINITION = "aws:ecs/taskDefinition:TaskDefinition"
SERVICE = "aws:ecs/service:Service"
CLUSTER = "aws:ecs/cluster:Cluster"
CAPACITY_PROVIDER = "aws:ecs/capacityProvider:CapacityProvider"
CLUSTER_PROVIDERS = "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"


def known(value: Any) -> bool:
    return value is not None and value != UNKNOWN


def document(value: Any) -> Any:
    """A policy document from an input (JSON text or an already-decoded mapping); UNKNOWN when
    the preview does not know it; None when absent or not JSON."""
    if value == UNKNOWN:
        return UNKNOWN
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str) and value.strip():
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return None
    return None


def listify(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


@dataclass
class Role:
    """An IAM role of the stack and every policy attached to it."""

    resource: Resource
    name: str | None
    arn: str | None
    trust: Any
    policies: list[tuple[str, Any]] = field(default_factory=list)
    """(label, document) of inline and attached policies; a document may be UNKNOWN."""
    managed: list[str] = field(default_factory=list)
    """AWS managed policies attached by name (documents resolved by the evaluator's data)."""

    @property
    def label(self) -> str:
        return self.name or self.resource.name


@dataclass(frozen=True)
class Launch:
    """Where a service's tasks run: EC2 (an ASG capacity provider or the EC2 launch type),
    FARGATE, or MANAGED_INSTANCES; with the capacity provider resource when there is one."""

    kind: str
    provider: Resource | None = None


class StackModel:
    """Index of a recorded stack for the rehearsal's checks."""

    def __init__(self, resources: Sequence[Resource], region: str, account_id: str) -> None:
        self.resources = [r for r in resources if getattr(r, "custom", True)]
        self.region = region
        self.account_id = account_id
        self.partition = (
            "aws-cn"
            if region.startswith("cn-")
            else "aws-us-gov"
            if region.startswith("us-gov-")
            else "aws"
        )
        self._by_type: dict[str, list[Resource]] = {}
        for r in self.resources:
            self._by_type.setdefault(r.type, []).append(r)

    def of(self, *types: str) -> list[Resource]:
        return [r for t in types for r in self._by_type.get(t, [])]

    @staticmethod
    def output(r: Resource, key: str) -> Any:
        outputs = getattr(r, "outputs", None) or {}
        value = r.inputs.get(key)
        return value if known(value) else outputs.get(key, value)

    def by_arn(self, arn: Any, *types: str) -> Resource | None:
        if not known(arn):
            return None
        return next((r for r in self.of(*types) if self.output(r, "arn") == arn), None)

    def by_name(self, name: Any, *types: str, key: str = "name") -> Resource | None:
        if not known(name):
            return None
        return next((r for r in self.of(*types) if self.output(r, key) == name), None)

    # -- IAM ---------------------------------------------------------------------------------
    @cached_property
    def roles(self) -> list[Role]:
        roles: list[Role] = []
        for r in self.of(ROLE):
            role = Role(
                r,
                self.output(r, "name") if known(self.output(r, "name")) else None,
                self.output(r, "arn") if known(self.output(r, "arn")) else None,
                document(r.inputs.get("assumeRolePolicy")),
            )
            for item in listify(r.inputs.get("inlinePolicies")):
                if isinstance(item, Mapping) and item.get("policy") is not None:
                    role.policies.append(
                        (str(item.get("name") or "inline"), document(item["policy"]))
                    )
            for arn in listify(r.inputs.get("managedPolicyArns")):
                self._attach(role, arn)
            roles.append(role)
        for p in self.of(ROLE_POLICY):
            role = _find(roles, p.inputs.get("role"))
            if role is not None:
                role.policies.append((p.name, document(p.inputs.get("policy"))))
        for a in self.of(ROLE_ATTACHMENT):
            role = _find(roles, a.inputs.get("role"))
            if role is not None:
                self._attach(role, a.inputs.get("policyArn"))
        for a in self.of(POLICY_ATTACHMENT):
            for name in listify(a.inputs.get("roles")):
                role = _find(roles, name)
                if role is not None:
                    self._attach(role, a.inputs.get("policyArn"))
        return roles

    def _attach(self, role: Role, policy_arn: Any) -> None:
        if not known(policy_arn):
            role.policies.append(("(attached policy unknown at preview)", UNKNOWN))
            return
        managed = AWS_MANAGED_POLICY.match(str(policy_arn))
        if managed:
            role.managed.append(managed["name"])
            return
        policy = self.by_arn(policy_arn, MANAGED_POLICY)
        if policy is not None:
            role.policies.append((policy.name, document(policy.inputs.get("policy"))))
        else:
            role.policies.append((f"{policy_arn} (not in this stack)", UNKNOWN))

    def role(self, ref: Any) -> Role | None:
        """The stack's role by name or ARN (None: unknown, or a role this stack does not own)."""
        return _find(self.roles, ref)

    def instance_profile_role(self, ref: Any) -> Role | None:
        """The role of an instance profile given by ARN or name."""
        if not known(ref):
            return None
        for p in self.of(INSTANCE_PROFILE):
            if ref in (self.output(p, "arn"), self.output(p, "name")):
                return self.role(p.inputs.get("role"))
        return None

    # -- ECS ---------------------------------------------------------------------------------
    def containers(self, task: Resource) -> list[dict[str, Any]] | None:
        """The task definition's containers (None: not known during preview)."""
        value = task.inputs.get("containerDefinitions")
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                return None
        if not isinstance(value, list) or any(not isinstance(c, Mapping) for c in value):
            return None
        return [dict(c) for c in value]

    def services_of(self, task: Resource) -> list[Resource]:
        arn = self.output(task, "arn")
        return [s for s in self.of(SERVICE) if known(arn) and s.inputs.get("taskDefinition") == arn]

    def launch(self, service: Resource) -> Launch:
        """How ECS places the service's tasks (CreateService: a launch type, else the strategy,
        else the cluster's default strategy, else EC2)."""
        launch_type = service.inputs.get("launchType")
        if known(launch_type) and launch_type:
            return Launch(str(launch_type))
        strategy = listify(service.inputs.get("capacityProviderStrategies"))
        if not strategy:
            strategy = self._cluster_default_strategy(service.inputs.get("cluster"))
        names = [s.get("capacityProvider") for s in strategy if isinstance(s, Mapping)]
        name = next((n for n in names if known(n)), None)
        if name is None:
            return Launch("EC2")
        if name in ("FARGATE", "FARGATE_SPOT"):
            return Launch("FARGATE")
        provider = self.by_name(name, CAPACITY_PROVIDER)
        if provider is not None and provider.inputs.get("managedInstancesProvider"):
            return Launch("MANAGED_INSTANCES", provider)
        return Launch("EC2", provider)

    def _cluster_default_strategy(self, cluster: Any) -> list[Any]:
        for assoc in self.of(CLUSTER_PROVIDERS):
            if assoc.inputs.get("clusterName") in (cluster, self._cluster_name(cluster)):
                return listify(assoc.inputs.get("defaultCapacityProviderStrategies"))
        return []

    def _cluster_name(self, cluster: Any) -> Any:
        found = self.by_arn(cluster, CLUSTER)
        return self.output(found, "name") if found is not None else cluster

    def cluster(self, ref: Any) -> Resource | None:
        return self.by_arn(ref, CLUSTER) or self.by_name(ref, CLUSTER)

    # -- ARNs --------------------------------------------------------------------------------
    def arn(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        return ":".join(
            (
                "arn",
                self.partition,
                service,
                self.region if region else "",
                self.account_id if account else "",
                resource,
            )
        )

    def policies(self, role: Role, resolve: Mapping[str, Any]) -> list[tuple[str, Any]]:
        """The role's documents, AWS managed ones resolved through `resolve` (name -> doc)."""
        out = list(role.policies)
        for name in role.managed:
            doc = resolve.get(name)
            out.append((name, doc if doc is not None else UNKNOWN))
        return out


def _find(roles: Sequence[Role], ref: Any) -> Role | None:
    if not known(ref):
        return None
    return next((r for r in roles if ref in (r.name, r.arn)), None)


def unknown_policies(policies: Iterable[tuple[str, Any]]) -> list[str]:
    return [label for label, doc in policies if doc == UNKNOWN or doc is None]
