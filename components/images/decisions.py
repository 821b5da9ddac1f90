"""The images' plan: with `images.build`, which images the stack builds, for which Docker
platforms, and which services run each build."""

from __future__ import annotations

from ecs_inference.config.issues import Issues
from ecs_inference.config.stack import StackConfig, images_to_build
from ecs_inference.images import platforms as image_build


def plan_builds(
    cfg: StackConfig, issues: Issues
) -> tuple[dict[str, tuple[str, ...]], dict[str, str], dict[str, list[str]]]:
    """(image -> Docker platforms, service -> the build it runs, decisions). The engines' and the
    metrics sidecar's platforms are `image_build.image_platforms()`'s, the re-ranker's every
    Fargate cpuArchitecture of the services that run the built image."""
    builds: dict[str, tuple[str, ...]] = {}
    built: dict[str, str] = {}
    for image, users in images_to_build(cfg).items():
        if image != "metrics":
            built |= dict.fromkeys(users, image)
        if image == "reranker":
            archs = [cfg.rerankers[u].cpu_architecture for u in users]
            try:
                builds[image] = image_build.reranker_platforms(archs)
            except image_build.ImageBuildError as exc:
                issues.add("platform.images.build", str(exc))
        else:
            builds[image] = image_build.image_platforms()[image]
    decisions = {
        f"image {image}": [
            f"built from {image_build.IMAGES_DIR}/{image} for {', '.join(platforms)}, "
            "pushed to the stack's ECR repository, run by its content tag"
        ]
        for image, platforms in builds.items()
    }
    return builds, built, decisions
