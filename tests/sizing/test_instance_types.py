"""Choosing a pool's instance types from sizing, device-layout agreement across types, the task
reservation that places on every type, and the Managed Instances `instanceRequirements` (checked
against botocore's ECS model). Expected values come from the catalog and DESIGN §4 by hand."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest
from botocore.model import Shape
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_inference import sizing
from ecs_inference.contracts import aws_limits
from ecs_inference.sizing import catalog, offerings
from ecs_inference.sizing import instance_types as ir
from ecs_inference.sizing.instance_types import GpuDemand
from ecs_inference.sizing.neuron import NeuronDemand
from tests.aws_shapes import ShapeError, named_shape, validate_named_shape
from tests.sizing.needs import memory_need, neuron_demand


def metadata(shape: Shape) -> dict[str, Any]:
    """A shape's model constraints (min, max, pattern), typed for the checker."""
    return cast(dict[str, Any], shape.metadata)


def api_enum(shape_name: str) -> set[str]:
    shape: Any = named_shape("ecs", shape_name)  # botocore's cached properties defeat typing
    return set(shape.enum)


def gpu(model: str, arch: str, **kw) -> GpuDemand:
    tp = kw.pop("tensor_parallel_size", None)
    util = kw.pop("gpu_memory_utilization", 0.9)
    return GpuDemand(model, memory_need(arch, **kw), util, tp)


# Llama 3.1 8B, bf16, 8192 tokens x 16 sequences: 15.0 + 16.0 KV + 15 % = 35.6 GiB; one L40S
# (0.9 x 44.99 = 40.5 GiB) holds it, one L4/A10G (20.2 GiB) does not, so 4-GPU L4/A10G types
# serve it at tensor parallel 2.
LLAMA_8B = {"max_model_len": 8192, "max_concurrent_sequences": 16}


# --------------------------------------------------------------------------------------------
# the enum tables are botocore's
# --------------------------------------------------------------------------------------------


def test_accelerator_names_are_the_ecs_api_enum():
    assert api_enum("AcceleratorName") == aws_limits.ECS_ACCELERATOR_NAMES


def test_every_catalog_device_has_a_mapping_and_it_is_valid():
    devices = {i.accelerator_name for i in catalog.INSTANCE_TYPES.values()}
    assert devices <= set(ir.ACCELERATOR_NAME)
    assert {n for n in ir.ACCELERATOR_NAME.values() if n} <= aws_limits.ECS_ACCELERATOR_NAMES


def test_manufacturers_are_api_values():
    assert set(ir.ACCELERATOR_MANUFACTURER.values()) <= api_enum("AcceleratorManufacturer")


@pytest.mark.parametrize(
    "value", ["g6e.xlarge", "p5*", "g6e.*", "m6*.*", "", "g6e_xlarge", "g6e.xlarge ", "a" * 31]
)
def test_instance_type_pattern_and_limit_are_botocores(value):
    shape: Any = named_shape("ecs", "AllowedInstanceTypeSet")
    assert metadata(shape)["max"] == aws_limits.LISTED_INSTANCE_TYPES_MAX
    member = metadata(shape.member)
    api_ok = member["min"] <= len(value) <= member["max"] and bool(
        re.fullmatch(member["pattern"], value)
    )
    assert bool(ir.INSTANCE_TYPE_PATTERN.fullmatch(value)) == api_ok


# --------------------------------------------------------------------------------------------
# any type that fits, cheapest first
# --------------------------------------------------------------------------------------------


