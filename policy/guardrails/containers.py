"""What a task's containers carry at start: plaintext secrets and model weights from the hub.

* ``no-plaintext-secrets-in-environment``: a literal value in a container's ``environment`` is
  stored in the task definition, visible to anyone with ``ecs:DescribeTaskDefinition`` and in
  the Pulumi state. Hub tokens and API keys belong in ``secrets`` (Secrets Manager / SSM
  ``valueFrom``), which ECS injects at start. Names are matched by *segments* (split on ``_``,
  ``-`` and ``.``) so that ``HF_TOKEN`` and ``OPENAI_API_KEY`` match while
  ``MAX_NUM_BATCHED_TOKENS`` and ``TOKENIZERS_PARALLELISM`` (common in model servers and not
  secrets) do not.
* ``no-hub-weights-at-task-start``: a container that names a Hugging Face model id
  (``org/name``) in an engine's model flag or variable, or holds a hub token, without
  ``HF_HUB_OFFLINE=1``, downloads the weights at every task start: slow cold starts, hub rate
  limits, and a deploy that fails whenever the hub does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from .resources import EXEMPT_SCHEMA, TASK_DEFINITION, as_list, container_definitions, get
from .rules import EXEMPT_ONLY, Config, Report, resource_rule

# --- plaintext secrets ------------------------------------------------------------------------

DEFAULT_MARKERS = [
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "PASSPHRASE",
]

_SCHEMA = {
    "secretNameMarkers": {
        "type": "array",
        "items": {"type": "string"},
        "default": DEFAULT_MARKERS,
        "description": "Name segments (case-insensitive) that mark a variable as a secret.",
    },
    "allowedVariables": {
        "type": "array",
        "items": {"type": "string"},
        "default": [],
        "description": "Variable names that look secret but are not (e.g. CACHE_KEY_PREFIX).",
    },
    "exemptResources": EXEMPT_SCHEMA,
}

_SEGMENT = re.compile(r"[^A-Za-z0-9]+")


def looks_secret(name: str, markers: Iterable[str]) -> bool:
    """True when one of ``name``'s segments is a secret marker.

    >>> looks_secret("HF_TOKEN", DEFAULT_MARKERS)
    True
    >>> looks_secret("MAX_NUM_BATCHED_TOKENS", DEFAULT_MARKERS)
    False
    """
    wanted = {m.upper() for m in markers}
    return any(segment in wanted for segment in _SEGMENT.split(name.upper()) if segment)


def _check(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    markers = config["secretNameMarkers"]
    allowed = set(config["allowedVariables"])
    for container in container_definitions(args.props):
        for variable in as_list(get(container, "environment")):
            name = str(get(variable, "name", ""))
            if name in allowed or not looks_secret(name, markers):
                continue
            # Read the value only for secret-looking names: an unknown value elsewhere must not
            # stop the check.
            value = get(variable, "value")
            if isinstance(value, str) and value:
                report(
                    f"container {get(container, 'name', '?')!r} sets {name} to a literal value "
                    "in environment; move it to secrets (valueFrom)."
                )


no_plaintext_secrets = resource_rule(
    name="no-plaintext-secrets-in-environment",
    description=(
        "Container environment variables whose names mark them as secrets (KEY, TOKEN, SECRET, "
        "PASSWORD, ...) must not hold literal values. Fix: store the value in Secrets Manager or "
        "SSM Parameter Store and reference it from the container's secrets (valueFrom)."
    ),
    level=EnforcementLevel.ADVISORY,
    types=TASK_DEFINITION,
    schema=_SCHEMA,
    check=_check,
)

# --- weights from the hub at task start ------------------------------------------------------

#: Container variables whose value the engines read as the model to load: TGI / TEI
#: ``MODEL_ID``, SageMaker-style containers ``HF_MODEL_ID``, llama.cpp / generic ``MODEL``.
MODEL_VARIABLES = frozenset(
    {"MODEL_ID", "HF_MODEL_ID", "MODEL", "MODEL_NAME_OR_PATH", "MODEL_PATH", "HF_MODEL"}
)
#: Command-line flags naming the model (or its tokenizer) to load: vLLM ``--model`` /
#: ``--tokenizer``, TGI / TEI ``--model-id`` / ``--tokenizer-name``, SGLang ``--model-path`` /
#: ``--tokenizer-path``.
MODEL_FLAGS = frozenset(
    {
        "--model",
        "--model-id",
        "--model-path",
        "--model-name-or-path",
        "--tokenizer",
        "--tokenizer-name",
        "--tokenizer-path",
    }
)
#: Variables carrying a hub token and variables that keep the hub client offline (see
#: ``contracts/engine.py``: HUB_TOKEN_VARIABLES, HUB_OFFLINE_VARIABLES).
HUB_TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
HUB_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")

# A hub repo id is ``org/name``: one slash, no scheme, no tag or digest (``:``/``@``), and no
# leading ``/``, ``.`` or ``~`` (paths). Image references (``org/image:tag``) carry a tag.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
#: First segments of relative paths that engines treat as local directories, never repo ids.
LOCAL_ROOTS = frozenset(
    {"mnt", "opt", "models", "model", "data", "tmp", "var", "srv", "home", "weights", "cache"}
)


def hub_model_id(value: Any) -> str | None:
    """``value`` when it looks like a Hugging Face repo id, else None.

    >>> hub_model_id("meta-llama/Llama-3.1-8B-Instruct")
    'meta-llama/Llama-3.1-8B-Instruct'
    >>> [hub_model_id(v) for v in ("/mnt/weights/llama", "s3://b/m", "vllm/vllm-openai:v0.9")]
    [None, None, None]
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not _HUB_ID.match(text):
        return None
    if text.split("/", 1)[0].lower() in LOCAL_ROOTS:
        return None
    return text


