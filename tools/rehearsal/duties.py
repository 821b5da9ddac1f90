"""One role per duty: a task that serves requests holds no credential beyond its own.

A role belongs to the whole task, so whatever it may do, every container of the task may do,
the one that answers requests included. For every task definition an ECS service runs, neither
its task role nor its execution role may:
- read a secret of the stack that none of its containers injects (`secrets[].valueFrom`): a
  Secrets Manager secret, the master user secret RDS manages for a database, or a SecureString
  parameter (`secretsmanager:GetSecretValue`, `ssm:GetParameters`);
- run SQL as a database's master user through the RDS Data API (`rds-data:ExecuteStatement` on
  a cluster with the Data API on): the Data API acts as whoever owns the secret it is given.
Each is a call that must be DENIED; an allowed one is a finding. One-off work (a database
bootstrap) runs with its own role, outside the serving task.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tools.rehearsal.calls import TASK_ID, Call, session_arn
from tools.rehearsal.model import TASK_DEFINITION, StackModel, known, listify
from tools.rehearsal.secrets import PARAMETER, RDS_MANAGED, SECRET

FORBIDDEN = (
    "a task that serves requests may hold only what its containers inject: give one-off work "
    "(a database bootstrap) its own role, outside the serving task"
)


def _secrets(model: StackModel) -> dict[str, tuple[str, str]]:
    """ARN -> (read action, what it is) of every secret the stack holds."""
    found: dict[str, tuple[str, str]] = {}
    for secret in model.of(SECRET):
        arn = model.output(secret, "arn")
        if known(arn):
            found[str(arn)] = ("secretsmanager:GetSecretValue", f"secret {secret.name}")
    for db in model.of(*RDS_MANAGED):
        for managed in listify(model.output(db, "masterUserSecrets")):
            if isinstance(managed, Mapping) and known(managed.get("secretArn")):
                what = f"the master user secret of {db.name}"
                found[str(managed["secretArn"])] = ("secretsmanager:GetSecretValue", what)
    for parameter in model.of(PARAMETER):
        arn = model.output(parameter, "arn")
        if parameter.inputs.get("type") == "SecureString" and known(arn):
            found[str(arn)] = ("ssm:GetParameters", f"SecureString parameter {parameter.name}")
    return found


def _injected(model: StackModel, containers: list[dict[str, Any]]) -> set[str]:
    """The secrets' ARNs the containers' `secrets` and private registry credentials name (a
    Secrets Manager ARN without its json-key/version suffix; an SSM parameter by ARN or name)."""
    out: set[str] = set()
    for container in containers:
        credentials = (container.get("repositoryCredentials") or {}).get("credentialsParameter")
        values = [credentials] if isinstance(credentials, str) else []
        values += [
            entry.get("valueFrom")
            for entry in listify(container.get("secrets"))
            if isinstance(entry, Mapping)
        ]
        for value in values:
            if not isinstance(value, str):
                continue
            if value.startswith("arn:") and ":secretsmanager:" in value:
                out.add(":".join(value.split(":")[:7]))
            elif value.startswith("arn:"):
                out.add(value)
            else:
                out.add(model.arn("ssm", "parameter/" + value.removeprefix("/")))
    return out


def _data_api_clusters(model: StackModel) -> list[tuple[str, str]]:
    return [
        (str(model.output(c, "arn")), c.name)
        for c in model.of("aws:rds/cluster:Cluster")
        if c.inputs.get("enableHttpEndpoint") is True and known(model.output(c, "arn"))
    ]


def duty_checks(model: StackModel) -> Iterator[Call]:
    """The calls a serving task's roles must be denied (module docstring)."""
    secrets = _secrets(model)
    clusters = _data_api_clusters(model)
    for task in model.of(TASK_DEFINITION):
        containers = model.containers(task)
        if not model.services_of(task) or containers is None:
            continue
        family = task.inputs.get("family") or task.name
        injected = _injected(model, containers)
        denied = [
            (action, arn, f"read {what}, which none of its containers injects")
            for arn, (action, what) in sorted(secrets.items())
            if arn not in injected
        ]
        denied += [
            ("rds-data:ExecuteStatement", arn, f"run any SQL as the master user of {name}")
            for arn, name in clusters
        ]
        for key in ("taskRoleArn", "executionRoleArn"):
            role = model.role(task.inputs.get(key))
            if role is None:
                continue
            for action, resource, why in denied:
                yield Call(
                    task,
                    f"task {family} ({key.removesuffix('Arn')} {role.label}), which serves "
                    "requests",
                    session_arn(role, model.account_id, TASK_ID),
                    action,
                    resource,
                    why,
                    role=role,
                    account_id=model.account_id,
                    forbidden=FORBIDDEN,
                )
