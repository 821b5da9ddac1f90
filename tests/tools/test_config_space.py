"""Every stack config the schema accepts either previews or fails with config paths (exit 2).

Property-based (hypothesis): generated stacks with the longest names the schema allows, the
largest counts and pool sizes, several services sharing one pool, warm pools, log retention
and re-ranker sizes. Never a traceback, a program error (exit 3) or a request the provider or
AWS would reject without naming config (exit 4). Profiles: `ci` (CI=true) and `dev` keep the
example count small so the suite stays fast; `HYPOTHESIS_PROFILE=deep` explores more.
"""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_inference.sizing import catalog
from tools.preview import EXIT_CONFIG, EXIT_OK, run_preview

ROOT = Path(__file__).resolve().parents[2]

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    "derandomize": True,
    # Reproducible from the seed alone; nothing written into the checkout.
    "database": None,
}
settings.register_profile("ci", max_examples=12, **_COMMON)
settings.register_profile("dev", max_examples=8, **_COMMON)
settings.register_profile("deep", max_examples=200, **{**_COMMON, "derandomize": False})
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")

GPU_TYPES = sorted(t for t in catalog.INSTANCE_TYPES if t.startswith(("g", "p")))
NEURON_TYPES = sorted(t for t in catalog.INSTANCE_TYPES if t.startswith("inf2"))
ARCHITECTURES = sorted(catalog.MODEL_ARCHITECTURES)
# Mostly values CloudWatch accepts; sometimes any integer the field's bounds allow.
LOG_DAYS = st.one_of(
    st.sampled_from([1, 7, 30, 365, 3653]), st.sampled_from([1, 3653]), st.integers(1, 3653)
)
SMALL_ARCHITECTURES = sorted(
    a for a in ARCHITECTURES if any(f"-{n}b" in a for n in ("1", "3", "7", "8", "9"))
)
BIG_GPU_TYPES = [t for t in ("g6e.48xlarge", "p5.48xlarge", "p4de.24xlarge") if t in GPU_TYPES]


@st.composite
def counts(draw: st.DrawFn, largest: int) -> tuple[int, int, int]:
    """(min, desired, max): ordered most of the time, in any order sometimes."""
    values = draw(st.lists(st.integers(0, largest), min_size=3, max_size=3))
    lo, want, hi = sorted(values) if draw(st.integers(0, 4)) else values
    return lo, want, max(hi, 1)


def _name(length: int, seed: str) -> str:
    """A schema-valid name of exactly `length` characters (2-21), hyphens included."""
    body = (seed * 21)[: length - 2]
    return "a" + body + "z"


NAME_SEEDS = st.text(string.ascii_lowercase + string.digits + "-", min_size=1, max_size=6)
NAMES = st.builds(
    _name, st.one_of(st.just(21), st.integers(2, 21)), NAME_SEEDS.filter(lambda s: s != "-")
)


def _base() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]


@st.composite
def stacks(draw: st.DrawFn) -> dict[str, Any]:
    config = _base()
    platform = config["ecs-inference:platform"]
    names = draw(st.lists(NAMES, min_size=5, max_size=5, unique=True))
    gpu_pool, neuron_pool, model_a, model_b, reranker = names

    big = draw(st.booleans())

    def pool(types: list[str]) -> dict[str, Any]:
        lo = draw(st.integers(0, 3))
        spec: dict[str, Any] = {
            "instanceType": draw(st.sampled_from(types)),
            "minSize": lo,
            "maxSize": draw(st.one_of(st.integers(max(lo, 1), 12), st.just(1000))),
        }
        if draw(st.booleans()):
            spec["warmPool"] = {"minSize": draw(st.integers(0, 3))}
        return spec

    platform["gpuPools"] = {gpu_pool: pool(BIG_GPU_TYPES if big else GPU_TYPES)}
    platform["neuronPools"] = {neuron_pool: pool(NEURON_TYPES)}
    llama, neuron = platform["models"]["llama"], platform["models"]["llama-neuron"]
    largest = draw(st.sampled_from([3, 12, 1000]))
    models: dict[str, Any] = {}
    # Two vLLM services sharing the GPU pool half of the time, else one on each pool.
    shared = draw(st.booleans())
    for name in (model_a, model_b):
        spec = dict(neuron if (not shared and name == model_b) else llama)
        spec["pool"] = neuron_pool if spec["engine"] == "neuron" else gpu_pool
        if spec["engine"] == "vllm":
            spec["architecture"] = draw(
                st.sampled_from(ARCHITECTURES if big else SMALL_ARCHITECTURES)
            )
        lo, want, hi = draw(counts(largest))
        spec.update(minCount=lo, maxCount=hi, desiredCount=want)
        spec["logRetentionDays"] = draw(LOG_DAYS)
        models[name] = spec
    platform["models"] = models
    rr = dict(platform["rerankers"]["rerank"])
    lo, want, hi = draw(counts(largest))
    rr.update(minCount=lo, desiredCount=want, maxCount=hi, logRetentionDays=draw(LOG_DAYS))
    platform["rerankers"] = {reranker: rr}
    endpoint = platform["endpoint"]
    # Cognito domain prefixes (reserved words, length) and ALB idle timeouts within the schema.
    if draw(st.booleans()):
        endpoint["auth"]["domainPrefix"] = draw(
            st.one_of(
                st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?", fullmatch=True),
                st.sampled_from(["my-aws-models", "amazon", "team-cognito-x", "m" * 63]),
            )
        )
    if draw(st.booleans()):
        endpoint["idleTimeoutSeconds"] = draw(st.integers(1, 4000))
    return config


@settings(settings.get_profile(PROFILE))
@given(stack=stacks())
def test_any_accepted_config_previews_or_names_its_config_path(tmp_path_factory, stack) -> None:
    path = tmp_path_factory.mktemp("stack") / "Pulumi.gen.yaml"
    path.write_text(yaml.safe_dump({"config": stack}))
    result = run_preview("gen", stack_file=path, policy_pack=None)
    assert result.exit_code in (EXIT_OK, EXIT_CONFIG), result.error
    if result.exit_code == EXIT_CONFIG:
        assert result.error and "platform." in result.error, result.error
        assert "Traceback" not in result.error
        for finding in result.findings:
            assert finding.config_paths, finding


def test_max_count_beyond_the_pool_is_a_config_error(tmp_path: Path) -> None:
    """The regression that started this: maxCount above what the pool can hold."""
    config = _base()
    platform = config["ecs-inference:platform"]
    platform["gpuPools"]["l40s"]["maxSize"] = 1
    platform["models"]["llama"]["maxCount"] = 9
    path = tmp_path / "Pulumi.max.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    result = run_preview("max", stack_file=path, policy_pack=None)
    assert result.exit_code == EXIT_CONFIG
    assert "platform.models.llama.maxCount" in (result.error or "")
    assert result.resources == []
