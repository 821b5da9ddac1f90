"""Property: any gateway or worker config the schema accepts either plans or fails with issues
that each name a config path under its own section — never an exception, never a bare message."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ecs_inference.gateway.decisions import GatewayPlacement, gateway_service
from ecs_inference.gateway.input import GatewayConfig
from ecs_inference.gateway.litellm_config import ServiceTarget
from ecs_inference.workers.decisions import GatewayKeys, worker_service
from ecs_inference.workers.input import WorkerConfig

MASTER = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gw/master-AbCdEf"
SALT = "arn:aws:secretsmanager:us-east-1:111122223333:secret:gw/salt-AbCdEf"
KEYS = GatewayKeys(MASTER)
names = st.from_regex(r"[a-z][a-z0-9-]{0,12}[a-z0-9]", fullmatch=True)
model_ids = st.sampled_from(
    [
        "amazon.nova-lite-v1:0",
        "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        "meta.llama3-1-70b-instruct-v1:0",
        "not a model",
        "",
    ]
)
cpus = st.sampled_from([256, 512, 1024, 2048, 4096, 3000])
memories = st.sampled_from([512, 1024, 2048, 4096, 8192, 100])


@st.composite
def gateway_raw(draw):
    raw = {
        "masterKeySecretArn": MASTER,
        "cpu": draw(cpus),
        "memoryMib": draw(memories),
        "path": draw(names),
    }
    if draw(st.booleans()):
        raw["routes"] = draw(st.dictionaries(names, names, max_size=4))
    if draw(st.booleans()):
        raw["bedrock"] = {
            "region": draw(st.sampled_from([None, "us-east-1", "eu-west-3", "moon-1"])),
            "models": draw(st.dictionaries(names, model_ids, max_size=3)),
        }
    if draw(st.booleans()):
        raw["database"] = {"enabled": True, "saltKeySecretArn": SALT}
    return raw


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(gateway_raw(), st.lists(names, max_size=5, unique=True))
def test_any_accepted_gateway_plans_or_names_its_paths(raw, services):
    try:
        cfg = GatewayConfig.model_validate(raw)
    except ValidationError:
        return  # the schema's own errors carry their paths (components.config)
    targets = {s: ServiceTarget(s, s, f"{s}.inference", 8000, 300) for s in services}
    spec, issues = gateway_service(cfg, GatewayPlacement(targets), service_names=services)
    assert (spec is None) == bool(issues)
    for issue in issues:
        assert issue.path == "platform.gateway" or issue.path.startswith("platform.gateway.")
        assert issue.message
    if spec is not None:
        assert {r.target.service for r in spec.routes} <= set(services)
        assert ("disable_spend_logs" in spec.config_yaml) != cfg.database.enabled


@st.composite
def worker_raw(draw):
    job = draw(st.integers(1, 60_000))
    return {
        "image": "111122223333.dkr.ecr.us-east-1.amazonaws.com/w:1.0.0",
        "maxJobSeconds": job,
        "jobSeconds": draw(st.floats(0.1, 70_000)),
        "acceptableLatencySeconds": draw(st.floats(0.1, 100_000)),
        "concurrency": draw(st.integers(1, 50)),
        "cpu": draw(cpus),
        "memoryMib": draw(memories),
        "maxCount": draw(st.integers(1, 200)),
    }


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(names, worker_raw(), min_size=1, max_size=3), st.booleans())
def test_any_accepted_worker_plans_or_names_its_paths(raws, has_gateway):
    workers = {}
    for name, raw in raws.items():
        try:
            workers[name] = WorkerConfig.model_validate(raw)
        except ValidationError:
            continue
    specs, issues = {}, []
    for name, cfg in workers.items():
        spec, found = worker_service(name, cfg, gateway=KEYS if has_gateway else None)
        issues += found
        if spec is not None:
            specs[name] = spec
    assert set(specs) | {i.path.split(".")[2] for i in issues} == set(workers)
    for issue in issues:
        assert issue.path.startswith("platform.workers.")
    for spec in specs.values():
        assert workers[spec.name].max_job_seconds < spec.visibility_timeout_seconds <= 43_200
        assert spec.backlog_target > 0
