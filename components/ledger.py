"""What the components decided and what they cost, collected while a program runs.

Each component records its own decision lines and cost facts here as it is built: a model
service its decisions and its tasks on its pool, a pool its type, bounds and volumes, a
re-ranker, the gateway and a queue worker their Fargate size and counts, the network its NAT
gateways, zones and interface endpoints, the operations its alarms, dashboard and key.
The offline preview (`ecs-inference-preview`, tools/preview.py) opens a ledger around each run
of a program and prints, for a program that exports no `decisions` or `cost` output of its own,
what its components recorded: the lines a stack file's plan decides and the estimate
`components.cost` makes of the same facts. Outside an open ledger (`pulumi up`), recording does
nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ecs_inference import cost
from ecs_inference.network.decisions import NetworkInput
from ecs_inference.pools.input import ManagedInstancePoolConfig, PoolConfig

if TYPE_CHECKING:
    from ecs_inference.models.decisions import ModelDecisions


@dataclass(frozen=True)
class _Pool:
    name: str
    input: PoolConfig | ManagedInstancePoolConfig
    """The pool's input, on the types it launches."""


@dataclass(frozen=True)
class _Model:
    pool: int
    """The `id` of the pool component it runs on."""
    name: str
    spec: ModelDecisions
    engine: str


@dataclass
class Ledger:
    """One program run's records, in the order the components were built."""

    decided: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Decision lines by subject (`model <name>`), as a stack exports them."""
    pools: dict[int, _Pool] = field(default_factory=dict[int, _Pool])
    """Pool components by `id`."""
    services: list[_Model] = field(default_factory=list[_Model])
    fargate: list[cost.FargateInput] = field(default_factory=list[cost.FargateInput])
    """Re-rankers, the gateway and queue workers."""
    vpc: NetworkInput | None = None
    operations: list[tuple[int, bool]] = field(default_factory=list[tuple[int, bool]])
    """Per Operations component: the metrics its alarms evaluate, and whether it has a
    dashboard (each has one alarm-topic key)."""

    def stack_input(self, region: str | None) -> cost.StackInput | None:
        """The cost facts of what was built (`components.cost.StackInput`) at `region`'s
        prices; None when no component recorded any."""
        if not self.pools and not self.fargate and self.vpc is None:
            return None
        pools = [
            cost.pool_input(
                pool.name,
                pool.input,
                region,
                [(m.name, m.spec, m.engine) for m in self.services if m.pool == key],
            )
            for key, pool in self.pools.items()
        ]
        return cost.StackInput(
            pools=pools,
            fargate=list(self.fargate),
            network=self.vpc or NetworkInput(0, 0, 0),
            alarms_metrics=sum(metrics for metrics, _ in self.operations),
            dashboards=sum(dashboard for _, dashboard in self.operations),
            kms_keys=len(self.operations),
            region=region,
        )


_open: list[Ledger] = []


@contextlib.contextmanager
def collecting() -> Iterator[Ledger]:
    """A fresh ledger that the components built inside the block record in."""
    ledger = Ledger()
    _open.append(ledger)
    try:
        yield ledger
    finally:
        _open.remove(ledger)


def _current() -> Ledger:
    """The innermost open ledger; outside one, a ledger nobody reads."""
    return _open[-1] if _open else Ledger()


def record_decisions(subject: str, lines: Sequence[str]) -> None:
    """`lines` decided for `subject` (`model <name>`)."""
    _current().decided[subject] = list(lines)


def record_pool(
    pool: object,
    name: str,
    input: PoolConfig | ManagedInstancePoolConfig,
) -> None:
    """Pool component `pool`, named `name` in the cost lines."""
    _current().pools[id(pool)] = _Pool(name, input)


def record_model(pool: object, name: str, spec: ModelDecisions, engine: str) -> None:
    """Model service `name`'s tasks on pool component `pool`."""
    _current().services.append(_Model(id(pool), name, spec, engine))


def record_fargate(name: str, spec: cost.FargateSized, metric_kind: str | None) -> None:
    """A Fargate service named `name` in the cost lines (`metric_kind`: its sidecar's)."""
    _current().fargate.append(cost.fargate_input(name, spec, metric_kind))


def record_network(network: NetworkInput) -> None:
    """What the network built costs."""
    _current().vpc = network


def record_operations(alarms_metrics: int, *, dashboard: bool) -> None:
    """The alarms (the metrics they evaluate), the dashboard and the alarm topic's key."""
    _current().operations.append((alarms_metrics, dashboard))
