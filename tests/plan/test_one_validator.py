"""The plan validates a stack's config once: the schema checks each key, the plan each decision.
The spec checks a program that builds specs by hand calls (`validate_model_service`,
`validate_reranker`, `pool_problems`) are not run again on the plan's own specs, so every spec
the plan builds from a config it accepts must already pass them. Edits of the reference stacks,
drawn from every scalar key of the endpoint, model, re-ranker and pool schemas at and around
their own bounds, or removing keys, look for a config the plan accepts and a spec check refuses:
each would be a check the stack's path skips. The endpoint has no spec: its input
(`EndpointConfig`) is the one place its keys are checked, for a stack and a program alike."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.pools import PoolConfig
from ecs_inference.config.rerankers import RerankerConfig
from ecs_inference.endpoint.input import EndpointConfig
from ecs_inference.models.input import ModelConfig
from ecs_inference.plan import PLATFORM_NAME, Plan
from ecs_inference.plan.pools import pool_resource_name
from ecs_inference.specs.pool import pool_problems
from ecs_inference.specs.service import validate_model_service, validate_reranker
from tests.stack_config import DELETE, issues_of, mutate, plan_of, reference

STACKS = ("dev", "prod", "agents", "engines")
CHECKED_SECTIONS = ("endpoint", "models", "rerankers", "gpuPools", "neuronPools")


def spec_problems(plan: Plan) -> list[str]:
    """What the spec checks say of the plan's specs (empty: they pass)."""
    found: list[str] = []
    checks = [
        *((validate_model_service, f"platform.models.{n}", s) for n, s in plan.models.items()),
        *((validate_reranker, f"platform.rerankers.{n}", s) for n, s in plan.rerankers.items()),
    ]
    for check, where, spec in checks:
        try:
            check(where, spec)
        except ValueError as exc:
            found.append(str(exc))
    pools = (("gpuPools", plan.gpu_pools, "nvidia"), ("neuronPools", plan.neuron_pools, "neuron"))
    for section, specs, kind in pools:
        for name, spec in specs.items():
            problems = pool_problems(pool_resource_name(PLATFORM_NAME, name), spec, kind)
            found += [f"platform.{section}.{name}.{k}: {m}" for k, m in problems]
    return found


_NUMBERS = [
    0,
    1,
    2,
    3,
    4,
    6,
    7,
    13,
    14,
    29,
    30,
    31,
    59,
    60,
    99,
    100,
    101,
    119,
    120,
    121,
    127,
    128,
    200,
    201,
    255,
    256,
    511,
    512,
    1000,
    1023,
    1024,
    2047,
    2048,
    3599,
    3600,
    3601,
    3653,
    4000,
    4001,
    8192,
    16384,
    65535,
    86400,
]
_FRACTIONS = [0.05, 0.31, 0.5, 0.9, 0.95, 0.98, 1.0, 1.5, 50.0, 100.0]
_TEXT = [
    "x",
    "-x",
    "a.b",
    "Upper",
    "1.3.0",
    "1.4.0",
    "LATEST",
    "ELBSecurityPolicy-2016-08",
    "ELBSecurityPolicy-TLS13-1-2-2021-06",
    "models.example.internal",
    "s3://b/p/",
]


def _bounds(info: FieldInfo) -> list[float]:
    """The numbers a field's own bounds name, and their neighbours."""
    out: list[float] = []
    for m in info.metadata:
        for attr in ("ge", "gt", "le", "lt"):
            if (b := getattr(m, attr, None)) is not None:
                out += [b - 1, b, b + 1]
    return out


def _scalar(annotation: object, info: FieldInfo) -> st.SearchStrategy[object] | None:
    """Values for a scalar key of type `annotation`, or None for a section, list or mapping."""
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _scalar(args[0], info)
    if origin is typing.Annotated:
        return _scalar(args[0], info)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.sampled_from(sorted({*_NUMBERS, *(int(b) for b in _bounds(info))}))
    if annotation is float:
        return st.sampled_from(sorted({*_FRACTIONS, *_NUMBERS, *_bounds(info)}))
    if annotation is str:
        return st.sampled_from(_TEXT)
    return None


