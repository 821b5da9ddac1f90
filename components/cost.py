"""What a stack costs per hour and per month at minimum scale, steady state (desired counts) and
maximum scale, broken down by pool instances, warm-pool EBS, Fargate tasks, NAT gateways, the
ALB, interface endpoints, log ingestion and CloudWatch monitoring.

Pure (no Pulumi). `estimate(plan, ...)` reads a validated plan; `estimate_inputs` takes plain
inputs (what the tests and the PR workflow's diff use). Every price is in `PRICES` (one dated
table with its source) except the instances', which are the stack region's On-Demand prices from
the dated offerings table (`components.sizing.offerings`), so there is exactly one number per
fact. A type the source offers in the region without an On-Demand price (Capacity Blocks only) is
counted at the offerings module's estimate, labelled as such in its line and the notes, never
left out; the service lines outside us-east-1 are at us-east-1's prices, and the notes say so.

What it is not: a bill. Data transfer between AZs, S3 requests, ECR storage, Cognito MAUs and
the ALB's access-log bucket are left out (small next to accelerator hours, or traffic-shaped);
the assumptions that are in are listed with the estimate, and the preview prints them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ecs_inference import engines
from ecs_inference.contracts import metrics as metrics_contract
from ecs_inference.contracts.aws_limits import GP3_BASELINE_IOPS, GP3_BASELINE_MIBPS
from ecs_inference.network.decisions import NetworkInput
from ecs_inference.pools.input import ManagedInstancePoolConfig, PoolConfig, WarmPoolConfig
from ecs_inference.rollouts.spec import RolloutSpec
from ecs_inference.sizing import catalog, offerings

if TYPE_CHECKING:
    from ecs_inference.models.decisions import ModelDecisions
    from ecs_inference.plan import Plan
    from ecs_inference.services.decisions import FargateDecisions

    FargateSized = FargateDecisions[Any, Any]
    """A Fargate service's size and counts as decided: a re-ranker's, the gateway's or a queue
    worker's."""

HOURS_PER_MONTH = 730
"""AWS's convention for monthly prices (8,760 h / 12)."""

PRICES_AS_OF = "2025-06"
PRICES_SOURCE = (
    "AWS list prices, us-east-1, Linux On-Demand: aws.amazon.com/{fargate,vpc,"
    "elasticloadbalancing,ebs,cloudwatch}/pricing; instances in the stack's region from "
    f"{offerings.SOURCE}, components/sizing/ec2_offerings.py. Other regions cost more or less; "
    "re-check before budgeting."
)


@dataclass(frozen=True)
class Prices:
    """USD. `*_hour` per hour, `*_gb` per GB (10^9 bytes, as AWS bills), `*_month` per month."""

    fargate_x86_vcpu_hour: float = 0.04048
    fargate_x86_gb_hour: float = 0.004445
    fargate_arm_vcpu_hour: float = catalog.FARGATE_ARM64_USD_PER_VCPU_HOUR
    fargate_arm_gb_hour: float = catalog.FARGATE_ARM64_USD_PER_GB_HOUR
    nat_gateway_hour: float = 0.045
    nat_gateway_gb: float = 0.045
    alb_hour: float = 0.0225
    alb_lcu_hour: float = 0.008
    interface_endpoint_az_hour: float = 0.01
    ebs_gp3_gb_month: float = 0.08
    ebs_gp3_iops_month: float = 0.005
    """Per provisioned IOPS-month above the 3,000 every gp3 volume includes."""
    ebs_gp3_mibps_month: float = 0.04
    """Per provisioned MiB/s-month of throughput above the included 125 MiB/s."""
    logs_ingestion_gb: float = 0.50
    custom_metric_month: float = 0.30
    """First 10,000 metrics; EMF-extracted metrics are custom metrics, billed per hour used."""
    alarm_metric_month: float = 0.10
    """Standard-resolution alarm, per metric it evaluates (metric-math alarms pay per metric)."""
    dashboard_month: float = 3.00
    """Per dashboard beyond the account's first three (counted as paid here)."""
    kms_key_month: float = 1.00
    """Customer-managed KMS key (the alarm topic's); requests are within the free tier."""
    internet_transfer_out_gb: float = 0.09
    """Data transfer out to the internet, first 10 TB/month tier (aws.amazon.com/ec2/pricing/
    on-demand, data transfer). ECR bills an image pulled into another region at this rate
    ("at Internet Data Transfer rates on both sides of the transfer"; inbound is free): the
    cross-region image advisory's price (`components.plan.image_regions`), not an estimate
    line (pulls are traffic-shaped)."""


