"""Secret values in the stack config: where a value set with `pulumi config set --secret` belongs,
what the offline preview stands in for one it cannot decrypt, and the refusals (a secret where
none belongs, a credential in plain text).

The CLI decrypts `{secure: v1:...}` before the program runs and marks the whole structured key
`ecs-inference:platform` secret when any value inside it is (Pulumi's config objects are secret
as a whole), so the program learns which values were encrypted from the stack file itself
(`stack_file.StackFile.secure`). A secret value is only ever stored in a Secrets Manager secret
the stack creates (its version's `secretString` an additional secret output) and reaches a
container through the task definition's `secrets`, never as plain environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ecs_inference.config.base import ROOT
from ecs_inference.config.issues import ConfigIssue
from ecs_inference.config.stack_file import MISSING, PLATFORM_KEY, Secure, StackFile

SERVICE_SECTIONS = ("models", "rerankers", "workers")
"""The map sections whose entries are services with `secrets` (the gateway is one section)."""

_SUBSCRIPTION_PLACEHOLDERS = {
    "email": "offline-preview@example.com",
    "email-json": "offline-preview@example.com",
    "https": "https://example.com/offline-preview",
    "sms": "+15555550100",
}


@dataclass(frozen=True)
class SecretSlot:
    """A config path where a secret value belongs."""

    pattern: re.Pattern[str]
    what: str
    """What the value is, for messages."""
    placeholder: Callable[[Mapping[str, Any]], str]
    """A value of the right kind for the offline preview, from the value's parent mapping."""
    credential: bool = True
    """The value is a credential, refused in plain text (an alarm recipient may be either)."""

    def secret_value(self, value: Any) -> bool:
        """Whether `value` here is a secret itself, not the ARN of one (nor a mistyped ARN,
        which the schema refuses)."""
        return isinstance(value, str) and not value.startswith("arn:")


def _services(key: str) -> str:
    sections = "|".join(SERVICE_SECTIONS)
    return rf"^{ROOT}\.(?:(?:{sections})\.[^.]+|gateway)\.{key}\.[A-Za-z_][A-Za-z0-9_]*$"


SLOTS = (
    SecretSlot(
        re.compile(rf"^{ROOT}\.gateway\.masterKey$"),
        "LiteLLM's master key",
        lambda _: "sk-offline-preview-master-key",
    ),
    SecretSlot(
        re.compile(rf"^{ROOT}\.gateway\.database\.saltKey$"),
        "LiteLLM's salt key",
        lambda _: "sk-offline-preview-salt-key",
    ),
    SecretSlot(
        re.compile(_services("secrets")),
        "a container secret",
        lambda _: "offline-preview-secret",
    ),
    SecretSlot(
        re.compile(rf"^{ROOT}\.operations\.alarmSubscriptions\[\d+\]\.endpoint$"),
        "an alarm recipient (a webhook URL may carry a token)",
        lambda parent: _SUBSCRIPTION_PLACEHOLDERS.get(
            str(parent.get("protocol")), _SUBSCRIPTION_PLACEHOLDERS["https"]
        ),
        credential=False,
    ),
)


def slot(path: str) -> SecretSlot | None:
    """The slot `path` is, or None where no secret belongs."""
    return next((s for s in SLOTS if s.pattern.match(path)), None)


def cli_path(path: str) -> str:
    """`platform.gateway.masterKey` as `pulumi config set --path` names it."""
    return PLATFORM_KEY + path[len(ROOT) :] if path.split(".")[0] == ROOT else path


