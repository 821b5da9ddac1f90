"""Config sections and plan of the gateway and the workers: the bad configs of issue 17 each get
one clear error with the config path."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ecs_inference.config.gateway import GatewayConfig
from ecs_inference.config.workers import WorkerConfig
from ecs_inference.contracts.litellm import IMAGE as DEFAULT_GATEWAY_IMAGE
from ecs_inference.specs.gateway import ServiceTarget, plan_gateway
from ecs_inference.specs.worker import plan_workers

MASTER = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gw/master-AbCdEf"
SALT = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gw/salt-AbCdEf"
TARGETS = {
    "llama": ServiceTarget("llama", "llama-3.1-8b", "llama.inference", 8000, 300),
    "qwen": ServiceTarget("qwen", "qwen", "qwen.inference", 8000, 600),
}
WORKER = {
    "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/summarise:1.4.0",
    "maxJobSeconds": 900,
    "jobSeconds": 60,
    "acceptableLatencySeconds": 600,
}


def gateway(**extra) -> GatewayConfig:
    return GatewayConfig.model_validate({"masterKeySecretArn": MASTER, **extra})


def test_defaults_route_every_model_on_arm64_with_the_pinned_image():
    plan, issues = plan_gateway(gateway(), TARGETS, service_names=["llama", "qwen"])
    assert not issues and plan is not None
    assert plan.config.image == DEFAULT_GATEWAY_IMAGE
    assert plan.config.cpu_architecture == "ARM64"
    assert [r.model_name for r in plan.spec.routes] == ["llama-3.1-8b", "qwen"]
    assert (plan.size.cpu, plan.size.memory_mib) == (1024, 2048)
    assert any("database: off" in line for line in plan.decisions())


def test_route_to_a_model_that_does_not_exist():
    _, issues = plan_gateway(
        gateway(routes={"big": "llama-70b"}), TARGETS, service_names=["llama", "qwen"]
    )
    assert [i.path for i in issues] == ["platform.gateway.routes.big"]


def test_bedrock_models_without_a_region():
    cfg = gateway(bedrock={"models": {"haiku": "amazon.nova-lite-v1:0"}})
    _, issues = plan_gateway(cfg, TARGETS, service_names=["llama", "qwen"])
    assert [i.path for i in issues] == ["platform.gateway.bedrock.region"]


def test_gateway_path_may_not_be_a_service_and_size_must_be_on_the_grid():
    _, issues = plan_gateway(
        gateway(path="llama", cpu=1024, memoryMib=512), TARGETS, service_names=["llama"]
    )
    assert sorted(i.path for i in issues) == ["platform.gateway.cpu", "platform.gateway.path"]


def test_gateway_without_anything_to_route_is_refused():
    _, issues = plan_gateway(gateway(), {}, service_names=[])
    assert [i.path for i in issues] == ["platform.gateway"]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"masterKeySecretArn": "sk-plaintext"}, "Secrets Manager secret ARN"),
        ({"masterKeySecretArn": MASTER, "database": {"enabled": True}}, "saltKeySecretArn"),
        ({"masterKeySecretArn": MASTER, "bogus": 1}, "Extra inputs"),
        ({}, "Field required"),
    ],
)
def test_schema_refuses_plaintext_keys_missing_salt_and_typos(raw, needle):
    with pytest.raises(ValidationError, match=needle):
        GatewayConfig.model_validate(raw)


def test_database_option_with_salt_is_accepted():
    cfg = gateway(database={"enabled": True, "saltKeySecretArn": SALT})
    plan, issues = plan_gateway(cfg, TARGETS, service_names=[])
    assert not issues and plan is not None and plan.spec.database


def test_worker_plan_derives_visibility_and_target():
    plans, issues = plan_workers(
        {"summarise": WorkerConfig.model_validate(WORKER)}, has_gateway=True
    )
    assert not issues
    plan = plans["summarise"]
    assert plan.visibility.seconds == 990
    assert plan.target == 10.0
    assert (plan.size.cpu, plan.size.memory_mib) == (256, 512)
    text = " ".join(plan.decisions())
    assert "990 s" in text and "at 10 messages" in text and "to zero after 15 min" in text


def test_worker_whose_job_exceeds_the_sqs_visibility_limit():
    cfg = WorkerConfig.model_validate({**WORKER, "maxJobSeconds": 50_000})
    _, issues = plan_workers({"summarise": cfg}, has_gateway=True)
    assert [i.path for i in issues] == ["platform.workers.summarise.maxJobSeconds"]
    assert "43200" in issues[0].message


def test_worker_problems_are_all_reported_with_their_paths():
    cfg = WorkerConfig.model_validate({**WORKER, "jobSeconds": 1000, "cpu": 256, "memoryMib": 4096})
    _, issues = plan_workers({"w": cfg}, has_gateway=False)
    assert sorted(i.path for i in issues) == [
        "platform.workers.w",
        "platform.workers.w.cpu",
        "platform.workers.w.jobSeconds",
    ]


def test_worker_needs_an_image():
    with pytest.raises(ValidationError, match="needs `image`"):
        WorkerConfig.model_validate({k: v for k, v in WORKER.items() if k != "image"})


def test_worker_schema_rejects_credentials_in_environment():
    with pytest.raises(ValidationError, match="looks like a credential"):
        WorkerConfig.model_validate({**WORKER, "environment": {"API_KEY": "x"}})