def _variables(container: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {
        str(get(item, "name")): get(item, "value")
        for item in as_list(get(container, key))
        if isinstance(item, Mapping) and get(item, "name") is not None
    }


def _offline(environment: Mapping[str, Any]) -> bool:
    return any(
        str(environment.get(name, "")).strip().lower() in {"1", "true", "yes", "on"}
        for name in HUB_OFFLINE_VARIABLES
    )


def _flag_values(args: Sequence[Any]) -> Iterator[tuple[str, Any]]:
    """(flag, value) for every model flag in a command, ``--flag value`` or ``--flag=value``;
    also ``vllm serve <model>``'s positional model."""
    words = [w for w in args if isinstance(w, str)]
    for i, word in enumerate(words):
        flag, eq, inline = word.partition("=")
        if flag in MODEL_FLAGS:
            if eq:
                yield flag, inline
            elif i + 1 < len(words):
                yield flag, words[i + 1]
        if (
            word == "serve"
            and 0 < i < len(words) - 1
            and words[i - 1].rsplit("/", 1)[-1] == "vllm"
            and not words[i + 1].startswith("-")
        ):
            yield "vllm serve", words[i + 1]


def hub_downloads(container: Mapping[str, Any]) -> list[str]:
    """Why ``container`` fetches weights from the hub at start (empty: it does not)."""
    environment = _variables(container, "environment")
    if _offline(environment):
        return []
    reasons: list[str] = []
    for name in sorted(MODEL_VARIABLES & environment.keys()):
        model_id = hub_model_id(environment[name])
        if model_id:
            reasons.append(f"{name}={model_id}")
    # The process's argv is the entry point followed by the command (``vllm serve`` + model).
    argv = [*as_list(get(container, "entryPoint")), *as_list(get(container, "command"))]
    for flag, value in _flag_values(argv):
        model_id = hub_model_id(value)
        if model_id:
            reasons.append(f"{flag} {model_id}")
    secrets = _variables(container, "secrets")
    for name in HUB_TOKEN_VARIABLES:
        if name in environment or name in secrets:
            reasons.append(f"{name} set")
    return reasons


def _check_hub(args: ResourceValidationArgs, config: Config, report: Report) -> None:
    for container in container_definitions(args.props):
        reasons = hub_downloads(container)
        if reasons:
            report(
                f"container {get(container, 'name', '?')!r} pulls from the Hugging Face hub at "
                f"start ({'; '.join(reasons)}) without HF_HUB_OFFLINE=1.",
                None,
            )


no_hub_weights_at_task_start = resource_rule(
    name="no-hub-weights-at-task-start",
    description=(
        "A container that names a Hugging Face model id (org/name) in an engine's model flag "
        "(--model, --model-id, --model-path, --tokenizer..., vllm serve <id>) or variable "
        "(MODEL_ID, HF_MODEL_ID, MODEL...), or holds HF_TOKEN, without HF_HUB_OFFLINE=1 "
        "downloads the weights at every task start: slow cold starts, hub rate limits, a "
        "deploy that fails with the hub. Fix: stage the weights in S3/EFS/the image first, "
        "point the engine at that path and set HF_HUB_OFFLINE=1."
    ),
    level=EnforcementLevel.ADVISORY,
    types=TASK_DEFINITION,
    schema=EXEMPT_ONLY,
    check=_check_hub,
)


POLICIES = [no_plaintext_secrets, no_hub_weights_at_task_start]
