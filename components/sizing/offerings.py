"""Where each catalog instance type is offered and what it costs there: queries over the dated
table `components/sizing/ec2_offerings.py` (SkyPilot's AWS catalog, its provenance in that
module; derived by `tools/ec2_offerings.py`).

A region offers a type when the table lists it in at least `MIN_ZONES` of the region's
availability zones: a pool's Auto Scaling group spans two or more zones, and a type offered in
one zone only leaves the pool without a second zone to launch in. Zones are zone ids
(`use1-az4`), which name the same physical zone in every account; zone names (`us-east-1a`) map
to them per account, so `pulumi up` checks the subnets' real zones with
`aws.ec2.get_instance_type_offerings` (components/pools/offerings_check.py).

Prices are Linux On-Demand USD per hour in the region. The source lists a type without a price
where AWS sells it only through Capacity Blocks or reservations (p5e.48xlarge everywhere,
trn1.32xlarge outside the US); `ranking_usd_per_hour` then ranks it by `ESTIMATED_USD_PER_HOUR`,
and the cost estimate labels such an instance an estimate (`components.cost`).
"""

from __future__ import annotations

from ecs_inference.sizing.ec2_offerings import (
    OFFERINGS,
    READ_ON,
    SOURCE_COMMIT,
    SOURCE_PATH,
    SOURCE_REPOSITORY,
)

CATALOG_REGION = "us-east-1"
"""The region whose price ranks the catalog's types when no stack region is given."""

MIN_ZONES = 2
"""Availability zones of a region a type must be offered in for a pool to use it."""

SOURCE = f"{SOURCE_REPOSITORY} {SOURCE_PATH} @ {SOURCE_COMMIT[:12]} (read {READ_ON})"

ESTIMATED_USD_PER_HOUR: dict[str, float] = {
    "p5e.48xlarge": 60.0,
}
"""Types the source prices nowhere On-Demand (sold through Capacity Blocks), USD per hour: an
estimate placed just above p5.48xlarge's us-east-1 price, used to rank and, labelled as an
estimate, to cost."""


def zones(instance_type: str, region: str) -> tuple[str, ...]:
    """Zone ids of `region` where the table lists `instance_type` (empty: not offered)."""
    found = OFFERINGS.get(instance_type, {}).get(region)
    return found[1] if found else ()


def offered(instance_type: str, region: str | None) -> bool:
    """True when `region` (None: any region) offers `instance_type` in `MIN_ZONES` zones."""
    if region is None:
        return True
    return len(zones(instance_type, region)) >= MIN_ZONES


def regions_offering(instance_type: str) -> tuple[str, ...]:
    """Every region that offers `instance_type` in `MIN_ZONES` zones, sorted."""
    return tuple(r for r in sorted(OFFERINGS.get(instance_type, {})) if offered(instance_type, r))


def instance_usd_per_hour(instance_type: str, region: str | None) -> float | None:
    """On-Demand USD per hour of `instance_type` in `region` (None: `CATALOG_REGION`); None when
    the source lists no price there."""
    found = OFFERINGS.get(instance_type, {}).get(region or CATALOG_REGION)
    return found[0] if found else None


def ranking_usd_per_hour(instance_type: str, region: str | None = None) -> float:
    """The price that orders types cheapest first: the region's On-Demand price, else the
    catalog region's, else the estimate."""
    for where in (region, CATALOG_REGION):
        usd = instance_usd_per_hour(instance_type, where) if where else None
        if usd is not None:
            return usd
    return ESTIMATED_USD_PER_HOUR[instance_type]


def not_offered_message(instance_type: str, region: str) -> str:
    """Why `instance_type` cannot serve a pool in `region`, and where it can."""
    where = regions_offering(instance_type)
    found = zones(instance_type, region)
    offered_in = f"offered in {len(found)} zone ({found[0]}) only" if found else "not offered"
    return (
        f"{instance_type} is {offered_in} in {region}; a pool needs it in at least {MIN_ZONES} "
        f"availability zones. Regions that offer it: {', '.join(where) or 'none'} "
        f"(source: {SOURCE})"
    )
