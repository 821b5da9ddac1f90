"""Table-driven tests of the sizing decisions: the VRAM method, tensor-parallel choice, Neuron
fit, the Fargate grid and timeouts. Expected values are worked out by
hand from the formulas in DESIGN §4 (the comments show the arithmetic)."""

from __future__ import annotations

import math
import re

import pytest

from ecs_inference import sizing
from ecs_inference.contracts import aws_limits
from ecs_inference.sizing import SizingError, catalog
from ecs_inference.sizing.catalog import ModelArchitecture
from tests.sizing.needs import memory_need, neuron_fit

GIB = 2**30
GB = 10**9

# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("fp32", 4),
        ("float32", 4),
        ("fp16", 2),
        ("bf16", 2),
        ("BFloat16", 2),
        ("fp8", 1),
        ("int8", 1),
        ("int4", 0.5),
        ("awq", 0.5),
        ("gptq", 0.5),
    ],
)
def test_bytes_per_param(dtype, expected):
    assert sizing.bytes_per_param(dtype) == expected


def test_unknown_dtype_lists_valid_ones():
    with pytest.raises(SizingError, match=r"unknown weight dtype 'int3'; valid dtypes: .*awq"):
        sizing.bytes_per_param("int3")


@pytest.mark.parametrize(
    ("kv_dtype", "dtype", "expected"),
    [
        ("auto", "bf16", 2),
        ("auto", "fp16", 2),
        ("auto", "fp32", 4),
        ("auto", "awq", 2),  # quantised weights still cache K/V in 16-bit activations
        ("auto", "fp8", 2),
        ("fp8", "bf16", 1),
        ("fp8_e5m2", "bf16", 1),
        ("bf16", "awq", 2),
    ],
)
def test_kv_cache_bytes(kv_dtype, dtype, expected):
    assert sizing.kv_cache_bytes(kv_dtype, dtype) == expected


def test_unknown_kv_dtype():
    with pytest.raises(SizingError, match="unknown KV cache dtype 'int4'"):
        sizing.kv_cache_bytes("int4", "bf16")


# --------------------------------------------------------------------------------------------
# the VRAM method
# --------------------------------------------------------------------------------------------


def _explicit(params_billion, dtype, **kw):
    shape = {"layers": 32, "attention_heads": 32, "kv_heads": 8, "head_dim": 128}
    shape.update(kw.pop("shape", {}))
    return memory_need(
        params_billion=params_billion, dtype=dtype, max_model_len=kw.pop("len", 4096), **shape, **kw
    )


@pytest.mark.parametrize(
    ("params", "dtype", "weights_gb"),
    [
        (7, "bf16", 14),  # the seed: a 7B model is about 14 GB in FP16/BF16
        (70, "bf16", 140),  # ... and a 70B model about 140 GB
        (70, "fp16", 140),
        (7, "int8", 7),
        (8, "awq", 4),
        (70, "int4", 35),
        (1, "fp32", 4),
    ],
)
def test_weights_are_params_times_bytes(params, dtype, weights_gb):
    need = _explicit(params, dtype)
    assert need.weights_gib * GIB / GB == pytest.approx(weights_gb)
    assert need.weights_gib == pytest.approx(weights_gb * GB / GIB)


@pytest.mark.parametrize(
    ("model", "seqs", "length", "kv_dtype", "kv_gib"),
    [
        # 1 x 8192 x 2 x 32 layers x 8 kv heads x 128 x 2 bytes = 2**30 bytes
        ("llama-3.1-8b", 1, 8192, "auto", 1.0),
        ("llama-3.1-8b", 16, 8192, "auto", 16.0),
        ("llama-3.1-8b", 16, 8192, "fp8", 8.0),
        # no grouped-query attention: kv_heads x head_dim = hidden (4096); 4096 x 2 x 32 x 4096 x 2
        ("llama-2-7b", 1, 4096, "auto", 2.0),
        # 80 layers x 8 x 128 x 2 x 2 bytes = 327680 bytes per token; x 32768 x 16 = 160 GiB
        ("llama-3.1-70b", 16, 32768, "auto", 160.0),
        # Gemma 2 9B's explicit head_dim 256: 8192 x 2 x 42 x 8 x 256 x 2 = 2.625 GiB
        ("gemma-2-9b", 1, 8192, "auto", 2.625),
    ],
)
def test_kv_cache_formula(model, seqs, length, kv_dtype, kv_gib):
    need = memory_need(
        model, max_model_len=length, max_concurrent_sequences=seqs, kv_cache_dtype=kv_dtype
    )
    assert need.kv_cache_gib == pytest.approx(kv_gib)


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.15, 0.2])
def test_overhead_and_total(fraction):
    need = memory_need(
        "llama-3.1-8b", max_model_len=8192, max_concurrent_sequences=4, overhead_fraction=fraction
    )
    assert need.overhead_gib == pytest.approx(fraction * (need.weights_gib + need.kv_cache_gib))
    assert need.total_gib == pytest.approx((1 + fraction) * (need.weights_gib + 4.0))


