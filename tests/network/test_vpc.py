"""The Network component built directly, as another program builds it: given an existing VPC and
no lookup, it reads the VPC itself and gets the plan's decisions, cost and refusals."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml

from ecs_inference.config.issues import ConfigError
from ecs_inference.config.load import load_stack_config
from ecs_inference.network.input import NetworkConfig
from ecs_inference.network.vpc import Network
from tests.stacks import reference_plan, stack_file
from tools.described import SETTING, World
from tools.recording import Recording, run_function

STACK = "shared-vpc"


def _build(network: NetworkConfig, built: list[Network]) -> Recording:
    """`network` built with the shared-vpc stack's wiring but no lookup, its VPC answered from
    the stack's `preview:lookups`."""
    data: dict[str, Any] = yaml.safe_load(stack_file(STACK).read_text())["config"]
    region = str(data["aws:region"])
    world = World.parse(data.get(SETTING), region, stack_file(STACK).name)
    wiring = replace(reference_plan(STACK).network.wiring, lookup=None)
    return run_function(
        lambda: built.append(Network("net", network, wiring)),
        config={"aws:region": region},
        world=world,
    )


def _network() -> NetworkConfig:
    data = yaml.safe_load(stack_file(STACK).read_text())["config"]
    return load_stack_config(data["ecs-inference:platform"], STACK).network


def test_an_existing_vpc_is_read_and_decided_as_the_plan_does() -> None:
    built: list[Network] = []
    rec = _build(_network(), built)
    planned = reference_plan(STACK).network
    assert built[0].decided == replace(planned, wiring=built[0].decided.wiring)
    assert built[0].decided.lines and "aws:ec2/getVpc:getVpc" in rec.invokes
    assert rec.by_type("awsx:ec2:Vpc") == []


def test_an_existing_vpc_it_refuses_raises_the_stack_files_error() -> None:
    network = _network()
    assert network.existing is not None
    one_zone = network.existing.model_copy(
        update={"private_subnet_ids": network.existing.private_subnet_ids[:1]}
    )
    with pytest.raises(ConfigError, match=r"platform\.network\.existing\.privateSubnetIds: every"):
        _build(network.model_copy(update={"existing": one_zone}), [])