def test_fitting_types_are_cheapest_first_and_all_fit():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    fits = ir.fitting_types(demand)
    prices = [f.instance.on_demand_usd_hour for f in fits]
    assert prices == sorted(prices)
    assert fits[0].instance.name == "g6e.xlarge"
    names = {f.instance.name for f in fits}
    assert not names & {"g5.xlarge", "g6.xlarge", "g6.16xlarge", "g5.16xlarge"}  # one 22 GiB GPU
    assert {"g6.12xlarge", "g5.12xlarge"} <= names  # tensor parallel 2 on 4 x 22 GiB
    by_name = {f.instance.name: f for f in fits}
    assert by_name["g6.12xlarge"].layout.tp == 2
    assert by_name["g6.12xlarge"].tasks_per_instance == 2
    assert by_name["g6e.xlarge"].layout.tp == 1


def test_derived_list_keeps_the_cheapest_layout_and_price_band():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types("nvidia", [demand])
    assert problems == []
    assert choice is not None
    # g6e.xlarge $1.86; within 2x: g6e.2xlarge $2.24, g6e.4xlarge $3.00; g6.12xlarge ($4.60)
    # is both tp 2 and above the band.
    assert choice.chosen == ("g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge")
    assert "different device layout" in choice.dropped["g6.12xlarge"]
    assert "maxPriceRatio" in choice.dropped["g6e.8xlarge"]
    assert choice.layouts["llama"] == ir.DeviceLayout("nvidia", 1, 1, "L40S")
    assert choice.source == "sizing"
    assert choice.fitting[0] == "g6e.xlarge"


def test_derived_list_without_price_band_and_with_cap():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, _ = ir.choose_pool_types("nvidia", [demand], max_price_ratio=None, max_types=5)
    assert choice is not None
    # p5.4xlarge (one H100) also fits with tp 1, but is another GPU: not in an L40S pool.
    assert choice.chosen == (
        "g6e.xlarge",
        "g6e.2xlarge",
        "g6e.4xlarge",
        "g6e.8xlarge",
        "g6e.16xlarge",
    )
    assert "different device layout" in choice.dropped["p5.4xlarge"]
    assert "H100" in choice.dropped["p5.4xlarge"]


def test_exclusions_take_wildcards():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types("nvidia", [demand], excluded=["g6e.*"])
    assert problems == []
    assert choice is not None
    assert not any(n.startswith("g6e.") for n in choice.chosen)
    # cheapest left: g6.12xlarge (tp 2)
    assert choice.chosen[0] == "g6.12xlarge"
    assert choice.layouts["llama"].tp == 2


def test_excluding_everything_names_the_key():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types("nvidia", [demand], excluded=["*"])
    assert choice is None
    assert problems[0][0] == "excludedInstanceTypes"
    assert "removes every GPU type" in problems[0][1]


def test_models_that_cannot_share_any_type():
    small = gpu("small", "llama-3.2-1b", max_model_len=4096)
    # bf16 Llama 3.1 70B at 128k context x 32: 1.3 TB of KV cache, beyond any catalog type
    huge = gpu("huge", "llama-3.1-70b", max_concurrent_sequences=32)
    choice, problems = ir.choose_pool_types("nvidia", [small, huge])
    assert choice is None
    key, message = problems[0]
    assert key == "instanceTypes"
    assert "small fits" in message and "huge fits no catalog type" in message


@pytest.mark.parametrize(
    ("listed", "key", "fragment"),
    [
        (["g6e.xlarge", "nope.large"], "instanceTypes[1]", "not in the catalog"),
        (["g6e.xlarge", "inf2.xlarge"], "instanceTypes[1]", "Inferentia2 devices"),
        (["g6e.xlarge", "g6e.xlarge"], "instanceTypes[1]", "listed twice"),
        (["g6.xlarge"], "instanceTypes[0]", "cannot serve llama"),
        ([], "instanceTypes", "at least one"),
    ],
)
def test_explicit_list_problems(listed, key, fragment):
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types("nvidia", [demand], listed)
    assert choice is None
    assert any(k == key and fragment in m for k, m in problems), problems


def test_explicit_list_member_also_excluded():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    _, problems = ir.choose_pool_types("nvidia", [demand], ["g6e.xlarge", "p5.4xlarge"], ["p5*"])
    assert problems == [("instanceTypes[1]", "p5.4xlarge is also matched by excludedInstanceTypes")]


