"""The weight stores' plan: every EFS file system the model services read weights from, with an
access point per model."""

from __future__ import annotations

from collections.abc import Mapping

from ecs_inference.config.stack import StackConfig
from ecs_inference.specs.service import ModelServiceSpec
from ecs_inference.specs.weights import WeightStoreSpec


def plan_weight_stores(
    cfg: StackConfig, models: Mapping[str, ModelServiceSpec], zones: int
) -> dict[str, WeightStoreSpec]:
    """One spec per `weightStores` entry (each exists: weights are copied into it before a
    model uses it), and per existing file system (by id) a model reads from, in name order;
    `zones`: the network's zones (one mount target each)."""
    users: dict[str, dict[str, str]] = {store: {} for store in cfg.weight_stores}
    for name, m in models.items():
        if m.efs_file_system is not None and m.efs_path is not None:
            users.setdefault(m.efs_file_system, {})[name] = m.efs_path
    stores: dict[str, WeightStoreSpec] = {}
    for fs_name, access_points in sorted(users.items()):
        store = cfg.weight_stores.get(fs_name)
        stores[fs_name] = WeightStoreSpec(
            access_points=access_points,
            # EFS takes one mount target per Availability Zone.
            subnet_count=zones,
            throughput_mode=store.throughput_mode if store else WeightStoreSpec.throughput_mode,
            provisioned_mib_per_second=store.provisioned_mib_per_second if store else None,
            existing_file_system_id=None if store else fs_name,
        )
    return stores
