"""Fargate rules: nothing Fargate rejects, wherever a task is launched on it.

* ``tasks``: task definitions (and Batch job definitions) that Fargate can run ask for nothing
  Fargate rejects, and their size is on the grid;
* ``launched``: what launches tasks on Fargate runs no accelerator task, pins a platform
  version that fits its size, and runs task definitions that declare Fargate;
* ``batch_jobs``: what submits AWS Batch jobs to a Fargate queue submits Fargate job
  definitions;
* ``pull_path``: a Fargate service's subnets can pull its image.

Catching these at preview turns a failed deploy (or a task that never places) into a review
comment.
"""

from __future__ import annotations

from .batch_jobs import no_ec2_job_on_fargate_queue
from .launched import (
    fargate_platform_version,
    fargate_task_definition_requires_fargate,
    no_gpu_task_on_fargate_service,
)
from .pull_path import fargate_image_pull_path
from .tasks import (
    FARGATE_GRID,
    PLATFORM_1_4_CPU,
    cheapest_size_for,
    fargate_task_size_on_grid,
    grid_problem,
    no_host_features_on_fargate,
    platform_version_ok,
)

__all__ = [
    "FARGATE_GRID",
    "PLATFORM_1_4_CPU",
    "POLICIES",
    "cheapest_size_for",
    "grid_problem",
    "platform_version_ok",
]

POLICIES = [
    no_host_features_on_fargate,
    no_gpu_task_on_fargate_service,
    fargate_task_size_on_grid,
    fargate_platform_version,
    fargate_task_definition_requires_fargate,
    fargate_image_pull_path,
    no_ec2_job_on_fargate_queue,
]
