"""The README is the front door and every command it shows works.

Its shell blocks are parsed command by command. What runs offline runs here for real: the dev
preview (whose output the README's sample must match), and the documented path to a stack of
your own, from `make new-stack` through the deploy recipe's `pulumi config set --path` steps
to a clean preview of the result. What needs the Pulumi CLI, AWS or a deployed stack is
checked as far as it resolves: every block parses as shell, `make` targets and the variables
given to them exist, `python -m` modules exist and accept their flags, and `pulumi` commands
are ones the CLI has, with flags it takes.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tools import new_stack
from tools.preview import EXIT_OK, render_text, run_preview

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()

#: The CLI's commands the README may show, with the flags each takes (pulumi 3.272's
#: `pulumi <command> --help`, as on pulumi.com/docs/iac/cli/commands).
PULUMI_COMMANDS: dict[tuple[str, ...], set[str]] = {
    ("login",): {"--local"},
    ("stack", "init"): {"--secrets-provider", "--copy-config-from"},
    ("stack", "output"): {"--json", "--show-secrets"},
    ("config", "set"): {"--path", "--secret", "--plaintext", "--type"},
    ("preview",): {"--policy-pack", "--policy-pack-config", "--diff", "--stack"},
    ("up",): {"--policy-pack", "--policy-pack-config", "--yes", "--stack"},
    ("destroy",): {"--stack", "--yes"},
    ("policy", "publish"): set(),
}


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", text, re.M | re.S)


def commands(block: str) -> list[list[str]]:
    """Each command line of a block as words (continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]  # an environment assignment before the command
        if words:
            out.append(words)
    return out


def all_commands() -> list[list[str]]:
    return [words for block in shell_blocks(README) for words in commands(block)]


def make_variables(words: list[str]) -> dict[str, str]:
    return dict(w.split("=", 1) for w in words[1:] if "=" in w)


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    assert len(README.splitlines()) <= 250
    first = commands(shell_blocks(README)[0])
    assert first == [["make", "preview"], ["make", "test"]]
    for heading in ("## Your own stack", "## Deploy it with the Pulumi CLI"):
        assert heading in README
    for doc in ("configuration", "operations", "architecture", "troubleshooting"):
        assert f"(docs/{doc}.md)" in README


def test_every_link_resolves() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_no_internal_references_in_the_docs() -> None:
    """Issue numbers, seeds and waves are how the project was built, not what a user reads."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        # Code spans are names (a test id, a random seed), not references to the project's past.
        text = re.sub(r"`[^`\n]*`", "", path.read_text())
        for pattern in (r"\bissue[s]? #?\d+", r"\bseed\b", r"\bseeds\b", r"\bwave \d"):
            found = re.search(pattern, text, re.I)
            assert not found, f"{path.name}: {found.group(0)!r}"


def test_every_shell_block_parses() -> None:
    for block in shell_blocks(README):
        subprocess.run(["bash", "-n"], input=block, text=True, check=True, timeout=30)


def test_make_targets_and_variables_exist() -> None:
    targets = set(re.findall(r"^([a-z][a-z0-9_-]*):", MAKEFILE, re.M))
    shown = [w for w in all_commands() if w[0] == "make"]
    assert shown
    for words in shown:
        named = [w for w in words[1:] if "=" not in w]
        assert named, words
        assert set(named) <= targets, words
        for variable in make_variables(words):
            assert f"$({variable})" in MAKEFILE, f"{words}: the Makefile never reads {variable}"


def test_python_modules_exist_and_take_their_flags() -> None:
    shown = [w for w in all_commands() if "-m" in w and w[0].endswith("python")]
    assert shown
    for words in shown:
        module = words[words.index("-m") + 1]
        flags = [w for w in words[words.index("-m") + 2 :] if w.startswith("--")]
        if module == "pytest":
            continue
        help_text = subprocess.run(
            [sys.executable, "-m", module, "--help"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        for flag in flags:
            assert flag in help_text, f"python -m {module} has no {flag}"


def test_pulumi_commands_are_the_clis() -> None:
    shown = [w for w in all_commands() if w[0] == "pulumi"]
    assert shown
    for words in shown:
        command = next((c for c in PULUMI_COMMANDS if tuple(words[1 : 1 + len(c)]) == c), None)
        assert command is not None, words
        flags = {w.split("=")[0] for w in words if w.startswith("--")}
        assert flags <= PULUMI_COMMANDS[command], words


def config_set(document: dict[str, Any], words: list[str]) -> None:
    """`pulumi config set [--path] <key> <value>` on a stack file's document, as the CLI does:
    with `--path` the key's first segment is the config key and the rest a path into its
    object; "true" and "false" become booleans and integers numbers (pulumi config set --help)."""
    args = [w for w in words[3:] if not w.startswith("--")]
    key, value = args
    config = document.setdefault("config", {})
    if "--path" not in words:
        config[key] = value
        return
    top, *path = key.split(".")
    typed: Any = value
    if value in ("true", "false"):
        typed = value == "true"
    elif re.fullmatch(r"-?\d+", value):
        typed = int(value)
    node = config.setdefault(top, {})
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = typed


def _new_stack_commands(block: str) -> list[list[str]]:
    return [w for w in commands(block) if w[:2] == ["make", "new-stack"]]


def _recipe(title: str) -> str:
    start = README.index(title)
    return next(b for b in shell_blocks(README[start:]))


@pytest.mark.parametrize("title", ["## Your own stack", "## Deploy it with the Pulumi CLI"])
def test_the_documented_path_to_your_own_stack_previews_clean(tmp_path: Path, title: str) -> None:
    block = _recipe(title)
    (make,) = _new_stack_commands(block)
    variables = make_variables(make)
    path = new_stack.write(variables["NAME"], variables["REGION"], directory=tmp_path)
    document = yaml.safe_load(path.read_text())
    for words in commands(block):
        if words[:3] == ["pulumi", "config", "set"]:
            config_set(document, words)
    path.write_text(yaml.safe_dump(document))
    previews = [w for w in commands(block) if w[:2] == ["make", "preview"]]
    assert [make_variables(w).get("STACK") for w in previews] == [variables["NAME"]]
    result = run_preview(variables["NAME"], stack_file=path)
    assert result.exit_code == EXIT_OK, render_text(result)
    # Policy-clean: no finding at any level. "can't run policy ... during preview" is the pack
    # saying a value is unknown in the first-preview view, not a finding about the stack.
    findings = [v for v in result.violations if not v.message.startswith("can't run policy")]
    assert not findings, render_text(result)


def test_the_sample_output_is_what_make_preview_prints() -> None:
    sample = re.search(r"^```text\n(Offline preview of stack 'dev'.*?)^```", README, re.M | re.S)
    assert sample
    result = run_preview("dev")
    assert result.exit_code == EXIT_OK
    printed = render_text(result).splitlines()
    for line in sample.group(1).splitlines():
        if "…" not in line and line.strip():
            assert line in printed, line