def misplaced(path: str) -> ConfigIssue:
    """The issue of a value set with `--secret` where no secret belongs."""
    parts = path.split(".")
    if path == ROOT:
        return ConfigIssue(
            path,
            "the whole setting is encrypted: the program needs its sizes, names and types in "
            "plain text to plan the stack. Set it in plain text and encrypt only the secret "
            "values, each with `pulumi config set --secret --path "
            f"'{PLATFORM_KEY}.<path>' <value>`",
        )
    why = (
        "set with `pulumi config set --secret`, but no secret belongs here: the value becomes "
        "a plain resource input (the task definition, a launch template, the state), so it "
        "cannot stay secret. Set it in plain text"
    )
    if len(parts) >= 2 and parts[-2] == "environment":
        service = ".".join(parts[:-2])
        return ConfigIssue(
            path,
            f"{why} — or, if it is a credential, move it to `secrets` and remove it here: "
            f"`pulumi config rm --path '{cli_path(path)}'` then `pulumi config set --secret "
            f"--path '{cli_path(f'{service}.secrets.{parts[-1]}')}' <value>`; a container "
            "gets `secrets` from Secrets Manager at start, never as plain environment",
        )
    if path.endswith("SecretArn"):
        key = parts[-1][: -len("SecretArn")]
        return ConfigIssue(
            path,
            f"{why}: an ARN names a secret, it is not one. Or give the value itself as "
            f"`{key}` with `--secret` and remove `{parts[-1]}`",
        )
    return ConfigIssue(path, f"{why}. Values that may be secret: {_slot_names()}")


def _slot_names() -> str:
    return (
        "gateway.masterKey, gateway.database.saltKey, a service's secrets.<NAME>, "
        "operations.alarmSubscriptions[i].endpoint"
    )


def in_plain_text(path: str, where: str) -> ConfigIssue:
    """The issue of a credential written in plain text."""
    return ConfigIssue(
        path,
        f"is a secret in plain text{where}: whoever reads the stack's config reads it. Encrypt "
        f"it in place with `pulumi config set --secret --path '{cli_path(path)}' <value>`",
    )


def walk(value: Any, path: str = ROOT) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """Every leaf of a config value: (config path, value, its parent mapping)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}"
            if isinstance(item, (Mapping, list)) and not isinstance(item, Secure):
                yield from walk(item, child)
            else:
                yield child, item, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            child = f"{path}[{i}]"
            if isinstance(item, (Mapping, list)):
                yield from walk(item, child)
            else:
                yield child, item, {}


def plaintext_issues(
    raw: Mapping[str, Any], source: StackFile | None, key_secret: bool
) -> list[ConfigIssue]:
    """Credentials the stack was given in plain text.

    `key_secret` is whether the CLI marked `ecs-inference:platform` secret: when it did not,
    no value in it was encrypted. When it did, the stack file says which were; a value the
    file holds in plain text is refused.
    """
    found: list[ConfigIssue] = []
    for path, value, _ in walk(raw):
        where = slot(path)
        if where is None or not where.credential or not where.secret_value(value):
            continue
        in_file = ""
        if source is not None and path not in source.secure:
            held = source.value_at(path)
            in_file = source.name if held is not MISSING and not isinstance(held, Secure) else ""
        if not key_secret or in_file:
            found.append(in_plain_text(path, f" in {in_file}" if in_file else ""))
    return found


def offline_values(platform: Any) -> Any:
    """The platform setting with each value the offline preview cannot decrypt replaced by a
    placeholder of its slot's kind; one where no secret belongs is left encrypted (the program
    refuses it by its path)."""

    def replace(value: Any, path: str, parent: Mapping[str, Any]) -> Any:
        if isinstance(value, Secure):
            where = slot(path)
            return {"secure": value.ciphertext} if where is None else where.placeholder(parent)
        if isinstance(value, dict):
            return {k: replace(v, f"{path}.{k}", value) for k, v in value.items()}
        if isinstance(value, list):
            return [replace(v, f"{path}[{i}]", {}) for i, v in enumerate(value)]
        return value

    return replace(platform, ROOT, {})


def without_secure(value: Any) -> Any:
    """A config value with every `Secure` back in the file's `{secure: ...}` form."""
    if isinstance(value, Secure):
        return {"secure": value.ciphertext}
    if isinstance(value, dict):
        return {k: without_secure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_secure(v) for v in value]
    return value
