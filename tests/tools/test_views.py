"""The engine views (tools/views): what the engine sends a pack on a first preview, on a preview
of the deployed stack, and in an audit of the stored state; the state file round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pytest
from pulumi.runtime.rpc import UNKNOWN

from tools.analyzer_client import analyze_requests, analyze_stack_request
from tools.aws_shapes import contains_unknown
from tools.preview import EXIT_CONFIG, read_stack_file, run_audit
from tools.recording import Recording, run_function, run_program, stack_config_values
from tools.stack_config import project_config_defaults
from tools.views import run_pack
from tools.views.engine import EngineStack, from_recording, from_records
from tools.views.shape import checked_inputs, planned_outputs
from tools.views.state_file import StateFileError, read_state, write_state

ROOT = Path(__file__).resolve().parents[2]
INSECURE = ROOT / "tests" / "examples" / "insecure"
SERVICE = "aws:ecs/service:Service"
CONFIG = {"aws:region": "us-east-1", "aws:defaultTags": json.dumps({"tags": {"team": "ml"}})}


def _gpu_service_program() -> None:
    """A cluster and a service on the FARGATE capacity provider, launchType unset."""
    cluster = aws.ecs.Cluster("c")
    aws.ecs.Service(
        "svc",
        cluster=cluster.arn,
        task_definition="gpu:1",
        capacity_provider_strategies=[
            aws.ecs.ServiceCapacityProviderStrategyArgs(capacity_provider="FARGATE", weight=1)
        ],
        network_configuration=aws.ecs.ServiceNetworkConfigurationArgs(subnets=["subnet-1"]),
        tags={"app": "llm"},
    )


def _run(view: str) -> Recording:
    return run_function(_gpu_service_program, stack="dev", config=CONFIG, view=view)


def _stack(view: str) -> EngineStack:
    rec = _run("update" if view == "state" else view)
    return from_recording(rec, view, project="ecs-inference", stack="dev", config=CONFIG)


def _service(stack: EngineStack):
    return next(r for r in stack.resources if r.type == SERVICE)


def test_checked_inputs_carry_autonames_and_non_falsy_terraform_defaults() -> None:
    checked = checked_inputs(SERVICE, "svc", {"networkConfiguration": {"subnets": ["s"]}})
    assert checked["name"].startswith("svc-") and len(checked["name"]) == len("svc-") + 7
    assert checked["schedulingStrategy"] == "REPLICA"
    assert checked["deploymentMaximumPercent"] == 200
    # Falsy Terraform defaults stay out of the checked inputs (pulumi-terraform-bridge#2618).
    assert "enableExecuteCommand" not in checked
    assert "assignPublicIp" not in checked["networkConfiguration"]
    assert checked["__defaults"] == sorted(
        [
            "deploymentMaximumPercent",
            "deploymentMinimumHealthyPercent",
            "name",
            "schedulingStrategy",
        ]
    )
    assert checked["networkConfiguration"]["__defaults"] == []


def test_new_leaves_every_computed_attribute_unknown_and_state_stores_them() -> None:
    checked = checked_inputs(SERVICE, "svc", {"capacityProviderStrategies": [{"weight": 1}]})
    new = planned_outputs("new", SERVICE, checked, {"arn": "arn:x"})
    assert new["launchType"] == UNKNOWN and new["arn"] == UNKNOWN and new["id"] == UNKNOWN
    assert new["enableExecuteCommand"] is False  # the plan holds falsy defaults too
    assert "__defaults" not in new
    assert "desiredCount" not in new  # Optional, not computed: absent when not set
    state = planned_outputs("state", SERVICE, checked, {"arn": "arn:x", "id": "arn:x"})
    assert state["launchType"] == "" and state["arn"] == "arn:x" and state["triggers"] == {}
    # Without a capacity provider strategy the stored launch type depends on the cluster's
    # default strategy, which no fact here says: left out rather than guessed.
    bare = planned_outputs("state", SERVICE, checked_inputs(SERVICE, "b", {}), {"id": "x"})
    assert "launchType" not in bare


def test_a_new_stack_is_previewed_with_unknown_ids_and_the_deployed_one_with_known() -> None:
    new, update = _run("new"), _run("update")
    service_new = next(r for r in new.resources if r.type == SERVICE)
    service_update = next(r for r in update.resources if r.type == SERVICE)
    assert service_new.inputs["cluster"] == UNKNOWN
    assert service_update.inputs["cluster"].startswith("arn:aws:ecs:us-east-1:")
    assert service_update.outputs["launchType"] == ""
    assert service_update.outputs["tagsAll"] == {"team": "ml", "app": "llm"}


def test_the_engine_registers_the_root_stack_and_the_default_provider_first() -> None:
    for view in ("new", "update", "state"):
        stack = _stack(view)
        root, provider, *rest = stack.resources
        assert root.urn == "urn:pulumi:dev::ecs-inference::pulumi:pulumi:Stack::ecs-inference-dev"
        assert provider.urn.endswith("::pulumi:providers:aws::default_7_51_1")
        assert provider.inputs == {
            "region": "us-east-1",
            "defaultTags": CONFIG["aws:defaultTags"],
            "version": "7.51.1",
        }
        reference = _service(stack).provider
        assert reference == f"{provider.urn}::{provider.id}"
        assert (provider.id == UNKNOWN) == (view == "new")
        assert all(r.parent == root.urn for r in rest)
        assert stack.dry_run == (view != "state")


def test_analyze_gets_checked_inputs_and_analyze_stack_gets_outputs() -> None:
    stack = _stack("new")
    service = _service(stack)
    by_urn = {r.urn: r for r in stack.resources}
    request = analyze_requests(stack.resources)[stack.resources.index(service)]
    assert "launchType" not in request.properties and request.properties["schedulingStrategy"]
    assert request.provider.type == "pulumi:providers:aws"
    assert request.options.parent == stack.resources[0].urn
    stack_request = analyze_stack_request(stack.resources, outputs=True)
    item = next(i for i in stack_request.resources if i.urn == service.urn)
    assert item.properties["launchType"] == UNKNOWN
    assert list(item.propertyDependencies["cluster"].urns) == [
        u for u in service.property_dependencies["cluster"] if u in by_urn
    ]


def test_urns_carry_the_parents_whole_qualified_type() -> None:
    def program() -> None:
        outer = pulumi.ComponentResource("x:index:Outer", "o")
        inner = pulumi.ComponentResource(
            "x:index:Inner", "i", opts=pulumi.ResourceOptions(parent=outer)
        )
        aws.sns.Topic("t", opts=pulumi.ResourceOptions(parent=inner))

    rec = run_function(program, stack="dev", config=CONFIG)
    topic = rec.one("aws:sns/topic:Topic")
    assert topic.urn == (
        "urn:pulumi:dev::ecs-inference::x:index:Outer$x:index:Inner$aws:sns/topic:Topic::t"
    )


def test_resource_options_reach_the_analyzer() -> None:
    def program() -> None:
        aws.sns.Topic(
            "t",
            opts=pulumi.ResourceOptions(
                protect=True,
                delete_before_replace=True,
                ignore_changes=["tags"],
                custom_timeouts=pulumi.CustomTimeouts(create="10m", delete="1h30m"),
            ),
        )

    stack = from_recording(
        run_function(program, stack="dev", config=CONFIG),
        "update",
        project="ecs-inference",
        stack="dev",
        config=CONFIG,
    )
    topic = stack.resources[-1]
    options = analyze_requests(stack.resources)[-1].options
    assert options.protect and options.deleteBeforeReplace and options.deleteBeforeReplaceDefined
    assert list(options.ignoreChanges) == ["tags"]
    assert (options.customTimeouts.create, options.customTimeouts.delete) == (600.0, 5400.0)
    assert topic.options.custom_timeouts == (600.0, 0.0, 5400.0)


def test_corpus_records_get_planned_outputs_in_every_view() -> None:
    from tests.policy.policy_stacks import Res

    record = Res(
        type=SERVICE,
        name="svc",
        urn="urn:pulumi:dev::ecs-inference::aws:ecs/service:Service::svc",
        custom=True,
        inputs={"capacityProviderStrategies": [{"capacityProvider": "FARGATE"}]},
    )
    new = from_records([record], "new", project="ecs-inference", stack="dev")
    state = from_records([record], "state", project="ecs-inference", stack="dev")
    assert new.resources[-1].outputs["launchType"] == UNKNOWN
    assert state.resources[-1].outputs["launchType"] == ""


def test_a_state_file_round_trips_and_audits_like_the_state_view(tmp_path: Path) -> None:
    settings = read_stack_file(INSECURE, "dev")
    config = stack_config_values(
        {"config": {**project_config_defaults(INSECURE), **(settings.get("config") or {})}}
    )
    rec = run_program(INSECURE, project="insecure", stack="dev", config=config)
    state = from_recording(rec, "state", project="insecure", stack="dev", config=config)
    path = tmp_path / "exported.json"
    path.write_text(json.dumps(write_state(state)))
    audited = read_state(path)
    assert [r.urn for r in audited.resources] == [r.urn for r in state.resources]
    assert [r.outputs for r in audited.resources] == [r.outputs for r in state.resources]
    assert not any(
        contains_unknown(r.inputs) or contains_unknown(r.outputs) for r in audited.resources
    )

    def verdicts(violations: list) -> set:
        return {(v.policy_name, v.urn, v.enforcement_level) for v in violations}

    result = run_audit(path)
    assert verdicts(result.violations) == verdicts(run_pack(state, "state"))
    assert {v.policy_name for v in result.violations if v.enforcement_level == "mandatory"}


def test_an_audit_reads_stacks_this_program_did_not_write(tmp_path: Path) -> None:
    # A minimal export as the CLI writes it: a secret it cannot decrypt offline, a resource
    # pending deletion, a custom provider.
    urn = "urn:pulumi:prod::other::aws:s3/bucket:Bucket::logs"
    provider = "urn:pulumi:prod::other::pulumi:providers:aws::eu"
    document = {
        "version": 3,
        "deployment": {
            "resources": [
                {"urn": "urn:pulumi:prod::other::pulumi:pulumi:Stack::other-prod", "custom": False,
                 "type": "pulumi:pulumi:Stack", "outputs": {}},
                {"urn": provider, "custom": True, "id": "b4c1", "type": "pulumi:providers:aws",
                 "inputs": {"region": "eu-west-1"}, "outputs": {"region": "eu-west-1"}},
                {"urn": urn, "custom": True, "id": "logs", "type": "aws:s3/bucket:Bucket",
                 "provider": f"{provider}::b4c1", "inputs": {"bucket": "logs"},
                 "outputs": {"bucket": "logs", "token": {
                     "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
                     "ciphertext": "AAAA"}}},
                {"urn": urn + "-old", "custom": True, "id": "x", "type": "aws:s3/bucket:Bucket",
                 "delete": True},
            ]
        },
    }  # fmt: skip
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document))
    stack = read_state(path)
    assert (stack.project, stack.stack, stack.dry_run) == ("other", "prod", False)
    assert [r.name for r in stack.resources] == ["other-prod", "eu", "logs"]
    assert stack.resources[-1].outputs["token"] == "[secret]"
    assert run_audit(path).exit_code in (0, 1)


def test_an_audit_of_a_file_that_is_no_export_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"resources": []}))
    with pytest.raises(StateFileError):
        read_state(path)
    assert run_audit(path).exit_code == EXIT_CONFIG


def test_dev_has_unknown_inputs_only_in_the_new_view() -> None:
    settings = read_stack_file(ROOT, "dev")
    config = stack_config_values(settings)
    new = run_program(ROOT, project="ecs-inference", stack="dev", config=config, view="new")
    update = run_program(ROOT, project="ecs-inference", stack="dev", config=config)
    assert [r.name for r in update.resources if contains_unknown(r.inputs)] == []
    assert any(contains_unknown(r.inputs) for r in new.resources if r.custom)
    # Same registrations either way: unknowns change values, not what the program declares.
    assert sorted((r.type, r.name) for r in new.resources) == sorted(
        (r.type, r.name) for r in update.resources
    )