PRICES = Prices()

GPU_SCALE_IN_LAG_MINUTES = 15
"""ECS managed scaling removes an instance only after its CapacityProviderReservation alarm has
been below target for 15 one-minute periods, and then drains it: every excursion to maximum
keeps the extra instances at least this long after the load is gone (seed, autoscaling)."""


@dataclass(frozen=True)
class Assumptions:
    """Usage the estimate cannot know. Defaults (stated in every estimate):
    - `engine_log_bytes_per_task_hour` 1,000,000: an engine's own stdout (vLLM logs a stats
      line every 10 s, ~300 B, and an access line per request, ~200 B: ~1 request/s);
    - `emf_bytes_per_scrape` 1,400: one metrics-sidecar line with every vLLM metric plus
      CloudWatch Logs' 26 B per-event overhead (measured: 1,226 B for the sidecar on a real
      vLLM 0.33 exposition with long stack/service names; tests/test_cost.py keeps the
      figure within 1x-1.5x of the measurement), one per
      `metrics_contract.DEFAULT_INTERVAL_SECONDS`;
    - `nat_gb_per_hour` 0.05: with VPC endpoints, images, weights and AWS APIs bypass NAT; what
      is left is OS updates and the odd external call (~36 GB/month);
    - `alb_lcu` 1.0: LLM traffic is long-lived low-byte streams; one LCU is 3,000 active
      connections, 25 new connections/s or 1 GB/h.
    """

    engine_log_bytes_per_task_hour: int = 1_000_000
    emf_bytes_per_scrape: int = 1_400
    nat_gb_per_hour: float = 0.05
    alb_lcu: float = 1.0

    def describe(self) -> list[str]:
        scrapes = 3600 // metrics_contract.DEFAULT_INTERVAL_SECONDS
        return [
            f"log ingestion per task: {self.engine_log_bytes_per_task_hour / 1e6:g} MB/h of "
            f"engine output + {scrapes} metric lines/h of {self.emf_bytes_per_scrape} B "
            f"(= {self.task_log_gb_per_hour() * 1000:.2f} MB/h)",
            f"NAT data processed: {self.nat_gb_per_hour:g} GB/h (VPC endpoints carry images, "
            "weights and AWS APIs)",
            f"ALB: {self.alb_lcu:g} LCU",
            "no data transfer, S3 requests, ECR storage or Cognito users",
        ]

    def task_log_gb_per_hour(self) -> float:
        scrapes = 3600 / metrics_contract.DEFAULT_INTERVAL_SECONDS
        return (self.engine_log_bytes_per_task_hour + scrapes * self.emf_bytes_per_scrape) / 1e9


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------

Point = Literal["minimum", "steady", "maximum"]
POINTS: tuple[Point, ...] = ("minimum", "steady", "maximum")


@dataclass(frozen=True)
class Counts:
    minimum: int
    steady: int
    maximum: int

    def at(self, point: Point) -> int:
        return getattr(self, point)


@dataclass(frozen=True)
class PricedService:
    """What the estimate reads of every service: a model service on a pool, a re-ranker, the AI
    gateway or a queue worker on Fargate."""

    name: str
    counts: Counts
    metric_kind: str | None
    """contracts.metrics kind of its metrics sidecar (`Engine.metrics_kind`); None: no sidecar
    (the gateway, workers, a service with `operations.metricsSidecar` off)."""
    rollout_minutes: int = 0
    """Minutes a blue/green, canary or linear deployment runs a second full revision (the
    rollout's `shift_minutes`); 0: rolling."""


@dataclass(frozen=True, kw_only=True)
class ServiceOnPool(PricedService):
    tasks_per_instance: int


@dataclass(frozen=True, kw_only=True)
class FargateInput(PricedService):
    """A Fargate service: a re-ranker, the AI gateway or a queue worker."""

    cpu: int
    memory_mib: int
    architecture: Literal["ARM64", "X86_64"]


