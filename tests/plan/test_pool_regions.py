"""A reference stack moved to another region: its pools use only the types that region offers
(components.sizing.offerings), and a listed type it does not offer fails at its config path."""

from __future__ import annotations

import pytest

from ecs_inference.config.issues import ConfigError
from ecs_inference.sizing import offerings
from tests.stacks import reference_plan


def test_a_listed_type_the_region_does_not_offer_fails_at_its_path_naming_the_regions():
    with pytest.raises(ConfigError) as raised:
        reference_plan("engines", region="eu-west-1")
    found = [i for i in raised.value.issues if "not offered in eu-west-1" in i.message]
    assert found, raised.value.issues
    (issue,) = found
    assert issue.path.startswith("platform.gpuPools.") and issue.path.endswith(".instanceType")
    assert all(r in issue.message for r in offerings.regions_offering("g6e.12xlarge"))


def test_every_pool_of_a_stack_in_eu_central_1_uses_types_offered_there():
    plan = reference_plan("prod", region="eu-central-1")
    pools = {**plan.gpu_pools, **plan.neuron_pools}
    assert pools
    for spec in pools.values():
        for name in spec.input.types:
            assert offerings.offered(name, "eu-central-1"), name
