"""The offline preview end to end: real program, mock runtime, real policy pack over gRPC."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import preview
from tools.preview import EXIT_CONFIG, EXIT_OK, EXIT_VIOLATIONS, run_preview

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("stack", ["dev", "prod", "agents", "engines"])
def test_reference_stacks_preview_clean(stack: str) -> None:
    # The deployed stack's view; the same verdicts in every view is the policy pack's test
    # (tests/policy, issue 23 item 2), which runs tools.views.run_pack in each.
    result = run_preview(stack, views=("update",))
    assert result.error is None
    assert result.exit_code == EXIT_OK
    assert not [v for v in result.violations if v.enforcement_level == "mandatory"]
    # Every target group states its service's longest request and drains at least that long
    # (agents: the gateway and the models behind it through Service Connect pass the exposure
    # rules too).
    drains = [
        v for v in result.violations if v.policy_name == "deregistration-delay-covers-streams"
    ]
    assert not drains, [v.message for v in drains]
    # The seed advisories (hub weights, Fargate compatibilities, image pull path, queue
    # workers on CPU) find nothing in the project's own stacks: it stages weights offline,
    # declares FARGATE, routes private subnets through NAT / endpoints and scales workers on
    # backlog.
    seeds = {
        "no-hub-weights-at-task-start",
        "fargate-task-definition-requires-fargate",
        "fargate-image-pull-path",
        "queue-workers-scale-on-backlog",
    }
    seeded = [
        v for v in result.violations if v.policy_name in seeds or any(s in v.message for s in seeds)
    ]
    assert not seeded, [v.message for v in seeded]
    types = {r.type for r in result.resources}
    assert "ecs-inference:index:InferencePlatform" in types
    assert "aws:ecs/cluster:Cluster" in types
    assert result.outputs["decisions"]["endpoint"]
    text = preview.render_text(result)
    assert "Policy report (update" in text and "0 mandatory" in text


def write_stack(tmp_path: Path, platform: object) -> Path:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(
        yaml.safe_dump({"config": {"aws:region": "us-east-1", "ecs-inference:platform": platform}})
    )
    return path


def dev_platform() -> dict:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"][
        "ecs-inference:platform"
    ]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            lambda p: p["models"]["llama"].update(maxModelLen="long"),
            "platform.models.llama.maxModelLen",
        ),
        (lambda p: p["endpoint"].update(colour="blue"), "platform.endpoint.colour"),
        (lambda p: p["endpoint"].pop("domainName"), "platform.endpoint.domainName"),
        (
            lambda p: p["gpuPools"]["l40s"].update(instanceType="g6e.48xlargeX"),
            "platform.gpuPools.l40s.instanceType",
        ),
        (
            lambda p: p["models"]["llama"].update(architecture="llama-3.1-70b"),
            "platform.models.llama",
        ),
    ],
    ids=["wrong-type", "unknown-key", "missing", "impossible", "does-not-fit"],
)
def test_bad_config_one_message_no_resources(tmp_path: Path, change, path: str) -> None:
    platform = dev_platform()
    change(platform)
    result = run_preview("bad", stack_file=write_stack(tmp_path, platform), policy_pack=None)
    assert result.exit_code == EXIT_CONFIG
    assert result.resources == []
    assert path in result.error
    assert "Traceback" not in result.error


def test_cli_config_error_exit_code_and_no_traceback(tmp_path: Path) -> None:
    platform = dev_platform()
    platform["models"]["llama"]["maxModelLen"] = 0
    stack_file = write_stack(tmp_path, platform)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.preview", "--stack", "bad", "--stack-file", str(stack_file)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_CONFIG
    assert "platform.models.llama.maxModelLen: must be > 0" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "No resources were registered." in proc.stderr


def test_missing_stack_file_and_bad_yaml(tmp_path: Path) -> None:
    assert run_preview("nope", policy_pack=None).exit_code == EXIT_CONFIG
    bad = tmp_path / "Pulumi.x.yaml"
    bad.write_text("config: [unclosed")
    result = run_preview("x", stack_file=bad, policy_pack=None)
    assert result.exit_code == EXIT_CONFIG and "not valid YAML" in result.error


def test_cli_json_and_mermaid() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tools.preview", "--json", "--mermaid"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["stack"] == "dev" and doc["ok"] is True
    assert any(r["type"] == "aws:ecs/cluster:Cluster" for r in doc["resources"])
    assert doc["mermaid"].startswith("flowchart TD")
    assert "policy" in doc and "decisions" in doc["outputs"]


def test_insecure_example_fails_on_mandatory_violations() -> None:
    example = ROOT / "tests" / "examples" / "insecure"
    stack = next(example.glob("Pulumi.*.yaml")).name.split(".")[1]
    result = run_preview(stack, program_dir=example)
    assert result.exit_code == EXIT_VIOLATIONS
    mandatory = {v.policy_name for v in result.violations if v.enforcement_level == "mandatory"}
    assert len(mandatory) >= 3
    proc = subprocess.run(
        [sys.executable, "-m", "tools.preview", "--cwd", str(example), "--stack", stack],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == EXIT_VIOLATIONS
    assert "Preview FAILED" in proc.stdout


def test_policy_pack_config_can_downgrade_a_mandatory_rule(tmp_path: Path) -> None:
    example = ROOT / "tests" / "examples" / "insecure"
    stack = next(example.glob("Pulumi.*.yaml")).name.split(".")[1]
    baseline = run_preview(stack, program_dir=example)
    names = {v.policy_name for v in baseline.violations if v.enforcement_level == "mandatory"}
    downgraded = run_preview(
        stack,
        program_dir=example,
        policy_config={name: "advisory" for name in names},
    )
    assert downgraded.exit_code == EXIT_OK
    assert {v.policy_name for v in downgraded.violations} >= names


def test_longest_names_the_schema_accepts_fit_elbv2_limits(tmp_path: Path) -> None:
    """Every pool and service name at the schema's 21-character maximum: the target-group and
    load-balancer names pulumi-aws would send (explicit, or `<logical>-<7 random>`) fit 32."""
    from ecs_inference.contracts.aws_limits import AUTONAME_RANDOM_CHARS, ELBV2_NAME

    platform = dev_platform()
    renames = {"l40s": "g" * 20 + "1", "inf2": "n" * 20 + "2"}
    platform["gpuPools"] = {renames[k]: v for k, v in platform["gpuPools"].items()}
    platform["neuronPools"] = {renames[k]: v for k, v in platform["neuronPools"].items()}
    models = {}
    for i, model in enumerate(platform["models"].values()):
        model["pool"] = renames[model["pool"]]
        models[f"m{i}" + "x" * 18 + "z"] = model  # 21 characters
    platform["models"] = models
    platform["rerankers"] = {"r" * 20 + "9": platform["rerankers"]["rerank"]}
    result = run_preview("long", stack_file=write_stack(tmp_path, platform), policy_pack=None)
    assert result.exit_code == EXIT_OK, result.error
    elbv2 = [
        r
        for r in result.resources
        if r.type in ("aws:lb/targetGroup:TargetGroup", "aws:lb/loadBalancer:LoadBalancer")
    ]
    assert len(elbv2) == len(models) + 2  # one per service, plus the ALB
    for r in elbv2:
        physical = r.inputs.get("name") or f"{r.name}-{'x' * AUTONAME_RANDOM_CHARS}"
        assert len(physical) <= ELBV2_NAME.max_length, (r.name, physical)
