"""At deploy: every instance type of a pool is offered in its subnets' real availability zones.

Sizing picks types its region offers (`sizing.offerings`, a dated table), but which zones a
pool's subnets are in is known only in the account: zone names map to physical zones per
account, and a region's newer types are offered in some zones only. An Auto Scaling group whose
type is offered in none of its subnets' zones is created and never launches anything. So the
pool reads its subnets' zone ids (`ec2.get_subnet`) and asks EC2 where its types are offered
(`ec2.get_instance_type_offerings`, DescribeInstanceTypeOfferings by zone id) before the group is
created: a type offered in none of them fails the deploy with the zones that offer it; one
offered in a single zone of several is a warning (the pool cannot spread, and loses capacity when
that zone does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws

ZONE_ID_LOCATION = "availability-zone-id"


class OfferingsError(Exception):
    """A pool's instance type is offered in none of its subnets' zones."""


def offerings_problems(
    pool: str,
    instance_types: Sequence[str],
    subnet_zones: Mapping[str, str],
    offered: Mapping[str, Sequence[str]],
) -> tuple[list[str], list[str]]:
    """(errors, warnings) for `instance_types` of `pool` in subnets `subnet_zones` (subnet id ->
    zone id), given `offered` (type -> zone ids EC2 offers it in, among those asked about)."""
    zones = sorted(set(subnet_zones.values()))
    errors: list[str] = []
    warnings: list[str] = []
    for name in instance_types:
        usable = sorted(set(offered.get(name, ())) & set(zones))
        if not usable:
            errors.append(
                f"pool {pool}: {name} is offered in none of the zones of its subnets "
                f"({', '.join(zones)}): the Auto Scaling group could never launch it; put "
                "subnets in zones that offer it or choose another instance type"
            )
        elif len(usable) < min(2, len(zones)):
            warnings.append(
                f"pool {pool}: {name} is offered in {usable[0]} only of its subnets' zones "
                f"({', '.join(zones)}): every instance launches there"
            )
    return errors, warnings


def checked_subnet_ids(
    pool: str,
    subnet_ids: pulumi.Input[Sequence[pulumi.Input[str]]],
    instance_types: Sequence[str],
    parent: pulumi.Resource,
) -> pulumi.Output[list[str]]:
    """`subnet_ids`, once every type is known to be offered in their zones (raises
    `OfferingsError` otherwise, which stops the deploy before the group exists)."""
    opts = pulumi.InvokeOutputOptions(parent=parent)

    def zones_of(ids: list[str]) -> pulumi.Output[dict[str, str]]:
        found = [aws.ec2.get_subnet_output(id=i, opts=opts).availability_zone_id for i in ids]
        return pulumi.Output.all(*found).apply(lambda z: dict(zip(ids, z, strict=True)))

    def check(subnet_zones: dict[str, str]) -> pulumi.Output[list[str]]:
        offerings = aws.ec2.get_instance_type_offerings_output(
            location_type=ZONE_ID_LOCATION,
            filters=[
                {"name": "instance-type", "values": list(instance_types)},
                {"name": "location", "values": sorted(set(subnet_zones.values()))},
            ],
            opts=opts,
        )

        def verdict(result: aws.ec2.GetInstanceTypeOfferingsResult) -> list[str]:
            offered: dict[str, list[str]] = {}
            for name, zone in zip(result.instance_types, result.locations, strict=True):
                offered.setdefault(name, []).append(zone)
            errors, warnings = offerings_problems(pool, instance_types, subnet_zones, offered)
            for warning in warnings:
                pulumi.log.warn(warning, resource=parent)
            if errors:
                raise OfferingsError("; ".join(errors))
            return list(subnet_zones)

        return offerings.apply(verdict)

    ids = pulumi.Output.from_input(subnet_ids)
    return ids.apply(lambda given: zones_of([str(i) for i in given])).apply(check)
