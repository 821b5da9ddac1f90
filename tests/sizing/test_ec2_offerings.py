"""The offerings table (components/sizing/ec2_offerings.py) against its source: the derivation
(tools/ec2_offerings.py) run on a verbatim excerpt of SkyPilot's AWS catalog
(tests/sizing/fixtures/skypilot_vms_excerpt.csv) must agree with the committed table, and the
queries over it (components/sizing/offerings.py) answer from it."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ecs_inference.sizing import catalog, ec2_offerings, offerings
from tools import ec2_offerings as derivation

EXCERPT = Path(__file__).parent / "fixtures" / "skypilot_vms_excerpt.csv"


def _rows() -> list[dict[str, str]]:
    lines = [line for line in EXCERPT.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


def _derived() -> derivation.Offerings:
    return derivation.derive(_rows(), catalog.INSTANCE_TYPES)


def test_the_excerpt_names_the_source_the_table_cites():
    header = EXCERPT.read_text().splitlines()[:2]
    assert ec2_offerings.SOURCE_PATH in header[0]
    assert ec2_offerings.SOURCE_REPOSITORY in header[0]
    assert ec2_offerings.SOURCE_COMMIT in header[1]


def test_every_row_of_the_excerpt_is_in_the_table():
    derived = _derived()
    assert derived, "the excerpt holds rows of catalog types"
    for name, regions in derived.items():
        for region, (price, zones) in regions.items():
            table_price, table_zones = ec2_offerings.OFFERINGS[name][region]
            assert table_price == price, (name, region)
            assert set(zones) <= set(table_zones), (name, region)


def test_types_outside_the_catalog_and_local_zones_are_left_out():
    derived = _derived()
    assert "g5g.xlarge" not in derived and "a1.2xlarge" not in derived
    assert "us-west-2" not in derived.get("g5.4xlarge", {})  # only its Los Angeles Local Zone row
    assert derived["p5.48xlarge"]["us-east-1"][1] == ("use1-az1",)  # not use1-atl2-az1
    assert not [
        z for regions in ec2_offerings.OFFERINGS.values() for _, zs in regions.values() for z in zs
        if not derivation.AVAILABILITY_ZONE_ID.match(z)
    ]  # fmt: skip


def test_a_type_without_an_on_demand_price_is_offered_with_none():
    derived = _derived()
    assert derived["p5e.48xlarge"]["us-east-2"][0] is None
    assert derived["trn1.32xlarge"]["ap-south-1"][0] is None
    assert offerings.instance_usd_per_hour("p5e.48xlarge", "us-east-2") is None


def test_zones_that_disagree_on_a_price_are_refused():
    rows = [r for r in _rows() if r["InstanceType"] == "g5.xlarge"][:2]
    rows[1] = {**rows[1], "Price": "9.99"}
    with pytest.raises(ValueError, match="disagree"):
        derivation.derive(rows, ["g5.xlarge"])


def test_the_rendered_table_reads_back_as_the_derived_one():
    derived = _derived()
    namespace: dict[str, object] = {}
    exec(derivation.render(derived, "0" * 40, "2026-01-01"), namespace)
    assert namespace["OFFERINGS"] == derived


def test_every_catalog_type_is_in_the_table_and_ranks_by_its_us_east_1_price():
    for name, instance in catalog.INSTANCE_TYPES.items():
        assert name in ec2_offerings.OFFERINGS, name
        usd = offerings.instance_usd_per_hour(name, "us-east-1")
        expected = usd if usd is not None else offerings.ESTIMATED_USD_PER_HOUR[name]
        assert instance.on_demand_usd_hour == expected, name


def test_offered_needs_two_zones_of_the_region():
    # eu-west-1 lists no g6e and inf2.8xlarge in one eu-west-2 zone only (euw2-az2).
    assert not offerings.offered("g6e.12xlarge", "eu-west-1")
    assert offerings.zones("inf2.8xlarge", "eu-west-2") == ("euw2-az2",)
    assert not offerings.offered("inf2.8xlarge", "eu-west-2")
    assert offerings.offered("inf2.8xlarge", "eu-west-1")
    assert "eu-west-1" not in offerings.regions_offering("g6e.12xlarge")
    assert "eu-central-1" in offerings.regions_offering("g6e.12xlarge")
    message = offerings.not_offered_message("g6e.12xlarge", "eu-west-1")
    assert "not offered in eu-west-1" in message and "eu-central-1" in message