def test_explicit_list_keeps_its_order_as_priority():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types("nvidia", [demand], ["g6e.2xlarge", "g6e.xlarge"])
    assert problems == []
    assert choice is not None
    assert choice.chosen == ("g6e.2xlarge", "g6e.xlarge")
    assert choice.source == "instanceTypes"


def test_explicit_list_with_disagreeing_layouts_proposes_the_split():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types(
        "nvidia", [demand], ["g6e.xlarge", "g6.12xlarge", "g6e.2xlarge"]
    )
    assert choice is None
    [(key, message)] = problems
    assert key == "instanceTypes"
    assert "disagree on the device layout llama needs" in message
    assert "[g6e.xlarge, g6e.2xlarge] (llama tensor parallel 1" in message
    assert "[g6.12xlarge] (llama tensor parallel 2" in message


def test_pinned_tensor_parallel_makes_layouts_agree():
    # Unpinned, llama fits one L40S on the 4-GPU g6e.12xlarge and the 8-GPU g6e.48xlarge alike;
    # pinned to 2, both types give it the same two GPUs.
    demand = gpu("llama", "llama-3.1-8b", tensor_parallel_size=2, **LLAMA_8B)
    choice, problems = ir.choose_pool_types("nvidia", [demand], ["g6e.12xlarge", "g6e.48xlarge"])
    assert problems == []
    assert choice is not None
    assert choice.layouts["llama"] == ir.DeviceLayout("nvidia", 2, 2, "L40S")
    assert choice.tasks_per_instance("llama") == 2


def test_one_pool_holds_one_gpu_model():
    """Seed 000: "one ASG per GPU type". Types whose GPUs differ give even the same tensor
    parallel size a different per-task speed, so a list mixing them is refused with the split
    by GPU, and a list from sizing keeps only the cheapest type's GPU."""
    demand = gpu("llama", "llama-3.1-8b", tensor_parallel_size=2, **LLAMA_8B)
    mixed = ["g6e.12xlarge", "g6.12xlarge", "g5.12xlarge"]
    choice, problems = ir.choose_pool_types("nvidia", [demand], mixed)
    assert choice is None
    [(key, message)] = problems
    assert key == "instanceTypes"
    for name, chip in (("g6e.12xlarge", "L40S"), ("g6.12xlarge", "L4"), ("g5.12xlarge", "A10G")):
        assert f"[{name}] (llama tensor parallel 2 (2 {chip} GPU(s) per task))" in message
    for model, kwargs in (
        ("llama-3.1-8b", LLAMA_8B),
        ("llama-3.1-8b", {**LLAMA_8B, "max_concurrent_sequences": 64}),
        ("mistral-7b", {"max_model_len": 4096, "max_concurrent_sequences": 8}),
    ):
        for excluded in ([], ["g6e.*"], ["g6e.*", "g6.*"]):
            derived, found = ir.choose_pool_types(
                "nvidia", [gpu("m", model, **kwargs)], max_price_ratio=None, excluded=excluded
            )
            assert found == [] and derived is not None
            chips = {catalog.instance(name).accelerator_name for name in derived.chosen}
            assert len(chips) == 1, (model, excluded, derived.chosen)
            assert derived.layouts["m"].device_family in chips


def test_several_models_must_agree_each():
    a = gpu("a", "llama-3.1-8b", **LLAMA_8B)
    b = gpu("b", "mistral-7b", max_model_len=4096, max_concurrent_sequences=8)
    choice, problems = ir.choose_pool_types("nvidia", [a, b], ["g6e.xlarge", "g6e.4xlarge"])
    assert problems == [] and choice is not None
    assert set(choice.layouts) == {"a", "b"}


# --------------------------------------------------------------------------------------------
# Neuron: the artifact fixes tp degree, devices and the chip
# --------------------------------------------------------------------------------------------


