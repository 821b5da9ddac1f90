"""Images pulled across regions: an image reference in another region's private ECR registry
(`<account>.dkr.ecr.<region>.amazonaws.com/...` whose region is not the stack's `aws:region`).

Such a stack deploys, but every pull crosses regions: ECR bills data transferred to another
region "at Internet Data Transfer rates on both sides of the transfer" (AWS, "Understanding data
transfer costs for AWS container services"; inbound is free, so the source region's transfer-out
rate, `cost.PRICES.internet_transfer_out_gb`), on the EC2 launch type once per new instance and
on Fargate at every task start (Fargate keeps no image cache); and a pull fails while the other
region's registry is impaired, so the stack cannot scale out or replace a task there. The fix is
a copy in the stack's region: an ECR replication rule (private registry replication, same
digests) or a pull-through cache rule, and the reference to the stack's region's registry.

ECR Public (`public.ecr.aws`), Docker Hub, GHCR and other registries are not a cross-region ECR
pull: they are left alone here (their pulls go over the internet or NAT, judged elsewhere).
Without a region (left to the provider) nothing can be compared and nothing is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ecs_inference import cost
from ecs_inference.config.base import ROOT
from ecs_inference.config.issues import Advisory
from ecs_inference.config.stack import StackConfig

ECR_REFERENCE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)"
    r"\.amazonaws\.com(?:\.cn)?/(?P<repository>.+)$"
)
"""A private ECR image reference: account, registry region, repository with tag or digest."""

GB_PER_GIB = 1.073741824


@dataclass(frozen=True)
class CrossRegionImage:
    """One config-set image reference that a service of the stack pulls from another region."""

    path: str
    """The config path that sets the reference (`platform.images.vllm`)."""
    image: str
    registry_region: str
    users: tuple[str, ...]
    """The services that pull it (`model llama`, `re-ranker rerank`, `metrics sidecar`)."""
    image_gib: float | None = None
    """Compressed size when the config states it (a model's `startup.imageGib`), else None."""

    def replica(self, region: str) -> str:
        """The same repository and tag or digest in `region`'s registry."""
        m = ECR_REFERENCE.match(self.image)
        assert m is not None  # only references that matched are collected
        return f"{m['account']}.dkr.ecr.{region}.amazonaws.com/{m['repository']}"

    def message(self, region: str) -> str:
        """The advisory: what it costs, what else it risks, and the fix."""
        rate = cost.PRICES.internet_transfer_out_gb
        if self.image_gib is not None:
            per_pull = self.image_gib * GB_PER_GIB * rate
            price = (
                f"~${per_pull:.2f} per pull of this {self.image_gib:g} GiB image "
                f"(${rate:g}/GB, the internet transfer-out rate ECR bills across regions)"
            )
        else:
            price = (
                f"${rate:g} per GB pulled (the internet transfer-out rate ECR bills across regions)"
            )
        return (
            f"{', '.join(self.users)} pull {self.image} from {self.registry_region}'s registry "
            f"into a {region} stack: every pull is cross-region data transfer, {price}, on EC2 "
            "once per new instance and on Fargate at every task start; and pulls fail while "
            f"{self.registry_region}'s registry is impaired. Copy it to {region} with an ECR "
            f"replication rule (or a pull-through cache rule) and reference "
            f"{self.replica(region)}"
        )


def image_references(cfg: StackConfig) -> dict[str, tuple[str, list[str], float | None]]:
    """Config path -> (image, the services that pull it, its stated size), for every image
    reference a service of the stack runs (references no service uses are left out)."""
    found: dict[str, tuple[str, list[str], float | None]] = {}

    def add(path: str, image: str | None, user: str, gib: float | None = None) -> None:
        if image is None:
            return
        _, users, size = found.setdefault(path, (image, [], gib))
        users.append(user)
        if gib is not None and (size is None or gib > size):
            found[path] = (image, users, gib)

    for name, model in cfg.models.items():
        path = f"{ROOT}.models.{name}.image"
        if model.image is None:
            path = f"{ROOT}.images.{model.engine}"
        add(path, model.image or cfg.images.for_engine(model.engine), f"model {name}",
            model.startup.image_gib)  # fmt: skip
    for name, reranker in cfg.rerankers.items():
        own = reranker.image is not None
        path = f"{ROOT}.rerankers.{name}.image" if own else f"{ROOT}.images.reranker"
        add(path, reranker.image or cfg.images.reranker, f"re-ranker {name}")
    if cfg.metrics_sidecar_services():
        add(f"{ROOT}.images.metrics", cfg.images.metrics, "the metrics sidecar")
    if cfg.gateway is not None:
        add(f"{ROOT}.gateway.image", cfg.gateway.image, "the gateway")
    for name, worker in cfg.workers.items():
        add(f"{ROOT}.workers.{name}.image", worker.image, f"worker {name}")
    return found


def cross_region_images(cfg: StackConfig, region: str | None) -> list[CrossRegionImage]:
    """Every image reference the stack's services pull from another region's ECR registry."""
    if region is None:
        return []
    out: list[CrossRegionImage] = []
    for path, (image, users, gib) in image_references(cfg).items():
        m = ECR_REFERENCE.match(image)
        if m is None or m["region"] == region:
            continue
        out.append(CrossRegionImage(path, image, m["region"], tuple(users), gib))
    return out


def advisories(cfg: StackConfig, region: str | None) -> list[Advisory]:
    """Each cross-region image reference as an advisory at the path that sets it."""
    if region is None:
        return []
    return [Advisory(c.path, c.message(region)) for c in cross_region_images(cfg, region)]
