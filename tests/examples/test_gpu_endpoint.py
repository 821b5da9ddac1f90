"""examples/gpu-endpoint: the components in a program of another's, with its own VPC and
cluster, preview offline with the policy pack and no finding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpu-endpoint"


def test_the_example_previews_with_the_policy_pack() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tools.preview", "--cwd", str(EXAMPLE), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    doc = json.loads(proc.stdout)
    by_type: dict[str, list[dict]] = {}
    for r in doc["resources"]:
        by_type.setdefault(r["type"], []).append(r)
    assert "ecs-inference:index:InferencePlatform" not in by_type
    service = by_type["aws:ecs/service:Service"][0]["inputs"]
    assert service["capacityProviderStrategies"][0]["capacityProvider"]
    assert service["networkConfiguration"]["assignPublicIp"] is False
    vpc = by_type["aws:ec2/vpc:Vpc"][0]
    assert by_type["aws:ecs/cluster:Cluster"][0]["parent"] == vpc["parent"]  # the program's own
    assert not [v for v in doc.get("violations", []) if v.get("enforcementLevel") == "mandatory"]