def test_defaults_come_from_the_architecture():
    need = memory_need("llama-2-13b")
    assert need.dtype == "float16"  # native torch_dtype of Llama 2
    assert need.max_model_len == 4096
    assert need.max_concurrent_sequences == 1
    assert need.overhead_fraction == 0.15


def test_explicit_numbers_override_the_architecture_field_by_field():
    base = memory_need("llama-3.1-8b", dtype="bf16", max_model_len=8192)
    overridden = memory_need("llama-3.1-8b", dtype="bf16", max_model_len=8192, kv_heads=32)
    assert overridden.kv_cache_gib == pytest.approx(4 * base.kv_cache_gib)
    assert overridden.weights_gib == base.weights_gib
    assert overridden.model.name == "llama-3.1-8b"


def test_explicit_shape_without_architecture():
    need = _explicit(7, "bf16", len=2048)
    assert need.model.name == "model"
    assert need.max_model_len == 2048


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "llama-3.1-8b", "max_model_len": 131073}, "exceeds llama-3.1-8b's maximum"),
        ({"model": "llama-9"}, "model architecture 'llama-9' is not in the catalog"),
        ({"params_billion": 7, "max_model_len": 4096}, "layers is required"),
        ({"params_billion": 7, "layers": 2, "attention_heads": 4}, "max_model_len is required"),
        ({"model": "llama-3.1-8b", "max_concurrent_sequences": 0}, "max_concurrent_sequences"),
        ({"model": "llama-3.1-8b", "max_model_len": 10.5}, "max_model_len must be a positive"),
        ({"model": "llama-3.1-8b", "overhead_fraction": 1.5}, "overhead_fraction"),
        ({"model": "llama-3.1-8b", "kv_heads": 5}, "32 attention heads, which is not a multiple"),
        ({"model": "llama-3.1-8b", "params_billion": -1}, "params_billion of llama-3.1-8b"),
        ({"model": "llama-3.1-8b", "dtype": "nf4"}, "unknown weight dtype 'nf4'"),
    ],
)
def test_need_errors(kwargs, message):
    model = kwargs.pop("model", None)
    with pytest.raises(SizingError, match=re.escape(message)):
        memory_need(model, **kwargs)


def test_need_summary_shows_each_part():
    need = memory_need("llama-3.1-8b", max_model_len=8192, max_concurrent_sequences=16)
    text = need.summary()
    for part in ("llama-3.1-8b", "weights 15.0 GiB", "KV cache 16.0 GiB", "overhead 4.6 GiB"):
        assert part in text
    assert text.endswith("= 35.6 GiB")


# --------------------------------------------------------------------------------------------
# tensor parallel
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "heads", "kv_heads", "allowed"),
    [
        (1, 28, 4, True),
        (2, 28, 4, True),
        (4, 28, 4, True),
        (8, 28, 4, False),  # Qwen2.5-7B: 28 heads do not split 8 ways
        (8, 32, 8, True),
        (16, 64, 8, True),  # KV heads replicated twice
        (4, 40, 8, True),
        (8, 40, 8, True),
        (3, 24, 8, False),  # heads divide but 3 neither divides nor is a multiple of 8 KV heads
        (2, 32, 1, True),  # multi-query attention: the single KV head is replicated
        (6, 24, 4, False),
    ],
)
def test_tp_allowed_follows_vllm(tp, heads, kv_heads, allowed):
    assert sizing.tp_allowed(tp, heads, kv_heads) is allowed


