"""build_plan: sizing and headroom decisions, and failures that name the config path."""

from __future__ import annotations

import pytest

from ecs_inference import sizing
from ecs_inference.config.issues import Issues
from ecs_inference.config.load import load_stack_config
from ecs_inference.endpoint.decisions import idle_timeout
from ecs_inference.engines.neuron import NeuronLaunch
from ecs_inference.engines.vllm import VllmLaunch
from ecs_inference.models.decisions import demands
from ecs_inference.sizing import catalog
from ecs_inference.sizing.headroom import choose_deploy
from ecs_inference.sizing.instance_types import GpuDemand
from tests.stack_config import DELETE, issues_of, mutate, plan_of, reference

STACK = "dev"


def test_dev_plan_decisions() -> None:
    plan = plan_of(reference("dev"), STACK)
    llama = plan.models["llama"]
    assert isinstance(llama.launch, VllmLaunch)
    assert llama.gpu_count == llama.launch.tensor_parallel_size == 1
    idle = idle_timeout(plan.config.endpoint, plan.endpoint.longest_request_seconds).seconds
    assert llama.launch.alb_idle_timeout_seconds == idle >= 300
    assert llama.delay.seconds >= 300
    deploy = (llama.deploy.minimum_healthy_percent, llama.deploy.maximum_percent)
    assert deploy == (100, 200)
    neuron = plan.models["llama-neuron"]
    assert isinstance(neuron.launch, NeuronLaunch)
    assert neuron.neuron_devices == ("/dev/neuron0",) and neuron.one_task_per_instance
    assert (neuron.weights.bucket, neuron.weights.prefix) == (
        "example-dev-models",
        "llama-3.1-8b-neuron-bs4-seq4096-tp2",
    )
    assert plan.rerankers["rerank"].cpu == 2048
    decisions = plan.decisions
    assert {"endpoint", "model llama", "model llama-neuron", "reranker rerank"} <= set(decisions)


def test_prod_70b_long_context_needs_all_eight_gpus() -> None:
    plan = plan_of(reference("prod"), "prod")
    big = plan.models["llama-70b"]
    assert big.gpu_count == 8 and big.launch.tensor_parallel_size == 8
    # weights alone (~131 GiB) would fit 4 L40S; the KV cache at 32k context is what needs 8
    demand = demands(load_stack_config(reference("prod"), "prod").models, Issues())["llama-70b"]
    assert isinstance(demand, GpuDemand)
    fit = sizing.choose_tensor_parallel(
        demand.need, catalog.instance("g6e.48xlarge"), demand.gpu_memory_utilization
    )
    assert fit.tp_size == 8
    assert demand.need.weights_gib < 4 * fit.usable_per_gpu_gib
    assert big.shm_size_mib > 2048


def test_model_that_does_not_fit_names_numbers_and_cheaper_types() -> None:
    raw = mutate(reference("dev"), "models.llama.architecture", "llama-3.1-70b")
    issues = issues_of(raw, STACK)
    assert len(issues) == 1 and issues[0].path == "platform.models.llama"
    msg = issues[0].message
    assert "GiB" in msg and "g6e.xlarge" in msg
    assert "p4d.24xlarge" in msg or "g6e.48xlarge" in msg


def test_gpu_type_in_neuron_pool_is_rejected() -> None:
    issues = issues_of(
        mutate(reference("dev"), "neuronPools.inf2.instanceType", "g6e.xlarge"), STACK
    )
    assert [i.path for i in issues] == ["platform.neuronPools.inf2.instanceType"]
    assert "NVIDIA" in issues[0].message and "GpuAsgPool" in issues[0].message


def test_unknown_instance_type() -> None:
    issues = issues_of(mutate(reference("dev"), "gpuPools.l40s.instanceType", "g9.xlarge"), STACK)
    assert [i.path for i in issues] == ["platform.gpuPools.l40s.instanceType"]


def test_pool_too_small_for_desired_counts() -> None:
    raw = mutate(reference("dev"), "models.llama.desiredCount", 4)
    raw = mutate(raw, "models.llama.maxCount", 4)
    issues = issues_of(raw, STACK)
    assert [i.path for i in issues] == ["platform.gpuPools.l40s.maxSize"]
    assert "4 instance(s)" in issues[0].message


def test_idle_timeout_override_shorter_than_generation() -> None:
    issues = issues_of(mutate(reference("dev"), "endpoint.idleTimeoutSeconds", 60), STACK)
    assert [i.path for i in issues] == ["platform.endpoint.idleTimeoutSeconds"]


def test_reranker_need_that_fits_no_grid_size() -> None:
    raw = mutate(reference("dev"), "rerankers.rerank.cpu", DELETE)
    raw = mutate(raw, "rerankers.rerank.memoryMib", DELETE)
    raw = mutate(raw, "rerankers.rerank.needMemoryMib", 300_000)
    issues = issues_of(raw, STACK)
    assert [i.path for i in issues] == ["platform.rerankers.rerank"]


def test_reranker_off_grid_exact_size() -> None:
    issues = issues_of(mutate(reference("dev"), "rerankers.rerank.memoryMib", 20480), STACK)
    assert [i.path for i in issues] == ["platform.rerankers.rerank.memoryMib"]
    assert "2048" in issues[0].message


def test_reranker_cheapest_size_for_a_need() -> None:
    raw = mutate(reference("dev"), "rerankers.rerank.cpu", DELETE)
    raw = mutate(raw, "rerankers.rerank.memoryMib", DELETE)
    raw = mutate(raw, "rerankers.rerank.needMemoryMib", 12 * 1024)
    spec = plan_of(raw, STACK).rerankers["rerank"]
    assert (spec.cpu, spec.memory_mib) == (2048, 12288)  # 12 GB starts at 2 vCPU


@pytest.mark.parametrize(
    ("min_count", "max_count", "tpi", "capacity", "expected"),
    [
        (1, 1, 1, 2, (100, 200)),  # room for one more instance: surge
        (1, 2, 1, 2, (50, 200)),  # surge at 1 task; at 2 the pool is full: one replaced at a time
        (2, 2, 1, 2, (50, 100)),  # no room at 2: replace one at a time
        (4, 4, 1, 4, (75, 100)),
        (1, 1, 1, 1, (0, 100)),  # single task, no room: downtime, stated
        (2, 2, 2, 1, (50, 100)),  # two tasks share the only instance
        (2, 3, 1, 4, (100, 200)),  # room even at the maximum count
    ],
)
def test_choose_deploy(min_count, max_count, tpi, capacity, expected) -> None:
    plan = choose_deploy(min_count, max_count, tpi, capacity)
    assert (plan.minimum_healthy_percent, plan.maximum_percent) == expected
    # Only the single task without room has a moment with no task serving (one at a time of
    # two keeps the other).
    assert (plan.outage is not None) == (expected == (0, 100)), plan.outage


def test_more_services_than_alb_rules_allow() -> None:
    raw = reference("dev")
    raw["rerankers"] = {f"rr{i}": {"modelUri": "s3://bucket-x/m/"} for i in range(50)}
    issues = issues_of(raw, STACK)
    assert [i.path for i in issues] == ["platform.models"]
    assert "at most 50 services" in issues[0].message
