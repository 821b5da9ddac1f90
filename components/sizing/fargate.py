"""Fargate sizing: a (cpu, memory) pair on the Fargate grid, or the cheapest one for a need."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

from ecs_inference.contracts.aws_limits import (
    FARGATE_PLATFORM_1_4_MIN_CPU,
    FARGATE_TASK_SIZES,
)
from ecs_inference.sizing import catalog
from ecs_inference.sizing.memory import SizingError, non_negative, positive_int

CpuArchitecture = Literal["ARM64", "X86_64"]
"""A Fargate task's CPU architecture (`runtimePlatform.cpuArchitecture`)."""


@dataclass(frozen=True)
class FargateSize:
    """A task size on the Fargate grid; ``cpu`` in CPU units (1024 = 1 vCPU), memory in MiB."""

    cpu: int
    memory_mib: int
    needs_platform_1_4: bool
    usd_per_hour: float

    @property
    def vcpu(self) -> float:
        return self.cpu / 1024

    def summary(self) -> str:
        platform = ", needs platform 1.4.0+" if self.needs_platform_1_4 else ""
        return (
            f"Fargate {self.vcpu:g} vCPU / {self.memory_mib / 1024:g} GB (cpu {self.cpu}, memory "
            f"{self.memory_mib} MiB), ~${self.usd_per_hour:.4f}/h on ARM64{platform}"
        )


def _fargate_price(cpu: int, memory_mib: int) -> float:
    return (
        cpu / 1024 * catalog.FARGATE_ARM64_USD_PER_VCPU_HOUR
        + memory_mib / 1024 * catalog.FARGATE_ARM64_USD_PER_GB_HOUR
    )


def _fargate(cpu: int, memory_mib: int) -> FargateSize:
    return FargateSize(
        cpu=cpu,
        memory_mib=memory_mib,
        needs_platform_1_4=cpu >= FARGATE_PLATFORM_1_4_MIN_CPU,
        usd_per_hour=_fargate_price(cpu, memory_mib),
    )


def describe_fargate_memory(cpu: int) -> str:
    """The memory values Fargate accepts with ``cpu``, compactly (ranges with their step)."""
    values = FARGATE_TASK_SIZES[cpu]
    steps = {b - a for a, b in itertools.pairwise(values)}
    if len(values) > 3 and len(steps) == 1:
        return f"{values[0]}–{values[-1]} MiB in {steps.pop()} MiB steps"
    return ", ".join(str(v) for v in values) + " MiB"


def fargate_size(
    cpu: int | None = None,
    memory_mib: int | None = None,
    *,
    need_memory_mib: int | None = None,
    need_vcpu: float | None = None,
) -> FargateSize:
    """Validate a Fargate (cpu, memory) pair, or choose the cheapest size that meets a need.

    With both ``cpu`` and ``memory_mib``: the pair must be on the grid (and meet any need given).
    Otherwise the cheapest grid size at ARM64 list prices is chosen among those matching whichever
    of ``cpu`` / ``memory_mib`` is given and having at least ``need_memory_mib`` MiB and
    ``need_vcpu`` vCPUs. All arguments default to None; at least one must be given.
    """
    grid = FARGATE_TASK_SIZES
    if cpu is not None:
        cpu = positive_int(cpu, "Fargate cpu")
        if cpu not in grid:
            raise SizingError(
                f"Fargate cpu {cpu} is not a valid task size; valid cpu values: "
                f"{', '.join(map(str, grid))}",
                key="cpu",
            )
    if memory_mib is not None:
        memory_mib = positive_int(memory_mib, "Fargate memory")
        if cpu is not None and memory_mib not in grid[cpu]:
            raise SizingError(
                f"Fargate cpu {cpu} does not accept memory {memory_mib} MiB; valid memory for cpu "
                f"{cpu}: {describe_fargate_memory(cpu)}",
                key="memoryMib",
            )
        if cpu is None and not any(memory_mib in mems for mems in grid.values()):
            raise SizingError(
                f"Fargate memory {memory_mib} MiB is not on the Fargate grid for any cpu value",
                key="memoryMib",
            )
    need_mem = 0 if need_memory_mib is None else non_negative(need_memory_mib, "need_memory_mib")
    need_cpu = 0.0 if need_vcpu is None else non_negative(need_vcpu, "need_vcpu")
    if cpu is None and memory_mib is None and need_memory_mib is None and need_vcpu is None:
        raise SizingError("give Fargate cpu and memory, or the memory / vCPU the task needs")

    if cpu is not None and memory_mib is not None:
        if memory_mib < need_mem or cpu / 1024 < need_cpu:
            raise SizingError(
                f"Fargate cpu {cpu} / memory {memory_mib} MiB is smaller than the need of "
                f"{need_cpu:g} vCPU and {need_mem:g} MiB"
            )
        return _fargate(cpu, memory_mib)

    candidates = [
        (c, m)
        for c, mems in grid.items()
        for m in mems
        if (cpu is None or c == cpu)
        and (memory_mib is None or m == memory_mib)
        and m >= need_mem
        and c / 1024 >= need_cpu
    ]
    if not candidates:
        if cpu is not None:
            raise SizingError(
                f"Fargate cpu {cpu} offers at most {grid[cpu][-1]} MiB, less than the "
                f"{need_mem:g} MiB needed; valid memory for cpu {cpu}: "
                f"{describe_fargate_memory(cpu)}"
            )
        largest_cpu = max(grid)
        raise SizingError(
            f"no Fargate task size has {need_cpu:g} vCPU and {need_mem:g} MiB"
            + (f" with memory {memory_mib} MiB" if memory_mib is not None else "")
            + f"; the largest is cpu {largest_cpu} with {grid[largest_cpu][-1]} MiB"
        )
    best = min(candidates, key=lambda cm: (_fargate_price(*cm), cm[0], cm[1]))
    return _fargate(*best)
