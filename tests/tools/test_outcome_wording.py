"""What the preview says a real run does with its findings: each path as pulumi really runs it
(pulumi/pulumi pkg/backend/apply.go: `pulumi up` previews first unless `--skip-preview`; the
engine runs stack policies after the last step), and an audit of stored state stops nothing."""

from __future__ import annotations

from tools.preview_report import mandatory_outcome, rejection_outcome


def test_a_preview_names_what_each_deploy_path_does() -> None:
    (line,) = mandatory_outcome(("new", "update"))
    assert line.startswith("Preview FAILED")
    assert "`pulumi up --policy-pack policy` stops in its own preview before any change" in line
    assert "`pulumi up --skip-preview` (pulumi/actions' `command: up`)" in line
    assert "stack policies only after every change" in line


def test_an_audit_of_stored_state_stops_nothing() -> None:
    (line,) = mandatory_outcome(("state",))
    assert line.startswith("Audit FAILED") and "stops nothing" in line
    assert "would stop" not in line and "pulumi up" not in line


def test_a_rejection_says_when_each_kind_of_finding_bites() -> None:
    assert rejection_outcome(["name"]) == "the provider refuses the names in `pulumi preview`"
    assert "after creating what comes before it" in rejection_outcome(["request"])
    runtime = rejection_outcome(["runtime"])
    assert "passes `pulumi up` and fails once the stack runs" in runtime
    assert "preview" not in runtime.split("rehearsal")[1]
