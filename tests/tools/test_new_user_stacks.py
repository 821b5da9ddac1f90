"""The three stacks a new user writes get every error in one run.

Each stack under `new_user_stacks/` starts from Pulumi.example.yaml and carries several mistakes
across the layers: the YAML itself (a duplicate key, the hidden copy's own mistakes), the schema
(a mistyped key, a wrong type, a missing key, a hub credential, an unpinned image), values set
with `--secret` where none belongs and credentials in plain text, an ESC import, and the plan (a
model that does not fit its type, more tasks than the pool holds, a route to nowhere, a size off
the Fargate grid, a timeout too short). One offline preview reports every one of them, each at
the file and line where the user fixes it, and nothing else.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tools.preview import EXIT_CONFIG, run_preview

STACKS = Path(__file__).resolve().parent / "new_user_stacks"


def _line(text: str, marker: str, after: str | None = None) -> int:
    """The 1-based line of the first line holding `marker` (after the one holding `after`)."""
    lines = text.splitlines()
    start = next(i for i, t in enumerate(lines) if after in t) + 1 if after else 0
    return next(i for i, t in enumerate(lines[start:], start + 1) if marker in t)


# stack -> [(config path, (marker, after) of the line it is reported at, words of the message)]
EXPECTED = {
    "first": [
        (
            "platform.models.llama",
            ("llama:", "maxGenerationSeconds"),
            "duplicate key 'llama': set at line {llama:} and again at line {llama:|maxGeneration}",
        ),
        (
            "platform.models.llama.environment",
            ("environment:", None),
            "in the copy at line {llama:}: HF_TOKEN is a Hugging Face Hub credential",
        ),
        (
            "platform.models.llama.maxModelLenght",
            ("maxModelLenght", None),
            "in the copy at line {llama:}: unknown key; did you mean `maxModelLen`?",
        ),
        (
            "platform.images.vllm",
            ("vllm: vllm/vllm-openai:latest", None),
            "'vllm/vllm-openai:latest' is tagged 'latest'",
        ),
        (
            "platform.models.qwen",
            ("qwen:", None),
            "to fit g6e.xlarge, change one of: maxConcurrentSequences 12",
        ),
    ],
    "gateway": [
        (
            "platform.models.llama.environment.LOG_LEVEL",
            ("LOG_LEVEL", None),
            "no secret belongs here",
        ),
        ("platform.gateway.masterKey", ("masterKey", None), "is a secret in plain text"),
        (
            "platform.workers.summarise.maxJobSeconds",
            ("maxJobSeconds: 15m", None),
            "must be a valid integer",
        ),
        (
            "platform.workers.summarise.jobSeconds",
            ("summarise:", None),
            "is required but missing",
        ),
        ("platform.rerankers.rerank.cpu", ("cpu: 3000", None), "Fargate cpu 3000 is not a valid"),
        (
            "platform.gateway.routes.big",
            ("big: llama-70b", None),
            "routes to service 'llama-70b', which does not exist",
        ),
    ],
    "prod": [
        (
            "aws:region",
            ("aws:region: eu-central-1", None),
            "set at line {aws:region: us} and again at line {aws:region: eu}",
        ),
        (
            "platform.endpoint.idleTimeout",
            ("idleTimeout: 60", None),
            "did you mean `idleTimeoutSeconds`?",
        ),
        (
            "platform.endpoint.idleTimeoutSeconds",
            ("idleTimeout: 60", None),
            "idle timeout override 60 s is shorter than the longest generation",
        ),
        (
            "platform.gateway.database",
            ("database:", None),
            "salt key is required but missing",
        ),
        ("platform.models.big", ("big:", None), "no setting of the model alone makes it fit"),
        (
            "platform.models.llama.maxCount",
            ("maxCount: 9", None),
            "maxCount 9 needs 9 instance(s)",
        ),
    ],
}


def _lines_in(words: str, text: str) -> str:
    """`words` with each `{marker}` (or `{marker|after}`) replaced by that line's number."""

    def number(match: re.Match[str]) -> str:
        marker, _, after = match[1].partition("|")
        return str(_line(text, marker, after or None))

    return re.sub(r"\{([^}]+)\}", number, words)


_ISSUE = re.compile(r"^  - (?P<file>[^:]+):(?P<line>\d+): (?P<path>\S+): (?P<message>.*)$")


@pytest.mark.parametrize("stack", sorted(EXPECTED))
def test_every_mistake_of_a_new_users_stack_in_one_run_at_its_file_and_line(
    stack: str, tmp_path: Path
) -> None:
    path = tmp_path / f"Pulumi.{stack}.yaml"
    shutil.copy(STACKS / f"{stack}.yaml", path)
    text = path.read_text()
    result = run_preview(stack, stack_file=path, policy_pack=None)
    assert result.exit_code == EXIT_CONFIG, result.error
    assert result.error is not None and "Traceback" not in result.error
    reported = [m.groupdict() for m in map(_ISSUE.match, result.error.splitlines()) if m]
    by_path = {got["path"]: got for got in reported}
    assert len(by_path) == len(reported), result.error
    assert sorted(by_path) == sorted(p for p, _, _ in EXPECTED[stack]), result.error
    for path_, (marker, after), words in EXPECTED[stack]:
        got = by_path[path_]
        assert got["file"] == path.name
        assert int(got["line"]) == _line(text, marker, after), (path_, result.error)
        assert _lines_in(words, text) in got["message"], (words, got["message"])


def test_the_esc_import_is_named_with_what_it_may_set() -> None:
    result = run_preview(
        "prod", stack_file=STACKS / "prod.yaml", policy_pack=None, views=("update",)
    )
    [note] = result.stack_notes
    assert note.startswith("prod.yaml:3: imports ESC environment(s) acme/inference-prod")
    assert "platform.gateway.database (with `enabled`, LiteLLM's salt key" in note
