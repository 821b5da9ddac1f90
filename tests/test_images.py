"""`images.build: true`: the stack builds and pushes its own images and runs them by content tag.

Runs the real program under the mock runtime with a stack file written to tmp_path (the dev
stack with its image references replaced by `build: true`), and checks: one immutable, scanned,
encrypted ECR repository with a lifecycle policy per image a service uses; a docker-build Image
per repository with the right context, Dockerfile, platform, push and registry logins; task
definitions naming the pushed content tag, known on a first preview; execution roles allowed to
pull from exactly that repository. Also: nothing is built when the flag is off, explicit
references win, config errors name their path, and the platforms agree with the deploy
workflow's build matrix.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_inference import engines
from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.config.stack import images_to_build
from ecs_inference.images import builds as image_build
from ecs_inference.images import platforms as image_specs
from ecs_inference.plan import build_plan
from tests.aws_shapes import register_task_definition_request, validate_shape
from tools.aws_shapes import contains_unknown
from tools.preview import project_name, read_stack_file
from tools.recording import ACCOUNT_ID, Recording, run_program, stack_config_values

ROOT = Path(__file__).resolve().parents[1]
REGION = "us-east-1"
REGISTRY = f"{ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com"
PLATFORM_KEY = "ecs-inference:platform"
REPO = "aws:ecr/repository:Repository"
IMAGE = "docker-build:index:Image"


def dev_stack(**images: Any) -> dict[str, Any]:
    """The dev stack file with `images` replaced."""
    stack = copy.deepcopy(read_stack_file(ROOT, "dev"))
    stack["config"][PLATFORM_KEY]["images"] = images
    return stack


def platform(stack: dict[str, Any]) -> dict[str, Any]:
    return stack["config"][PLATFORM_KEY]


def run_stack(stack: dict[str, Any], tmp_path: Path, name: str = "build") -> Recording:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(stack))
    settings = yaml.safe_load(path.read_text())
    return run_program(
        ROOT, project=project_name(ROOT), stack=name, config=stack_config_values(settings)
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    return run_stack(dev_stack(build=True), tmp_path_factory.mktemp("stack"))


def containers(rec: Recording) -> dict[str, dict[str, Any]]:
    """Task definition name -> its (single) container definition."""
    return {
        r.name: json.loads(r.inputs["containerDefinitions"])[0]
        for r in rec.by_type("aws:ecs/taskDefinition:TaskDefinition")
    }


def task_def_of(rec: Recording, task: str) -> Any:
    return rec.one("aws:ecs/taskDefinition:TaskDefinition", f"inference-{task}-task")


def pull_statement(rec: Recording, role: str) -> dict[str, Any]:
    policy = json.loads(
        rec.one("aws:iam/rolePolicy:RolePolicy", f"{role}-execution").inputs["policy"]
    )
    (statement,) = [s for s in policy["Statement"] if s["Sid"] == "PullImage"]
    return statement


# --------------------------------------------------------------------------------------------
# the program with images.build: true
# --------------------------------------------------------------------------------------------


def test_one_locked_down_repository_per_image(built: Recording) -> None:
    repos = {r.inputs["name"]: r.inputs for r in built.by_type(REPO)}
    assert sorted(repos) == [
        f"ecs-inference/build/{i}" for i in ("metrics", "neuron", "reranker", "vllm")
    ]
    for inputs in repos.values():
        # Immutable tags except the build cache, which every build overwrites.
        assert inputs["imageTagMutability"] == "IMMUTABLE_WITH_EXCLUSION"
        assert inputs["imageTagMutabilityExclusionFilters"] == [
            {"filter": image_build.CACHE_TAG, "filterType": "WILDCARD"}
        ]
        assert inputs["imageScanningConfiguration"] == {"scanOnPush": True}
        assert inputs["encryptionConfigurations"] == [{"encryptionType": "AES256"}]
        assert inputs["forceDelete"] is False
    policies = {
        r.inputs["repository"]: r.inputs
        for r in built.by_type("aws:ecr/lifecyclePolicy:LifecyclePolicy")
    }
    assert sorted(policies) == sorted(repos)
    for inputs in policies.values():
        rules = json.loads(inputs["policy"])["rules"]
        builds = [r for r in rules if r["selection"].get("tagPrefixList") == ["ctx-"]]
        assert builds and builds[0]["selection"]["countNumber"] == image_build.DEFAULT_KEEP_IMAGES


@pytest.mark.parametrize(
    ("image", "platforms"),
    [("vllm", ["linux/amd64"]), ("neuron", ["linux/amd64"]), ("reranker", ["linux/arm64"])],
)
def test_images_build_from_the_repository_for_their_platform_and_push(
    built: Recording, image: str, platforms: list[str]
) -> None:
    inputs = built.one(IMAGE, f"-images-{image}").inputs
    assert inputs["context"] == {
        "location": f"images/{image}",
        "named": {"contracts": {"location": "contracts"}},
    }
    assert inputs["dockerfile"] == {"location": f"images/{image}/Dockerfile"}
    assert (ROOT / inputs["dockerfile"]["location"]).is_file()
    assert inputs["platforms"] == platforms
    assert inputs["push"] is True
    assert inputs["buildOnPreview"] is False
    repo = f"{REGISTRY}/ecs-inference/build/{image}"
    (tag,) = inputs["tags"]
    build_args = {"DLC_REGION": REGION} if image == "neuron" else None
    assert tag == f"{repo}:{image_build.content_tag(image, platforms, build_args)}"
    cache_ref = f"{repo}:{image_build.CACHE_TAG}"
    assert inputs["cacheFrom"] == [{"registry": {"ref": cache_ref}}]
    (cache_to,) = inputs["cacheTo"]
    assert cache_to["registry"]["ref"] == cache_ref
    assert cache_to["registry"]["imageManifest"] is True
    assert cache_to["registry"]["ociMediaTypes"] is True
    addresses = [r["address"] for r in inputs["registries"]]
    expected = [REGISTRY]
    if image == "neuron":
        # The base image comes from the AWS Deep Learning Containers registry in the stack's
        # region, which the DLC_REGION build argument selects.
        base_account = engines.get("neuron").base_image_account
        expected.append(f"{base_account}.dkr.ecr.{REGION}.amazonaws.com")
        assert inputs["buildArgs"] == {"DLC_REGION": REGION}
    else:
        assert "buildArgs" not in inputs
    assert addresses == expected
    assert all(r["username"] == "AWS" and r["password"] for r in inputs["registries"])
    assert "aws:ecr/getAuthorizationToken:getAuthorizationToken" in built.invokes


@pytest.mark.parametrize(
    ("task", "image"),
    [("llama", "vllm"), ("llama-neuron", "neuron"), ("rerank", "reranker")],
)
def test_services_run_the_pushed_tag_and_pull_only_from_its_repository(
    built: Recording, task: str, image: str
) -> None:
    container = containers(built)[f"inference-{task}-task"]
    repo = f"{REGISTRY}/ecs-inference/build/{image}"
    (pushed,) = built.one(IMAGE, f"-images-{image}").inputs["tags"]
    assert container["image"] == pushed and pushed.startswith(f"{repo}:{image_build.TAG_PREFIX}")
    statement = pull_statement(built, f"inference-{task}")
    repository_arn = built.one(REPO, f"-images-{image}")
    # its own image's repository, and each sidecar's (the metrics image), nothing else
    assert (
        f"arn:aws:ecr:{REGION}:{ACCOUNT_ID}:repository/ecs-inference/build/{image}"
        in (statement["Resource"])
    )
    registered = json.loads(task_def_of(built, task).inputs["containerDefinitions"])
    assert len(statement["Resource"]) == len({c["image"].split("@")[0] for c in registered})
    assert repository_arn.inputs["name"] == f"ecs-inference/build/{image}"
    # The task definition waits for the build: its containers depend on the Image resource.
    image_urn = built.one(IMAGE, f"-images-{image}").urn
    task_def = task_def_of(built, task)
    assert image_urn in task_def.property_dependencies["containerDefinitions"]


def test_the_plan_reports_what_it_builds(built: Recording) -> None:
    decisions = built.outputs["decisions"]
    assert decisions["image reranker"] == [
        "built from images/reranker for linux/arm64, pushed to the stack's ECR repository, "
        "run by its content tag"
    ]
    assert {"image vllm", "image neuron"} <= set(decisions)


# --------------------------------------------------------------------------------------------
# what is (not) built
# --------------------------------------------------------------------------------------------


def test_nothing_is_built_when_the_flag_is_off(tmp_path: Path) -> None:
    stack = copy.deepcopy(read_stack_file(ROOT, "dev"))
    assert platform(stack)["images"].get("build", False) is False
    rec = run_stack(stack, tmp_path, "nobuild")
    assert rec.by_type(REPO) == [] and rec.by_type(IMAGE) == []
    assert "aws:ecr/getAuthorizationToken:getAuthorizationToken" not in rec.invokes
    images = {
        c["image"]
        for r in rec.by_type("aws:ecs/taskDefinition:TaskDefinition")
        for c in json.loads(r.inputs["containerDefinitions"])
    }
    # every task runs a configured reference (the stack also names engines no service of dev
    # uses, so that a preview and CI's deploy refer to the same repositories)
    configured = platform(stack)["images"]
    assert images <= set(configured.values())
    assert {configured[k] for k in ("vllm", "neuron", "reranker", "metrics")} == images


def test_explicit_references_win_and_only_the_rest_is_built(tmp_path: Path) -> None:
    vllm = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v0.33.0"
    stack = dev_stack(build=True, vllm=vllm)
    own = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/reranker:1.2.3"
    platform(stack)["rerankers"]["rerank"]["image"] = own
    rec = run_stack(stack, tmp_path)
    # the metrics sidecar has no reference either: it is built too
    assert sorted(r.inputs["name"] for r in rec.by_type(REPO)) == [
        "ecs-inference/build/metrics",
        "ecs-inference/build/neuron",
    ]
    assert len(rec.by_type(IMAGE)) == 2
    found = containers(rec)
    assert found["inference-llama-task"]["image"] == vllm
    assert found["inference-rerank-task"]["image"] == own
    assert found["inference-llama-neuron-task"]["image"].startswith(
        f"{REGISTRY}/ecs-inference/build/neuron:{image_build.TAG_PREFIX}"
    )
    assert any(
        r.endswith(":repository/team/vllm")
        for r in pull_statement(rec, "inference-llama")["Resource"]
    )


def test_reranker_builds_for_every_architecture_its_services_use() -> None:
    stack = dev_stack(build=True)
    rerankers = platform(stack)["rerankers"]
    rerankers["rerank-x86"] = {**rerankers["rerank"], "cpuArchitecture": "X86_64"}
    plan = build_plan(load_stack_config(platform(stack), "build"), "build", REGION)
    assert plan.builds["reranker"] == ("linux/amd64", "linux/arm64")
    assert plan.builds["vllm"] == plan.builds["neuron"] == ("linux/amd64",)


def test_images_to_build_lists_the_services_per_image() -> None:
    cfg = load_stack_config(platform(dev_stack(build=True)), "build")
    assert images_to_build(cfg) == {
        "vllm": ["llama"],
        "neuron": ["llama-neuron"],
        "reranker": ["rerank"],
        "metrics": ["llama", "llama-neuron", "rerank"],
    }
    off = load_stack_config(platform(copy.deepcopy(read_stack_file(ROOT, "dev"))), "dev")
    assert images_to_build(off) == {}


# --------------------------------------------------------------------------------------------
# config errors
# --------------------------------------------------------------------------------------------


def config_error(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as exc:
        load_stack_config(raw, "build")
    return str(exc.value)


def test_build_with_nothing_to_build_is_an_error_on_its_path() -> None:
    refs = platform(copy.deepcopy(read_stack_file(ROOT, "dev")))["images"]
    message = config_error(platform(dev_stack(build=True, **refs)))
    assert "platform.images.build" in message
    assert "nothing to build" in message


def test_build_must_be_a_boolean() -> None:
    message = config_error(platform(dev_stack(build="sometimes")))
    assert "platform.images.build" in message


def test_without_build_a_missing_image_says_how_to_fix_it() -> None:
    message = config_error(platform(dev_stack()))
    assert "platform.models.llama.image" in message
    assert "platform.rerankers.rerank.image" in message
    assert "images.build: true" in message


# --------------------------------------------------------------------------------------------
# pure helpers and the component's own checks
# --------------------------------------------------------------------------------------------


def test_platforms_match_the_deploy_workflow_matrix() -> None:
    workflow = yaml.safe_load((ROOT / ".github/workflows/deploy.yml").read_text())
    matrix = workflow["jobs"]["images"]["strategy"]["matrix"]["include"]
    ci = {entry["image"]: entry["platform"] for entry in matrix}
    expected = {name: ",".join(plats) for name, plats in image_specs.image_platforms().items()}
    expected["reranker"] = image_specs.DEFAULT_RERANKER_PLATFORM
    assert ci == expected


def test_context_digest_follows_what_the_builder_hashes(tmp_path: Path) -> None:
    """pulumi-docker-build rebuilds when a file its .dockerignore lets through changes, in bytes,
    name or mode (provider/internal/context.go, hashFile); so does the tag."""
    context = tmp_path / "images" / "demo"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text("FROM scratch\n")
    (context / "app.py").write_text("print(1)\n")
    first = image_build.context_digest("demo", ["linux/amd64"], root=tmp_path)
    assert image_build.context_digest("demo", ["linux/arm64"], root=tmp_path) != first
    # Without a .dockerignore the builder sends (and hashes) a cache: a new tag is due.
    (context / "__pycache__").mkdir()
    (context / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    assert image_build.context_digest("demo", ["linux/amd64"], root=tmp_path) != first
    (context / ".dockerignore").write_text("# caches\n**/__pycache__\n")
    ignoring = image_build.context_digest("demo", ["linux/amd64"], root=tmp_path)
    (context / "__pycache__" / "other.pyc").write_bytes(b"\1")
    assert image_build.context_digest("demo", ["linux/amd64"], root=tmp_path) == ignoring
    (context / "app.py").chmod(0o755)
    executable = image_build.context_digest("demo", ["linux/amd64"], root=tmp_path)
    assert executable != ignoring
    # `Dockerfile.dockerignore` wins over the context's own.
    (context / "Dockerfile.dockerignore").write_text("")
    assert image_build.context_digest("demo", ["linux/amd64"], root=tmp_path) != executable
    # the shared contracts reach the image through a named context: they change the tag too
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "engine.py").write_text("PORT = 1\n")
    with_contracts = image_build.context_digest("demo", ["linux/amd64"], root=tmp_path)
    (tmp_path / "contracts" / "engine.py").write_text("PORT = 2\n")
    assert image_build.context_digest("demo", ["linux/amd64"], root=tmp_path) != with_contracts
    with pytest.raises(image_build.ImageBuildError, match="Dockerfile does not exist"):
        image_build.context_digest("missing", ["linux/amd64"], root=tmp_path)


@pytest.mark.parametrize(
    ("pattern", "path", "out"),
    [
        # Docker's "Dockerignore files" examples and moby patternmatcher's semantics.
        ("*/temp*", "somedir/temporary.txt", True),
        ("*/temp*", "temp", False),
        ("*/*/temp*", "somedir/subdir/temporary.txt", True),
        ("temp?", "tempa", True),
        ("**/*.go", "a/b/c.go", True),
        ("**/*.go", "c.go", True),
        ("*.onnx", "model/m.onnx", False),
        ("**/__pycache__", "app/__pycache__/x.cpython-311.pyc", True),
        ("README.md", "docs/README.md", False),
    ],
)
def test_dockerignore_patterns_match_as_docker_does(pattern: str, path: str, out: bool) -> None:
    assert image_build.excluded(path, [pattern]) is out


def test_a_negated_pattern_keeps_a_file() -> None:
    assert not image_build.excluded("README-secret.md", ["*.md", "!README*.md"])
    assert image_build.excluded("README-secret.md", ["*.md", "!README*.md", "README-secret.md"])


def test_caches_left_behind_change_no_tag(tmp_path: Path) -> None:
    """Every build context and named context, copied as they are, then byte-compiled the way a
    test run leaves them (compileall writes each package's __pycache__): every tag holds."""
    for rel in [image_specs.IMAGES_DIR, *image_specs.NAMED_CONTEXTS.values()]:
        shutil.copytree(
            ROOT / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    images = sorted(p.parent.name for p in (tmp_path / image_specs.IMAGES_DIR).glob("*/Dockerfile"))
    before = {i: image_build.context_digest(i, ["linux/amd64"], root=tmp_path) for i in images}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(tmp_path)],
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    caches = list(tmp_path.rglob("__pycache__"))
    assert {c.relative_to(tmp_path).parts[0] for c in caches} >= {"images", "contracts"}
    after = {i: image_build.context_digest(i, ["linux/amd64"], root=tmp_path) for i in images}
    assert after == before
    # Put the defect back: a context without its .dockerignore now tags its caches.
    (tmp_path / image_specs.IMAGES_DIR / "vllm" / ".dockerignore").unlink()
    assert image_build.context_digest("vllm", ["linux/amd64"], root=tmp_path) != before["vllm"]


def test_lifecycle_policy_keeps_the_cache_first_then_the_last_builds() -> None:
    rules = json.loads(image_build.lifecycle_policy(3))["rules"]
    assert [r["rulePriority"] for r in rules] == [1, 2]
    assert rules[0]["selection"]["tagPrefixList"] == [image_build.CACHE_TAG]
    assert rules[1]["selection"] == {
        "tagStatus": "tagged",
        "tagPrefixList": [image_build.TAG_PREFIX],
        "countType": "imageCountMoreThan",
        "countNumber": 3,
    }
    args = image_build.ImageBuildsArgs(images={"vllm": ("linux/amd64",)}, repository_prefix="p")
    with pytest.raises(image_build.ImageBuildError, match="keep_images must be >= 1, got 0"):
        image_build.validate_image_builds(replace(args, keep_images=0))


def test_the_content_tag_covers_the_build_arguments() -> None:
    plain = image_build.content_tag("vllm", ["linux/amd64"])
    # An image without build arguments keeps the tag of its context and platforms alone.
    assert plain == f"ctx-{image_build.context_digest('vllm', ['linux/amd64'])[:16]}"
    assert image_build.content_tag("vllm", ["linux/amd64"], {}) == plain
    east = image_build.content_tag("neuron", ["linux/amd64"], {"DLC_REGION": "us-east-1"})
    west = image_build.content_tag("neuron", ["linux/amd64"], {"DLC_REGION": "us-west-2"})
    assert east != west and east != image_build.content_tag("neuron", ["linux/amd64"])


def test_a_first_preview_knows_every_container_and_waits_for_each_push(tmp_path: Path) -> None:
    """In the `new` view (nothing exists, the builds' digests are unknown) every container
    definition is known, so the pack judges it; each task definition still depends on the push
    of the images it runs."""
    stack = dev_stack(build=True)
    path = tmp_path / "Pulumi.build.yaml"
    path.write_text(yaml.safe_dump(stack))
    config = stack_config_values(yaml.safe_load(path.read_text()))
    rec = run_program(ROOT, project=project_name(ROOT), stack="build", config=config, view="new")
    builds = {r.name.rsplit("-", 1)[1]: r for r in rec.by_type(IMAGE)}
    for task in rec.by_type("aws:ecs/taskDefinition:TaskDefinition"):
        assert not contains_unknown(task.inputs["containerDefinitions"]), task.name
        images = [c["image"] for c in json.loads(task.inputs["containerDefinitions"])]
        runs = [builds[i.split(":")[0].rsplit("/", 1)[1]] for i in images if "/build/" in i]
        assert runs, f"{task.name} runs none of the stack's builds: {images}"
        for build in runs:
            assert build.urn in task.property_dependencies["containerDefinitions"]


@pytest.mark.parametrize(
    ("images", "message"),
    [
        ({}, "no image to build"),
        ({"triton": ("linux/amd64",)}, "unknown image"),
        ({"vllm": ("linux/arm64",)}, "builds for"),
        ({"reranker": ()}, "builds for"),
    ],
)
def test_component_rejects_what_it_cannot_build(images: dict, message: str) -> None:
    args = image_build.ImageBuildsArgs(images=images, repository_prefix="p/s")
    with pytest.raises(image_build.ImageBuildError, match=message):
        image_build.validate_image_builds(args)


@pytest.mark.parametrize("prefix", ["Team/Dev", "team//dev", "team/dev-", ""])
def test_component_rejects_repository_prefixes_ecr_would_refuse(prefix: str) -> None:
    args = image_build.ImageBuildsArgs(images={"vllm": ("linux/amd64",)}, repository_prefix=prefix)
    with pytest.raises(image_build.ImageBuildError, match="repository_prefix"):
        image_build.validate_image_builds(args)


def test_stack_names_become_lowercase_repository_paths(tmp_path: Path) -> None:
    rec = run_stack(dev_stack(build=True), tmp_path, "Build_QA")
    names = sorted(r.inputs["name"] for r in rec.by_type(REPO))
    assert names == [
        f"ecs-inference/build_qa/{i}" for i in ("metrics", "neuron", "reranker", "vllm")
    ]


def test_unknown_reranker_architecture_is_rejected() -> None:
    assert image_specs.reranker_platforms([]) == (image_specs.DEFAULT_RERANKER_PLATFORM,)
    with pytest.raises(image_build.ImageBuildError, match="cpuArchitecture"):
        image_specs.reranker_platforms(["RISCV"])


def test_repository_and_lifecycle_requests_are_valid_ecr_api_requests(built: Recording) -> None:
    for repo in built.by_type(REPO):
        inputs = repo.inputs
        validate_shape(
            "ecr",
            "CreateRepository",
            {
                "repositoryName": inputs["name"],
                "imageTagMutability": inputs["imageTagMutability"],
                "imageTagMutabilityExclusionFilters": inputs["imageTagMutabilityExclusionFilters"],
                "imageScanningConfiguration": inputs["imageScanningConfiguration"],
                "encryptionConfiguration": inputs["encryptionConfigurations"][0],
            },
        )
    for policy in built.by_type("aws:ecr/lifecyclePolicy:LifecyclePolicy"):
        validate_shape(
            "ecr",
            "PutLifecyclePolicy",
            {
                "repositoryName": policy.inputs["repository"],
                "lifecyclePolicyText": policy.inputs["policy"],
            },
        )
    for task in built.by_type("aws:ecs/taskDefinition:TaskDefinition"):
        validate_shape(
            "ecs", "RegisterTaskDefinition", register_task_definition_request(task.inputs)
        )