def _section(annotation: object) -> type[BaseModel] | None:
    for a in (annotation, *typing.get_args(annotation)):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def _keys(section: type[BaseModel], prefix: str) -> Iterator[tuple[str, st.SearchStrategy]]:
    """(config path, values) of every scalar key of `section` and of its subsections."""
    for name, info in section.model_fields.items():
        path = f"{prefix}.{info.alias or name}"
        if (sub := _section(info.annotation)) is not None:
            yield from _keys(sub, path)
        elif (values := _scalar(info.annotation, info)) is not None:
            yield path, values


def _checked_keys(raw: dict) -> list[tuple[str, st.SearchStrategy]]:
    """Every scalar key of the endpoint, and of each model and re-ranker the stack has."""
    keys = list(_keys(EndpointConfig, "endpoint"))
    for name in raw.get("models", {}):
        keys += _keys(ModelConfig, f"models.{name}")
    for name in raw.get("rerankers", {}):
        keys += _keys(RerankerConfig, f"rerankers.{name}")
    for section in ("gpuPools", "neuronPools"):
        for name in raw.get(section, {}):
            keys += _keys(PoolConfig, f"{section}.{name}")
    return keys


def _set_keys(node: object, prefix: str) -> Iterator[str]:
    """Every key the reference stack sets under `prefix` (a section or a value)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{prefix}{key}"
            yield from _set_keys(value, f"{prefix}{key}.")


@st.composite
def edited_stack(draw: st.DrawFn) -> tuple[str, dict]:
    """A reference stack with up to four keys set to other values or removed."""
    stack = draw(st.sampled_from(STACKS))
    raw = reference(stack)
    keys = _checked_keys(raw)
    removable = [k for k in _set_keys(raw, "") if k.split(".")[0] in CHECKED_SECTIONS]
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            path, values = draw(st.sampled_from(keys))
            raw = mutate(raw, path, draw(values))
        elif present := [k for k in removable if _has(raw, k)]:
            raw = mutate(raw, draw(st.sampled_from(present)), DELETE)
    return stack, raw


def _has(raw: dict, path: str) -> bool:
    node: object = raw
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


@pytest.mark.parametrize("stack", STACKS)
def test_the_reference_stacks_specs_pass_the_spec_checks(stack: str) -> None:
    assert spec_problems(plan_of(reference(stack), stack)) == []


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(edited_stack())
def test_a_config_the_plan_accepts_makes_specs_the_spec_checks_accept(case: tuple[str, dict]):
    stack, raw = case
    try:
        plan = plan_of(raw, stack)
    except ConfigError:
        return
    assert spec_problems(plan) == []


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("models.llama.logRetentionDays", 13, "not a CloudWatch retention value"),
        ("rerankers.rerank.logRetentionDays", 127, "not a CloudWatch retention value"),
        ("endpoint.sslPolicy", "ELBSecurityPolicy-2016-08", "not a TLS 1.3 policy"),
        ("endpoint.auth.domainPrefix", "a.b", "lowercase letters, digits or '-'"),
        ("endpoint.auth.domainPrefix", "my-cognito-login", "reserved by Cognito"),
        ("endpoint.auth.apiScopes", ["invoke", "invoke"], "lists a scope twice"),
    ],
)
def test_the_schema_refuses_at_the_key_what_only_a_spec_check_used_to(key, value, words):
    issues = issues_of(mutate(reference("dev"), key, value), "dev")
    assert [i.path for i in issues] == [f"platform.{key}"], issues
    assert words in issues[0].message


def test_a_need_below_the_image_floor_is_sized_at_the_floor() -> None:
    raw = reference("dev")
    rr = raw["rerankers"]["rerank"]
    for exact in ("cpu", "memoryMib"):
        rr.pop(exact)
    rr |= {"needMemoryMib": 256, "needVcpu": 0.25}
    spec = plan_of(raw, "dev").rerankers["rerank"]
    assert (spec.cpu, spec.memory_mib) == (256, 1024)
    assert validate_reranker("platform.rerankers.rerank", spec).memory_mib == 1024
