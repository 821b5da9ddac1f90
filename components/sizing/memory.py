"""Model memory arithmetic shared by the GPU and Neuron sizing: dtypes, KV cache, architectures."""

from __future__ import annotations

from dataclasses import dataclass

from ecs_inference.sizing import catalog
from ecs_inference.sizing.catalog import ArchitectureShape, InstanceType, ModelArchitecture

GIB = 2**30


class SizingError(ValueError):
    """A configuration that cannot work; the message is one sentence without a config path.

    `key`: the input key (camelCase, as the config names it) holding the bad value when one
    does (`cpu`, `memoryMib`), so the caller reports it at that key; None: the combination."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key

    def at(self, base: str) -> str:
        """The config path of the bad value below `base` (the entry's path)."""
        return f"{base}.{self.key}" if self.key else base


# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

_WEIGHT_BYTES: dict[str, float] = {
    "float32": 4,
    "fp32": 4,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "bfloat16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
    "awq": 0.5,
    "gptq": 0.5,
}

_KV_BYTES: dict[str, float] = {
    "float32": 4,
    "fp32": 4,
    "float16": 2,
    "fp16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}


def normalize_dtype(name: str) -> str:
    return str(name).strip().lower()


def bytes_per_param(dtype: str) -> float:
    """Bytes one weight occupies in accelerator memory for ``dtype``.

    fp32 4; fp16 / bf16 2; fp8 / int8 1; int4 / awq / gptq 0.5 (group-wise scales add a few
    percent, which the overhead fraction covers).
    """
    key = normalize_dtype(dtype)
    if key not in _WEIGHT_BYTES:
        valid = ", ".join(sorted(_WEIGHT_BYTES))
        raise SizingError(f"unknown weight dtype '{dtype}'; valid dtypes: {valid}")
    return _WEIGHT_BYTES[key]


def kv_cache_bytes(kv_cache_dtype: str, dtype: str) -> float:
    """Bytes per KV-cache element for ``kv_cache_dtype`` given the weight ``dtype``.

    ``"auto"`` (vLLM's default) stores the cache in the model's activation dtype, which is fp16 or
    bf16 even for int8 / int4 / fp8 *weights* (quantised weights are dequantised into 16-bit
    activations), so it is 2 bytes unless the model runs in fp32. ``"fp8"`` (and the explicit
    e4m3 / e5m2 variants) halve it to 1 byte.
    """
    key = normalize_dtype(kv_cache_dtype)
    if key == "auto":
        return 4 if bytes_per_param(dtype) == 4 else 2
    if key not in _KV_BYTES:
        valid = ", ".join(["auto", *sorted(_KV_BYTES)])
        raise SizingError(
            f"unknown KV cache dtype '{kv_cache_dtype}'; valid KV cache dtypes: {valid}"
        )
    return _KV_BYTES[key]


def _whole(value: object, what: str, least: int, wanted: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SizingError(f"{what} must be {wanted}, got {value!r}")
    return value


def positive_int(value: object, what: str) -> int:
    return _whole(value, what, 1, "a positive whole number")


def non_negative_int(value: object, what: str) -> int:
    return _whole(value, what, 0, "a whole number of at least 0")


def non_negative(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SizingError(f"{what} must be a number of at least 0, got {value!r}")
    return float(value)


_ARCH_FIELDS = tuple(ArchitectureShape.model_fields)


def resolve_architecture(
    model: ModelArchitecture | str | None = None, **given: float | None
) -> ModelArchitecture:
    """A model shape from a catalog id (or architecture) with explicit numbers (`given`, by the
    names of `_ARCH_FIELDS`) overriding it field by field; every field is required when
    ``model`` is None (the name is then "model")."""
    if unknown := sorted(set(given) - set(_ARCH_FIELDS)):
        raise TypeError(f"resolve_architecture() got unexpected shape fields {unknown}")
    base: ModelArchitecture | None
    if model is None or isinstance(model, ModelArchitecture):
        base = model
    else:
        try:
            base = catalog.architecture(model)
        except catalog.UnknownArchitectureError as err:
            raise SizingError(
                f"{err.message} (known: {', '.join(sorted(catalog.MODEL_ARCHITECTURES))}); "
                "give params_billion, layers, attention_heads, kv_heads and head_dim instead"
            ) from None
    values: dict[str, object] = {}
    for field in _ARCH_FIELDS:
        value = given.get(field)
        value = value if value is not None else getattr(base, field, None)
        if value is None:
            raise SizingError(
                f"{field} is required when no known model architecture is named "
                f"(known: {', '.join(sorted(catalog.MODEL_ARCHITECTURES))})"
            )
        values[field] = value
    name = base.name if base is not None else "model"
    params = values["params_billion"]
    if isinstance(params, bool) or not isinstance(params, (int, float)) or params <= 0:
        raise SizingError(f"params_billion of {name} must be a positive number, got {params!r}")
    heads = positive_int(values["attention_heads"], "attention_heads")
    kv = positive_int(values["kv_heads"], "kv_heads")
    if heads % kv:
        raise SizingError(
            f"{name} has {heads} attention heads, which is not a multiple of its {kv} KV heads"
        )
    return ModelArchitecture(
        name=name,
        params_billion=float(params),
        layers=positive_int(values["layers"], "layers"),
        attention_heads=heads,
        kv_heads=kv,
        head_dim=positive_int(values["head_dim"], "head_dim"),
        max_position_embeddings=positive_int(
            values["max_position_embeddings"], "max_position_embeddings"
        ),
        native_dtype=base.native_dtype if base is not None else "bfloat16",
        notes=base.notes if base is not None else "",
    )


def check_overhead(overhead_fraction: object) -> None:
    if (
        isinstance(overhead_fraction, bool)
        or not isinstance(overhead_fraction, (int, float))
        or not 0 <= overhead_fraction < 1
    ):
        raise SizingError(f"overhead_fraction must be from 0 up to 1, got {overhead_fraction!r}")


def memory_sum(
    arch: ModelArchitecture,
    dtype: str,
    kv_cache_dtype: str,
    sequences: int,
    tokens: int,
    overhead_fraction: float,
) -> tuple[float, float, float]:
    """(weights, KV cache, overhead) in GiB of one copy of `arch`: ``params × bytes(dtype)``;
    ``sequences × tokens × 2 (K and V) × layers × kv_heads × head_dim × bytes(kv dtype)``;
    ``overhead_fraction × (weights + KV)``."""
    weights = arch.params_billion * 1e9 * bytes_per_param(dtype) / GIB
    kv_bytes = kv_cache_bytes(kv_cache_dtype, dtype)
    kv = sequences * tokens * 2 * arch.layers * arch.kv_heads * arch.head_dim * kv_bytes / GIB
    return weights, kv, overhead_fraction * (weights + kv)


@dataclass(frozen=True)
class ModelMemory:
    """The accelerator memory one copy of a model takes, GiB: its weights, its KV cache and the
    overhead on both (the GPU need and the Neuron fit compute them the same way)."""

    weights_gib: float
    kv_cache_gib: float
    overhead_gib: float

    @property
    def total_gib(self) -> float:
        return self.weights_gib + self.kv_cache_gib + self.overhead_gib


@dataclass(frozen=True)
class AcceleratorFit:
    """How one copy of `model` (its architecture's name) sits on an `instance`."""

    model: str
    instance: InstanceType
    tasks_per_instance: int