@pytest.mark.parametrize(
    ("model", "dtype", "length", "seqs", "instance", "tp"),
    [
        ("llama-3.1-8b", "bf16", 8192, 8, "g6e.xlarge", 1),
        ("llama-3.1-8b", "bf16", 8192, 8, "g5.12xlarge", 2),  # 26.4 GiB > 20.2 on one A10G
        ("llama-3.2-1b", "bf16", 4096, 4, "g6.xlarge", 1),
        # 70B bf16, 16 x 8192: (131.4/tp + 40/tp) x 1.15 -> tp 2 needs 98.6 > 72 (A100 80 GB)
        ("llama-3.1-70b", "bf16", 8192, 16, "p4de.24xlarge", 4),
        ("llama-3.1-70b", "bf16", 8192, 16, "g6e.48xlarge", 8),  # tp 4: 49.3 > 40.5
        ("llama-3.1-70b", "bf16", 8192, 16, "p5e.48xlarge", 2),  # tp 2: 98.6 <= 126.4 (H200)
        ("qwen2.5-7b", "bf16", 32768, 16, "g5.48xlarge", 4),
        ("mixtral-8x7b", "bf16", 8192, 8, "p4d.24xlarge", 4),
    ],
)
def test_tensor_parallel_choice(model, dtype, length, seqs, instance, tp):
    need = memory_need(model, dtype=dtype, max_model_len=length, max_concurrent_sequences=seqs)
    fit = sizing.choose_tensor_parallel(need, instance)
    assert fit.tp_size == tp
    assert fit.tp_size <= fit.instance.accelerator_count
    assert fit.per_gpu_gib <= fit.usable_per_gpu_gib
    assert sizing.tp_allowed(fit.tp_size, need.model.attention_heads, need.model.kv_heads)
    if tp > 1:  # the next smaller power of two must not have fitted
        assert need.per_gpu_gib(tp // 2) > fit.usable_per_gpu_gib
    assert fit.tasks_per_instance == fit.instance.accelerator_count // tp


def test_long_context_70b_needs_several_gpus_although_weights_alone_fit():
    # The seed's case: AWQ 70B weights (32.9 GiB) fit one L40S (40.5 usable GiB), but at
    # 16 x 32k tokens the KV cache is 160 GiB, so one GPU cannot hold it and the pool needs 8.
    need = memory_need(
        "llama-3.1-70b", dtype="awq", max_model_len=32768, max_concurrent_sequences=16
    )
    single = catalog.instance("g6e.xlarge")
    usable = single.accelerator_memory_gib * 0.9
    assert need.weights_gib < usable
    assert need.kv_cache_gib > need.weights_gib
    with pytest.raises(SizingError) as info:
        sizing.choose_tensor_parallel(need, single)
    message = str(info.value)
    assert message.startswith("llama-3.1-70b needs 221.8 GiB (weights 32.9 + KV cache 160.0")
    assert "g6e.xlarge offers 1 x L40S with 40.5 usable GiB each" in message
    assert "g6e.48xlarge (tp 8" in message
    assert sizing.choose_tensor_parallel(need, "g6e.48xlarge").tp_size == 8
    # the same model at a short context fits the single GPU
    short = memory_need("llama-3.1-70b", dtype="awq", max_model_len=4096)
    assert sizing.choose_tensor_parallel(short, single).tp_size == 1


def test_kv_heads_are_replicated_beyond_their_count():
    arch = ModelArchitecture(
        name="mqa-ish",
        params_billion=7,
        layers=32,
        attention_heads=32,
        kv_heads=2,
        head_dim=128,
        max_position_embeddings=4096,
    )
    need = memory_need(arch, dtype="bf16", max_model_len=4096, max_concurrent_sequences=8)
    assert need.kv_cache_per_gpu_gib(1) == pytest.approx(need.kv_cache_gib)
    assert need.kv_cache_per_gpu_gib(2) == pytest.approx(need.kv_cache_gib / 2)
    assert need.kv_cache_per_gpu_gib(8) == pytest.approx(need.kv_cache_gib / 2)  # not / 8


def test_heads_limit_the_choice_and_the_error_says_which_sizes_are_allowed():
    # Qwen2.5-7B at 34 x 32k tokens would fit 8 A10Gs, but its 28 heads allow only 1, 2, 4.
    need = memory_need("qwen2.5-7b", max_model_len=32768, max_concurrent_sequences=34)
    assert need.per_gpu_gib(4) > catalog.instance("g5.48xlarge").accelerator_memory_gib * 0.9
    assert need.per_gpu_gib(8) <= catalog.instance("g5.48xlarge").accelerator_memory_gib * 0.9
    with pytest.raises(SizingError, match=r"28 attention heads and 4 KV heads: 1, 2, 4\)"):
        sizing.choose_tensor_parallel(need, "g5.48xlarge")


def test_pinned_tensor_parallel_size():
    need = memory_need("llama-3.1-8b", max_model_len=8192, max_concurrent_sequences=8)
    fit = sizing.choose_tensor_parallel(need, "g6e.12xlarge", tensor_parallel_size=2)
    assert (fit.tp_size, fit.tasks_per_instance) == (2, 2)
    with pytest.raises(SizingError, match="exceeds the 4 GPU"):
        sizing.choose_tensor_parallel(need, "g6e.12xlarge", tensor_parallel_size=8)
    with pytest.raises(
        SizingError, match=re.escape("does not divide llama-3.1-8b's 32 attention heads")
    ):
        sizing.choose_tensor_parallel(need, "g6e.12xlarge", tensor_parallel_size=3)
    with pytest.raises(SizingError, match=r"needs 26\.4 GiB per GPU at tensor parallel 1"):
        sizing.choose_tensor_parallel(need, "g5.12xlarge", tensor_parallel_size=1)


def _fits_somehow(need, inst, util=0.9):
    usable = inst.accelerator_memory_gib * util
    tp = 1
    while tp <= inst.accelerator_count:
        ok_heads = sizing.tp_allowed(tp, need.model.attention_heads, need.model.kv_heads)
        if ok_heads and need.per_gpu_gib(tp) <= usable:
            return True
        tp *= 2
    return False


@pytest.mark.parametrize(
    ("model", "dtype", "length", "seqs"),
    [
        ("llama-3.1-70b", "awq", 32768, 16),
        ("llama-3.1-70b", "bf16", 8192, 16),
        ("llama-3.1-8b", "bf16", 32768, 32),
        ("qwen2.5-72b", "fp8", 16384, 8),
    ],
)
def test_cheapest_fitting_is_ordered_and_nothing_cheaper_fits(model, dtype, length, seqs):
    need = memory_need(model, dtype=dtype, max_model_len=length, max_concurrent_sequences=seqs)
    fits = sizing.cheapest_fitting(need)
    assert 1 <= len(fits) <= 3
    prices = [f.instance.on_demand_usd_hour for f in fits]
    assert prices == sorted(prices)
    assert all(f.per_gpu_gib <= f.usable_per_gpu_gib for f in fits)
    chosen = {f.instance.name for f in fits}
    for inst in catalog.gpu_instances():
        if inst.on_demand_usd_hour < prices[-1] and inst.name not in chosen:
            assert not _fits_somehow(need, inst), inst.name


def test_error_suggestions_are_the_three_cheapest_in_price_order():
    need = memory_need(
        "llama-3.1-70b", dtype="awq", max_model_len=32768, max_concurrent_sequences=16
    )
    with pytest.raises(SizingError) as info:
        sizing.choose_tensor_parallel(need, "g5.xlarge")
    named = re.findall(r"([a-z0-9]+\.[0-9]*xlarge) \(tp \d+, ~\$([0-9.]+)/h\)", str(info.value))
    assert [n for n, _ in named] == ["p4d.24xlarge", "p4de.24xlarge", "g6e.48xlarge"]
    assert [n for n, _ in named] == [f.instance.name for f in sizing.cheapest_fitting(need)]
    # One sentence: the reason; what the model's settings can do on this type; the types.
    reason, rest = str(info.value).split("; ", 1)
    assert "g5.xlarge offers" in reason and "or else cheapest" in rest
    assert "\n" not in rest


def test_nothing_in_the_catalog_fits():
    need = _explicit(1500, "bf16", len=8192, shape={"layers": 120, "attention_heads": 128})
    assert sizing.cheapest_fitting(need) == ()
    with pytest.raises(SizingError, match="no catalog type fits as configured"):
        sizing.choose_tensor_parallel(need, "p5e.48xlarge")


def test_gpu_sizing_rejects_neuron_instances_and_bad_utilization():
    need = memory_need("llama-3.1-8b", max_model_len=4096)
    with pytest.raises(
        SizingError, match=re.escape("inf2.xlarge has Inferentia2 devices, not NVIDIA GPUs")
    ):
        sizing.choose_tensor_parallel(need, "inf2.xlarge")
    with pytest.raises(SizingError, match="gpu_memory_utilization"):
        sizing.choose_tensor_parallel(need, "g6e.xlarge", gpu_memory_utilization=1.2)
    with pytest.raises(catalog.UnknownInstanceTypeError):
        sizing.choose_tensor_parallel(need, "g7.xlarge")


def test_lower_utilization_pushes_to_more_gpus():
    need = memory_need("llama-3.1-8b", max_model_len=8192, max_concurrent_sequences=8)
    assert sizing.choose_tensor_parallel(need, "g6e.12xlarge", 0.9).tp_size == 1
    assert sizing.choose_tensor_parallel(need, "g6e.12xlarge", 0.5).tp_size == 2


def test_fit_summary():
    need = memory_need("llama-3.1-8b", max_model_len=8192, max_concurrent_sequences=8)
    text = sizing.choose_tensor_parallel(need, "g5.12xlarge").summary()
    assert "on g5.12xlarge: tensor parallel 2 (2 of 4 A10G)" in text
    assert "13.2 of 20.2 usable GiB per GPU (90% of 22.5)" in text
    assert "2 task(s) per instance" in text


# --------------------------------------------------------------------------------------------
# Neuron
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "instance", "devices", "copies", "idle"),
    [
        (1, "inf2.xlarge", 1, 1, 0),
        (2, "inf2.xlarge", 1, 1, 0),
        (2, "inf2.8xlarge", 1, 1, 0),
        (3, "inf2.24xlarge", 2, 3, 4),
        (8, "inf2.24xlarge", 4, 1, 2),
        (12, "inf2.24xlarge", 6, 1, 0),
        (2, "inf2.48xlarge", 1, 12, 11),
        (8, "inf2.48xlarge", 4, 3, 8),
        (24, "inf2.48xlarge", 12, 1, 0),
        (2, "trn1.2xlarge", 1, 1, 0),
        (32, "trn1.32xlarge", 16, 1, 0),
    ],
)
def test_neuron_device_math(tp, instance, devices, copies, idle):
    fit = neuron_fit(tp, 1, 2048, instance, "llama-3.2-1b")
    assert fit.devices_mapped == devices == math.ceil(tp / 2)
    assert fit.device_paths == tuple(f"/dev/neuron{i}" for i in range(devices))
    assert (fit.copies_per_instance, fit.idle_devices) == (copies, idle)
    assert fit.demand.compiled.tp_degree == tp
    assert fit.tasks_per_instance == 1


