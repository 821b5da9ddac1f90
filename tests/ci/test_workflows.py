"""The GitHub workflows: they pass actionlint, use OIDC only, and cover every stack and image.

actionlint (with ShellCheck on the `run:` scripts) is the pinned binary `make lint` uses; the
structural checks read the workflow YAML: no long-lived AWS keys, `id-token: write` wherever AWS
credentials are requested, every `Pulumi.<stack>.yaml` previewed on pull requests (offline and
against the cloud) and deployed on main, every image under images/ built and its digest fed to
the stack config key the program reads.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_inference.config.base import IMAGE_PATTERN
from ecs_inference.images.input import ImagesConfig
from ecs_inference.images.platforms import EXAMPLE_IMAGES
from tests.stacks import REFERENCE_STACKS

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
VENV_BIN = REPO / ".venv" / "bin"
STACKS = REFERENCE_STACKS
# Platform images (the examples users copy are neither built by CI nor deployed).
IMAGES = sorted(
    p.parent.name
    for p in (REPO / "images").glob("*/Dockerfile")
    if p.parent.name not in EXAMPLE_IMAGES
)
AWS_CREDENTIALS_ACTION = "aws-actions/configure-aws-credentials"
PULUMI_ACTION = "pulumi/actions"


def load(name: str) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as True; workflows are read as GitHub reads them.
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    if True in document:
        document["on"] = document.pop(True)
    return document


def workflow_files() -> list[Path]:
    return sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job.get("steps", [])


def uses(step: dict[str, Any], action: str) -> bool:
    return step.get("uses", "").split("@")[0] == action


def actionlint(*files: Path) -> list[dict[str, Any]]:
    """actionlint's findings as JSON, with the pinned ShellCheck and pyflakes off (as make lint)."""
    proc = subprocess.run(
        [
            str(VENV_BIN / "actionlint"),
            f"-shellcheck={VENV_BIN / 'shellcheck'}",
            "-pyflakes=",
            "-format",
            "{{json .}}",
            *map(str, files),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout or "[]")


# --- actionlint ---------------------------------------------------------------------------------


def test_workflows_exist():
    names = {p.name for p in workflow_files()}
    assert {"pull-request.yml", "deploy.yml", "stack-up.yml"} <= names


def test_workflows_pass_actionlint():
    findings = actionlint(*workflow_files())
    assert findings == [], "\n".join(
        f"{f['filepath']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]" for f in findings
    )


def test_actionlint_checks_action_inputs_and_shell_scripts(tmp_path):
    # The linter must actually check what the workflows rely on: action inputs (here a typo in a
    # Pulumi action input) and ShellCheck on `run:` scripts (an unquoted command substitution).
    text = (WORKFLOWS / "pull-request.yml").read_text()
    broken = text.replace("policyPacks: policy", "policyPack: policy").replace(
        '[ -f "preview-$stack.txt" ]', "[ -f $(ls) ]"
    )
    assert broken != text
    (tmp_path / "broken.yml").write_text(broken)
    kinds = sorted({f["kind"] for f in actionlint(tmp_path / "broken.yml")})
    assert kinds == ["action", "shellcheck"]


def test_make_lint_runs_hadolint_on_every_dockerfile_and_actionlint_on_every_workflow():
    proc = subprocess.run(
        ["make", "-n", "lint"], cwd=REPO, capture_output=True, text=True, check=True
    )
    lines = proc.stdout.splitlines()
    (hadolint,) = [line for line in lines if line.startswith(".venv/bin/hadolint ")]
    # Every Dockerfile, example images' too.
    dockerfiles = sorted(str(p.relative_to(REPO)) for p in (REPO / "images").glob("*/Dockerfile"))
    assert sorted(hadolint.split()[1:]) == dockerfiles
    assert {f"images/{i}/Dockerfile" for i in IMAGES} < set(dockerfiles)
    (lint,) = [line for line in lines if line.startswith(".venv/bin/actionlint ")]
    assert "-shellcheck=.venv/bin/shellcheck" in lint.split()
    assert {w for w in lint.split() if w.startswith(".github/")} == {
        str(p.relative_to(REPO)) for p in workflow_files()
    }


# --- OIDC only ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_no_long_lived_aws_keys(path):
    text = path.read_text()
    for marker in ("aws-access-key-id", "aws-secret-access-key", "AWS_ACCESS_KEY_ID", "AWS_SECRET"):
        assert marker not in text, f"{path.name} references {marker}"
    for job in load(path.name)["jobs"].values():
        for step in steps(job):
            if uses(step, AWS_CREDENTIALS_ACTION):
                inputs = step["with"]
                assert inputs["role-to-assume"].startswith("${{ vars.")  # an ARN, not a secret
                assert not {k for k in inputs if "key" in k or k == "aws-session-token"}


def _grants_id_token(permissions: Any) -> bool:
    return permissions == "write-all" or (
        isinstance(permissions, dict) and permissions.get("id-token") == "write"
    )


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_id_token_write_wherever_aws_credentials_are_requested(path):
    workflow = load(path.name)
    for name, job in workflow["jobs"].items():
        if any(uses(step, AWS_CREDENTIALS_ACTION) for step in steps(job)):
            assert _grants_id_token(job.get("permissions", workflow.get("permissions"))), name
        # A called workflow cannot get more than its caller job grants.
        if job.get("uses", "").startswith("./.github/workflows/"):
            called = load(Path(job["uses"]).name)
            if any(
                uses(step, AWS_CREDENTIALS_ACTION)
                for called_job in called["jobs"].values()
                for step in steps(called_job)
            ):
                assert _grants_id_token(job.get("permissions")), name


def test_every_action_is_pinned_to_a_major_version_or_commit():
    for path in workflow_files():
        for job in load(path.name)["jobs"].values():
            for step in steps(job):
                ref = step.get("uses")
                if ref and not ref.startswith("./"):
                    assert re.fullmatch(r"[\w.-]+/[\w./-]+@(v\d+|[0-9a-f]{40})", ref), ref


# --- stacks -------------------------------------------------------------------------------------


def test_reference_stacks_exist():
    assert {"dev", "prod"} <= set(STACKS)
    missing = [stack for stack in STACKS if not (REPO / f"Pulumi.{stack}.yaml").is_file()]
    assert not missing, f"tests/stacks.py names stacks without a stack file: {missing}"


def test_pull_requests_preview_every_stack_on_every_supported_python():
    job = load("pull-request.yml")["jobs"]["preview-pythons"]
    assert job["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    (setup,) = [s for s in steps(job) if uses(s, "actions/setup-python")]
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    (run,) = [s for s in steps(job) if "make -s preview" in s.get("run", "")]
    # The runner's own python3.12 would come first: the job names setup-python's interpreter.
    assert run["env"]["PYTHON"] == f"${{{{ steps.{setup['id']}.outputs.python-path }}}}"
    assert 'PYTHON="$PYTHON"' in run["run"]
    previewed = re.search(r"for stack in ([\w -]+); do", run["run"]).group(1).split()
    assert sorted(previewed) == STACKS


def test_pull_requests_preview_every_stack_with_the_policy_pack_and_comment():
    workflow = load("pull-request.yml")
    assert "pull_request" in workflow["on"]
    cloud = workflow["jobs"]["cloud-preview"]
    assert sorted(cloud["strategy"]["matrix"]["stack"]) == STACKS
    # Forks get neither secrets nor an OIDC token for this repository's roles.
    assert "github.event.pull_request.head.repo.full_name == github.repository" in cloud["if"]
    assert cloud["permissions"] == {
        "contents": "read",
        "id-token": "write",
        "pull-requests": "write",
    }
    (pulumi,) = [s for s in steps(cloud) if uses(s, PULUMI_ACTION)]
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["policyPacks"] == "policy"
    assert pulumi["with"]["comment-on-pr"] is True
    assert "matrix.stack" in pulumi["with"]["stack-name"]
    assert cloud["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"


def test_pull_requests_run_lint_tests_and_the_offline_preview_of_every_stack():
    offline = load("pull-request.yml")["jobs"]["offline"]
    assert "permissions" not in offline  # read-only workflow default, no cloud access
    runs = [s.get("run", "") for s in steps(offline)]
    assert "make lint" in runs and "make test" in runs
    previewed = {
        m.group(1) for run in runs for m in re.finditer(r"make -s preview STACK=([\w-]+)", run)
    }
    assert previewed == set(STACKS)
    (summary,) = [run for run in runs if "GITHUB_STEP_SUMMARY" in run]
    assert "preview-$stack.txt" in summary
    (cache,) = [s for s in steps(offline) if uses(s, "actions/cache")]
    assert cache["with"]["path"] == ".cache/engines"
    assert "tools/engine_flags.py" in cache["with"]["key"]  # how wheels are fetched, extracted
    # every pinned release has a committed table (tests/tools/test_sources.py), so these change
    # with any pin
    assert "'contracts/flags/*.json', 'contracts/env/*.json'" in cache["with"]["key"]
    assert "requirements*.txt" in cache["with"]["key"]


def test_main_deploys_every_stack_dev_first_through_environments():
    workflow = load("deploy.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    callers = {
        job["with"]["stack"]: (name, job)
        for name, job in workflow["jobs"].items()
        if job.get("uses") == "./.github/workflows/stack-up.yml"
    }
    assert sorted(callers) == STACKS
    prod_name, prod = callers["prod"]
    needs = prod["needs"] if isinstance(prod["needs"], list) else [prod["needs"]]
    assert callers["dev"][0] in needs, f"{prod_name} must wait for dev"

    up = load("stack-up.yml")["jobs"]["up"]
    assert up["environment"] == "${{ inputs.stack }}"
    assert up["concurrency"]["group"].endswith("${{ inputs.stack }}")
    assert up["concurrency"]["cancel-in-progress"] is False
    assert_policy_gates_the_update(steps(up))


def assert_policy_gates_the_update(job_steps: list[dict[str, Any]]) -> None:
    """The pack runs before anything changes, on the config the update uses: a preview with the
    pack after the images are pinned, and an update that does not skip its own preview.

    pulumi/actions' `command: up` calls the Automation API's `stack.up`, which runs `pulumi up
    --yes --skip-preview` (pulumi/pulumi sdk/nodejs/automation/stack.ts); with the preview
    skipped the engine runs AnalyzeStack only after every step (pulumi/pulumi
    pkg/backend/apply.go, PreviewThenPromptThenExecute)."""
    pinned = next(i for i, s in enumerate(job_steps) if "pulumi config set" in s.get("run", ""))
    commands = [
        (i, s["with"]["command"])
        for i, s in enumerate(job_steps)
        if uses(s, PULUMI_ACTION) and "command" in s.get("with", {})
    ]
    assert all(command != "up" for _, command in commands), "`command: up` skips the preview"
    gates = [
        i
        for i, command in commands
        if command == "preview" and job_steps[i]["with"].get("policyPacks") == "policy"
    ]
    updates = [i for i, s in enumerate(job_steps) if re.search(r"\bpulumi up\b", s.get("run", ""))]
    assert len(updates) == 1, "one `pulumi up`"
    (update,) = updates
    run = job_steps[update]["run"]
    assert "--skip-preview" not in run and "--policy-pack policy" in run
    assert [g for g in gates if pinned < g < update], "a policy preview between pinning and up"


def test_the_gate_check_fails_on_the_skip_preview_deploy():
    """The defect of issue 33 put back: `command: up`, or an update that skips its preview."""
    job_steps = steps(load("stack-up.yml")["jobs"]["up"])
    gate = next(i for i, s in enumerate(job_steps) if s.get("with", {}).get("command"))
    as_up = [*job_steps[:gate], {**job_steps[gate], "with": {
        **job_steps[gate]["with"], "command": "up"}}, *job_steps[gate + 1 :]]  # fmt: skip
    with pytest.raises(AssertionError, match="skips the preview"):
        assert_policy_gates_the_update(as_up)
    update = next(i for i, s in enumerate(job_steps) if "pulumi up" in s.get("run", ""))
    skipped = {**job_steps[update], "run": job_steps[update]["run"] + " --skip-preview"}
    with pytest.raises(AssertionError):
        assert_policy_gates_the_update([*job_steps[:update], skipped, *job_steps[update + 1 :]])
    # The gate before the images are pinned previews another config than the update's.
    early = [job_steps[gate], *job_steps[:gate], *job_steps[gate + 1 :]]
    with pytest.raises(AssertionError, match="between pinning and up"):
        assert_policy_gates_the_update(early)


# --- images -------------------------------------------------------------------------------------


def test_every_image_is_built_and_its_digest_fed_to_every_stack():
    deploy = load("deploy.yml")
    matrix = deploy["jobs"]["images"]["strategy"]["matrix"]["include"]
    assert sorted(entry["image"] for entry in matrix) == IMAGES
    assert set(deploy["jobs"]["digests"]["outputs"]) == set(IMAGES)
    for job in deploy["jobs"].values():
        if job.get("uses") == "./.github/workflows/stack-up.yml":
            for image in IMAGES:
                assert job["with"][f"{image}-image"] == f"${{{{ needs.digests.outputs.{image} }}}}"

    # The stack-up workflow writes each digest to the config key the program reads.
    (config_step,) = [
        s
        for s in steps(load("stack-up.yml")["jobs"]["up"])
        if "pulumi config set" in s.get("run", "")
    ]
    keys = re.findall(r"--path ecs-inference:platform\.images\.(\w+) ", config_step["run"])
    # Every image reference key (`build` is the switch for the stack's own builds, not an image).
    references = sorted(
        [*(f for f in ImagesConfig.model_fields if f != "build"), *ImagesConfig.registered_keys()]
    )
    assert sorted(keys) == IMAGES == references


def test_digest_references_are_valid_stack_config_images():
    # What the digests job accepts (its bash pattern) is what the config's image pattern accepts.
    run = next(
        s["run"] for s in steps(load("deploy.yml")["jobs"]["digests"]) if "=~" in s.get("run", "")
    )
    bash_pattern = re.search(r"=~ (\^.*\$) \]\]", run).group(1)
    reference = "123456789012.dkr.ecr.us-east-1.amazonaws.com/ecs-inference/vllm@sha256:" + "a" * 64
    assert re.fullmatch(bash_pattern, reference)
    assert IMAGE_PATTERN.match(reference)
    assert not re.fullmatch(bash_pattern, reference.replace("@sha256:", ":"))


@pytest.mark.parametrize("stack", STACKS)
def test_stack_images_live_in_the_repositories_ci_pushes_to(stack):
    # deploy.yml pushes to <ECR_REPOSITORY_PREFIX, default ecs-inference>/<image>; the stack files
    # name the same repositories, so a preview and a deploy refer to one set of ECR repositories.
    prefix = re.search(
        r"ECR_REPOSITORY_PREFIX \|\| '([^']+)'",
        load("deploy.yml")["jobs"]["images"]["env"]["REPOSITORY"],
    ).group(1)
    config = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
    images = config["ecs-inference:platform"]["images"]
    for image in IMAGES:
        repository = images[image].split("@")[0].rsplit(":", 1)[0].split("/", 1)[1]
        assert repository == f"{prefix}/{image}", f"{stack}: images.{image}"
