"""Fixtures the engine tests share: each pinned release's real flags, read from its wheel."""

from __future__ import annotations

import pytest

from tools import engine_flags
from tools.sources import sglang as sglang_source
from tools.sources import vllm as vllm_source


@pytest.fixture(scope="module")
def vllm_gpu_flags() -> engine_flags.FlagSet:
    return vllm_source.vllm_serve_flags(engine_flags.source_root(vllm_source.VLLM_GPU))


@pytest.fixture(scope="module")
def neuron_flags() -> tuple[engine_flags.FlagSet, engine_flags.FlagSet]:
    own = vllm_source.optimum_neuron_serve_flags(
        engine_flags.source_root(vllm_source.OPTIMUM_NEURON)
    )
    forwarded = vllm_source.vllm_serve_flags(
        engine_flags.source_root(vllm_source.VLLM_NEURON), "vllm 0.11.0"
    )
    return own, forwarded


@pytest.fixture(scope="module")
def sglang_wheel_flags() -> engine_flags.FlagSet:
    return sglang_source.sglang_serve_flags(engine_flags.source_root(sglang_source.SGLANG))
