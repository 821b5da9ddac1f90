"""What an instance's user data leaves running, boot by boot.

cloud-init runs the user data on the first boot of an instance only: a `#!` script part (or
`text/x-shellscript`) once per instance, `#cloud-boothook` and `text/x-shellscript-per-boot`
parts and `bootcmd` on every boot (cloud-init documentation, "User data formats" and module
frequencies). What runs on a later boot is what the first run installed: systemd units it
enabled (`systemctl enable`, which starts them on every later boot; `--now` also in this one),
scripts it put in `/var/lib/cloud/scripts/per-boot/`. A transient unit (`systemd-run`) or a
script started in the background runs in the boot that started it only.

`Boots(user_data)` reads a shell script or a MIME multi-part document and answers, for the first
and for every later boot, the text of every script that runs (heredoc files it executes
included), so a caller can ask which commands run when.
"""

from __future__ import annotations

import base64
import binascii
import email
import re
import shlex
from dataclasses import dataclass, field

UNIT_DIRS = ("/etc/systemd/system/", "/usr/lib/systemd/system/", "/lib/systemd/system/")
PER_BOOT_DIR = "/var/lib/cloud/scripts/per-boot/"
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_REDIRECT = re.compile(r"(>>?)\s*(['\"]?)(/[^\s'\";|&]+)\2")


def decode(user_data: str) -> str:
    """Launch template user data is base64; return the text (unchanged if it is not)."""
    try:
        return base64.b64decode(user_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return user_data


@dataclass
class Script:
    """One shell script as the scanner read it."""

    lines: list[str] = field(default_factory=list)
    """Its command lines, heredoc bodies removed."""
    files: dict[str, str] = field(default_factory=dict)
    """Files it writes with a heredoc (`cat <<'X' > /path`), by path."""


def scan(text: str) -> Script:
    """Split a shell script into command lines and the files its heredocs write."""
    out = Script()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        heredoc = HEREDOC.search(line)
        if heredoc is None:
            out.lines.append(line)
            continue
        tag, strip = heredoc.group(2), "<<-" in line
        body: list[str] = []
        while i < len(lines) and (lines[i].strip() if strip else lines[i]) != tag:
            body.append(lines[i])
            i += 1
        i += 1  # the closing tag
        out.lines.append(line)
        target = _REDIRECT.search(line.replace(heredoc.group(0), " "))
        if target is not None:
            path = target.group(3)
            content = "\n".join(body) + "\n"
            out.files[path] = (
                out.files.get(path, "") + content if target.group(1) == ">>" else content
            )
    return out


def _words(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


@dataclass(frozen=True)
class Unit:
    name: str
    exec_lines: tuple[str, ...]
    restarts: bool
    """`Restart=` other than `no`: the unit keeps running (a daemon)."""


def parse_unit(name: str, text: str) -> Unit:
    execs = tuple(
        line.split("=", 1)[1].lstrip("-@+!:")
        for line in text.splitlines()
        if line.strip().startswith(("ExecStart=", "ExecStartPre=", "ExecStartPost="))
    )
    restart = re.search(r"^\s*Restart=(\S+)", text, re.M)
    return Unit(name, execs, bool(restart and restart.group(1) != "no"))


@dataclass
class Boots:
    """The scripts that run on the first boot and on every later boot of an instance."""

    first: list[str] = field(default_factory=list)
    later: list[str] = field(default_factory=list)
    daemons: list[str] = field(default_factory=list)
    """Scripts of enabled units that keep running (`Restart=`): they may act between boots."""
    files: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, user_data: str) -> Boots:
        boots = cls()
        text = decode(user_data)
        if text.lstrip().startswith(("Content-Type:", "MIME-Version:")):
            for kind, body in _mime_parts(text):
                boots._part(kind, body)
        else:
            first_line = text.lstrip().split("\n", 1)[0]
            kinds = {"#cloud-boothook": "cloud-boothook", "#cloud-config": "cloud-config"}
            kind = next(
                (k for head, k in kinds.items() if first_line.startswith(head)), "shellscript"
            )
            boots._part(kind, text)
        return boots

    def _part(self, kind: str, body: str) -> None:
        if kind in ("cloud-boothook", "x-shellscript-per-boot"):
            self._run(body, every_boot=True)
        elif kind in ("shellscript", "x-shellscript", "x-shellscript-per-instance"):
            self._run(body, every_boot=False)
        elif kind == "cloud-config":
            for command in _cloud_config_list(body, "bootcmd"):
                self.first.append(command)
                self.later.append(command)
            for command in _cloud_config_list(body, "runcmd"):
                self.first.append(command)

    def _run(self, body: str, *, every_boot: bool) -> None:
        script = scan(body)
        self.files.update(script.files)
        commands = "\n".join(script.lines)
        self.first.append(commands)
        if every_boot:
            self.later.append(commands)
        for line in script.lines:
            self._effects(_words(line))
        for path, content in script.files.items():
            if path.startswith(PER_BOOT_DIR):
                self.later.append(content)

    def _effects(self, words: list[str]) -> None:
        if not words:
            return
        if words[0] == "systemctl" and "enable" in words:
            units = [w for w in words[words.index("enable") + 1 :] if not w.startswith("-")]
            for unit in units:
                self._enable(unit, now="--now" in words)
        elif words[0] == "systemctl" and "start" in words:
            for unit in (w for w in words[words.index("start") + 1 :] if not w.startswith("-")):
                self.first += self._unit_scripts(unit)
        elif words[0] == "systemd-run":
            command = [w for w in words[1:] if not w.startswith("-")]
            if command:
                self.first += self._file_scripts(command[0])
        elif words[0] in self.files:
            self.first += self._file_scripts(words[0])
        elif words[0] in ("bash", "sh") and len(words) > 1 and words[1] in self.files:
            self.first += self._file_scripts(words[1])

    def _unit(self, name: str) -> Unit | None:
        name = name if "." in name else f"{name}.service"
        for directory in UNIT_DIRS:
            if directory + name in self.files:
                return parse_unit(name, self.files[directory + name])
        return None

    def _unit_scripts(self, name: str) -> list[str]:
        unit = self._unit(name)
        if unit is None:
            return []
        return [s for line in unit.exec_lines for s in self._command_scripts(line)]

    def _command_scripts(self, command_line: str) -> list[str]:
        words = _words(command_line)
        if words and words[0] in ("/bin/bash", "/bin/sh", "bash", "sh") and "-c" in words:
            return [words[words.index("-c") + 1]] if len(words) > words.index("-c") + 1 else []
        return self._file_scripts(words[0]) if words else []

    def _file_scripts(self, path: str) -> list[str]:
        return [self.files[path]] if path in self.files else [path]

    def _enable(self, name: str, *, now: bool) -> None:
        unit = self._unit(name)
        scripts = self._unit_scripts(name)
        self.later += scripts
        if now:
            self.first += scripts
        if unit is not None and unit.restarts:
            self.daemons += scripts


def _mime_parts(text: str) -> list[tuple[str, str]]:
    message = email.message_from_string(text)
    parts: list[tuple[str, str]] = []
    for part in message.walk():
        if part.is_multipart():
            continue
        payload = part.get_payload(decode=True)
        body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
        parts.append((part.get_content_subtype(), body))
    return parts


def _cloud_config_list(body: str, key: str) -> list[str]:
    import yaml

    config = yaml.safe_load(body) or {}
    out: list[str] = []
    for item in config.get(key) or []:
        out.append(item if isinstance(item, str) else shlex.join(str(w) for w in item))
    return out