def neuron(tp: int, arch: str = "llama-3.1-8b") -> NeuronDemand:
    return neuron_demand(tp, 4, 4096, arch, name="nx")


def test_neuron_layout_is_devices_and_chip():
    fit = ir.fit_on(neuron(8), catalog.instance("inf2.24xlarge"))
    assert fit.layout == ir.DeviceLayout("neuron", 4, 8, "Inferentia2")
    assert fit.tasks_per_instance == 1


def test_neuron_types_of_two_chips_disagree():
    choice, problems = ir.choose_pool_types(
        "neuron", [neuron(8)], ["inf2.24xlarge", "trn1.32xlarge", "inf2.48xlarge"]
    )
    assert choice is None
    [(key, message)] = problems
    assert key == "instanceTypes"
    assert "[inf2.24xlarge, inf2.48xlarge] (nx tp degree 8 on 4 Inferentia2" in message
    assert "[trn1.32xlarge] (nx tp degree 8 on 4 Trainium" in message


def test_neuron_derived_list_stays_on_one_chip():
    choice, problems = ir.choose_pool_types("neuron", [neuron(2)], max_price_ratio=None)
    assert problems == [] and choice is not None
    families = {catalog.instance(n).accelerator_name for n in choice.chosen}
    assert len(families) == 1
    # tp 2 on one chip: inf2.xlarge ($0.76) is the cheapest, so Inferentia2 it is
    assert choice.chosen[0] == "inf2.xlarge"


def test_neuron_tp_beyond_a_types_cores_is_a_misfit():
    _, problems = ir.choose_pool_types("neuron", [neuron(8)], ["inf2.xlarge"])
    assert problems and problems[0][0] == "instanceTypes[0]"
    assert "only 2 NeuronCores" in problems[0][1]


# --------------------------------------------------------------------------------------------
# task reservation across types
# --------------------------------------------------------------------------------------------


def test_reservation_is_the_smallest_share():
    demand = gpu("llama", "llama-3.1-8b", tensor_parallel_size=1, **LLAMA_8B)
    fits = [ir.fit_on(demand, catalog.instance(n)) for n in ("g6e.2xlarge", "g6e.12xlarge")]
    # g6e.2xlarge: 8 vCPU, 64 GiB, 1 copy -> 8192 units, 58982 MiB
    # g6e.12xlarge: 48 vCPU, 384 GiB, 4 copies -> 12288 units, 88473 MiB
    assert ir.task_reservation(fits, 0.10) == (8192, 58982)


def test_reservation_rejects_bad_fraction_and_empty():
    with pytest.raises(ValueError):
        ir.task_reservation([], 0.1)
    with pytest.raises(ValueError):
        ir.task_reservation([], 1.0)


# --------------------------------------------------------------------------------------------
# Managed Instances instanceRequirements
# --------------------------------------------------------------------------------------------


def test_requirements_for_gpu_pool():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, _ = ir.choose_pool_types("nvidia", [demand])
    assert choice is not None
    req = ir.managed_instance_requirements(choice)
    api = req.to_api()
    assert api["allowedInstanceTypes"] == ["g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge"]
    assert api["acceleratorManufacturers"] == ["nvidia"]
    assert api["acceleratorNames"] == ["l40s"]
    assert api["acceleratorTypes"] == ["gpu"]
    assert api["acceleratorCount"] == {"min": 1, "max": 1}
    assert api["vCpuCount"] == {"min": 4, "max": 16}
    assert api["memoryMiB"] == {"min": 32 * 1024, "max": 128 * 1024}
    need_mib = demand.need.per_gpu_gib(1) * 1024
    assert api["acceleratorTotalMemoryMiB"] == {"min": int(need_mib)}
    validate_named_shape("ecs", "InstanceRequirementsRequest", api)


