"""Fixtures the engine tests share: each pinned release's real flags, read from its wheel."""

from __future__ import annotations

import pytest

from tools import engine_flags, engine_tables


@pytest.fixture(scope="module")
def vllm_gpu_flags() -> engine_flags.FlagSet:
    return engine_flags.vllm_serve_flags(engine_flags.source_root(engine_flags.VLLM_GPU))


@pytest.fixture(scope="module")
def neuron_flags() -> tuple[engine_flags.FlagSet, engine_flags.FlagSet]:
    own = engine_flags.optimum_neuron_serve_flags(
        engine_flags.source_root(engine_flags.OPTIMUM_NEURON)
    )
    forwarded = engine_flags.vllm_serve_flags(
        engine_flags.source_root(engine_flags.VLLM_NEURON), "vllm 0.11.0"
    )
    return own, forwarded


@pytest.fixture(scope="module")
def sglang_wheel_flags() -> engine_flags.FlagSet:
    return engine_tables.sglang_serve_flags(engine_flags.source_root(engine_tables.SGLANG))
