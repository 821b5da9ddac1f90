"""Explicit names for tight types: always within the limit, stable, unique per stack."""

import re

import pytest

from ecs_inference.contracts.aws_limits import (
    ELBV2_NAME,
    FARGATE_NOFILE_DEFAULT,
    FARGATE_NOFILE_MAX,
    NAME_HASH_CHARS,
    fitted_name,
)
from tests.aws_shapes import validate_named_shape

# The longest logical target-group name the schema allows: platform prefix + a 21-char service.
LONGEST = "inference-" + "a" * 19 + "-b" + "-tg"


@pytest.mark.parametrize(
    "logical", ["inference-llama-tg", "x-tg", "inference-llama-neuron-tg", LONGEST, "a" * 200]
)
def test_name_always_fits_the_provider_rule(logical):
    name = fitted_name(logical, ELBV2_NAME, scope="p/s")
    physical = name if name is not None else logical + "-abcdefg"  # the provider's autoname
    assert len(physical) <= ELBV2_NAME.max_length
    assert re.match(ELBV2_NAME.pattern, physical)


def test_autoname_kept_when_it_fits_so_existing_stacks_do_not_change():
    # 24 characters + "-" + 7 random = 32: the provider's autoname fits, nothing to replace.
    assert fitted_name("a" * 24, ELBV2_NAME, scope="p/s") is None
    assert fitted_name("a" * 25, ELBV2_NAME, scope="p/s") is not None


def test_stable_and_unique_per_stack_and_replacement_inputs():
    logical = "inference-llama-8b-neuron-tg"
    first = fitted_name(logical, ELBV2_NAME, scope="proj/dev", salt="8000")
    assert first == fitted_name(logical, ELBV2_NAME, scope="proj/dev", salt="8000")
    assert first != fitted_name(logical, ELBV2_NAME, scope="proj/prod", salt="8000")
    assert first != fitted_name(logical, ELBV2_NAME, scope="proj/dev", salt="8080")
    assert first is not None and first.startswith("inference-llama-8b-neur-")
    assert len(first.rsplit("-", 1)[1]) == NAME_HASH_CHARS


def test_no_hyphen_left_dangling_before_the_hash():
    # Truncation that lands on a hyphen must not produce "--" or a leading hyphen.
    name = fitted_name("inference-abcdefghijkl-m-tg", ELBV2_NAME, scope="p/s")
    assert name is not None and "--" not in name and not name.startswith("-")


def test_nofile_limits_are_fargates():
    """Seed 003: Fargate's nofile default is 65535 soft and hard, raisable to 1048576; every
    serving container states the default (a Python server with many upstream connections
    reports the ceiling as connection errors), as a ulimit ECS's API accepts."""
    from ecs_inference.services import containers

    assert (FARGATE_NOFILE_DEFAULT, FARGATE_NOFILE_MAX) == (65_535, 1_048_576)
    assert containers.NOFILE_LIMIT == FARGATE_NOFILE_DEFAULT <= FARGATE_NOFILE_MAX
    limit = containers.NOFILE_LIMIT
    ulimit = {"name": "nofile", "softLimit": limit, "hardLimit": limit}
    validate_named_shape("ecs", "Ulimit", ulimit)
    with pytest.raises(AssertionError):
        validate_named_shape("ecs", "Ulimit", {**ulimit, "name": "openfiles"})
