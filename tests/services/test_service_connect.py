"""Service Connect settings: names, timeouts sized for streams, and ECS request shapes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_inference.contracts.aws_limits import (
    SERVICE_CONNECT_DEFAULT_IDLE_SECONDS as DEFAULT_IDLE_TIMEOUT_SECONDS,
)
from ecs_inference.contracts.aws_limits import (
    SERVICE_CONNECT_DEFAULT_PER_REQUEST_SECONDS as DEFAULT_PER_REQUEST_TIMEOUT_SECONDS,
)
from ecs_inference.gateway.litellm_config import ServiceTarget
from ecs_inference.services.service_connect import (
    port_mapping,
    private_host,
    server_configuration,
    timeouts,
)
from tests.aws_shapes import validate_named_shape, validate_shape

NAMESPACE = "inference.internal"


def create_service(config: dict) -> dict:
    return {
        "serviceName": "llama",
        "cluster": "inference",
        "taskDefinition": "llama:1",
        "serviceConnectConfiguration": config,
    }


def test_model_service_is_a_server_reachable_at_its_alias():
    config = server_configuration(
        service="llama", namespace=NAMESPACE, port=8000, longest_request_seconds=600
    )
    validate_shape("ecs", "CreateService", create_service(config))
    (svc,) = config["services"]
    assert svc["discoveryName"] == "llama"
    assert svc["clientAliases"] == [{"port": 8000, "dnsName": "llama.inference.internal"}]
    # The gateway's route points exactly at this alias.
    target = ServiceTarget("llama", "llama-3.1-8b", private_host("llama", NAMESPACE), 8000, 600)
    assert target.api_base == "http://llama.inference.internal:8000/v1"


def test_port_mapping_names_the_port_with_the_http_protocol():
    mapping = port_mapping(8000)
    validate_named_shape("ecs", "PortMapping", mapping)
    assert mapping["appProtocol"] == "http" and mapping["name"] == "http"


@given(st.integers(1, 14_400))
def test_timeouts_never_cut_a_stream(longest):
    t = timeouts(longest)
    validate_named_shape("ecs", "TimeoutConfiguration", t)
    assert t["perRequestTimeoutSeconds"] > longest > 0
    assert t["perRequestTimeoutSeconds"] > DEFAULT_PER_REQUEST_TIMEOUT_SECONDS
    # An idle timeout shorter than the per-request one would close the connection first.
    assert t["idleTimeoutSeconds"] >= t["perRequestTimeoutSeconds"]
    assert t["idleTimeoutSeconds"] >= DEFAULT_IDLE_TIMEOUT_SECONDS


@pytest.mark.parametrize("service", ["Llama", "-llama", "x" * 65, "ll.ama", ""])
def test_names_cloud_map_refuses_are_refused(service):
    with pytest.raises(ValueError, match="discovery name"):
        private_host(service, NAMESPACE)


def test_bad_port_names_and_timeouts_are_refused():
    with pytest.raises(ValueError):
        port_mapping(8000, name="HTTP")
    with pytest.raises(ValueError):
        timeouts(0)
