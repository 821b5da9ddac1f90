"""Config sections and plan of the gateway and the workers: the bad configs of issue 17 each get
one clear error with the config path."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ecs_inference.contracts import litellm
from ecs_inference.contracts.litellm import IMAGE as DEFAULT_GATEWAY_IMAGE
from ecs_inference.gateway.decisions import GatewayPlacement, decision_lines, gateway_service
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.gateway.litellm_config import ServiceTarget
from ecs_inference.workers.decisions import GatewayKeys, worker_service
from ecs_inference.workers.input import WorkerConfig

MASTER = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gw/master-AbCdEf"
SALT = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gw/salt-AbCdEf"
KEYS = GatewayKeys(MASTER)
TARGETS = {
    "llama": ServiceTarget("llama", "llama-3.1-8b", "llama.inference", 8000, 300),
    "qwen": ServiceTarget("qwen", "qwen", "qwen.inference", 8000, 600),
}
PLACED = GatewayPlacement(TARGETS)
WORKER = {
    "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/summarise:1.4.0",
    "maxJobSeconds": 900,
    "jobSeconds": 60,
    "acceptableLatencySeconds": 600,
}


def gateway(**extra) -> GatewayConfig:
    return GatewayConfig.model_validate({"masterKeySecretArn": MASTER, **extra})


def test_defaults_route_every_model_on_arm64_with_the_pinned_image():
    decided, issues = gateway_service(gateway(), PLACED, service_names=["llama", "qwen"])
    assert not issues and decided is not None
    assert decided.input.image == DEFAULT_GATEWAY_IMAGE
    assert decided.input.cpu_architecture == "ARM64"
    assert [r.model_name for r in decided.routes] == ["llama-3.1-8b", "qwen"]
    assert (decided.input.cpu, decided.input.memory_mib) == (1024, 2048)
    assert any("database: off" in line for line in decision_lines(decided))


def test_route_to_a_model_that_does_not_exist():
    _, issues = gateway_service(
        gateway(routes={"big": "llama-70b"}), PLACED, service_names=["llama", "qwen"]
    )
    assert [i.path for i in issues] == ["platform.gateway.routes.big"]


def test_bedrock_models_without_a_region():
    cfg = gateway(bedrock={"models": {"haiku": "amazon.nova-lite-v1:0"}})
    _, issues = gateway_service(cfg, PLACED, service_names=["llama", "qwen"])
    assert [i.path for i in issues] == ["platform.gateway.bedrock.region"]


def test_gateway_path_may_not_be_a_service_and_size_must_be_on_the_grid():
    _, issues = gateway_service(
        gateway(path="llama", cpu=1024, memoryMib=512), PLACED, service_names=["llama"]
    )
    # memory 512 is off the grid for cpu 1024: the memory holds the bad value
    assert sorted(i.path for i in issues) == ["platform.gateway.memoryMib", "platform.gateway.path"]


def test_gateway_without_anything_to_route_is_refused():
    _, issues = gateway_service(gateway(), GatewayPlacement({}))
    assert [i.path for i in issues] == ["platform.gateway"]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ({"masterKeySecretArn": "sk-plaintext"}, "Secrets Manager secret ARN"),
        ({"masterKeySecretArn": MASTER, "database": {"enabled": True}}, "saltKeySecretArn"),
        ({"masterKeySecretArn": MASTER, "bogus": 1}, "Extra inputs"),
        ({}, "master key is required but missing"),
        ({"masterKey": "plaintext-without-prefix"}, "must start with 'sk-'"),
        ({"masterKey": "sk-a", "masterKeySecretArn": MASTER}, "not both"),
        (
            {
                "masterKey": "sk-a",
                "database": {"enabled": True, "saltKey": "s", "saltKeySecretArn": SALT},
            },
            "not both",
        ),
    ],
)
def test_schema_refuses_plaintext_keys_missing_salt_and_typos(raw, needle):
    with pytest.raises(ValidationError, match=needle):
        GatewayConfig.model_validate(raw)


def test_database_option_with_salt_is_accepted():
    cfg = gateway(database={"enabled": True, "saltKeySecretArn": SALT})
    decided, issues = gateway_service(cfg, PLACED)
    assert not issues and decided is not None and decided.input.database.enabled
    assert decided.secret_refs[litellm.ENV_SALT_KEY] == SALT
    database = decided.input.database
    assert database.max_capacity_acu >= database.min_capacity_acu


def test_worker_plan_derives_visibility_and_target():
    decided, issues = worker_service("summarise", WorkerConfig.model_validate(WORKER), gateway=KEYS)
    assert not issues and decided is not None
    assert decided.visibility_timeout_seconds == 990
    assert decided.backlog_target == 10.0
    assert (decided.input.cpu, decided.input.memory_mib) == (256, 512)
    text = " ".join(decided.lines)
    assert "990 s" in text and "at 10 messages" in text and "to zero after 15 min" in text


def test_worker_whose_job_exceeds_the_sqs_visibility_limit():
    cfg = WorkerConfig.model_validate({**WORKER, "maxJobSeconds": 50_000})
    _, issues = worker_service("summarise", cfg, gateway=KEYS)
    assert [i.path for i in issues] == ["platform.workers.summarise.maxJobSeconds"]
    assert "43200" in issues[0].message


def test_worker_problems_are_all_reported_with_their_paths():
    cfg = WorkerConfig.model_validate({**WORKER, "jobSeconds": 1000, "cpu": 256, "memoryMib": 4096})
    _, issues = worker_service("w", cfg, gateway=None)
    assert sorted(i.path for i in issues) == [
        "platform.workers.w",
        "platform.workers.w.jobSeconds",
        "platform.workers.w.memoryMib",
    ]


def test_worker_needs_an_image():
    with pytest.raises(ValidationError, match="needs `image`"):
        WorkerConfig.model_validate({k: v for k, v in WORKER.items() if k != "image"})


def test_worker_schema_rejects_credentials_in_environment():
    with pytest.raises(ValidationError, match="looks like a credential"):
        WorkerConfig.model_validate({**WORKER, "environment": {"API_KEY": "x"}})