def test_requirements_omit_names_ecs_cannot_express():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, _ = ir.choose_pool_types("nvidia", [demand], ["p5e.48xlarge"])
    assert choice is not None
    api = ir.managed_instance_requirements(choice).to_api()
    assert "acceleratorNames" not in api  # h200 is not an ECS AcceleratorName
    assert api["allowedInstanceTypes"] == ["p5e.48xlarge"]
    validate_named_shape("ecs", "InstanceRequirementsRequest", api)


def test_requirements_for_neuron_pool():
    choice, _ = ir.choose_pool_types("neuron", [neuron(2)])
    assert choice is not None
    api = ir.managed_instance_requirements(choice).to_api()
    assert api["acceleratorManufacturers"] == ["amazon-web-services"]
    assert "acceleratorCount" not in api and "acceleratorTypes" not in api
    validate_named_shape("ecs", "InstanceRequirementsRequest", api)


def test_shape_check_would_catch_a_wrong_name():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, _ = ir.choose_pool_types("nvidia", [demand])
    assert choice is not None
    api = ir.managed_instance_requirements(choice).to_api()
    api["acceleratorNames"] = ["h200"]
    with pytest.raises(ShapeError, match="h200"):
        validate_named_shape("ecs", "InstanceRequirementsRequest", api)


# --------------------------------------------------------------------------------------------
# properties over the config space
# --------------------------------------------------------------------------------------------

_ARCHS = sorted(catalog.MODEL_ARCHITECTURES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arch=st.sampled_from(_ARCHS),
    length=st.sampled_from([1024, 2048, 4096, 8192]),
    seqs=st.integers(1, 64),
    dtype=st.sampled_from(["auto", "fp8", "int4"]),
    excluded=st.lists(st.sampled_from(["g5.*", "g6.*", "g6e.*", "p4*", "p5*"]), max_size=2),
    ratio=st.sampled_from([None, 1.0, 1.5, 2.0, 4.0]),
)
def test_any_derived_choice_is_safe_for_one_task_definition(
    arch, length, seqs, dtype, excluded, ratio
):
    try:
        need = memory_need(arch, max_model_len=length, max_concurrent_sequences=seqs, dtype=dtype)
    except sizing.SizingError:
        return  # max_model_len beyond the model's context
    demand = GpuDemand("m", need)
    choice, problems = ir.choose_pool_types(
        "nvidia", [demand], excluded=excluded, max_price_ratio=ratio
    )
    if choice is None:
        assert problems and all(
            k in ("instanceTypes", "excludedInstanceTypes") for k, _ in problems
        )
        return
    assert problems == []
    chosen = choice.instances
    # every chosen type fits, all with the same layout, cheapest first, none excluded
    layouts = {ir.fit_on(demand, i).layout for i in chosen}
    assert layouts == {choice.layouts["m"]}
    prices = [i.on_demand_usd_hour for i in chosen]
    assert prices == sorted(prices)
    assert chosen[0].name == choice.fitting[0]
    if ratio is not None:
        assert max(prices) <= prices[0] * ratio + 1e-9
    assert not any(n.startswith(tuple(e.rstrip("*") for e in excluded)) for n in choice.chosen)
    # the reservation places on every chosen type
    cpu, mem = ir.task_reservation(choice.fits["m"].values(), 0.10)
    for i in chosen:
        per = choice.fits["m"][i.name].tasks_per_instance
        assert cpu * per <= i.vcpu * 1024 and mem * per <= i.memory_gib * 1024
    # and ECS accepts the requirements, which never exclude a chosen type
    req = ir.managed_instance_requirements(choice)
    validate_named_shape("ecs", "InstanceRequirementsRequest", req.to_api())
    layout = choice.layouts["m"]
    occupied_mib = need.per_gpu_gib(layout.tp) * layout.tp * 1024
    floor_mib = min(
        i.accelerator_count
        * min(i.accelerator_memory_gib * 1024, i.accelerator_memory_gb * 10**9 / 2**20)
        for i in chosen
    )
    assert req.accelerator_total_memory_mib_min == max(1, int(min(occupied_mib, floor_mib)))
    for i in chosen:
        assert req.vcpu_min <= i.vcpu <= (req.vcpu_max or i.vcpu)
        assert req.memory_mib_min <= i.memory_gib * 1024 <= (req.memory_mib_max or 10**9)
        assert req.accelerator_total_memory_mib_min is not None
        assert req.accelerator_total_memory_mib_min <= i.accelerator_count * min(
            i.accelerator_memory_gib * 1024, i.accelerator_memory_gb * 10**9 / 2**20
        )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arch=st.sampled_from(_ARCHS),
    length=st.sampled_from([2048, 4096, 8192]),
    seqs=st.integers(1, 64),
    util=st.sampled_from([0.8, 0.9, 0.95]),
    tp=st.sampled_from([None, 1, 2, 4, 8]),
)
def test_try_fit_agrees_with_fit_on(arch, length, seqs, util, tp):
    """The fast scan and the explained check accept exactly the same types, same layout."""
    try:
        need = memory_need(arch, max_model_len=length, max_concurrent_sequences=seqs)
    except sizing.SizingError:
        return  # max_model_len beyond the model's context
    demand = GpuDemand("m", need, util, tp)
    for inst in catalog.INSTANCE_TYPES.values():
        fast = ir.try_fit(demand, inst)
        try:
            slow = ir.fit_on(demand, inst)
        except sizing.SizingError:
            slow = None
        assert (fast is None) == (slow is None), inst.name
        if fast is not None and slow is not None:
            assert fast.layout == slow.layout and fast.tasks_per_instance == slow.tasks_per_instance