@dataclass(frozen=True)
class PoolInput:
    """A pool as priced: its input itself, the services it runs, and its instances' price in
    the stack's region. Its instances are counted as its first (cheapest chosen) type."""

    name: str
    input: PoolConfig | ManagedInstancePoolConfig
    usd_per_hour: float
    services: Sequence[ServiceOnPool] = ()
    price_estimated: bool = False
    """True: the source offers the type in the stack's region without an On-Demand price;
    `usd_per_hour` is then `offerings.ranking_usd_per_hour`, labelled an estimate."""

    @property
    def instance(self) -> catalog.InstanceType:
        return pool_instance(self.input)

    @property
    def warm_pool(self) -> WarmPoolConfig | None:
        return self.input.warm_pool if isinstance(self.input, PoolConfig) else None

    @property
    def bounds(self) -> tuple[int, int, int]:
        """(min, max, target capacity %): the group's; a Managed Instances pool has no group
        (ECS launches what the tasks need and nothing else): 0, what the services' maximum
        counts need, 100."""
        if isinstance(self.input, PoolConfig):
            return self.input.min_size, self.input.max_size, self.input.target_capacity_percent
        needed = sum(_instances_for(s, "maximum") for s in self.services)
        return 0, max(needed, 1), 100

    @property
    def scale_in_lag_minutes(self) -> float:
        """How long an instance outlives its last task: ECS managed scaling's 15 minutes on an
        Auto Scaling group pool, `scaleInAfterSeconds` on a Managed Instances pool."""
        if isinstance(self.input, PoolConfig):
            return GPU_SCALE_IN_LAG_MINUTES
        lag = self.input.scale_in_after_seconds
        return (lag if lag is not None and lag > 0 else 0) / 60


def pool_instance(pool: PoolConfig | ManagedInstancePoolConfig) -> catalog.InstanceType:
    """The type a pool's services are counted on: its first (cheapest chosen) type."""
    if isinstance(pool, PoolConfig):
        return catalog.instance(pool.types[0])
    return catalog.instance((pool.instance_types or [""])[0])


def pool_input(
    name: str,
    input: PoolConfig | ManagedInstancePoolConfig,
    region: str | None,
    models: Iterable[tuple[str, ModelDecisions, str]],
) -> PoolInput:
    """Pool `name` running the model services `models` (name, decisions, engine), at `region`'s
    price of its first type."""
    instance = pool_instance(input)
    services = [service_on_pool(m, decided, engine, instance) for m, decided, engine in models]
    usd = offerings.instance_usd_per_hour(instance.name, region)
    if usd is None:
        usd = offerings.ranking_usd_per_hour(instance.name, region)
        return PoolInput(name, input, usd, services, price_estimated=True)
    return PoolInput(name, input, usd, services)


@dataclass(frozen=True)
class StackInput:
    pools: Sequence[PoolInput]
    fargate: Sequence[FargateInput]
    network: NetworkInput
    alarms_metrics: int = 0
    """Metrics evaluated by the stack's alarms (a metric-math alarm counts each metric)."""
    dashboards: int = 1
    kms_keys: int = 1
    """The alarm topic's key."""
    region: str | None = None
    """The stack's region (`aws:region`); None: us-east-1's prices, the catalog's region."""


# ------------------------------------------------------------------------------------------------
# the estimate
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    category: str
    item: str
    quantity: float
    unit: str
    usd_per_hour: float


