"""The deliberately insecure example program trips every mandatory rule.

``tests/examples/insecure`` is a standalone Pulumi program with raw pulumi-aws resources. It is
run here through the offline preview (the real program under the SDK's mock runtime, recorded,
then the real pack over gRPC), as ``make preview`` would run it.
"""

from __future__ import annotations

from pathlib import Path

from tests.policy.conftest import POLICY_DIR
from tools.analyzer_client import PolicyPackProcess
from tools.preview import run_preview

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "insecure"

EXPECTED_MANDATORY = {
    ("no-accelerators-or-host-features-on-fargate", "gpu-on-fargate"),
    ("fargate-task-size-on-grid", "gpu-on-fargate"),
    ("no-gpu-task-on-fargate-service", "gpu-service"),
    ("no-reachable-public-ip", "gpu-service"),
    ("no-internet-ingress-to-unauthenticated-target", "model-sg"),
    ("no-unauthenticated-internet-path", "http"),
    ("no-unauthenticated-internet-path", "tcp-8000"),
    ("fargate-platform-version-for-large-tasks", "big-service"),
    ("no-ec2-batch-job-on-fargate-queue", "nightly-gpu-job"),
}


def test_insecure_example_fails_preview_with_every_mandatory_rule():
    result = run_preview("dev", program_dir=EXAMPLE, policy_pack=POLICY_DIR)
    assert result.exit_code != 0
    mandatory = {
        (v.policy_name, v.urn.rsplit("::", 1)[-1])
        for v in result.violations
        if v.enforcement_level == "mandatory"
    }
    assert mandatory == EXPECTED_MANDATORY
    with PolicyPackProcess(POLICY_DIR) as pack:
        declared = {
            p["name"] for p in pack.info()["policies"] if p["enforcementLevel"] == "mandatory"
        }
    assert {name for name, _ in EXPECTED_MANDATORY} == declared