# --------------------------------------------------------------------------------------------
# the stack's region: only what it offers, at its prices
# --------------------------------------------------------------------------------------------


def test_a_region_without_the_cheapest_type_picks_another_it_offers():
    # In us-east-1 the cheapest holder is g6e.xlarge; eu-west-1 offers no g6e and no g6.
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types("nvidia", [demand], region="eu-west-1")
    assert problems == [] and choice is not None
    assert all(offerings.offered(name, "eu-west-1") for name in choice.fitting)
    assert not [n for n in choice.fitting if n.startswith(("g6e.", "g6."))]
    assert choice.chosen[0] == "g5.12xlarge"


def test_the_region_ranks_by_its_own_prices():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    fits = ir.fitting_types(demand, region="eu-central-1")
    prices = [offerings.instance_usd_per_hour(f.instance.name, "eu-central-1") for f in fits]
    assert None not in prices and prices == sorted(cast("list[float]", prices))


def test_a_listed_type_the_region_does_not_offer_names_where_it_is_offered():
    demand = gpu("llama", "llama-3.1-8b", **LLAMA_8B)
    choice, problems = ir.choose_pool_types(
        "nvidia", [demand], ["g6e.12xlarge"], region="eu-west-1"
    )
    assert choice is None
    ((key, message),) = problems
    assert key == "instanceTypes[0]"
    assert "not offered in eu-west-1" in message
    assert "eu-central-1" in message and "us-east-1" in message
    # The same list is fine where it is offered.
    _, problems = ir.choose_pool_types("nvidia", [demand], ["g6e.12xlarge"], region="eu-central-1")
    assert problems == []


def test_a_type_in_one_zone_of_the_region_is_not_enough():
    # eu-west-2 lists inf2.8xlarge in euw2-az2 only: a pool spanning two zones cannot use it.
    demand = neuron_demand(2, 4, 4096, "llama-3.1-8b", name="m")
    _, problems = ir.choose_pool_types("neuron", [demand], ["inf2.8xlarge"], region="eu-west-2")
    ((key, message),) = problems
    assert key == "instanceTypes[0]" and "1 zone (euw2-az2) only" in message
