"""The metrics sidecar's container definition (pure): the non-essential container that publishes
the engine's /metrics as CloudWatch EMF (`images/metrics/`).
"""

from __future__ import annotations

import math
from typing import Any

from ecs_inference.contracts import metrics as m
from ecs_inference.services.containers import container_definition

SIDECAR_USER = "10002:10002"
"""The image's non-root user (images/metrics/Dockerfile)."""


def metrics_sidecar_container(
    *,
    kind: str,
    stack: str,
    service: str,
    image: str,
    port: int,
    engine_container: str,
    log_group_name: str,
    region: str,
    startup_grace_seconds: int,
    interval_seconds: int = m.DEFAULT_INTERVAL_SECONDS,
) -> dict[str, Any]:
    """The sidecar's ECS container definition (camelCase, as RegisterTaskDefinition takes it).

    Not essential (its death must not stop the model), started after the engine container
    (`dependsOn` START: it has nothing to scrape before), no port, a soft memory reservation
    (`contracts.metrics.SIDECAR_MEMORY_RESERVATION_MIB`), read-only root file system, the
    image's non-root user, logs through the service's own log group and stream prefix (the EMF
    lines must land where CloudWatch extracts them; awslogs names the stream
    <prefix>/<container>/<task id>: same group, own stream).
    """
    env = {
        m.ENV_TARGET_URL: f"http://127.0.0.1:{port}/metrics",
        m.ENV_SPEC: m.scrape_spec(kind),
        m.ENV_STACK: stack,
        m.ENV_SERVICE: service,
        m.ENV_INTERVAL_SECONDS: str(interval_seconds),
        m.ENV_STARTUP_GRACE_SECONDS: str(max(startup_grace_seconds, 0)),
    }
    return container_definition(
        name=m.SIDECAR_CONTAINER_NAME,
        image=image,
        essential=False,
        extra_environment=env,
        sidecar_of=engine_container,
        memory_reservation_mib=m.SIDECAR_MEMORY_RESERVATION_MIB,
        user=SIDECAR_USER,
        log_group_name=log_group_name,
        region=region,
        stream_prefix=service,
        # The sidecar exits 0 on SIGTERM after its current scrape (<= the scrape timeout).
        stop_timeout_seconds=math.ceil(m.SCRAPE_TIMEOUT_SECONDS) + 2,
        nofile_limit=False,
    )
