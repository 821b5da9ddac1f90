"""The weight stores' decisions (pure): every EFS file system the model services read weights
from, with an access point per model and a mount target per zone. What spans the stack (which
models read which file system) is decided here, from the planned model services."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ecs_inference.storage.input import WeightStoreConfig

if TYPE_CHECKING:
    # Types only: the stack's config imports this folder's input.
    from ecs_inference.config.stack import StackConfig
    from ecs_inference.models.decisions import ModelDecisions


@dataclass(frozen=True)
class WeightStoreUse:
    """What the stack decides about one file system beyond its input: who reads it, in how many
    zones, and whether it exists already."""

    access_points: Mapping[str, str]
    """Model service -> its directory on the file system (one access point each)."""
    subnet_count: int
    """Private subnets, one mount target each."""
    existing_file_system_id: str | None = None
    """An existing file system (`efs://fs-.../...`): no file system is created; default None."""


def plan_weight_stores(
    cfg: StackConfig, models: Mapping[str, ModelDecisions], zones: int
) -> dict[str, tuple[WeightStoreConfig, WeightStoreUse]]:
    """Per file system, its input and use: every `weightStores` entry (each exists: weights are
    copied into it before a model uses it), and each existing file system (by id) a model reads
    from (the default input: it is not created), in name order; `zones`: the network's zones
    (one mount target each)."""
    users: dict[str, dict[str, str]] = {store: {} for store in cfg.weight_stores}
    for name, m in models.items():
        if m.efs_file_system is not None and m.efs_path is not None:
            users.setdefault(m.efs_file_system, {})[name] = m.efs_path
    stores: dict[str, tuple[WeightStoreConfig, WeightStoreUse]] = {}
    for fs_name, access_points in sorted(users.items()):
        store = cfg.weight_stores.get(fs_name)
        stores[fs_name] = (
            store or WeightStoreConfig.model_validate({}),
            # EFS takes one mount target per Availability Zone.
            WeightStoreUse(access_points, zones, None if store else fs_name),
        )
    return stores
