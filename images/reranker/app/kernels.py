"""What the served model runs on: ORT's providers, the graph's quantised ops, the CPU's ISA.

Stdlib only (the image has no `onnx` package): the op counts come from reranker.json, where
prepare.py recorded them from the ONNX file and from ORT's optimised graph; the CPU flags and
providers are read on the host that serves, because a bundle prepared on x86 is served on Arm.

MLAS (ONNX Runtime's CPU kernels) picks its u8s8 GEMM kernel per host when ORT starts
(`onnxruntime/core/mlas/lib/platform.cpp`): on x86-64 AMX-INT8 tiles (if the OS grants tile
state), else AVX512-VNNI, else AVX-VNNI, else AVX512 core or AVX2 multiply-add; on Arm64 I8MM
(`ummla`), else the dot product (`udot`), else plain NEON. `int8_gemm_kernel` mirrors that order.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Op types that carry int8 arithmetic in a quantised graph (before and after ORT's fusions).
QUANTISED_OPS = frozenset(
    {
        "DynamicQuantizeLinear",
        "DynamicQuantizeMatMul",
        "MatMulInteger",
        "MatMulIntegerToFloat",
        "QAttention",
        "QGemm",
        "QLinearMatMul",
        "DequantizeLinear",
        "QuantizeLinear",
    }
)
#: CPU flags (as /proc/cpuinfo names them) that decide MLAS's int8 and bf16 kernels.
X86_FLAGS = ("amx_int8", "amx_bf16", "amx_tile", "avx512_vnni", "avx512_bf16", "avx_vnni")
X86_FLAGS += ("avx512bw", "avx512f", "avx2")
ARM_FLAGS = ("i8mm", "asimddp", "bf16", "sve", "sve2")


def cpu_flags(cpuinfo: str | None = None, machine: str | None = None) -> list[str]:
    """The int8/bf16-relevant ISA flags this CPU reports (Linux /proc/cpuinfo; [] elsewhere)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
    machine = machine or platform.machine()
    wanted = ARM_FLAGS if machine.lower() in ("aarch64", "arm64") else X86_FLAGS
    present: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            present.update(value.split())
    return [f for f in wanted if f in present]


def int8_gemm_kernel(flags: Sequence[str], machine: str | None = None) -> str:
    """The MLAS u8s8 GEMM kernel this CPU gets, in MLAS's order of preference.

    AMX also needs the kernel to grant tile state (arch_prctl), which MLAS requests at start;
    a host that refuses falls back to the VNNI kernel.
    """
    machine = (machine or platform.machine()).lower()
    have = set(flags)
    if machine in ("aarch64", "arm64"):
        order = [("i8mm", "I8MM (ummla)"), ("asimddp", "dot product (udot)")]
        return next((name for flag, name in order if flag in have), "NEON")
    if {"amx_tile", "amx_int8"} <= have:
        return "AMX-INT8 (VNNI fallback if the OS refuses tile state)"
    order = [
        ("avx512_vnni", "AVX512-VNNI"),
        ("avx_vnni", "AVX-VNNI"),
        ("avx512bw", "AVX512 core"),
        ("avx2", "AVX2"),
    ]
    return next((name for flag, name in order if flag in have), "SSE")


def runtime_report(
    variant: str,
    recorded: Mapping[str, Any],
    providers: Sequence[str],
    ort_version: str,
    flags: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The served variant's kernels: providers, CPU flags, the quantised op types prepare.py
    recorded (in the file and after ORT's fusions) and the int8 GEMM kernel MLAS picks here
    (null for a float graph)."""
    flags = cpu_flags() if flags is None else list(flags)
    ops = dict(recorded.get("ops", {}))
    fused = dict(recorded.get("ops_after_ort", {}))
    quantised = {op: n for op, n in {**ops, **fused}.items() if op in QUANTISED_OPS}
    return {
        "variant": variant,
        "onnxruntime": ort_version,
        "providers": list(providers),
        "machine": platform.machine(),
        "cpu_flags": flags,
        "quantised_ops": dict(sorted(quantised.items())),
        "int8_kernel": int8_gemm_kernel(flags) if quantised else None,
        "ops_after_ort": fused,
    }
