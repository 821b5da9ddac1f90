"""The secret values of the stack config the stack stores itself, and the references the
specs carry for them (`components.secrets.refs`)."""

from __future__ import annotations

from ecs_inference.config.base import ROOT, SECRET_ARN_PATTERN
from ecs_inference.config.stack import StackConfig
from ecs_inference.secrets.refs import StackSecret


def stack_secrets(cfg: StackConfig) -> dict[str, StackSecret]:
    """Every secret value the stack must store, by config path."""
    found: dict[str, str] = {}
    services = [
        *((f"{ROOT}.models.{n}", m.secrets) for n, m in cfg.models.items()),
        *((f"{ROOT}.rerankers.{n}", r.secrets) for n, r in cfg.rerankers.items()),
        *((f"{ROOT}.workers.{n}", w.secrets) for n, w in cfg.workers.items()),
    ]
    if cfg.gateway is not None:
        gw = cfg.gateway
        services.append((f"{ROOT}.gateway", gw.secrets))
        if gw.master_key is not None:
            found[f"{ROOT}.gateway.masterKey"] = gw.master_key
        if gw.database.enabled and gw.database.salt_key is not None:
            found[f"{ROOT}.gateway.database.saltKey"] = gw.database.salt_key
    for base, secrets in services:
        for name, value in secrets.items():
            if not SECRET_ARN_PATTERN.match(value):
                found[f"{base}.secrets.{name}"] = value
    return {path: StackSecret(path, value) for path, value in found.items()}
