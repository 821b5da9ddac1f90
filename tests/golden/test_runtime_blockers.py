"""Two requests AWS accepts at preview but that stop the reference stacks at `up` or at task start.

- ECS (the agent on EC2, Fargate itself) pulls each container's image with the task's execution
  role before any container starts; a sidecar whose repository the role does not grant stops the
  task with CannotPullContainerError. Each task definition's containers are joined to the inline
  policy of the role its `executionRoleArn` names.
- PutClusterCapacityProviders refuses a Managed Instances capacity provider ("Amazon ECS Managed
  Instances doesn't support this", botocore's ECS documentation of the operation): such a
  provider is created inside its cluster and must not be in the cluster's association.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecs_inference import iam
from tests.stacks import REFERENCE_STACKS
from tools.preview import PreviewResult, run_preview

ROOT = Path(__file__).resolve().parents[2]
STACKS = REFERENCE_STACKS


def granted_repositories(document: str) -> set[str]:
    out: set[str] = set()
    for statement in json.loads(document)["Statement"]:
        actions = statement["Action"]
        if "ecr:BatchGetImage" in (actions if isinstance(actions, list) else [actions]):
            resources = statement["Resource"]
            out |= set(resources if isinstance(resources, list) else [resources])
    return out


@pytest.fixture(scope="module", params=STACKS)
def preview(request: pytest.FixtureRequest) -> PreviewResult:
    result = run_preview(request.param, program_dir=ROOT, policy_pack=None)
    assert result.ok, result.error
    return result


def test_execution_role_grants_every_container_image(preview: PreviewResult) -> None:
    result, stack = preview, preview.stack
    policies: dict[str, set[str]] = {}
    for r in result.resources:
        if r.type == "aws:iam/rolePolicy:RolePolicy":
            policies.setdefault(r.inputs["role"], set()).update(
                granted_repositories(r.inputs["policy"])
            )
    checked = 0
    for task in (r for r in result.resources if r.type == "aws:ecs/taskDefinition:TaskDefinition"):
        role = task.inputs["executionRoleArn"].rsplit("/", 1)[-1]
        for container in json.loads(task.inputs["containerDefinitions"]):
            repository = iam.ecr_repository_arn(container["image"])
            if repository is None:
                continue
            checked += 1
            assert repository in policies.get(role, set()), (
                f"{stack}: task {task.name} container {container['name']}: role {role} "
                f"cannot pull {repository}"
            )
    assert checked, f"{stack}: no ECR image in any task definition"


def test_no_managed_instances_provider_in_the_cluster_association(preview: PreviewResult) -> None:
    providers = preview.resources
    cluster_scoped = {
        r.outputs["name"]
        for r in providers
        if r.type == "aws:ecs/capacityProvider:CapacityProvider"
        and "managedInstancesProvider" in r.inputs
    }
    for association in (
        r
        for r in providers
        if r.type == "aws:ecs/clusterCapacityProviders:ClusterCapacityProviders"
    ):
        refused = cluster_scoped & set(association.inputs["capacityProviders"])
        assert not refused, f"{preview.stack}: {association.name} associates {sorted(refused)}"
    if preview.stack == "prod":
        assert cluster_scoped, "prod has a Managed Instances pool"
