"""The cost in the preview (text and --json) and the pull request's cost comment: the diff tool
on real preview documents, and the workflow that runs it without exposing the write token."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tools import cost_diff
from tools.preview import render_text, run_preview

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dev_preview() -> dict[str, Any]:
    result = run_preview("dev", policy_pack=None)
    assert result.exit_code == 0, result.error
    text = render_text(result)
    doc = result.to_json()
    return {"text": text, "doc": json.loads(json.dumps(doc, default=str))}


def test_preview_prints_the_cost_table_and_json_carries_it(dev_preview):
    text = dev_preview["text"]
    assert "Cost (USD, on-demand list prices):" in text
    for label in ("minimum", "steady", "maximum", "pool instances", "Fargate tasks",
                  "NAT gateways", "load balancer", "VPC endpoints", "log ingestion",
                  "total per month", "assumption:", "one excursion to maximum"):  # fmt: skip
        assert label in text, label
    # the cost is not repeated among the plain outputs
    assert '  cost: {"' not in text
    cost = dev_preview["doc"]["cost"]
    assert cost == dev_preview["doc"]["outputs"]["cost"]
    points = cost["points"]
    assert points["minimum"]["usdPerMonth"] <= points["steady"]["usdPerMonth"]
    assert points["steady"]["usdPerMonth"] <= points["maximum"]["usdPerMonth"]


def _write(directory: Path, docs: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for stack, doc in docs.items():
        (directory / f"{stack}.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return directory


def test_diff_reports_changes_per_stack_and_point(dev_preview, tmp_path):
    head = dev_preview["doc"]
    base = copy.deepcopy(head)
    steady = base["cost"]["points"]["steady"]
    steady["usdPerMonth"] -= 100.0
    steady["byCategory"]["NAT gateways"] -= 100.0 / 730
    out = tmp_path / "comment.md"
    code = cost_diff.main(
        [
            "--base", str(_write(tmp_path / "base", {"dev": base})),
            "--head", str(_write(tmp_path / "head", {"dev": head, "staging": head})),
            "--out", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    text = out.read_text()
    assert text.startswith(cost_diff.MARKER)
    dev_rows = [line for line in text.splitlines() if line.startswith("| `dev` |")]
    assert [row.split("|")[2].strip() for row in dev_rows] == ["minimum", "steady", "maximum"]
    assert "**+$100**" in dev_rows[1]
    assert "no change" in dev_rows[0] and "no change" in dev_rows[2]
    assert "| NAT gateways |" in text  # the category that moved, and only that one
    assert "| pool instances |" not in text
    assert "`staging`: no stack on the base branch" in text
    assert "Prices as of" in text


def test_diff_never_turns_a_failed_or_old_preview_into_zero(dev_preview, tmp_path):
    head = dev_preview["doc"]
    old = {k: v for k, v in head.items() if k != "cost"}
    old["outputs"] = {k: v for k, v in head["outputs"].items() if k != "cost"}
    failed = {"stack": "prod", "ok": False, "error": "platform.models.x: does not fit\nmore"}
    text = cost_diff.render(
        cost_diff.read_side(_write(tmp_path / "b", {"dev": old, "prod": "not json"})),
        cost_diff.read_side(_write(tmp_path / "h", {"dev": head, "prod": failed})),
    )
    assert "`dev` (base): the preview has no cost output" in text
    assert "`prod` (head): platform.models.x: does not fit" in text
    assert "`prod` (base): not JSON" in text
    assert "$0 " not in text and "| $0 |" not in text
    assert cost_diff.main(["--base", str(tmp_path / "b"), "--head", str(tmp_path / "none")]) == 2


def _load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((REPO / ".github" / "workflows" / name).read_text())
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def test_pull_request_workflow_diffs_cost_and_comments_without_running_pr_code():
    jobs = _load("pull-request.yml")["jobs"]
    offline_runs = "\n".join(s.get("run", "") for s in jobs["offline"]["steps"])
    assert 'tools.preview --stack "$stack" --json' in offline_runs
    assert "tools.cost_diff --base cost/base --head cost/head" in offline_runs
    base_checkout = [
        s for s in jobs["offline"]["steps"]
        if s.get("uses", "").startswith("actions/checkout") and s.get("with", {}).get("path")
    ]  # fmt: skip
    assert base_checkout[0]["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    comment = jobs["cost-comment"]
    assert comment["needs"] == "offline"
    assert comment["permissions"] == {"pull-requests": "write"}
    assert not any(s.get("uses", "").startswith("actions/checkout") for s in comment["steps"])
    (post,) = [s for s in comment["steps"] if "gh api" in s.get("run", "")]
    assert "head.repo.full_name == github.repository" in post["if"]
    assert cost_diff.MARKER in post["run"]