def test_neuron_memory_per_core():
    fit = neuron_fit(2, 4, 4096, "inf2.xlarge", "llama-3.1-8b", "bf16")
    weights = 8.03e9 * 2 / GIB
    kv = 4 * 4096 * 2 * 32 * 8 * 128 * 2 / GIB  # 2 GiB
    assert fit.weights_gib == pytest.approx(weights)
    assert fit.kv_cache_gib == pytest.approx(kv)
    assert fit.per_core_gib == pytest.approx((weights / 2 + kv / 2) * 1.15)
    assert fit.hbm_per_core_gib == 16
    assert "2 of 2 NeuronCores" in fit.summary()
    assert "(/dev/neuron0)" in fit.summary()


def test_neuron_70b_needs_a_large_tp_degree():
    with pytest.raises(SizingError) as info:
        neuron_fit(2, 4, 4096, "inf2.xlarge", "llama-3.1-70b")
    message = str(info.value)
    assert message.startswith("llama-3.1-70b needs 78.4 GiB per NeuronCore at tp degree 2")
    assert "a NeuronCore has 16 GiB of HBM" in message
    assert "recompile with tp 16 on inf2.48xlarge" in message
    fit = neuron_fit(24, 4, 4096, "inf2.48xlarge", "llama-3.1-70b")
    assert fit.per_core_gib <= 16


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((8, 1, 2048, "inf2.xlarge", "llama-3.1-8b"), "only 2 NeuronCores; instances with at"),
        ((64, 1, 2048, "trn1.32xlarge", "llama-3.1-8b"), "at least 64 cores: none in the catalog"),
        ((2, 1, 2048, "g5.xlarge", "llama-3.1-8b"), "g5.xlarge has NVIDIA GPUs, not Neuron"),
        ((2, 1, 9000, "inf2.xlarge", "llama-3-8b"), "sequence_length 9000 exceeds"),
        ((0, 1, 2048, "inf2.xlarge", "llama-3.1-8b"), "tp_degree must be a positive"),
        ((2, 1, 2048, "inf2.xlarge", "not-a-model"), "'not-a-model' is not in the catalog"),
    ],
)
def test_neuron_errors(args, message):
    with pytest.raises(SizingError, match=re.escape(message)):
        neuron_fit(*args)


