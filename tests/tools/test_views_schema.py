"""The provider tables behind the engine views, against their sources.

- tools/views/provider_outputs.json against the pinned Python SDKs it is generated from (the
  pulumi-aws schema rendered by pulumi's code generator): the modules the reference stacks
  use are derived again and must match entry for entry.
- tools/views/tf_facts.py against the terraform-provider-aws excerpts in
  tests/contracts/fixtures/terraform_aws_schema.txt (provenance in its header): each default
  is the stanza's `Default:` (enum constants resolved with botocore's service models), each
  stored value has the read function's `d.Set` line, and each stored attribute is one the
  Pulumi schema says always has a value.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import botocore.session
import pytest

from tools.views import provider_schema
from tools.views.tf_facts import FACTS, SOURCES, Fact

FIXTURE = Path(__file__).parents[1] / "contracts" / "fixtures" / "terraform_aws_schema.txt"
# Pulumi type token -> Terraform resource, for the types the facts cover.
TERRAFORM = {
    "aws:ecs/service:Service": "aws_ecs_service",
    "aws:lb/loadBalancer:LoadBalancer": "aws_lb",
    "aws:alb/loadBalancer:LoadBalancer": "aws_lb",
    "aws:ec2/launchTemplate:LaunchTemplate": "aws_launch_template",
    "aws:ec2/eip:Eip": "aws_eip",
    "aws:ec2/vpc:Vpc": "aws_vpc",
}
# botocore service of each AWS SDK enum package the fixture's constants come from.
ENUM_SERVICES = {"ecs/service.go": "ecs", "elbv2/load_balancer.go": "elbv2"}


def _fixture() -> dict[str, list[tuple[str, str]]]:
    """{terraform attribute: [(file, text)]}"""
    found: dict[str, list[tuple[str, str]]] = {}
    for line in FIXTURE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        attribute, source, text = (part.strip() for part in line.split("|", 2))
        found.setdefault(attribute, []).append((source, text))
    return found


def _snake(path: str) -> str:
    return ".".join(re.sub(r"(?<!^)(?=[A-Z])", "_", part).lower() for part in path.split("."))


def _terraform_name(fact: Fact) -> str:
    return f"{TERRAFORM[fact.type]}.{_snake(fact.path)}"


def _enum_value(constant: str, service: str) -> str:
    """`awstypes.SchedulingStrategyReplica` -> "REPLICA", from the botocore model's enums."""
    name = constant.removeprefix("awstypes.")
    model = botocore.session.get_session().get_service_model(service)
    for shape_name in model.shape_names:
        if name.startswith(shape_name):
            suffix = name[len(shape_name) :].lower()
            shape = model.shape_for(shape_name)
            for value in getattr(shape, "enum", None) or []:
                if re.sub(r"[^a-z0-9]", "", value.lower()) == suffix:
                    return value
    raise LookupError(f"{constant}: no enum value in botocore's {service} model")


def _literal(text: str, service: str) -> object:
    if text in ("true", "false"):
        return text == "true"
    if text.isdigit():
        return int(text)
    return _enum_value(text, service)


@pytest.mark.parametrize("fact", [f for f in FACTS if f.has_default], ids=lambda f: f.path)
def test_each_default_is_the_terraform_schema_default(fact: Fact) -> None:
    stanzas = [
        (src, t) for src, t in _fixture().get(_terraform_name(fact), []) if "read" not in src
    ]
    assert stanzas, f"{_terraform_name(fact)}: no schema stanza in the fixture"
    source, text = stanzas[0]
    match = re.search(r"Default:\s*([^,]+),", text)
    assert match, f"{_terraform_name(fact)} has no Default in {text!r}"
    assert _literal(match.group(1).strip(), ENUM_SERVICES[source]) == fact.default


@pytest.mark.parametrize("fact", [f for f in FACTS if f.has_stored], ids=lambda f: f.path)
def test_each_stored_value_is_set_by_the_read_function(fact: Fact) -> None:
    reads = [t for src, t in _fixture().get(_terraform_name(fact), []) if src.endswith("read")]
    assert reads and all(t.startswith("d.Set(") for t in reads), _terraform_name(fact)
    schema = provider_schema.schema_of(fact.type)
    assert schema is not None and fact.path in schema.present, (
        f"{fact.type} {fact.path}: the Pulumi schema does not say the provider computes it"
    )
    for source, text in _fixture()[_terraform_name(fact)]:
        if "Optional: true" in text and "read" not in source:
            assert "Computed: true" in text, f"{_terraform_name(fact)} is not Optional+Computed"


def test_every_fact_names_its_source() -> None:
    assert {f.source for f in FACTS} <= set(SOURCES)


# Modules of the types the reference stacks and the corpus register: derived again from the
# SDK and compared entry by entry (the whole table takes ~30 s to derive).
MODULES = ("pulumi_aws.ecs", "pulumi_aws.lb", "pulumi_aws.iam", "pulumi_aws.ec2", "pulumi_tls")


@pytest.mark.parametrize("module", MODULES)
def test_the_outputs_table_is_what_the_sdk_says(module: str) -> None:
    derived = provider_schema.derive(module)
    assert derived
    for token, entry in derived.items():
        schema = provider_schema.schema_of(token)
        assert schema is not None, f"{token} is missing from the table"
        assert sorted(schema.present) == entry["present"], token
        assert sorted(schema.objects) == entry["objects"], token


def test_the_table_names_the_pinned_sdk_versions() -> None:
    for module, version in provider_schema.sources().items():
        assert importlib.metadata.version(module.replace("_", "-")) == version


def test_optional_computed_and_output_only_attributes_are_always_present() -> None:
    # terraform-provider-aws: launch_type, iam_role, platform_version are Optional+Computed,
    # arn and tags_all computed; desired_count is Optional only (fixture and schema agree).
    service = provider_schema.schema_of("aws:ecs/service:Service")
    assert service is not None
    assert {"launchType", "iamRole", "platformVersion", "arn", "tagsAll"} <= service.present
    assert "desiredCount" not in service.present
    assert "networkConfiguration" in service.objects


def test_the_line_index_reads_every_entry_of_the_document() -> None:
    # schema_of parses only the requested type's line; the whole document must say the same.
    document = json.loads(provider_schema.TABLE.read_text())["types"]
    for token, entry in document.items():
        schema = provider_schema.schema_of(token)
        assert schema is not None, token
        assert (sorted(schema.present), sorted(schema.objects)) == (
            entry["present"],
            entry["objects"],
        ), token
    assert provider_schema.schema_of("ecs-inference:index:InferencePlatform") is None
