"""The table of what Fargate refuses (`contracts/aws_limits.py`) covers what AWS says.

botocore's ECS and Batch models document, member by member, what Fargate does not support. Every
such sentence (found by the patterns below in the shapes a task or job definition is built from)
is cited by an entry of the table, or explained in `NOT_REFUSALS`; every botocore citation of the
table exists; every path of the table is a path of the request botocore validates.
"""

from __future__ import annotations

import re
from functools import cache

import botocore.session
import pytest

from ecs_inference.contracts import aws_limits

#: A sentence that says Fargate refuses or limits something.
_REFUSAL = re.compile(
    r"not supported|isn't supported|aren't supported|not valid|isn't valid|only support|"
    r"only valid|valid values for Fargate|\bmax\b|is required|must|isn't applicable|"
    r"shouldn't be provided|only supported if|isn't available|aren't available|"
    r"the supported [\w ]+ are",
    re.IGNORECASE,
)
#: ... about Fargate (whose tasks always use awsvpc).
_SCOPE = re.compile(r"fargate|awsvpc", re.IGNORECASE)

#: Documented Fargate sentences that are not a parameter Fargate refuses, and why.
_GRID = "required and on the grid: fargate-task-size-on-grid"
NOT_REFUSALS = {
    "ecs:RegisterTaskDefinitionRequest.cpu": _GRID,
    "ecs:RegisterTaskDefinitionRequest.memory": _GRID,
    "ecs:TaskDefinition.cpu": _GRID,
    "ecs:TaskDefinition.memory": _GRID,
    "ecs:LinuxParameters.capabilities": "supported; what may be added is KernelCapabilities.add",
    "ecs:TaskDefinition.requiresAttributes": "computed by ECS, not part of a registration",
    "ecs:PortMapping.containerPortRange": "valid in awsvpc, the mode Fargate uses",
    "batch:ContainerProperties.executionRoleArn": "a required role, not a refused parameter",
    "batch:EcsTaskProperties.executionRoleArn": "a required role, not a refused parameter",
    "batch:RuntimePlatform.cpuArchitecture": "Fargate Spot compute environments, not the job",
    "batch:RuntimePlatform.operatingSystemFamily": "Fargate Spot compute environments, not the job",
    "batch:Volume.efsVolumeConfiguration": "needs platform version 1.4.0, a launch setting",
}

ROOTS = {
    "ecs": ("RegisterTaskDefinitionRequest", "TaskDefinition"),
    "batch": ("RegisterJobDefinitionRequest", "JobDefinition"),
}
TABLES = {
    "ecs": aws_limits.FARGATE_TASK_PARAMETERS,
    "batch": aws_limits.BATCH_FARGATE_JOB_PARAMETERS,
}


@cache
def _model(service: str):
    return botocore.session.get_session().get_service_model(service)


def _structures(service: str) -> dict[str, object]:
    model, seen, todo = _model(service), {}, list(ROOTS[service])
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        shape = model.shape_for(name)
        seen[name] = shape
        if shape.type_name == "structure":
            todo += [m.name for m in shape.members.values()]
        elif shape.type_name == "list":
            todo.append(shape.member.name)
        elif shape.type_name == "map":
            todo.append(shape.value.name)
    return {n: s for n, s in seen.items() if getattr(s, "type_name", "") == "structure"}


def documented_refusals(service: str) -> dict[str, list[str]]:
    """``service:Shape.member`` -> the sentences of its documentation that limit Fargate."""
    found: dict[str, list[str]] = {}
    for name, shape in _structures(service).items():
        for member_name, member in shape.members.items():  # pyright: ignore[reportAttributeAccessIssue]
            text = re.sub(r"<[^>]+>", " ", member.documentation or "")
            for sentence in re.split(r"(?<=[.])\s+", text):
                if _SCOPE.search(sentence) and _REFUSAL.search(sentence):
                    found.setdefault(f"{service}:{name}.{member_name}", []).append(
                        " ".join(sentence.split())
                    )
    return found


def _citations(service: str) -> set[str]:
    prefix = "botocore:batch:" if service == "batch" else "botocore:"
    return {
        f"{service}:{source[len(prefix) :]}"
        for _, sources in TABLES[service].values()
        for source in sources
        if source.startswith(prefix)
    }


@pytest.mark.parametrize("service", sorted(ROOTS))
def test_every_documented_refusal_is_in_the_table_or_explained(service):
    documented = documented_refusals(service)
    assert documented, "the extraction found nothing: the patterns no longer match botocore"
    explained = {k for k in NOT_REFUSALS if k.startswith(f"{service}:")}
    missing = {k: v[0] for k, v in documented.items() if k not in _citations(service) | explained}
    assert not missing, missing
    stale = explained - documented.keys()
    assert not stale, f"NOT_REFUSALS entries botocore no longer documents: {stale}"


@pytest.mark.parametrize("service", sorted(ROOTS))
def test_every_botocore_citation_exists(service):
    model = _model(service)
    for citation in _citations(service):
        shape_name, _, member = citation.split(":", 1)[1].partition(".")
        shape = model.shape_for(shape_name)
        assert not member or member in shape.members, citation


def _resolves(shape, path: list[str]) -> bool:
    if not path:
        return True
    head, rest = path[0], path[1:]
    if shape.type_name == "map":  # a key of a map (firelens options)
        return _resolves(shape.value, rest)
    name = head.removesuffix("[]")
    if shape.type_name != "structure" or name not in shape.members:
        return False
    member = shape.members[name]
    if head.endswith("[]"):
        if member.type_name != "list":
            return False
        member = member.member
    return _resolves(member, rest)


@pytest.mark.parametrize("service", sorted(ROOTS))
def test_every_path_is_a_request_path(service):
    request = _model(service).shape_for(ROOTS[service][0])
    bad = [p for p in TABLES[service] if not _resolves(request, p.split("."))]
    assert not bad, bad


def test_accepted_values_are_valid_enum_values():
    """Where the request member is an enum, what Fargate accepts is a subset of it."""
    request = _model("ecs").shape_for("RegisterTaskDefinitionRequest")
    for path, (accepted, _) in aws_limits.FARGATE_TASK_PARAMETERS.items():
        if not accepted or isinstance(accepted[0], int):
            continue
        shape = request
        for part in path.split("."):
            if shape.type_name == "map":
                shape = shape.value
                continue
            shape = shape.members[part.removesuffix("[]")]
            if part.endswith("[]"):
                shape = shape.member
        if shape.enum:
            assert {a.lower() for a in accepted} <= {e.lower() for e in shape.enum}, path