def test_neuron_tp_above_cores_suggests_bigger_instances_by_price():
    with pytest.raises(SizingError) as info:
        neuron_fit(8, 1, 2048, "inf2.xlarge", "llama-3.1-8b")
    assert str(info.value).endswith("inf2.24xlarge, inf2.48xlarge, trn1.32xlarge")


# --------------------------------------------------------------------------------------------
# Fargate
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpu", "memory", "valid"),
    [
        (256, 512, True),
        (256, 2048, True),
        (256, 4096, False),
        (256, 3072, False),
        (512, 1024, True),
        (512, 512, False),
        (1024, 1024, False),
        (1024, 8192, True),
        (2048, 16384, True),
        (2048, 17408, False),
        (4096, 8192, True),
        (4096, 30720, True),
        (4096, 31744, False),
        (8192, 16384, True),
        (8192, 18432, False),  # 4 GB steps at 8 vCPU
        (8192, 20480, True),
        (8192, 61440, True),
        (16384, 32768, True),
        (16384, 36864, False),  # 8 GB steps at 16 vCPU
        (16384, 40960, True),
        (16384, 122880, True),
        (32768, 61440, True),
        (32768, 122880, True),
        (32768, 249856, True),  # 244 GB
        (32768, 245760, False),  # 240 GB is not one of the three 32 vCPU sizes
        (32768, 65536, False),
    ],
)
def test_fargate_grid_pairs(cpu, memory, valid):
    if valid:
        size = sizing.fargate_size(cpu, memory)
        assert (size.cpu, size.memory_mib) == (cpu, memory)
        assert size.needs_platform_1_4 is (cpu >= 8192)
    else:
        with pytest.raises(SizingError, match=f"Fargate cpu {cpu} does not accept memory {memory}"):
            sizing.fargate_size(cpu, memory)


