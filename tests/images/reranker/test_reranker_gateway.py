"""A rerank through the gateway: the pinned LiteLLM proxy, run with the config the stack generates
for a re-ranker route (`components.gateway.litellm_config`), in front of the service on
loopback, with the gateway's auth (`x-litellm-api-key: Bearer <master key>`, as docs/gateway.md
tells callers).

The proxy runs from the pinned LiteLLM's own virtualenv (`tests/litellm/venv.py`; the test is
skipped, with the reason, when that cannot be built).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest
import yaml

from contracts import reranker as c
from ecs_inference.contracts import litellm
from ecs_inference.gateway.litellm_config import ModelRoute, ServiceTarget, litellm_config
from tests.images.reranker.conftest import free_port
from tests.litellm.venv import VENV, ensure_venv

MASTER_KEY = "sk-gateway-test"
QUERY = "how do fargate tasks pull images?"
DOCS = [
    "Private subnets need ECR interface endpoints or a NAT gateway to pull images.",
    "Paris is the capital and largest city of France.",
    "Fargate tasks pull container images from ECR over the task's network interface.",
]
#: How long the proxy may take to import and start on a loaded machine (not a speed assertion).
STARTUP_SECONDS = 300


@pytest.fixture(scope="module")
def gateway(server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The LiteLLM proxy on loopback, routing the model name `rerank` to the service."""
    python = ensure_venv()
    port = int(server.url.rsplit(":", 1)[1])
    target = ServiceTarget(
        service="rr",
        served_model_name="tiny-ce",
        host="127.0.0.1",
        port=port,
        timeout_seconds=30,
        provider=litellm.RERANK_PROVIDER,
        mode="rerank",
    )
    work = tmp_path_factory.mktemp("gateway")
    config = work / "config.yaml"
    routes = [ModelRoute("rerank", target)]
    config.write_text(yaml.safe_dump(litellm_config(routes), sort_keys=False))
    gateway_port = free_port()
    env = {
        **os.environ,
        litellm.ENV_MASTER_KEY: MASTER_KEY,
        # The model cost map ships in the wheel; never fetch it.
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    listen = ["--host", "127.0.0.1", "--port", str(gateway_port)]
    log = open(work / "proxy.log", "wb")  # noqa: SIM115 - the child writes to it until killed
    proc = subprocess.Popen(
        [str(python), str(VENV / "bin" / "litellm"), "--config", str(config), *listen],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=work,
    )
    url = f"http://127.0.0.1:{gateway_port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError((work / "proxy.log").read_text()[-4000:])
            try:
                if httpx.get(url + litellm.HEALTH_PATH, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("LiteLLM did not start:\n" + (work / "proxy.log").read_text())
            time.sleep(0.5)
        yield url
    finally:
        proc.kill()
        proc.wait(30)
        log.close()


def test_a_rerank_through_the_gateway_reaches_the_service_with_the_gateway_key(server, gateway):
    body = {"model": "rerank", "query": QUERY, "documents": DOCS}
    headers = {litellm.KEY_HEADER: f"Bearer {MASTER_KEY}"}
    routed = httpx.post(gateway + c.RERANK_V2_PATH, json=body, headers=headers, timeout=60)
    assert routed.status_code == 200, routed.text
    direct = httpx.post(
        server.url + c.RERANK_PATH, json={"query": QUERY, "documents": DOCS}, timeout=30
    ).json()
    got = [(r["index"], round(r["relevance_score"], 6)) for r in routed.json()["results"]]
    want = [(r["index"], round(r["relevance_score"], 6)) for r in direct["results"]]
    assert got == want
    served = _served_requests(server.url)
    refused = httpx.post(gateway + c.RERANK_V2_PATH, json=body, timeout=60)
    assert not refused.is_success
    assert _served_requests(server.url) == served  # the gateway's auth stopped it


def _served_requests(url: str) -> float:
    """The service's rerank requests so far (its Prometheus counter, every status)."""
    text = httpx.get(url + c.METRICS_PATH, timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("reranker_requests_total{")
    )


def test_the_generated_rerank_route_is_what_the_proxy_lists(gateway):
    models = httpx.get(
        gateway + "/v1/models", headers={litellm.KEY_HEADER: f"Bearer {MASTER_KEY}"}, timeout=30
    ).json()
    assert [m["id"] for m in models["data"]] == ["rerank"]
