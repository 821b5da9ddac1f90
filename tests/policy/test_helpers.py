"""Pure helpers of the rule modules (imported directly; the pack itself is never imported)."""

from __future__ import annotations

import pytest
from guardrails.containers import DEFAULT_MARKERS, looks_secret
from guardrails.deployment import deploy_peak_instances
from guardrails.fargate import cheapest_size_for, grid_problem, platform_version_ok
from guardrails.resources import (
    parse_cpu_units,
    parse_memory_mib,
)

GB = 1024


@pytest.mark.parametrize(
    ("cpu", "memory"),
    [
        (256, 512),
        (256, 2 * GB),
        (512, 1 * GB),
        (512, 4 * GB),
        (1024, 8 * GB),
        (2048, 16 * GB),
        (4096, 30 * GB),
        (8192, 16 * GB),
        (8192, 60 * GB),
        (16384, 32 * GB),
        (16384, 120 * GB),
        (32768, 60 * GB),
        (32768, 244 * GB),
    ],
)
def test_grid_edges_are_valid(cpu, memory):
    assert grid_problem(cpu, memory) is None


@pytest.mark.parametrize(
    ("cpu", "memory", "why"),
    [
        (256, 3 * GB, "not valid with cpu 256"),
        (512, 512, "not valid with cpu 512"),
        (1024, 9 * GB, "not valid with cpu 1024"),
        (4096, 31 * GB, "not valid with cpu 4096"),
        (8192, 18 * GB, "not valid with cpu 8192"),
        (16384, 36 * GB, "not valid with cpu 16384"),
        (32768, 64 * GB, "not valid with cpu 32768"),
        (3072, 8 * GB, "cpu 3072 is not a Fargate size"),
        (None, 8 * GB, "needs task-level cpu and memory"),
    ],
)
def test_grid_rejects_off_grid_sizes(cpu, memory, why):
    assert why in grid_problem(cpu, memory)


def test_cheapest_size_for_memory():
    assert cheapest_size_for(3000) == (512, 3 * GB)
    assert cheapest_size_for(12 * GB) == (2048, 12 * GB)
    assert cheapest_size_for(245 * GB) is None


@pytest.mark.parametrize(
    ("raw", "cpu", "mem"),
    [("1024", 1024, 1024), (".25 vCPU", 256, 256), ("2 vCPU", 2048, 2048), (4096.0, 4096, 4096)],
)
def test_parse_units(raw, cpu, mem):
    assert parse_cpu_units(raw) == cpu
    assert parse_memory_mib(raw.replace("vCPU", "GB") if isinstance(raw, str) else raw) == mem


def test_platform_versions():
    assert platform_version_ok(None) and platform_version_ok("LATEST")
    assert platform_version_ok("1.4.0") and not platform_version_ok("1.3.0")


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("OPENAI_API_KEY", True),
        ("db-password", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("MAX_NUM_BATCHED_TOKENS", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("KEYCLOAK_URL", False),
        ("MODEL_ID", False),
    ],
)
def test_secret_names(name, secret):
    assert looks_secret(name, DEFAULT_MARKERS) is secret


def test_deploy_peak():
    assert deploy_peak_instances(2, 200, 1) == (2, 4)
    assert deploy_peak_instances(3, 150, 1) == (3, 4)  # floor(4.5)
    assert deploy_peak_instances(2, 100, 1) == (2, 2)
    assert deploy_peak_instances(4, 200, 2) == (2, 4)
    assert deploy_peak_instances(0, 200, 1) == (0, 0)