@pytest.mark.parametrize(
    ("cpu", "memory", "listing"),
    [
        (256, 4096, "valid memory for cpu 256: 512, 1024, 2048 MiB"),
        (512, 8192, "valid memory for cpu 512: 1024–4096 MiB in 1024 MiB steps"),
        (8192, 18432, "valid memory for cpu 8192: 16384–61440 MiB in 4096 MiB steps"),
        (16384, 36864, "valid memory for cpu 16384: 32768–122880 MiB in 8192 MiB steps"),
        (32768, 245760, "valid memory for cpu 32768: 61440, 122880, 249856 MiB"),
    ],
)
def test_fargate_errors_list_valid_memory(cpu, memory, listing):
    with pytest.raises(SizingError) as info:
        sizing.fargate_size(cpu, memory)
    assert str(info.value).endswith(listing)


@pytest.mark.parametrize(
    ("kwargs", "cpu", "memory"),
    [
        ({"need_memory_mib": 12 * 1024}, 2048, 12288),  # 12 GB starts at 2 vCPU
        ({"need_memory_mib": 12000}, 2048, 12288),
        ({"need_memory_mib": 512}, 256, 512),
        ({"need_memory_mib": 512, "need_vcpu": 1}, 1024, 2048),
        ({"need_vcpu": 0.5}, 512, 1024),
        ({"need_memory_mib": 31 * 1024}, 8192, 32768),  # 4 vCPU stops at 30 GB
        ({"need_vcpu": 5}, 8192, 16384),
        ({"need_memory_mib": 100000}, 16384, 106496),
        ({"need_memory_mib": 200 * 1024}, 32768, 249856),
        ({"cpu": 4096, "need_memory_mib": 12288}, 4096, 12288),
        ({"cpu": 4096}, 4096, 8192),
        ({"memory_mib": 8192}, 1024, 8192),
        ({"memory_mib": 4096, "need_vcpu": 2}, 2048, 4096),
    ],
)
def test_fargate_cheapest_size_for_a_need(kwargs, cpu, memory):
    size = sizing.fargate_size(**kwargs)
    assert (size.cpu, size.memory_mib) == (cpu, memory)
    assert size.usd_per_hour == pytest.approx(cpu / 1024 * 0.03238 + memory / 1024 * 0.00356)


