"""Weight stores (model weights on EFS): one feature, one folder.

- `input`: `WeightStoreConfig`, a stack-managed file system's input: its stack-file section
  (`platform.weightStores.<name>`) and its Python input at once.
- `decisions`: which model services read which file system (`WeightStoreUse`), pure.
- `efs`: `efs://` URIs and what a task needs to mount them (volume, mount point, policies), pure.
- `service`: the `WeightFileSystem` component and the task's `task_volume`
  (`ecs_inference.storage.service`; before this folder, `ecs_inference.storage`).
"""
