"""The regional price table against its source (components/sizing/regional_prices.py): the kept
excerpt of SkyPilot's AWS catalog (tests/components/fixtures/skypilot_vms_excerpt.csv)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ecs_inference.sizing import catalog, regional_prices

EXCERPT = Path(__file__).parent / "fixtures" / "skypilot_vms_excerpt.csv"
TAKEN_FAMILIES = ("g5", "g6", "g6e", "inf2", "trn1")
"""Families whose rows the table takes (their us-east-1 rows equal the catalog's)."""


def _rows() -> list[dict[str, str]]:
    lines = [line for line in EXCERPT.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


def _family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def test_excerpt_names_the_commit_the_module_cites():
    assert regional_prices.SOURCE_COMMIT in EXCERPT.read_text().splitlines()[1]


def test_every_regional_price_is_the_sources():
    source = {(r["Region"], r["InstanceType"]): float(r["Price"]) for r in _rows()}
    for region, prices in regional_prices.INSTANCE_USD_PER_HOUR.items():
        for instance_type, usd in prices.items():
            assert instance_type in catalog.INSTANCE_TYPES, instance_type
            assert source[(region, instance_type)] == usd, (region, instance_type)


def test_every_source_row_of_a_taken_family_is_in_the_table():
    for row in _rows():
        region, instance_type = row["Region"], row["InstanceType"]
        if region == regional_prices.CATALOG_REGION or _family(instance_type) not in TAKEN_FAMILIES:
            continue
        assert regional_prices.instance_usd_per_hour(instance_type, region) == float(row["Price"])


def _us_east_1_taken() -> list[dict[str, str]]:
    return [
        r
        for r in _rows()
        if r["Region"] == "us-east-1" and _family(r["InstanceType"]) in TAKEN_FAMILIES
    ]


@pytest.mark.parametrize("row", _us_east_1_taken(), ids=lambda r: r["InstanceType"])
def test_the_sources_us_east_1_rows_are_the_catalogs_figures(row):
    # What makes the source trustworthy for the families taken from it: where both price the
    # same type in us-east-1, they agree to the last digit.
    assert catalog.instance(row["InstanceType"]).on_demand_usd_hour == float(row["Price"])


def test_p4_and_p5_rows_predate_the_june_2025_reduction_so_none_is_taken():
    stale = [r for r in _rows() if _family(r["InstanceType"]) in ("p4d", "p5")]
    assert stale
    for row in stale:
        if row["Region"] == "us-east-1":
            assert float(row["Price"]) > catalog.instance(row["InstanceType"]).on_demand_usd_hour
    for prices in regional_prices.INSTANCE_USD_PER_HOUR.values():
        assert not [t for t in prices if t.startswith("p")]


def test_a_type_without_a_row_has_no_price_rather_than_a_guess():
    # The source lists no eu-west-1 row for g6, g6e or trn1 (not offered there).
    for instance_type in ("g6.xlarge", "g6e.xlarge", "trn1.2xlarge", "p5.48xlarge"):
        assert regional_prices.instance_usd_per_hour(instance_type, "eu-west-1") is None
    assert regional_prices.instance_usd_per_hour("g5.xlarge", "ap-south-2") is None
    assert regional_prices.instance_usd_per_hour("g5.xlarge", None) == 1.006
    assert regional_prices.instance_usd_per_hour("g5.xlarge", "us-east-1") == 1.006
    assert regional_prices.instance_usd_per_hour("g5.xlarge", "eu-west-1") == 1.123
