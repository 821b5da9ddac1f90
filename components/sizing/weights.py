"""Where a model's weights come from at task start, and how long loading them takes.

Pure functions (no Pulumi). Three ways to get weights into a task, compared on the same inputs:

- `s3-stream`: the engine streams safetensors from S3 straight into accelerator memory (engines
  whose `Engine.streams_from_s3`, with the Run:ai model streamer). One pass over the network,
  nothing on disk.
- `s3-stage`: the entrypoint downloads the prefix to the instance's disk, then the engine reads
  it back (TGI, which has no object-store loader; also the Neuron artifact). Two passes; the
  download is bounded by the root volume's write throughput too.
- `efs`: the engine reads the files in place from an EFS mount (NFS), one pass, bounded per
  client by EFS's per-client limit and, across all tasks starting at once, by the file system's.

AWS figures used (General Purpose performance mode, Regional file systems), from the Amazon EFS
User Guide, "Amazon EFS performance specifications"
(https://docs.aws.amazon.com/efs/latest/ug/performance.html), as read on 2026-11-30:
- Elastic throughput: up to 1,500 MiB/s read per client; 20-60 GiB/s read per file system
  depending on the Region (the low end, 20 GiB/s, is used);
- Provisioned throughput: up to 500 MiB/s per client; 3-10 GiB/s read per file system (reads are
  metered at a third of the provisioned rate's cost, so a file system provisioned at P MiB/s
  reads at up to 3 P MiB/s);
- Bursting: up to 500 MiB/s per client; its sustained rate is tied to the data stored, so it is
  not offered here for weights.
Amazon S3 User Guide, "Best practices design patterns: optimizing Amazon S3 performance"
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html), read
2026-11-30: at least 5,500 GET/HEAD requests per second per partitioned prefix, and throughput
that scales with parallel connections; a single instance is then bounded by its network
bandwidth (Amazon EC2 instance network bandwidth; "up to" figures are burst rates). The
per-connection rate of a ranged GET is not an AWS-documented figure: it is an input
(`s3_connection_mib_per_second`, default 80 MiB/s) to be measured, not a fact.

When each wins (see `compare`; each path's rate is the slowest of its limits):
- S3 streaming runs at min(network, connections x per-connection rate, the prefix's request rate
  shared by the tasks starting together); EFS at min(network, 1,500 MiB/s per client on Elastic,
  the file system's read throughput shared by the tasks starting together).
- On instances whose network is below ~12.6 Gbps (1,500 MiB/s) both are network-bound and tie:
  keep S3 (no file system to run, no per-GiB read charge).
- Above it, S3 streaming wins once the streamer's parallelism exceeds 1,500 MiB/s (at the default
  assumption of 80 MiB/s per connection that takes more than 19 connections: raise
  `RUNAI_STREAMER_CONCURRENCY` above its default of 16), otherwise EFS's per-client limit is
  the faster one.
- For an engine that cannot stream from S3 (TGI), EFS wins at any size: staging writes the
  weights to the root volume and reads them back, two passes instead of one.
- Many tasks at once (a scale-out of more than ~13 on Elastic's 20 GiB/s low end) share the file
  system and slow each other down; S3's 5,500 GETs/s per prefix at 8 MiB ranges (the size S3's
  guidelines suggest for byte-range fetches) is 43 GiB/s shared.
EFS Elastic also charges per GiB read, S3 per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from ecs_inference.contracts import aws_limits

Source = Literal["s3-stream", "s3-stage", "efs"]
ThroughputMode = Literal["elastic", "provisioned"]

MIB_PER_GIB = 1024
MIB_PER_SECOND_PER_GBPS = 1e9 / 8 / 2**20
"""1 Gbps = 119.2 MiB/s."""


class WeightStoreError(ValueError):
    """An input is out of range; the message names it."""


@dataclass(frozen=True)
class LoadEstimate:
    """Seconds to get `weights_gib` into the engine from one source, and what bounds it."""

    source: Source
    weights_gib: float
    seconds: float
    mib_per_second: float
    bottleneck: str

    def summary(self) -> str:
        return (
            f"{self.source}: {self.weights_gib:.1f} GiB at {self.mib_per_second:.0f} MiB/s "
            f"= {self.seconds:.0f} s (bound by {self.bottleneck})"
        )


def _positive(value: object, name: str) -> float:
    # `object`: callers pass config values, and a bool or a string must be refused here.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise WeightStoreError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _slowest(limits: dict[str, float]) -> tuple[str, float]:
    name = min(limits, key=lambda k: limits[k])
    return name, limits[name]


def load_estimate(
    source: Source,
    weights_gib: float,
    *,
    instance_network_gbps: float | None,
    concurrent_tasks: int = 1,
    s3_connections: int = 16,
    s3_connection_mib_per_second: float = 80.0,
    s3_chunk_mib: float = 8.0,
    disk_write_mib_per_second: float = 1000.0,
    disk_read_mib_per_second: float = 1000.0,
    efs_throughput_mode: ThroughputMode = "elastic",
    efs_provisioned_mib_per_second: float | None = None,
) -> LoadEstimate:
    """Estimate one task's weight load time from `source`.

    `instance_network_gbps` is the instance's network bandwidth (None: not modelled);
    `concurrent_tasks` (default 1) tasks load the same weights at the same moment (a scale-out
    or a deploy), sharing the S3 prefix's request rate or the EFS file system's throughput.
    S3: `s3_connections` (default 16, the Run:ai streamer's default concurrency) ranged GETs
    of `s3_chunk_mib` (default 8 MiB) at `s3_connection_mib_per_second` each (default 80, an
    assumption to measure). `s3-stage` also writes to and reads back from the root volume
    (defaults 1000 MiB/s, the GPU pools' gp3 setting). EFS: `efs_throughput_mode` (default
    elastic); provisioned needs `efs_provisioned_mib_per_second`.
    """
    weights = _positive(weights_gib, "weights_gib")
    # None: the instance's bandwidth is not known (the catalog has no network figures); the
    # estimate then covers the storage side only and says so.
    network = (
        _positive(instance_network_gbps, "instance_network_gbps") * MIB_PER_SECOND_PER_GBPS
        if instance_network_gbps is not None
        else float("inf")
    )
    given = cast(object, concurrent_tasks)  # a config value: refuse bools and fractions
    if isinstance(given, bool) or not isinstance(given, int):
        raise WeightStoreError(f"concurrent_tasks must be a whole number, got {given!r}")
    tasks = int(_positive(given, "concurrent_tasks"))
    mib = weights * MIB_PER_GIB
    if source in ("s3-stream", "s3-stage"):
        connections = _positive(s3_connections, "s3_connections")
        per_connection = _positive(s3_connection_mib_per_second, "s3_connection_mib_per_second")
        chunk = _positive(s3_chunk_mib, "s3_chunk_mib")
        limits = {
            "instance network": network,
            f"{connections:g} S3 connections": connections * per_connection,
            f"S3 prefix request rate shared by {tasks} task(s)": (
                aws_limits.S3_GET_PER_PREFIX_PER_SECOND * chunk / tasks
            ),
        }
        if source == "s3-stream":
            bottleneck, rate = _slowest(limits)
            return LoadEstimate(source, weights, mib / rate, rate, bottleneck)
        limits["root volume writes"] = _positive(disk_write_mib_per_second, "disk write")
        bottleneck, rate = _slowest(limits)
        read = _positive(disk_read_mib_per_second, "disk read")
        seconds = mib / rate + mib / read
        effective = mib / seconds
        return LoadEstimate(
            source, weights, seconds, effective, f"{bottleneck}, then a local read at {read:g}"
        )
    if source != "efs":
        raise WeightStoreError(f"unknown weight source {source!r}")
    if efs_throughput_mode == "elastic":
        client, fs_total = (
            aws_limits.EFS_ELASTIC_CLIENT_READ_MIBPS,
            aws_limits.EFS_ELASTIC_FS_READ_GIBPS * MIB_PER_GIB,
        )
        mode = "Elastic"
    elif efs_throughput_mode == "provisioned":
        if efs_provisioned_mib_per_second is None:
            raise WeightStoreError("provisioned EFS throughput needs its MiB/s")
        provisioned = _positive(efs_provisioned_mib_per_second, "efs_provisioned_mib_per_second")
        client = aws_limits.EFS_PROVISIONED_CLIENT_READ_MIBPS
        fs_total = min(
            provisioned * aws_limits.EFS_PROVISIONED_READ_MULTIPLIER,
            aws_limits.EFS_PROVISIONED_FS_READ_GIBPS * MIB_PER_GIB,
        )
        mode = "Provisioned"
    else:
        raise WeightStoreError(f"unknown EFS throughput mode {efs_throughput_mode!r}")
    limits = {
        "instance network": network,
        f"EFS {mode} per-client read": client,
        f"EFS {mode} file-system read shared by {tasks} task(s)": fs_total / tasks,
    }
    bottleneck, rate = _slowest(limits)
    return LoadEstimate("efs", weights, mib / rate, rate, bottleneck)


@dataclass(frozen=True)
class StoreComparison:
    """EFS against the engine's S3 path for one model, and which is faster."""

    s3: LoadEstimate
    efs: LoadEstimate

    @property
    def faster(self) -> LoadEstimate:
        """The quicker of the two (S3 on a tie: no file system to run)."""
        return self.efs if self.efs.seconds < self.s3.seconds else self.s3

    def summary(self) -> str:
        winner = self.faster
        other = self.efs if winner is self.s3 else self.s3
        return (
            f"weights: {winner.summary()}; {other.source} would take {other.seconds:.0f} s "
            f"({other.bottleneck})"
        )


def compare(
    weights_gib: float,
    *,
    engine_streams_from_s3: bool,
    instance_network_gbps: float | None,
    concurrent_tasks: int = 1,
    efs_throughput_mode: ThroughputMode = "elastic",
    efs_provisioned_mib_per_second: float | None = None,
    s3_connection_mib_per_second: float = 80.0,
) -> StoreComparison:
    """Compare EFS with the S3 path the engine would use (`s3-stream` or `s3-stage`); the
    other inputs as in `load_estimate`, with its defaults."""
    s3 = load_estimate(
        "s3-stream" if engine_streams_from_s3 else "s3-stage",
        weights_gib,
        instance_network_gbps=instance_network_gbps,
        concurrent_tasks=concurrent_tasks,
        s3_connection_mib_per_second=s3_connection_mib_per_second,
    )
    efs = load_estimate(
        "efs",
        weights_gib,
        instance_network_gbps=instance_network_gbps,
        concurrent_tasks=concurrent_tasks,
        efs_throughput_mode=efs_throughput_mode,
        efs_provisioned_mib_per_second=efs_provisioned_mib_per_second,
    )
    return StoreComparison(s3, efs)
