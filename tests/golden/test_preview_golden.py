"""The refactor guard: each stack's preview registers exactly the resources of its golden file.

For every `Pulumi.<stack>.yaml` of the program, the offline preview (no policy pack) is reduced to
what the engine would see: each resource's type, name, parent, custom flag, inputs, provider,
dependencies and property dependencies (sorted by URN, because registration order across
components is not deterministic), plus the stack outputs. That must equal
`tests/golden/<stack>.json`.

A deliberate change of what the program registers updates the golden on purpose, in the same
commit, and the diff of the golden shows the reviewer exactly what changed:

    GOLDEN_UPDATE=1 .venv/bin/python -m pytest tests/golden -p no:xdist -q
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.stacks import REFERENCE_STACKS
from tools.preview import run_preview

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
STACKS = REFERENCE_STACKS


def snapshot(stack: str) -> dict[str, Any]:
    """The preview of `stack` as a canonical JSON-able document."""
    result = run_preview(stack, program_dir=ROOT, policy_pack=None)
    assert result.ok, result.error
    resources = [
        {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "custom": r.custom,
            "parent": r.parent,
            "provider": r.provider,
            "dependencies": sorted(r.dependencies),
            "propertyDependencies": {
                key: sorted(deps) for key, deps in sorted(r.property_dependencies.items())
            },
            "inputs": r.inputs,
        }
        for r in sorted(result.resources, key=lambda r: r.urn)
    ]
    return {"stack": stack, "resources": resources, "outputs": result.outputs}


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


@pytest.mark.parametrize("stack", STACKS)
def test_preview_matches_golden(stack: str) -> None:
    path = GOLDEN / f"{stack}.json"
    actual = render(snapshot(stack))
    if os.environ.get("GOLDEN_UPDATE") == "1":
        path.write_text(actual)
    assert path.is_file(), f"{path.name} missing: run with GOLDEN_UPDATE=1 to create it"
    expected = path.read_text()
    if actual != expected:
        want, got = json.loads(expected), json.loads(actual)
        want_by_urn = {r["urn"]: r for r in want["resources"]}
        got_by_urn = {r["urn"]: r for r in got["resources"]}
        lines = [f"- {u}" for u in sorted(want_by_urn.keys() - got_by_urn.keys())]
        lines += [f"+ {u}" for u in sorted(got_by_urn.keys() - want_by_urn.keys())]
        lines += [
            f"~ {u}"
            for u in sorted(want_by_urn.keys() & got_by_urn.keys())
            if want_by_urn[u] != got_by_urn[u]
        ]
        if want["outputs"] != got["outputs"]:
            lines.append("~ stack outputs")
        pytest.fail(f"{stack} preview differs from {path.name}:\n" + "\n".join(lines))


def test_every_stack_has_a_golden() -> None:
    assert STACKS, "no Pulumi.<stack>.yaml found"
    stale = sorted(p.name for p in GOLDEN.glob("*.json") if p.name[: -len(".json")] not in STACKS)
    assert not stale, f"golden files for stacks that no longer exist: {stale}"