@pytest.mark.parametrize("need_mib", [300, 1500, 5000, 9000, 17000, 33000, 70000, 125000])
@pytest.mark.parametrize("need_vcpu", [None, 0.25, 1, 3, 10])
def test_fargate_choice_is_the_cheapest_valid_pair(need_mib, need_vcpu):
    size = sizing.fargate_size(need_memory_mib=need_mib, need_vcpu=need_vcpu)
    assert size.memory_mib in aws_limits.FARGATE_TASK_SIZES[size.cpu]
    cheaper = [
        (c, m)
        for c, mems in aws_limits.FARGATE_TASK_SIZES.items()
        for m in mems
        if m >= need_mib
        and c / 1024 >= (need_vcpu or 0)
        and c / 1024 * 0.03238 + m / 1024 * 0.00356 < size.usd_per_hour - 1e-12
    ]
    assert cheaper == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give Fargate cpu and memory, or the memory / vCPU the task needs"),
        ({"cpu": 3000, "memory_mib": 4096}, "valid cpu values: 256, 512, 1024, 2048, 4096, 8192"),
        ({"memory_mib": 5000}, "Fargate memory 5000 MiB is not on the Fargate grid"),
        ({"need_memory_mib": 300000}, "the largest is cpu 32768 with 249856 MiB"),
        ({"cpu": 1024, "need_memory_mib": 9000}, "Fargate cpu 1024 offers at most 8192 MiB"),
        ({"cpu": 1024, "memory_mib": 2048, "need_memory_mib": 4096}, "smaller than the need"),
        ({"cpu": -1, "memory_mib": 2048}, "Fargate cpu must be a positive whole number"),
    ],
)
def test_fargate_errors(kwargs, message):
    with pytest.raises(SizingError, match=re.escape(message)):
        sizing.fargate_size(**kwargs)


def test_fargate_summary():
    assert sizing.fargate_size(8192, 16384).summary() == (
        "Fargate 8 vCPU / 16 GB (cpu 8192, memory 16384 MiB), ~$0.3160/h on ARM64, "
        "needs platform 1.4.0+"
    )


# --------------------------------------------------------------------------------------------
# timeouts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gens", "margin", "override", "seconds", "source"),
    [
        ([300, 600], 30, None, 630, "derived"),
        ([120], 0, None, 120, "derived"),
        ([59.2], 30, None, 90, "derived"),
        ([], 30, None, 60, "default"),
        ([3970], 30, None, 4000, "derived"),
        ([3990], 30, None, 4000, "clamped"),
        ([4000], 30, None, 4000, "clamped"),
        ([600], 30, 600, 600, "override"),
        ([600], 30, 4000, 4000, "override"),
        ([], 30, 1, 1, "override"),
    ],
)
def test_alb_idle_timeout(gens, margin, override, seconds, source):
    result = sizing.alb_idle_timeout(gens, margin, override)
    assert (result.seconds, result.source) == (seconds, source)
    assert 1 <= result.seconds <= 4000
    assert str(seconds) in result.summary()