@dataclass(frozen=True)
class CostPoint:
    point: Point
    lines: tuple[Line, ...]

    @property
    def usd_per_hour(self) -> float:
        return sum(line.usd_per_hour for line in self.lines)

    @property
    def usd_per_month(self) -> float:
        return self.usd_per_hour * HOURS_PER_MONTH

    def by_category(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in self.lines:
            out[line.category] = out.get(line.category, 0.0) + line.usd_per_hour
        return out


@dataclass(frozen=True)
class CostEstimate:
    points: tuple[CostPoint, ...]
    excursion_usd: float
    """Least one excursion from steady to maximum costs: the extra instances for the
    `GPU_SCALE_IN_LAG_MINUTES` they stay after the load is gone."""
    assumptions: tuple[str, ...]
    prices_as_of: str = PRICES_AS_OF
    prices_source: str = PRICES_SOURCE
    notes: tuple[str, ...] = field(default=())
    rollouts: tuple[tuple[str, float, str], ...] = ()
    """(service, USD, how) of one blue/green, canary or linear deployment of each such service:
    its second revision at the steady count for the rollout's minutes."""

    def point(self, name: Point) -> CostPoint:
        return next(p for p in self.points if p.point == name)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: per point the total, per category and the lines; rounded to cents/1000."""
        return {
            "currency": "USD",
            "hoursPerMonth": HOURS_PER_MONTH,
            "pricesAsOf": self.prices_as_of,
            "pricesSource": self.prices_source,
            "points": {
                p.point: {
                    "usdPerHour": round(p.usd_per_hour, 4),
                    "usdPerMonth": round(p.usd_per_month, 2),
                    "byCategory": {k: round(v, 4) for k, v in p.by_category().items()},
                    "lines": [
                        {**asdict(line), "usd_per_hour": round(line.usd_per_hour, 5)}
                        for line in p.lines
                    ],
                }
                for p in self.points
            },
            "scaleInLagMinutes": GPU_SCALE_IN_LAG_MINUTES,
            "excursionToMaximumUsd": round(self.excursion_usd, 2),
            # Only a stack with a blue/green, canary or linear service has rollouts.
            **(
                {
                    "rollouts": [
                        {"service": n, "usd": round(usd, 2), "how": how}
                        for n, usd, how in self.rollouts
                    ]
                }
                if self.rollouts
                else {}
            ),
            "assumptions": list(self.assumptions),
            "notes": list(self.notes),
        }


def pool_instances(pool: PoolInput, point: Point) -> int:
    """In-service instances of `pool` at `point`: what the services' tasks need, spread as
    managed scaling does (target capacity below 100 % keeps spare instances), within the ASG's
    min and max."""
    least, most, target = pool.bounds
    needed = sum(_instances_for(s, point) for s in pool.services)
    with_spare = math.ceil(needed * 100 / target) if needed else 0
    return min(max(with_spare, least), most)


def _instances_for(service: ServiceOnPool, point: Point) -> int:
    """Instances `service`'s tasks take at `point` on their own."""
    return math.ceil(service.counts.at(point) / max(service.tasks_per_instance, 1))


def warm_instances(pool: PoolInput, in_service: int) -> int:
    """Warm-pool size as EC2 Auto Scaling sizes it: MaxGroupPreparedCapacity (default: the
    group's max size) minus the in-service instances, at least the warm pool's MinSize."""
    if (warm := pool.warm_pool) is None:
        return 0
    prepared = warm.max_group_prepared_capacity
    return max((pool.bounds[1] if prepared is None else prepared) - in_service, warm.min_size, 0)


def _ebs_hour(pool: PoolInput, prices: Prices) -> float:
    """One root volume per hour: gp3 bills its provisioned size per GB-month (a GiB is 1.074
    GB), and the IOPS and throughput provisioned above the baseline every volume includes
    (3,000 IOPS, 125 MiB/s) per IOPS-month and MiB/s-month (Amazon EBS pricing, gp3)."""
    p = pool.input
    if isinstance(p, PoolConfig):
        gib, iops, mibps = p.root_volume_gib, p.root_volume_iops, p.root_volume_throughput
    else:  # a Managed Instances data volume at the gp3 baseline
        gib, iops, mibps = p.storage_gib, GP3_BASELINE_IOPS, GP3_BASELINE_MIBPS
    size = gib * 1.073741824 * prices.ebs_gp3_gb_month
    iops = max(iops - GP3_BASELINE_IOPS, 0) * prices.ebs_gp3_iops_month
    mibps = max(mibps - GP3_BASELINE_MIBPS, 0) * prices.ebs_gp3_mibps_month
    return (size + iops + mibps) / HOURS_PER_MONTH


def _point(stack: StackInput, point: Point, prices: Prices, assumptions: Assumptions) -> CostPoint:
    lines = [line for pool in stack.pools for line in _pool_lines(pool, point, prices)]
    lines += [_fargate_line(f, point, prices) for f in stack.fargate]
    lines += _network_lines(stack.network, prices, assumptions)
    services: list[PricedService] = [*(s for p in stack.pools for s in p.services), *stack.fargate]
    # Fargate tasks without the metrics sidecar write their own output only (no EMF lines).
    plain_tasks = sum(f.counts.at(point) for f in stack.fargate if f.metric_kind is None)
    tasks = sum(s.counts.at(point) for s in services) - plain_tasks
    plain_gb = assumptions.engine_log_bytes_per_task_hour / 1e9
    lines.append(
        Line(
            "log ingestion",
            f"{tasks} task(s)"
            + (f" + {plain_tasks} without the metrics sidecar" if plain_tasks else ""),
            tasks + plain_tasks,
            "tasks",
            (tasks * assumptions.task_log_gb_per_hour() + plain_tasks * plain_gb)
            * prices.logs_ingestion_gb,
        )
    )
    # per-task series while their task runs, service-level series all the time, and the hosts'
    metric_series = sum((s.counts.at(point) + 1) * _engine_series(s.metric_kind) for s in services)
    metric_series += sum(_host_series(p, pool_instances(p, point)) for p in stack.pools)
    lines.append(
        Line(
            "monitoring",
            f"{metric_series} metrics, {stack.alarms_metrics} alarm metrics, "
            f"{stack.dashboards} dashboard, {stack.kms_keys} KMS key",
            metric_series,
            "metrics",
            (
                metric_series * prices.custom_metric_month
                + stack.alarms_metrics * prices.alarm_metric_month
                + stack.dashboards * prices.dashboard_month
                + stack.kms_keys * prices.kms_key_month
            )
            / HOURS_PER_MONTH,
        )
    )
    return CostPoint(point, tuple(lines))


def _pool_lines(pool: PoolInput, point: Point, prices: Prices) -> list[Line]:
    """The pool's instances, root volumes and warm pool at `point`."""
    n = pool_instances(pool, point)
    estimated = " (estimated price)" if pool.price_estimated else ""
    lines = [
        Line("pool instances", f"{pool.name}: {pool.instance.name}{estimated}", n, "instances",
             n * pool.usd_per_hour),
        Line("pool EBS", f"{pool.name}: root gp3", n, "volumes", n * _ebs_hour(pool, prices)),
    ]  # fmt: skip
    if warm := warm_instances(pool, n):
        running = (w := pool.warm_pool) is not None and w.state == "Running"
        lines.append(
            Line(
                "warm pool",
                f"{pool.name}: {warm} {'running' if running else 'stopped'} "
                + ("(billed as instances)" if running else "(EBS only)"),
                warm,
                "instances",
                warm * (_ebs_hour(pool, prices) + (pool.usd_per_hour if running else 0.0)),
            )
        )
    return lines


def _host_series(pool: PoolInput, instances: int) -> int:
    """Host metrics: per GPU (the agent's own series) + the Stack/Pool rollup."""
    if pool.instance.is_gpu:
        per_host = len(metrics_contract.NVIDIA_MEASUREMENTS)
        return instances * pool.instance.accelerator_count * per_host + per_host
    return len(metrics_contract.NEURON_MONITOR_FAMILIES) + 1


def _fargate_rate(f: FargateInput, prices: Prices) -> float:
    """One task's USD per hour."""
    vcpu, gb = f.cpu / 1024, f.memory_mib / 1024
    if f.architecture == "ARM64":
        return vcpu * prices.fargate_arm_vcpu_hour + gb * prices.fargate_arm_gb_hour
    return vcpu * prices.fargate_x86_vcpu_hour + gb * prices.fargate_x86_gb_hour


def rollout_costs(stack: StackInput, prices: Prices) -> list[tuple[str, float, str]]:
    """One native deployment of each service that has one: the instances (or Fargate tasks) its
    second revision adds at the steady count, for the rollout's minutes."""
    out: list[tuple[str, float, str]] = []
    for pool in stack.pools:
        for s in pool.services:
            if not s.rollout_minutes:
                continue
            green = s.counts.steady
            doubled = replace(pool, services=[*pool.services, replace(s, rollout_minutes=0)])
            extra = pool_instances(doubled, "steady") - pool_instances(pool, "steady")
            usd = extra * pool.usd_per_hour * s.rollout_minutes / 60
            out.append(
                (
                    s.name,
                    usd,
                    f"{green} green task(s) beside the blue ones: {extra} more {pool.instance.name}"
                    f" for ~{s.rollout_minutes} min",
                )
            )
    for f in stack.fargate:
        if f.rollout_minutes:
            green = f.counts.steady
            usd = green * _fargate_rate(f, prices) * f.rollout_minutes / 60
            out.append((f.name, usd, f"{green} green Fargate task(s) for ~{f.rollout_minutes} min"))
    return out


def _fargate_line(f: FargateInput, point: Point, prices: Prices) -> Line:
    """A Fargate service's tasks at `point`."""
    count, vcpu, gb = f.counts.at(point), f.cpu / 1024, f.memory_mib / 1024
    item = f"{f.name}: {vcpu:g} vCPU / {gb:g} GB {f.architecture}"
    return Line("Fargate tasks", item, count, "tasks", count * _fargate_rate(f, prices))


def _network_lines(net: NetworkInput, prices: Prices, assumptions: Assumptions) -> list[Line]:
    """NAT gateways, the load balancer and the interface endpoints."""
    lines = [
        Line(
            "NAT gateways",
            f"{net.nat_gateways} gateway(s) + {assumptions.nat_gb_per_hour:g} GB/h",
            net.nat_gateways,
            "gateways",
            net.nat_gateways * prices.nat_gateway_hour
            + assumptions.nat_gb_per_hour * prices.nat_gateway_gb,
        ),
        Line(
            "load balancer",
            f"ALB + {assumptions.alb_lcu:g} LCU",
            1,
            "ALB",
            prices.alb_hour + assumptions.alb_lcu * prices.alb_lcu_hour,
        ),
    ]
    enis = net.interface_endpoints * net.availability_zones
    if enis:
        lines.append(
            Line(
                "VPC endpoints",
                f"{net.interface_endpoints} interface endpoints x {net.availability_zones} AZs",
                enis,
                "endpoint-AZs",
                enis * prices.interface_endpoint_az_hour,
            )
        )
    return lines


def estimate_inputs(
    stack: StackInput,
    *,
    prices: Prices = PRICES,
    assumptions: Assumptions | None = None,
) -> CostEstimate:
    """The three points, the excursion cost and the stated assumptions for `stack`."""
    assumptions = assumptions or Assumptions()
    points = tuple(_point(stack, p, prices, assumptions) for p in POINTS)
    excursion = 0.0
    notes: list[str] = []
    for pool in stack.pools:
        usable = pool_instances(pool, "maximum")
        extra = usable - pool_instances(pool, "steady")
        excursion += extra * pool.usd_per_hour * pool.scale_in_lag_minutes / 60
        if isinstance(pool.input, ManagedInstancePoolConfig):
            notes.append(
                f"pool {pool.name}: Managed Instances; the ECS management fee per instance-hour "
                "is not included, and instances are priced as On-Demand "
                f"{pool.instance.name}"
            )
        elif (most := pool.bounds[1]) > usable:
            notes.append(
                f"pool {pool.name}: maxSize {most} but the services use at most "
                f"{usable}; the rest is deploy headroom (a surge deploy may run up to "
                f"${(most - usable) * pool.usd_per_hour:.2f}/h more while it lasts)"
            )
    notes += _region_notes(stack)
    return CostEstimate(
        points,
        excursion,
        tuple(assumptions.describe()),
        rollouts=tuple(rollout_costs(stack, prices)),
        prices_source=_prices_source(stack.region),
        notes=tuple(notes),
    )


def _in_catalog_region(region: str | None) -> bool:
    return region is None or region == offerings.CATALOG_REGION


def _prices_source(region: str | None) -> str:
    """`PRICES_SOURCE`, and for another region where its instance prices come from."""
    if _in_catalog_region(region):
        return PRICES_SOURCE
    return (
        f"instances in {region}: {offerings.SOURCE} (components/sizing/ec2_offerings.py), Linux "
        "On-Demand; every other line: AWS list prices, us-east-1 (aws.amazon.com/{fargate,vpc,"
        "elasticloadbalancing,ebs,cloudwatch}/pricing), the table has no other region's figures "
        "for them."
    )


def _region_notes(stack: StackInput) -> list[str]:
    """Which instances are at an estimated price, and what a stack outside us-east-1 could not
    price at that region's prices."""
    notes = [
        f"pool {p.name}: the source lists no {stack.region or offerings.CATALOG_REGION} "
        f"On-Demand price for {p.instance.name} (sold there through Capacity Blocks or "
        f"reservations only, or not offered); its instances are counted at an estimated "
        f"${p.usd_per_hour:g}/h"
        for p in stack.pools
        if p.price_estimated
    ]
    if _in_catalog_region(stack.region):
        return notes
    notes.append(
        f"{stack.region}: Fargate, NAT gateway, ALB, interface endpoint, EBS gp3, CloudWatch "
        f"and KMS lines are at {offerings.CATALOG_REGION} prices (the price table has "
        f"no {stack.region} figures for them); instance prices are {stack.region}'s"
    )
    return notes


def estimate(
    plan: Plan,
    *,
    alarms_metrics: int = 0,
    prices: Prices = PRICES,
    assumptions: Assumptions | None = None,
) -> CostEstimate:
    """The estimate of a validated plan (`components.plan.Plan`)."""
    return estimate_inputs(
        stack_input(plan, alarms_metrics=alarms_metrics),
        prices=prices,
        assumptions=assumptions,
    )


def _engine_series(kind: str | None) -> int:
    """Series the metrics sidecar publishes per task of an engine (none without the sidecar)."""
    return 0 if kind is None else len(metrics_contract.published_names(kind))


def service_on_pool(
    name: str, spec: ModelDecisions, engine: str, instance: catalog.InstanceType
) -> ServiceOnPool:
    """Model service `name` on a pool whose cheapest type is `instance`, with the copies that
    type holds (GPUs pack; a Neuron task takes its instance)."""
    per_instance = (
        1 if spec.one_task_per_instance else max(1, instance.accelerator_count // spec.gpu_count)
    )
    return ServiceOnPool(
        name,
        Counts(spec.min_count, spec.desired_count, spec.max_count),
        engines.get(engine).metrics_kind if spec.metrics_sidecar else None,
        spec.rollout.shift_minutes,
        tasks_per_instance=per_instance,
    )


def fargate_input(name: str, spec: FargateSized, metric_kind: str | None) -> FargateInput:
    """A Fargate service named `name` in the cost lines; `metric_kind`: its metrics sidecar's
    kind, None without one. A re-ranker's native deployment runs a second revision (the gateway
    and workers roll)."""
    rollout = getattr(spec, "rollout", None)
    return FargateInput(
        name,
        Counts(spec.min_count, spec.desired_count, spec.max_count),
        metric_kind,
        rollout.shift_minutes if isinstance(rollout, RolloutSpec) else 0,
        cpu=spec.cpu,
        memory_mib=spec.memory_mib,
        architecture=spec.cpu_architecture,
    )


def stack_input(plan: Plan, *, alarms_metrics: int = 0) -> StackInput:
    """Plain inputs from a plan (the only place that reads the plan's layout)."""
    region = plan.network.wiring.region
    decided = {**plan.gpu_pools, **plan.neuron_pools, **plan.managed_instance_pools}
    models = [(plan.config.models[m], m, d) for m, d in plan.models.items()]
    pools = [
        pool_input(n, p.input, region, [(m, d, c.engine) for c, m, d in models if c.pool == n])
        for n, p in decided.items()
    ]
    fargate = [
        fargate_input(name, r, "reranker" if r.metrics_sidecar else None)
        for name, r in plan.rerankers.items()
    ]
    # The gateway and the workers are Fargate services too (no metrics sidecar); a worker's
    # minimum is usually 0 tasks (it scales to zero on an empty queue).
    if plan.gateway is not None:
        fargate.append(fargate_input(f"gateway {plan.gateway.input.path}", plan.gateway, None))
    fargate += [fargate_input(f"worker {n}", w, None) for n, w in plan.workers.items()]
    return StackInput(
        pools=pools,
        fargate=fargate,
        network=plan.network.cost,
        alarms_metrics=alarms_metrics,
        region=region,
    )


def diff(base: dict[str, Any] | None, head: dict[str, Any] | None) -> dict[str, Any]:
    """Per point: base and head $/month and the change, from two `to_json()` documents (either
    may be None: a stack added or removed, or a base without cost output)."""
    out: dict[str, Any] = {}
    for point in POINTS:
        b = (base or {}).get("points", {}).get(point, {}).get("usdPerMonth")
        h = (head or {}).get("points", {}).get(point, {}).get("usdPerMonth")
        out[point] = {
            "base": b,
            "head": h,
            "change": None if b is None or h is None else round(h - b, 2),
        }
    return out
