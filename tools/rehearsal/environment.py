"""Third-party images get only environment variables their pinned release reads.

A variable the release does not read is ignored in silence: the proxy starts without its
database, the engine with a default. The names each release reads are committed tables
extracted from its source (`python -m tools.sources`, `contracts/env/`):
- a variable with a prefix an engine's contract claims (`ENV_PREFIXES`) must be one its
  release reads, under its own name or the one the release rewrites a legacy prefix to
  (`contracts.env_table.read_as`), and not a deprecated one it only warns about; which
  release's table judges it (a claim may hold only in containers that set a given variable,
  `ENV_SELECTED_BY`) is `contracts.env_table.judging_table`'s to say;
- the LiteLLM container (its contract's `LITELLM_CONFIG_YAML`) gets only names LiteLLM reads,
  and with a database, all the names its CLI needs to build DATABASE_URL;
- a queue worker presents a key the gateway accepts: without a database, LiteLLM accepts no
  key but its master key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ecs_inference.contracts import env_table, litellm, worker
from tools.rehearsal.calls import Refusal
from tools.rehearsal.model import TASK_DEFINITION, StackModel, listify

_TOKEN_AUTH_ON = {"1", "on", "t", "true", "y", "yes"}


def _names(container: Mapping[str, Any]) -> dict[str, str]:
    """Environment and secret names of a container (secrets map to "" : set at start)."""
    out = {
        str(e.get("name")): str(e.get("value"))
        for e in listify(container.get("environment"))
        if isinstance(e, Mapping)
    }
    out.update(
        {
            str(s.get("name")): ""
            for s in listify(container.get("secrets"))
            if isinstance(s, Mapping)
        }
    )
    return out


def _prefixed(names: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(name, table) of every variable whose prefix an engine's contract claims."""
    for name in names:
        if (stem := env_table.judging_table(name, names)) is not None:
            yield name, stem


def _litellm(names: Mapping[str, str]) -> Iterator[str]:
    if litellm.ENV_CONFIG_YAML not in names:
        return
    stem, ours = litellm.ENVIRONMENT_TABLE, {litellm.ENV_CONFIG_YAML}
    for name in sorted(set(names) - ours):
        if env_table.read_as(stem, name) is None:
            yield f"LiteLLM {litellm.VERSION} reads no {name}"
    if any(n.startswith("DATABASE_") for n in names) and "DATABASE_URL" not in names:
        required: list[str] = list(
            env_table.table(litellm.ENVIRONMENT_TABLE)["database_url_requires"]
        )
        token = names.get("IAM_TOKEN_DB_AUTH", "").strip().lower() in _TOKEN_AUTH_ON
        if token:
            # Its token path accepts either user name (pydantic AliasChoices).
            aliases = {"DATABASE_USERNAME": ("DATABASE_USER", "DATABASE_USERNAME")}
            missing = [r for r in required if not any(a in names for a in aliases.get(r, (r,)))]
        else:
            missing = [r for r in required if r not in names]
        if missing:
            yield (
                f"LiteLLM {litellm.VERSION} builds DATABASE_URL only from "
                f"{', '.join(required)}; {', '.join(missing)} not set, so the proxy runs "
                "without its database"
            )


def _value_from(container: Mapping[str, Any], name: str) -> str | None:
    for secret in listify(container.get("secrets")):
        if isinstance(secret, Mapping) and secret.get("name") == name:
            return str(secret.get("valueFrom"))
    return None


def _gateway_keys(model: StackModel) -> set[str] | None:
    """The keys the stack's LiteLLM gateways accept (their master keys' secrets), or None when
    one has a database (virtual keys, which the preview cannot see) or there is no gateway."""
    keys: set[str] = set()
    for task in model.of(TASK_DEFINITION):
        for container in model.containers(task) or ():
            names = _names(container)
            if litellm.ENV_CONFIG_YAML not in names:
                continue
            if any(n.startswith("DATABASE_") for n in names):
                return None
            if (master := _value_from(container, litellm.ENV_MASTER_KEY)) is not None:
                keys.add(master)
    return keys or None


def _worker_key(container: Mapping[str, Any], keys: set[str] | None) -> str | None:
    names = _names(container)
    if keys is None or not all(names.get(n) for n in worker.SIGNATURE):
        return None
    key = _value_from(container, worker.ENV_API_KEY)
    if key in keys:
        return None
    return (
        f"{worker.ENV_API_KEY} is {key or 'not set'}, but the gateway has no database and "
        "accepts only its master key: every job would get 401"
    )


def environment_checks(model: StackModel) -> Iterator[Refusal]:
    keys = _gateway_keys(model)
    for task in model.of(TASK_DEFINITION):
        for container in model.containers(task) or ():
            names = _names(container)
            who = (
                f"task {task.inputs.get('family') or task.name}, container {container.get('name')}"
            )
            for name, stem in _prefixed(names):
                if env_table.read_as(stem, name) is not None:
                    continue
                if (note := env_table.ignored(stem, name)) is not None:
                    why = f"{stem} only warns that {name} is deprecated and ignores it"
                    yield Refusal(task, who, f"{why}: {note}" if note else why)
                else:
                    yield Refusal(task, who, f"{stem} reads no {name} (a misspelt variable?)")
            for problem in _litellm(names):
                yield Refusal(task, who, problem)
            if (problem := _worker_key(container, keys)) is not None:
                yield Refusal(task, who, problem)


__all__: Sequence[str] = ["environment_checks"]
