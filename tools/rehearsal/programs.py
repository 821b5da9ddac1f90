"""Every program a pool's user data runs exists on its AMI.

A command the image lacks fails at boot (`command not found`), and what depends on it never
happens: a lifecycle hook that `aws autoscaling complete-lifecycle-action` should complete holds
every launch for the full heartbeat. The AMI is identified by the launch template's `imageId`:
the value of the ECS-optimized AMI SSM parameter the program looked up. What that image contains
is the table `ecs_inference.pools.ami_contents` (read from aws/amazon-ecs-ami); what a script
installs at boot (`dnf install <package>`, `rpm -U <package>*.rpm`) counts from the line that
installs it on, in that script.

Commands are read from every script that runs on any boot (`userdata.Boots`: the user data
itself, the files it writes and executes, the units it enables), one simple command at a time:
the first word after assignments, `sudo`, shell keywords and builtins, and the script's own
functions. A command given as a variable (`"$cmd"`) cannot be resolved and is not checked.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ecs_inference.pools import ami_contents
from ecs_inference.pools.ami_contents import AmiContents
from tools.aws_requests import Resource
from tools.rehearsal.calls import Refusal, Unverified
from tools.rehearsal.model import StackModel, known
from tools.rehearsal.userdata import HEREDOC, Boots

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SSM_PARAMETER = "aws:ssm/getParameter:getParameter"

KEYWORDS = frozenset(
    {"!", "[[", "]]", "do", "done", "elif", "else", "esac", "fi", "if", "then", "time", "until",
     "while", "{", "}"}
)  # fmt: skip
"""Bash keywords: the command follows them."""

BUILTINS = frozenset(
    {
        ".", ":", "[", "break", "case", "cd", "command", "continue", "declare", "echo", "eval",
        "exec", "exit", "export", "false", "for", "local", "printf", "read", "readonly",
        "return", "select", "set", "shift", "source", "test", "trap", "true", "type", "typeset",
        "unset", "wait",
    }
)  # fmt: skip
"""Bash builtins (and `for`/`case`/`select` headers): the whole simple command is the shell's;
`command -v` only asks. Their assignments (`local x=1`) still count."""

RPM_INSTALL_FLAGS = ("-i", "-U", "--install", "--upgrade")

_FUNCTION = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)")
_PROGRAM = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+-]*$")
_ASSIGNMENT = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.S)
_VARIABLE = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")
_RPM_FILE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.+-]*?)(?:-\d[^/]*)?\.rpm$")


def segments(line: str) -> list[str]:
    """`line` split into simple commands: at `;`, `|`, `&&`, `||`, parentheses and command
    substitutions (`$(...)`, backticks, also inside double quotes), never inside single quotes."""
    out: list[str] = []
    current: list[str] = []
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        width = 1
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            width = 2
        elif line.startswith("$(", i) or c in "`)":
            out.append("".join(current))
            current = []
            i += 2 if c == "$" else 1
            continue
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif line.startswith(("&&", "||"), i) or c in ";|(":
            out.append("".join(current))
            current = []
            i += 2 if line.startswith(("&&", "||"), i) else 1
            continue
        current.append(line[i : i + width])
        i += width
    out.append("".join(current))
    return out


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return [w.strip("'\"") for w in segment.split()]


def _lines(script: str) -> list[str]:
    """The script's lines without heredoc bodies whose closing tag follows (a script already
    scanned by `userdata.scan` keeps the opening line but not the body)."""
    lines = script.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        heredoc = HEREDOC.search(lines[i])
        i += 1
        if heredoc is not None and heredoc.group(2) in (x.strip() for x in lines[i:]):
            while i < len(lines) and lines[i].strip() != heredoc.group(2):
                i += 1
            i += 1
    return out


def commands(script: str) -> Iterator[tuple[str, list[str]]]:
    """(program, its words) for each simple command of `script`, in order; `$NAME` of a plain
    assignment earlier in the script stands for its value."""
    lines = _lines(script)
    functions = {m.group(1) for line in lines if (m := _FUNCTION.match(line))}
    variables: dict[str, str] = {}
    for line in lines:
        text = "" if line.lstrip().startswith("#") else line
        if _FUNCTION.match(text):
            text = text[text.index("()") + 2 :]
        for segment in segments(text):
            words = _words(segment)
            while words and (words[0] in KEYWORDS or words[0] in BUILTINS or "=" in words[0]):
                if (found := _ASSIGNMENT.match(words[0])) and "$(" not in found.group(2):
                    variables[found.group(1)] = found.group(2)
                if words[0] in BUILTINS:
                    words = [w for w in words[1:] if _ASSIGNMENT.match(w)]
                    continue
                words = words[1:]
            words = [_VARIABLE.sub(lambda m: variables.get(m.group(1), m[0]), w) for w in words]
            if words and words[0] == "sudo":
                words = [w for w in words[1:] if not w.startswith("-")]
            if not words or words[0] in functions or not _PROGRAM.fullmatch(words[0]):
                continue
            yield words[0], words


def installed(words: Sequence[str]) -> frozenset[str]:
    """The commands a `dnf`/`yum install` or `rpm -i/-U` command line makes available."""
    if not words:
        return frozenset()
    args = [w for w in words[1:] if not w.startswith("-")]
    packages: list[str] = []
    if words[0] in ("dnf", "yum") and args[:1] == ["install"]:
        packages = args[1:]
    elif words[0] == "rpm" and any(
        w.startswith(("-i", "-U", "--install", "--upgrade")) for w in words
    ):
        packages = [m.group(1) for a in args if (m := _RPM_FILE.search(a.split("/")[-1]))]
    found: set[str] = set()
    for package in packages:
        found |= ami_contents.BOOT_PACKAGES.get(package, frozenset())
    return frozenset(found)


def missing(script: str, ami: AmiContents, written: Mapping[str, str]) -> list[tuple[str, str]]:
    """(program, why) for each program `script` runs that `ami` lacks at that point."""
    available = set(ami.programs) | set(ami.paths) | set(written)
    out: list[tuple[str, str]] = []
    for program, words in commands(script):
        name = program.rsplit("/", 1)[-1] if program.startswith(("/usr/bin/", "/bin/")) else program
        if program.startswith("$") or name in available or program in available:
            available |= installed(words)
            continue
        if program not in (p for p, _ in out):
            out.append((program, " ".join(words)[:80]))
    return out


def _amis_by_image(lookups: Sequence[Any]) -> dict[str, AmiContents]:
    out: dict[str, AmiContents] = {}
    for lookup in lookups:
        if getattr(lookup, "token", None) != SSM_PARAMETER:
            continue
        ami = ami_contents.ami_of_parameter(str(lookup.args.get("name", "")))
        answer = lookup.answer
        for key in ("insecureValue", "value"):
            if ami is not None and isinstance(answer.get(key), str):
                out[answer[key]] = ami
    return out


def program_checks(model: StackModel, lookups: Sequence[Any]) -> Iterator[Refusal | Unverified]:
    """A refusal for each program a launch template's user data runs that its AMI lacks."""
    amis = _amis_by_image(lookups)
    for template in model.of(LAUNCH_TEMPLATE):
        user_data = template.inputs.get("userData")
        image = template.inputs.get("imageId")
        if not isinstance(user_data, str) or not known(user_data):
            continue
        who = f"launch template {template.name} user data"
        ami = amis.get(image) if isinstance(image, str) else None
        if ami is None:
            yield Unverified(template, who, "its AMI is not an ECS-optimized AMI the preview knows")
            continue
        yield from _refusals(template, who, Boots.of(user_data), ami)


def _refusals(template: Resource, who: str, boots: Boots, ami: AmiContents) -> Iterator[Refusal]:
    seen: set[str] = set()
    for script in dict.fromkeys(boots.first + boots.later + boots.daemons):
        for program, line in missing(script, ami, boots.files):
            if program in seen:
                continue
            seen.add(program)
            yield Refusal(
                template,
                who,
                f"runs `{program}` ({line}), which the {ami.name} does not contain "
                f"({ami_contents.SOURCE_REPOSITORY}@{ami_contents.SOURCE_COMMIT[:12]}, "
                "components/pools/ami_contents.py) and nothing before it installs: the "
                "command fails at boot",
            )
