"""Decisions that predict an outage are advisory findings: named with file, line and config
path, counted with the policy pack's advisories, and printed by the program as warnings."""

from __future__ import annotations

from pathlib import Path

import yaml

from tools.preview import EXIT_OK, render_text, run_preview

ROOT = Path(__file__).resolve().parents[2]


def test_a_single_task_of_a_protected_stack_and_a_full_pool_are_advisories(tmp_path: Path):
    data = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    platform = data["config"]["ecs-inference:platform"]
    platform["protect"] = True
    # One task per instance and no room for another: every deploy stops it first.
    platform["gpuPools"]["l40s"]["maxSize"] = 1
    platform["models"]["llama"].update(minCount=1, desiredCount=1, maxCount=1)
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    lines = path.read_text().splitlines()
    result = run_preview("dev", stack_file=path, views=("update",))
    assert result.exit_code == EXIT_OK, result.error
    by_path = {a.split(": ", 2)[1]: a for a in result.advisories}
    deploy = by_path["platform.gpuPools.l40s.maxSize"]
    assert (
        "can leave no task serving" in deploy and "raise the pool's maxSize by at least 1" in deploy
    )
    line = next(i for i, t in enumerate(lines, 1) if t.strip() == "maxSize: 1")
    assert deploy.startswith(f"Pulumi.dev.yaml:{line}: ")
    assert "a single task in one Availability Zone" in by_path["platform.models.llama.minCount"]
    text = render_text(result)
    assert "Plan advisories" in text
    pack = sum(1 for v in result.violations if v.enforcement_level == "advisory")
    planned = len(result.advisories)
    assert f"{planned + pack} advisory finding(s): {planned} from the plan" in text


def test_a_stack_whose_decisions_predict_no_outage_has_none() -> None:
    result = run_preview("dev", policy_pack=None)
    assert result.advisories == []
    assert "Plan advisories" not in render_text(result)


def test_an_eu_west_1_stack_pulling_us_east_1_images_gets_an_advisory_per_reference(
    tmp_path: Path,
):
    # The shared-vpc stack runs in eu-west-1 and names its region's replicas (stack-up.yml
    # points a stack in another region at them); pointing two references back at us-east-1's
    # registry makes each an advisory with its cost and fix, at the line that sets it.
    data = yaml.safe_load((ROOT / "Pulumi.shared-vpc.yaml").read_text())
    images = data["config"]["ecs-inference:platform"]["images"]
    for key in ("vllm", "reranker"):
        images[key] = images[key].replace(".eu-west-1.", ".us-east-1.")
    path = tmp_path / "Pulumi.shared-vpc.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    lines = path.read_text().splitlines()
    result = run_preview("shared-vpc", stack_file=path, views=("update",))
    assert result.exit_code == EXIT_OK, result.error
    by_path = {a.split(": ", 2)[1]: a for a in result.advisories if "registry into" in a}
    assert set(by_path) == {"platform.images.vllm", "platform.images.reranker"}
    vllm = by_path["platform.images.vllm"]
    line = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("vllm: "))
    assert vllm.startswith(f"Pulumi.shared-vpc.yaml:{line}: ")
    assert "from us-east-1's registry into a eu-west-1 stack" in vllm
    assert "~$0.97 per pull of this 10 GiB image" in vllm
    assert "ECR replication rule" in vllm
    assert "123456789012.dkr.ecr.eu-west-1.amazonaws.com/ecs-inference/vllm:v0.33.0" in vllm
    assert "$0.09 per GB pulled" in by_path["platform.images.reranker"]


def test_the_eu_west_1_reference_stack_has_no_cross_region_image() -> None:
    result = run_preview("shared-vpc", policy_pack=None)
    assert not [a for a in result.advisories if "registry into" in a]
