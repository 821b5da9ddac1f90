"""The cost estimate: hand-checked figures, the scale points' order for any config, the reference
stacks through the real plan and the preview, and the assumptions kept honest by measurement."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_inference import cost
from ecs_inference.contracts import metrics as contract
from ecs_inference.pools.input import PoolConfig, WarmPoolConfig
from ecs_inference.sizing import catalog, offerings
from tests.stacks import REFERENCE_STACKS, reference_plan

REPO = Path(__file__).resolve().parents[1]
STACKS = REFERENCE_STACKS


def _service(name: str, counts: cost.Counts, tasks_per_instance: int = 1) -> cost.ServiceOnPool:
    return cost.ServiceOnPool(name, counts, "vllm", tasks_per_instance=tasks_per_instance)


def _pool(services=None, **kw) -> cost.PoolInput:
    """A one-type g6e.xlarge pool (min 0, max 5) at the gp3 baseline, running `llama` (1/2/4)."""
    args = dict(
        instance_type="g6e.xlarge",
        max_size=5,
        root_volume_gib=200,
        root_volume_iops=3000,
        root_volume_throughput=125,
    )
    args.update(kw)
    return cost.PoolInput(
        "l40s",
        PoolConfig.model_validate(args),
        catalog.instance("g6e.xlarge").on_demand_usd_hour,
        services if services is not None else [_service("llama", cost.Counts(1, 2, 4))],
    )


def _stack(pools=None, fargate=None, **net) -> cost.StackInput:
    network = dict(nat_gateways=1, availability_zones=2, interface_endpoints=7)
    network.update(net)
    return cost.StackInput(
        pools=pools if pools is not None else [_pool()],
        fargate=fargate
        if fargate is not None
        else [_fargate("rerank", 2048, 4096, "ARM64", cost.Counts(1, 1, 2))],
        network=cost.NetworkInput(**network),
    )


def _fargate(name: str, cpu: int, memory: int, arch, counts: cost.Counts) -> cost.FargateInput:
    return cost.FargateInput(
        name, counts, "reranker", cpu=cpu, memory_mib=memory, architecture=arch
    )


def _line(point: cost.CostPoint, category: str) -> float:
    return point.by_category()[category]


def test_hand_checked_figures():
    est = cost.estimate_inputs(_stack())
    steady = est.point("steady")
    assert _line(steady, "pool instances") == pytest.approx(2 * 1.861)
    gp3_hour = 200 * 1.073741824 * 0.08 / 730
    assert _line(steady, "pool EBS") == pytest.approx(2 * gp3_hour)
    assert _line(steady, "Fargate tasks") == pytest.approx(2 * 0.03238 + 4 * 0.00356)
    assert _line(steady, "NAT gateways") == pytest.approx(0.045 + 0.05 * 0.045)
    assert _line(steady, "load balancer") == pytest.approx(0.0225 + 0.008)
    assert _line(steady, "VPC endpoints") == pytest.approx(7 * 2 * 0.01)
    assert steady.usd_per_month == pytest.approx(steady.usd_per_hour * 730)
    assert sum(line.usd_per_hour for line in steady.lines) == pytest.approx(steady.usd_per_hour)
    # one excursion 2 -> 4 instances keeps 2 extra for 15 minutes
    assert est.excursion_usd == pytest.approx(2 * 1.861 * 15 / 60)


def test_target_capacity_below_100_keeps_spare_instances_within_max():
    half = _pool(target_capacity_percent=50)
    assert cost.pool_instances(half, "steady") == 4  # 2 needed / 50 %
    assert cost.pool_instances(half, "maximum") == 5  # 8 wanted, maxSize 5
    assert cost.pool_instances(_pool(min_size=3), "minimum") == 3  # minSize holds instances


def test_tasks_per_instance_pack_instances():
    packed = _pool(services=[_service("s", cost.Counts(1, 3, 7), 4)])
    assert [cost.pool_instances(packed, p) for p in cost.POINTS] == [1, 1, 2]


def test_warm_pool_stopped_costs_ebs_and_running_costs_instances():
    stopped = _pool(warm_pool=WarmPoolConfig(min_size=1))
    assert cost.warm_instances(stopped, 2) == 3  # maxSize 5 - 2 in service
    assert cost.warm_instances(stopped, 5) == 1  # never below the warm pool's MinSize
    est = cost.estimate_inputs(_stack(pools=[stopped]))
    gp3_hour = 200 * 1.073741824 * 0.08 / 730
    assert _line(est.point("steady"), "warm pool") == pytest.approx(3 * gp3_hour)
    running = _pool(
        warm_pool=WarmPoolConfig(min_size=1, max_group_prepared_capacity=3, state="Running")
    )
    est = cost.estimate_inputs(_stack(pools=[running]))
    assert _line(est.point("steady"), "warm pool") == pytest.approx(1 * (1.861 + gp3_hour))


def test_nat_per_az_and_no_endpoints():
    est = cost.estimate_inputs(_stack(nat_gateways=3, availability_zones=3, interface_endpoints=0))
    steady = est.point("steady")
    assert _line(steady, "NAT gateways") == pytest.approx(3 * 0.045 + 0.05 * 0.045)
    assert "VPC endpoints" not in steady.by_category()


counts = st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(1, 40)).map(sorted)


@settings(max_examples=150, deadline=None)
@given(
    model_counts=st.lists(counts, min_size=0, max_size=3),
    reranker_counts=st.lists(counts, min_size=0, max_size=2),
    tpi=st.integers(1, 8),
    target=st.integers(1, 100),
    sizes=st.tuples(st.integers(0, 10), st.integers(1, 60)).map(sorted),
    warm=st.one_of(st.none(), st.integers(0, 5)),
    arch=st.sampled_from(["ARM64", "X86_64"]),
)
def test_minimum_le_steady_le_maximum_for_any_config(
    model_counts, reranker_counts, tpi, target, sizes, warm, arch
):
    pool = _pool(
        min_size=sizes[0],
        max_size=max(sizes[1], 1),
        target_capacity_percent=target,
        services=[_service(f"m{i}", cost.Counts(*c), tpi) for i, c in enumerate(model_counts)],
        warm_pool=None if warm is None else WarmPoolConfig(min_size=warm),
    )
    fargate = [
        _fargate(f"r{i}", 1024, 2048, arch, cost.Counts(*c)) for i, c in enumerate(reranker_counts)
    ]
    est = cost.estimate_inputs(_stack(pools=[pool], fargate=fargate))
    lo, mid, hi = (est.point(p) for p in cost.POINTS)
    for category in ("pool instances", "Fargate tasks", "log ingestion"):
        values = [p.by_category().get(category, 0.0) for p in (lo, mid, hi)]
        assert values[0] <= values[1] + 1e-9 <= values[2] + 2e-9, category
    for p in (lo, mid, hi):
        instances = cost.pool_instances(pool, p.point)
        assert pool.input.min_size <= instances <= pool.input.max_size
        assert math.isfinite(p.usd_per_hour) and p.usd_per_hour > 0
    assert est.excursion_usd >= 0
    json.dumps(est.to_json(), allow_nan=False)


@pytest.mark.parametrize("stack", STACKS)
def test_reference_stacks_through_the_real_plan(stack):
    plan = reference_plan(stack)
    est = cost.estimate(plan)
    doc = est.to_json()
    assert set(doc["points"]) == {"minimum", "steady", "maximum"}
    steady = est.point("steady")
    cheapest = {n: p.input.types[0] for n, p in {**plan.gpu_pools, **plan.neuron_pools}.items()}
    for name, p in plan.managed_instance_pools.items():
        cheapest[name] = p.requirements.allowed_instance_types[0]
    for name, instance in cheapest.items():
        line = next(li for li in steady.lines if li.item.startswith(f"{name}:"))
        assert instance in line.item
    assert doc["pricesAsOf"] == cost.PRICES_AS_OF and "us-east-1" in doc["pricesSource"]
    assert any("log ingestion" in a for a in doc["assumptions"])
    assert doc["points"]["maximum"]["usdPerMonth"] >= doc["points"]["steady"]["usdPerMonth"]


def test_emf_line_assumption_matches_the_sidecar_s_real_output():
    """The log-ingestion assumption per scrape is the measured sidecar line + CloudWatch Logs'
    26-byte event overhead, within 1x-1.5x (so the cost neither hides nor invents log cost)."""
    from tests.operations.engine_metrics import FakeEngine
    from tests.operations.test_metrics_sidecar import _spec, sidecar
    from tools.sources import vllm as vllm_source

    engine = FakeEngine(vllm_source.VLLM_GPU, model="llama-3-1-70b-instruct")
    spec = _spec("vllm")
    deriver = sidecar.Deriver(spec)
    deriver.derive(sidecar.parse_exposition(engine.text()))
    engine.set("vllm:num_requests_waiting", 13)
    engine.set("vllm:num_requests_running", 64)
    engine.set("vllm:kv_cache_usage_perc", 0.7345129)
    for name, amount in (
        ("vllm:prompt_tokens", 1234567),
        ("vllm:generation_tokens", 234567),
        ("vllm:request_success", 871),
        ("vllm:num_preemptions", 3),
    ):
        engine.inc(name, amount)
    for name, values in (
        ("vllm:time_to_first_token_seconds", [0.1234, 2.71]),
        ("vllm:inter_token_latency_seconds", [0.0123, 0.21]),
        ("vllm:e2e_request_latency_seconds", [12.3, 45.6]),
    ):
        engine.observe(name, values * 50)
    values = {contract.ENGINE_UP: 1.0, **deriver.derive(sidecar.parse_exposition(engine.text()))}
    assert set(values) == set(contract.published_names("vllm"))  # the full line
    dims = {"Stack": "production-eu-west", "Service": "llama-70b-instruct", "Task": "f" * 32}
    line = json.dumps(sidecar.emf_document(spec, values, dims, 1_764_500_000_000),
                      separators=(",", ":"))  # fmt: skip
    measured = len(line.encode()) + 26
    assumed = cost.Assumptions().emf_bytes_per_scrape
    assert measured <= assumed <= 1.5 * measured, (measured, assumed)


def test_diff_per_point_handles_missing_sides():
    head = cost.estimate_inputs(_stack()).to_json()
    base = cost.estimate_inputs(_stack(nat_gateways=2)).to_json()
    d = cost.diff(base, head)
    assert d["steady"]["change"] == pytest.approx(-0.045 * 730, abs=0.02)
    assert cost.diff(None, head)["steady"] == {
        "base": None,
        "head": head["points"]["steady"]["usdPerMonth"],
        "change": None,
    }


def test_gp3_iops_and_throughput_above_the_baseline_are_billed():
    """gp3 includes 3,000 IOPS and 125 MiB/s; what a pool provisions above is billed per
    IOPS-month and MiB/s-month (issue 24 item 8: prod's l40s-8x volumes were under-costed ~2x)."""
    fast = _pool(root_volume_gib=500, root_volume_iops=6000, root_volume_throughput=1000)
    size = 500 * 1.073741824 * 0.08
    extra = (6000 - 3000) * 0.005 + (1000 - 125) * 0.04
    est = cost.estimate_inputs(_stack(pools=[fast]))
    assert _line(est.point("steady"), "pool EBS") == pytest.approx(2 * (size + extra) / 730)
    assert (size + extra) / size == pytest.approx(2.16, abs=0.01)


def test_prod_costs_its_provisioned_volume_performance():
    from tools.preview import run_preview

    doc = run_preview("prod", policy_pack=None).outputs["cost"]
    lines = [
        line
        for line in doc["points"]["minimum"]["lines"]
        if line["category"] == "pool EBS" and line["item"].startswith("l40s-8x")
    ]
    (line,) = lines
    per_volume_month = line["usd_per_hour"] / line["quantity"] * 730
    assert per_volume_month == pytest.approx(500 * 1.073741824 * 0.08 + 15 + 35, abs=0.01)


# ------------------------------------------------------------------------------------------------
# regions
# ------------------------------------------------------------------------------------------------


def test_the_eu_west_1_reference_stack_costs_its_instances_at_eu_west_1_prices():
    plan = reference_plan("shared-vpc")
    assert plan.network.wiring.region == "eu-west-1"
    est = cost.estimate(plan)
    (line,) = [x for x in est.point("steady").lines if x.category == "pool instances"]
    assert line.item == "a10g: g5.xlarge"
    assert line.usd_per_hour == pytest.approx(line.quantity * 1.123)  # not us-east-1's 1.006
    assert "eu-west-1" in est.prices_source and "skypilot-catalog" in est.prices_source
    assert any(n.startswith("eu-west-1: Fargate, NAT gateway") for n in est.notes)


def test_us_east_1_and_an_unset_region_keep_the_catalogs_prices_and_source():
    for region in (None, "us-east-1"):
        est = cost.estimate_inputs(dataclasses.replace(_stack(), region=region))
        assert _line(est.point("steady"), "pool instances") == pytest.approx(2 * 1.861)
        assert est.prices_source == cost.PRICES_SOURCE
        assert not [n for n in est.notes if "price table" in n]


def test_a_type_without_a_price_in_the_region_is_counted_at_a_labelled_estimate():
    # The source offers p5e.48xlarge only through Capacity Blocks: no On-Demand price anywhere.
    # Its instances stay in the total, at the estimate, and the line and notes say so.
    plan_like = dataclasses.replace(_stack(), region="us-east-2")
    usd = offerings.ranking_usd_per_hour("p5e.48xlarge", "us-east-2")
    assert offerings.instance_usd_per_hour("p5e.48xlarge", "us-east-2") is None
    priced = cost.pool_input("l40s", PoolConfig(instance_type="p5e.48xlarge"), "us-east-2", ())
    assert priced.price_estimated and priced.usd_per_hour == usd
    estimated = dataclasses.replace(priced, services=_pool().services)
    est = cost.estimate_inputs(dataclasses.replace(plan_like, pools=[estimated]))
    (line,) = [x for x in est.point("steady").lines if x.category == "pool instances"]
    assert line.quantity == 2 and line.usd_per_hour == pytest.approx(2 * usd)
    assert "estimated price" in line.item
    assert any("no us-east-2 On-Demand price for p5e.48xlarge" in n for n in est.notes)


def test_stack_input_counts_every_instance_of_a_region_without_a_price():
    plan = reference_plan("shared-vpc")
    wiring = dataclasses.replace(plan.network.wiring, region="ap-south-2")
    network = dataclasses.replace(plan.network, wiring=wiring)
    (pool,) = cost.stack_input(dataclasses.replace(plan, network=network)).pools
    assert pool.price_estimated and pool.usd_per_hour == offerings.ranking_usd_per_hour("g5.xlarge")
    (pool,) = cost.stack_input(plan).pools
    assert not pool.price_estimated and pool.usd_per_hour == 1.123


def test_an_eu_central_1_stack_is_costed_at_eu_central_1_prices_with_every_instance():
    plan = reference_plan("dev", region="eu-central-1")
    est = cost.estimate(plan)
    lines = [x for x in est.point("steady").lines if x.category == "pool instances"]
    assert lines and all(x.quantity > 0 for x in lines)
    for line in lines:
        instance_type = line.item.split(": ", 1)[1]
        eu = offerings.instance_usd_per_hour(instance_type, "eu-central-1")
        assert eu is not None and "estimated" not in line.item
        assert line.usd_per_hour == pytest.approx(line.quantity * eu)
    assert not [n for n in est.notes if "estimated" in n]