@pytest.mark.parametrize(
    ("gens", "override", "message"),
    [
        ([4001], None, "longest generation a routed service allows (4001 s) exceeds the ALB's"),
        ([600, 300], 500, "override 500 s is shorter than the longest generation"),
        ([600], 4001, "above the ALB maximum of 4000 s"),
        ([600], 0, "idle timeout override must be a positive whole number"),
        ([-5], None, "max_generation_seconds must be a number of at least 0"),
    ],
)
def test_alb_idle_timeout_errors(gens, override, message):
    with pytest.raises(SizingError, match=re.escape(message)):
        sizing.alb_idle_timeout(gens, override=override)


@pytest.mark.parametrize(
    ("gen", "margin", "seconds"),
    [(300, 0, 300), (0, 0, 0), (120.5, 0, 121), (3600, 0, 3600), (3000, 60, 3060)],
)
def test_deregistration_delay(gen, margin, seconds):
    result = sizing.deregistration_delay(gen, margin)
    assert result.seconds == seconds >= gen
    assert f"{seconds} s" in result.summary()


def test_deregistration_delay_above_alb_maximum():
    with pytest.raises(SizingError, match="above the ALB maximum of 3600 s"):
        sizing.deregistration_delay(3601)
    with pytest.raises(SizingError, match="above the ALB maximum"):
        sizing.deregistration_delay(3590, margin=30)


# The config's startup defaults: 100 MiB/s image pull, 500 MiB/s weight load, 120 s warm-up.
COLD_START = {
    "image_pull_mib_per_second": 100.0,
    "weight_load_mib_per_second": 500.0,
    "warmup_seconds": 120,
}


def test_grace_period_estimate():
    # 10 GiB at 100 MiB/s = 102.4 s; 15 GiB at 500 MiB/s = 30.72 s; + 120 s; x 1.5 = 379.68
    result = sizing.health_check_grace_period(10, 15, **COLD_START)
    assert result.seconds == 380
    assert result.image_pull_seconds == pytest.approx(102.4)
    assert result.weight_load_seconds == pytest.approx(30.72)
    assert not result.overridden
    assert result.summary() == (
        "health-check grace period 380 s "
        "(image pull 102 s + weight load 31 s + warm-up 120 s, x 1.5)"
    )


@pytest.mark.parametrize(
    ("kwargs", "seconds"),
    [
        ({"image_pull_mib_per_second": 200, "weight_load_mib_per_second": 1000}, 280),
        ({"warmup_seconds": 0, "safety_factor": 1}, 134),
        ({"override": 0}, 0),
        ({"override": 7200}, 7200),
        ({"override": 2147483647}, 2147483647),
    ],
)
def test_grace_period_variants(kwargs, seconds):
    assert sizing.health_check_grace_period(10, 15, **(COLD_START | kwargs)).seconds == seconds


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((10, 1000), {"weight_load_mib_per_second": 100}, "is above the 3600 s cap"),
        ((10, 15), {"override": -1}, "must be a whole number of seconds from 0 to 2147483647"),
        ((10, 15), {"override": 2147483648}, "from 0 to 2147483647"),
        ((10, 15), {"image_pull_mib_per_second": 0}, "rates must be above 0 MiB/s"),
        ((-1, 15), {}, "image_gib must be a number of at least 0"),
        ((10, 15), {"safety_factor": 0.5}, "safety_factor must be at least 1"),
    ],
)
def test_grace_period_errors(args, kwargs, message):
    with pytest.raises(SizingError, match=re.escape(message)):
        sizing.health_check_grace_period(*args, **(COLD_START | kwargs))


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


def test_every_error_is_one_sentence_without_a_config_path():
    problems = [
        lambda: sizing.fargate_size(8192, 18432),
        lambda: sizing.alb_idle_timeout([600], override=500),
        lambda: neuron_fit(2, 4, 4096, "inf2.xlarge", "llama-3.1-70b"),
        lambda: sizing.choose_tensor_parallel(
            memory_need("llama-3.1-70b", max_model_len=8192), "g6e.xlarge"
        ),
    ]
    for problem in problems:
        with pytest.raises(SizingError) as info:
            problem()
        text = str(info.value)
        assert "\n" not in text
        assert text[0].islower() or text[0].isdigit() or text.startswith("Fargate")
        assert not text.endswith(".")
        assert isinstance(info.value, ValueError)
