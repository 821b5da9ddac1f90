"""Private service-to-service routes: ECS Service Connect settings, as pure values.

The gateway and the queue workers call the model services inside the VPC, without a second trip
through the ALB and its authentication. ECS Service Connect (chosen over plain Cloud Map DNS, see
docs/gateway.md) gives each model service a name in a Cloud Map HTTP namespace and runs an Envoy
proxy in every task of a participating service: clients call `http://<service>.<namespace>:<port>`
and their proxy balances across the healthy tasks, retries connection failures and detects
outliers, so callers never see task IPs.

This module derives the API-shaped `serviceConnectConfiguration` of a server (a model service),
the port mapping Service Connect needs, and the private address a client uses. The timeouts
matter for LLMs: Service Connect's default per-request timeout is 15 s, which would cut every
longer generation, and its idle timeout (5 min) closes a stream whose tokens stop for that long,
so both are set from the service's longest generation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ecs_inference.contracts.aws_limits import SERVICE_CONNECT_DEFAULT_IDLE_SECONDS

TIMEOUT_MARGIN_SECONDS = 30
"""Added to the longest generation: queueing in the engine before the first token, and the
proxy's own connect time."""
PORT_NAME = "http"
"""The name every serving port mapping carries (Service Connect refers to it)."""
APP_PROTOCOL = "http"
"""Port mapping appProtocol: HTTP-aware proxying (per-request timeouts, HTTP metrics, retries on
connection failures); the engines speak HTTP/1.1 with server-sent events."""
# Cloud Map service names (discoveryName) and task definition port names: lowercase letters,
# digits, underscores and hyphens, not starting with a hyphen, at most 64 characters.
_NAME = re.compile(r"^[a-z0-9_][a-z0-9_-]{0,63}$")
# A client alias DNS name: labels of letters, digits, hyphens and underscores, dot-separated.
_DNS_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_-]{1,63})*$"
)


@dataclass(frozen=True)
class Namespace:
    """A Service Connect namespace as the services use it: `name` (plain, known at preview: the
    aliases are built from it) and `arn` (the resource's, so services depend on it)."""

    name: str
    arn: Any


def discovery_name(service: str) -> str:
    """The Cloud Map service name of a model service (its config key, validated)."""
    if not _NAME.match(service):
        raise ValueError(
            f"service name {service!r} cannot be a Service Connect discovery name: use at most "
            "64 lowercase letters, digits, '_' and '-', not starting with '-'"
        )
    return service


def private_host(service: str, namespace: str) -> str:
    """The DNS name clients use for `service` (`<service>.<namespace>`)."""
    host = f"{discovery_name(service)}.{namespace}"
    if not _DNS_NAME.match(host):
        raise ValueError(f"{host!r} is not a valid Service Connect client alias DNS name")
    return host


def timeouts(longest_request_seconds: int) -> dict[str, int]:
    """Service Connect `timeout` for a service whose longest request (a whole stream) takes
    `longest_request_seconds`: per-request above it, idle no shorter (when idle is the shorter
    one, it wins and closes the connection first)."""
    if longest_request_seconds < 1:
        raise ValueError(f"longest request {longest_request_seconds} s must be at least 1 s")
    per_request = longest_request_seconds + TIMEOUT_MARGIN_SECONDS
    return {
        "idleTimeoutSeconds": max(per_request, SERVICE_CONNECT_DEFAULT_IDLE_SECONDS),
        "perRequestTimeoutSeconds": per_request,
    }


def port_mapping(port: int, name: str = PORT_NAME) -> dict[str, Any]:
    """The container port mapping Service Connect refers to by `name` (default "http")."""
    if not _NAME.match(name):
        raise ValueError(f"port name {name!r}: at most 64 of a-z 0-9 _ -, not starting with '-'")
    return {"containerPort": port, "protocol": "tcp", "name": name, "appProtocol": APP_PROTOCOL}


def server_configuration(
    *,
    service: str,
    namespace: str,
    port: int,
    longest_request_seconds: int,
    port_name: str = PORT_NAME,
    log_configuration: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`serviceConnectConfiguration` (CreateService shape) of a model service: reachable as
    `http://<service>.<namespace>:<port>`; default `port_name` "http"; `log_configuration` the
    Envoy proxy's logs (default None: not collected)."""
    config: dict[str, Any] = {
        "enabled": True,
        "namespace": namespace,
        "services": [
            {
                "portName": port_name,
                "discoveryName": discovery_name(service),
                "clientAliases": [{"port": port, "dnsName": private_host(service, namespace)}],
                "timeout": timeouts(longest_request_seconds),
            }
        ],
    }
    if log_configuration is not None:
        config["logConfiguration"] = log_configuration
    return config
