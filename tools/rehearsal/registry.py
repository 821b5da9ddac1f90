"""Which ECR repository an image reference pulls from, read as Docker and ECR read it.

The rehearsal's own reading, independent of the code that writes the execution role's grants
(`ecs_inference.iam`), so a grant on the wrong repository is a finding, not an agreement.

A reference is `[registry/]path[:tag][@digest]` (the distribution reference grammar the
Docker daemon and the ECS agent use): the first path component is the registry when it holds a
`.` or a `:` or is `localhost`. An ECR private registry is
`<account>.dkr.ecr.<region>.amazonaws.com` (`.amazonaws.com.cn` in China, `dkr.ecr-fips` for
FIPS endpoints) or the dual-stack `<account>.dkr-ecr.<region>.on.aws` (ECR user guide,
"Amazon ECR private registry"); the repository is the path, and ECR authorises the pull on
`arn:<partition>:ecr:<region>:<account>:repository/<path>` (Service Authorization Reference,
resource type `repository`).
"""

from __future__ import annotations

import re

_ECR_REGISTRY = re.compile(
    r"^(?P<account>\d{12})\.(?:dkr\.ecr(?:-fips)?\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+)"
    r"\.amazonaws\.com(?:\.cn)?|dkr-ecr\.(?P<dual>[a-z]{2}(?:-[a-z]+)+-\d+)\.on\.aws)$"
)
# ECR repository names: lowercase components separated by `.`, `_`, `-` or `/`
# (CreateRepository's repositoryName pattern).
_REPOSITORY = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST = re.compile(r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")


class ImageReferenceError(ValueError):
    """A reference to an ECR registry that no pull could resolve."""


def split_reference(image: str) -> tuple[str, str, str, str]:
    """(registry, path, tag, digest) of `image`; registry empty for Docker Hub's shorthand."""
    rest, _, digest = image.partition("@")
    first, slash, remainder = rest.partition("/")
    registry = ""
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, rest = first, remainder
    path, tag = rest, ""
    if ":" in rest.rsplit("/", 1)[-1]:
        path, tag = rest.rsplit(":", 1)
    return registry, path, tag, digest


def ecr_repository(image: str, partition: str) -> str | None:
    """The ARN of the ECR repository `image` is pulled from; None for another registry.
    Raises ImageReferenceError for an ECR registry with a path, tag or digest ECR refuses."""
    registry, path, tag, digest = split_reference(image)
    match = _ECR_REGISTRY.match(registry)
    if match is None:
        if re.match(r"^\d{12}\.dkr[.-]ecr", registry):
            raise ImageReferenceError(f"{image}: {registry} is not an ECR registry address")
        return None
    problems = [
        f"repository {path!r}" if not _REPOSITORY.match(path) else "",
        f"tag {tag!r}" if tag and not _TAG.match(tag) else "",
        f"digest {digest!r}" if digest and not _DIGEST.match(digest) else "",
    ]
    if any(problems):
        raise ImageReferenceError(f"{image}: ECR refuses {', '.join(p for p in problems if p)}")
    region = match["region"] or match["dual"]
    return f"arn:{partition}:ecr:{region}:{match['account']}:repository/{path}"
