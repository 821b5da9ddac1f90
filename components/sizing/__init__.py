"""Sizing decisions made before any resource exists, so that a model that cannot run fails
``pulumi preview`` with the numbers instead of failing at 3 a.m. with CUDA out-of-memory.

Pure functions over the tables in :mod:`.catalog` and :mod:`contracts.aws_limits`; no Pulumi
import. Every result is a
frozen dataclass whose ``summary()`` is the line the (offline) preview prints. Every failure is a
:class:`SizingError` whose message is one readable sentence; the config layer prefixes it with the
offending config path.

What is sized here, one module each (this package re-exports the functions other features call):
- `memory`: dtypes, KV cache bytes, model architectures (shared by GPU and Neuron);
- `gpu`: GPU memory (the VRAM method): weights + KV cache + overhead, then the tensor-parallel size;
- `neuron`: NeuronCores, devices to map into the task and the HBM of the cores used;
- `fargate`: a (cpu, memory) pair on the Fargate grid, or the cheapest one for a need;
- `timeouts`: ALB idle timeout, target-group deregistration delay, ECS health-check grace period;
- `headroom`: the deployment percentages a rolling deploy can progress with on its pool;
- `catalog`: instance types, model architectures, prices.

Units: memory in GiB (2**30 bytes) throughout, except Fargate memory, which ECS takes in MiB.
"""

from ecs_inference.sizing.fargate import FargateSize, fargate_size
from ecs_inference.sizing.gpu import (
    GpuFit,
    MemoryNeed,
    cheapest_fitting,
    choose_tensor_parallel,
    gpu_memory_need,
    tp_allowed,
)
from ecs_inference.sizing.memory import (
    SizingError,
    bytes_per_param,
    kv_cache_bytes,
    resolve_architecture,
)
from ecs_inference.sizing.neuron import NeuronFit, neuron_fit
from ecs_inference.sizing.timeouts import (
    DeregistrationDelay,
    GracePeriod,
    IdleTimeout,
    alb_idle_timeout,
    deregistration_delay,
    health_check_grace_period,
)

__all__ = [
    "DeregistrationDelay",
    "FargateSize",
    "GpuFit",
    "GracePeriod",
    "IdleTimeout",
    "MemoryNeed",
    "NeuronFit",
    "SizingError",
    "alb_idle_timeout",
    "bytes_per_param",
    "cheapest_fitting",
    "choose_tensor_parallel",
    "deregistration_delay",
    "fargate_size",
    "gpu_memory_need",
    "health_check_grace_period",
    "kv_cache_bytes",
    "neuron_fit",
    "resolve_architecture",
    "tp_allowed",
]
