"""What the pinned CloudWatch agent reads, from its source at the release's tag.

The host telemetry (`components/operations/telemetry.py`) installs amazon-cloudwatch-agent
1.300062.0b1304 (build 1304 of tag v1.300062.0) and hands it a JSON config and an
`amazon-cloudwatch-agent-ctl` command line. A measurement or key the agent does not know is
dropped or refused at start on an instance that took minutes to come up, so the names are read
from the agent's source (aws/amazon-cloudwatch-agent, not on PyPI; through the search tool's
repository mirror) into `contracts/agent/amazon-cloudwatch-agent-<tag>.json`, the way
`tools.sources` records an engine's table read from a checkout:

- `nvidia_gpu_measurements`: the fields the `nvidia_smi` input sets from nvidia-smi's XML
  (`common.SetIfUsed(<type>, fields, "<name>", ...)` in `plugins/inputs/nvidia_smi/schema_v*/`);
- `ctl`: the options of `packaging/dependencies/amazon-cloudwatch-agent-ctl`'s `getopts`, its
  actions and modes (its `case` branches);
- `emf_processor`, `metric_declaration`, `prometheus`: the properties the agent's config schema
  (`translator/config/schema.json`) allows in `logs.metrics_collected.prometheus`, its
  `emf_processor` and each `metric_declaration`.

`python -m tools.agent_table GIT_DIR TAG` rewrites the table from a mirror of the repository.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
TABLE_DIR = REPO_ROOT / "contracts" / "agent"
_FIELD = re.compile(r'SetIfUsed\("\w+",\s*fields,\s*"([a-z0-9_]+)"')
_GETOPTS = re.compile(r'getopts\s+":?([a-zA-Z:]+)"')
_BRANCH = re.compile(r"^\s*([a-zA-Z0-9-]+)\)", re.M)


def _show(git_dir: Path, tag: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{tag}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _files(git_dir: Path, tag: str, under: str) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", tag, under],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def _case_branches(script: str, variable: str) -> list[str]:
    """The patterns of `case "${variable}" in ... esac`."""
    start = script.index(f'case "${{{variable}}}" in')
    body = script[start : script.index("esac", start)]
    return sorted(set(_BRANCH.findall(body)) - {"*"})


def ctl(script: str) -> dict[str, list[str]]:
    found = _GETOPTS.search(script)
    if found is None:
        raise LookupError("amazon-cloudwatch-agent-ctl: no getopts")
    return {
        "options": sorted(f"-{c}" for c in found.group(1) if c != ":"),
        "actions": _case_branches(script, "action"),
        "modes": _case_branches(script, "mode"),
    }


def schema_properties(schema: dict[str, Any]) -> dict[str, list[str]]:
    definitions = schema["definitions"]
    logs = definitions["logsDefinition"]["properties"]["metrics_collected"]["properties"]
    emf = definitions["emfProcessorDefinition"]
    return {
        "prometheus": sorted(logs["prometheus"]["properties"]),
        "emf_processor": sorted(emf["properties"]),
        "metric_declaration": sorted(
            emf["definitions"]["metricDeclarationDefinition"]["properties"]
        ),
    }


def table(git_dir: Path, tag: str) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-list", "-n", "1", tag],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    measurements = sorted(
        {
            name
            for path in _files(git_dir, tag, "plugins/inputs/nvidia_smi")
            if re.search(r"schema_v\d+/parser\.go$", path)
            for name in _FIELD.findall(_show(git_dir, tag, path))
        }
    )
    script = _show(git_dir, tag, "packaging/dependencies/amazon-cloudwatch-agent-ctl")
    schema = json.loads(_show(git_dir, tag, "translator/config/schema.json"))
    return {
        "project": "aws/amazon-cloudwatch-agent",
        "tag": tag,
        "commit": commit,
        "nvidia_gpu_measurements": measurements,
        "ctl": ctl(script),
        **schema_properties(schema),
    }


def main(argv: Sequence[str]) -> int:
    git_dir, tag = Path(argv[0]), argv[1]
    TABLE_DIR.mkdir(parents=True, exist_ok=True)
    path = TABLE_DIR / f"amazon-cloudwatch-agent-{tag.removeprefix('v')}.json"
    path.write_text(json.dumps(table(git_dir, tag), indent=1) + "\n")
    print(path.relative_to(REPO_ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
