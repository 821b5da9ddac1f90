"""On-Demand prices of the catalog's instance types outside us-east-1: one dated table with its
source, so a stack in another region is costed at that region's prices (`components.cost`).

us-east-1 is the catalog's own figure (`catalog.InstanceType.on_demand_usd_hour`, which also
ranks the cheapest fitting types); this table holds the other regions. A type with no row for a
region has no price there: the estimate says so and leaves it out of the total rather than
guessing (`instance_usd_per_hour` returns None).

Source (`SOURCE`): SkyPilot's AWS catalog, the `Price` column (Linux On-Demand, USD per hour;
one row per availability zone, the same price in every zone of a region), as stored at
`SOURCE_COMMIT` and read on `PRICES_READ_ON`. Its us-east-1 rows equal the catalog's figures for
every g5, g6, g6e, inf2 and trn1 type (tests/components/test_regional_prices.py checks them
against the excerpt kept in tests/components/fixtures/skypilot_vms_excerpt.csv), which is why those
families are taken from it. Left out on purpose:

- p4d, p4de, p5, p5e: the source's us-east-1 rows (p4d.24xlarge $32.7726, p5.48xlarge $98.32)
  are the list prices from before AWS's June 2025 P4/P5 reduction that the catalog already
  carries ($21.96, $55.04), so its other regions' rows are stale too; the source has no
  On-Demand price at all for p5e.48xlarge (Capacity Blocks).
- eu-west-1 has no row in the source for g6 (the sizes read: 2xlarge, 4xlarge, 12xlarge,
  16xlarge, 24xlarge, 48xlarge), g6e and trn1: those types are not offered there.

Regions: eu-west-1 (the shared-vpc reference stack's). Add a region by copying its rows from the
same source file (and the excerpt) for every type the source prices there.
"""

from __future__ import annotations

from ecs_inference.sizing import catalog

CATALOG_REGION = "us-east-1"
"""The region of the catalog's own prices."""

SOURCE = "skypilot-org/skypilot-catalog catalogs/v7/aws/vms.csv, column Price"
SOURCE_COMMIT = "001367d22a0033fac286a8c71aeac7109e431bcb"
PRICES_READ_ON = "2026-12-01"

INSTANCE_USD_PER_HOUR: dict[str, dict[str, float]] = {
    "eu-west-1": {
        "g5.xlarge": 1.123,
        "g5.2xlarge": 1.35296,
        "g5.4xlarge": 1.81287,
        "g5.8xlarge": 2.73271,
        "g5.12xlarge": 6.33167,
        "g5.16xlarge": 4.57237,
        "g5.24xlarge": 9.09117,
        "g5.48xlarge": 18.18233,
        "inf2.xlarge": 0.94775,
        "inf2.8xlarge": 2.45982,
        "inf2.24xlarge": 8.11329,
        "inf2.48xlarge": 16.22658,
    },
}
"""Region -> instance type -> USD per hour, Linux On-Demand (regions other than us-east-1)."""


def regions() -> tuple[str, ...]:
    """Every region the estimate has instance prices for."""
    return (CATALOG_REGION, *INSTANCE_USD_PER_HOUR)


def instance_usd_per_hour(instance_type: str, region: str | None) -> float | None:
    """USD per hour of `instance_type` On-Demand in `region` (None: the catalog's region);
    None when the table has no price for the type there."""
    if region is None or region == CATALOG_REGION:
        return catalog.instance(instance_type).on_demand_usd_hour
    return INSTANCE_USD_PER_HOUR.get(region, {}).get(instance_type)
