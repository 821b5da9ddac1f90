"""ImageBuilds: the stack builds and pushes its own serving images (`images.build: true`).

The default delivery path is CI (.github/workflows/deploy.yml builds each image, pushes it to
ECR and feeds its digest to the stacks as `images.*`). A stack without that pipeline can set
`images.build: true` instead; it then owns, per image some service uses (vllm, neuron,
reranker):

- an ECR repository `<prefix>/<image>`: tags immutable (a digest a task definition names can
  never be re-pointed) except the build cache tag, scan on push, AES256 encryption at rest, and
  a lifecycle policy keeping the last `keep_images` builds;
- a docker-build `Image` built from this repository's `images/<image>/` for the platform the
  service runs on, pushed with a content-derived tag (`content_tag`: the context, the named
  contexts, the platforms and the build arguments), with the BuildKit layer cache kept in the
  same repository (`:buildcache`, ECR needs the OCI image-manifest cache format);
- `references[image]`: `<registry>/<repository>:<content tag>`, what the task definitions run
  and what the execution role's ECR pull statement is scoped to (iam.ecr_repository_arn).

The reference is computed from the build context, the repository's name and the provider's
account and region, never from the build's outputs, so it is known at preview, before anything
is built: a first preview's container definitions, and the policy pack's verdicts on them, do
not wait for the push (DESIGN §12). The tag names exactly one content (tags are immutable in
the repository, and the tag is a hash of everything the build reads), so it pins the build as
a digest would; ECS resolves it to the digest when it starts the first task. The reference
still depends on the `Image` resource, so each task definition waits for its image's push.

The platforms are decided once (`image_platforms`, `RERANKER_PLATFORMS`) and the deploy
workflow's build matrix is tested against them. Needs a Docker daemon with buildx where `pulumi
up` runs; builds are skipped on preview (the Dockerfiles are linted by `make lint`).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pulumi
import pulumi_aws as aws

from ecs_inference import engines
from ecs_inference.arns import aws_context, ecr_repository_uri
from ecs_inference.images.platforms import (
    IMAGES_DIR,
    NAMED_CONTEXTS,
    RERANKER_PLATFORMS,
    ImageBuildError,
    image_platforms,
)

if TYPE_CHECKING:
    import pulumi_docker_build as docker_build

TOKEN = "ecs-inference:delivery:ImageBuilds"
_REPO_ROOT = Path(__file__).resolve().parents[2]

CACHE_TAG = "buildcache"
TAG_PREFIX = "ctx-"
DEFAULT_KEEP_IMAGES = 10
# ECR repository names: lowercase path components separated by `/`, `.`, `_` or `-` inside one.
REPOSITORY_NAME = re.compile(r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$")


def _ignore_patterns(ignore_file: Path) -> list[str]:
    """A .dockerignore's patterns as moby's ignorefile.ReadAll reads them: one per line, `#`
    comments and blank lines dropped, whitespace trimmed, a leading `/` dropped (`!` kept)."""
    if not ignore_file.is_file():
        return []
    patterns = []
    for line in ignore_file.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        body = line[1:].strip() if negated else line
        body = posixpath.normpath(body).lstrip("/")
        patterns.append(("!" if negated else "") + body)
    return patterns


def _pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regular expression over a slash-separated relative path:
    filepath.Match's `*` and `?` within one segment, and `**` for any number of directories
    (moby patternmatcher)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def excluded(rel: str, patterns: Sequence[str]) -> bool:
    """Whether a .dockerignore with `patterns` keeps `rel` (a file's path in the context) out:
    a pattern matches the path or one of its parent directories, and the last matching
    pattern decides (`!` re-includes)."""
    parents = [rel.rsplit("/", n)[0] for n in range(rel.count("/"), 0, -1)] + [rel]
    out = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _pattern(pattern[1:] if negated else pattern)
        if any(regex.fullmatch(p) for p in parents):
            out = not negated
    return out


def _hash_tree(update: Callable[[bytes], None], tree: Path, patterns: Sequence[str]) -> None:
    """Each file the builder sends from `tree`: its bytes, relative path and mode."""
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree).as_posix()
        if path.is_dir() or excluded(rel, patterns):
            continue
        update(path.read_bytes() + rel.encode() + stat.filemode(path.lstat().st_mode).encode())


def context_digest(
    image: str,
    platforms: Sequence[str],
    root: Path = _REPO_ROOT,
    build_args: Mapping[str, str] | None = None,
) -> str:
    """sha256 over what pulumi-docker-build hashes to decide a rebuild (its
    provider/internal/context.go, hashBuildContext), plus the platforms and the build arguments
    (default none): the Dockerfile's bytes; each file of the context that its .dockerignore
    (`Dockerfile.dockerignore` first) lets through, with its bytes, relative path and mode; then
    each named context, by name, filtered by its own root .dockerignore.

    The image tag is derived from it: ECR tags are immutable here, so a tag must only ever name
    one content; whenever the builder would rebuild, the tag changes, and what the builder
    ignores (the Python caches every context's .dockerignore excludes) changes neither."""
    context = root / IMAGES_DIR / image
    dockerfile = context / "Dockerfile"
    if not dockerfile.is_file():
        raise ImageBuildError(f"{IMAGES_DIR}/{image}/Dockerfile does not exist")
    digest = hashlib.sha256(json.dumps(sorted(platforms)).encode())
    if build_args:
        digest.update(json.dumps(dict(build_args), sort_keys=True).encode() + b"\0")
    digest.update(dockerfile.read_bytes())
    # The first ignore file that exists applies, even an empty one.
    candidates = (context / "Dockerfile.dockerignore", context / ".dockerignore")
    ignore_file = next((c for c in candidates if c.is_file()), candidates[-1])
    _hash_tree(digest.update, context, _ignore_patterns(ignore_file))
    for name in sorted(NAMED_CONTEXTS):
        named = root / NAMED_CONTEXTS[name]
        if named.is_dir():
            _hash_tree(digest.update, named, _ignore_patterns(named / ".dockerignore"))
    return digest.hexdigest()


def content_tag(
    image: str, platforms: Sequence[str], build_args: Mapping[str, str] | None = None
) -> str:
    """`ctx-<16 hex of context_digest>`: the tag a build of `image` is pushed under."""
    return f"{TAG_PREFIX}{context_digest(image, platforms, build_args=build_args)[:16]}"


def lifecycle_policy(keep_images: int) -> str:
    """ECR lifecycle policy: keep the newest `keep_images` builds (tags `ctx-*`) and the one
    build cache tag. A rule's matched images cannot be expired by a lower-priority rule, so the
    cache rule comes first; untagged images are not expired (they may be the per-platform
    manifests of a kept multi-platform index); `keep_images` >= 1 (`validate_image_builds`)."""
    return json.dumps(
        {
            "rules": [
                {
                    "rulePriority": 1,
                    "description": "keep the BuildKit layer cache",
                    "selection": {
                        "tagStatus": "tagged",
                        "tagPrefixList": [CACHE_TAG],
                        "countType": "imageCountMoreThan",
                        "countNumber": 1,
                    },
                    "action": {"type": "expire"},
                },
                {
                    "rulePriority": 2,
                    "description": f"keep the last {keep_images} builds",
                    "selection": {
                        "tagStatus": "tagged",
                        "tagPrefixList": [TAG_PREFIX],
                        "countType": "imageCountMoreThan",
                        "countNumber": keep_images,
                    },
                    "action": {"type": "expire"},
                },
            ]
        },
        sort_keys=True,
    )


@dataclass(frozen=True)
class ImageBuildsArgs:
    """What to build (the plan's `Plan.builds`, and the stack's ECR prefix)."""

    images: Mapping[str, tuple[str, ...]]
    """Image name (`vllm`, `neuron`, `reranker`) -> Docker platforms."""
    repository_prefix: str
    """ECR repositories are `<prefix>/<image>` (e.g. `ecs-inference/dev`)."""
    keep_images: int = DEFAULT_KEEP_IMAGES
    """Builds each repository keeps (the lifecycle policy)."""
    force_delete: bool = False
    """Whether deleting the stack may delete repositories that still hold images."""


def validate_image_builds(args: ImageBuildsArgs) -> None:
    """Reject unknown images, platforms the image cannot run on and an empty request."""
    if not args.images:
        raise ImageBuildError("no image to build")
    if args.keep_images < 1:
        raise ImageBuildError(f"keep_images must be >= 1, got {args.keep_images}")
    if not REPOSITORY_NAME.match(f"{args.repository_prefix}/vllm"):
        raise ImageBuildError(
            f"repository_prefix {args.repository_prefix!r} is not a valid ECR repository path "
            "(lowercase letters, digits, and . _ - / between them)"
        )
    for image, platforms in args.images.items():
        allowed = (
            set(RERANKER_PLATFORMS.values())
            if image == "reranker"
            else set(image_platforms().get(image, ()))
        )
        if not allowed:
            known = ", ".join(sorted({*image_platforms(), "reranker"}))
            raise ImageBuildError(f"unknown image {image!r} (known: {known})")
        if not platforms or not set(platforms) <= allowed:
            raise ImageBuildError(
                f"image {image!r} builds for {sorted(allowed)}, got {list(platforms)}"
            )


class ImageBuilds(pulumi.ComponentResource):
    """Repositories and builds. Attributes: `repositories` and `images` (by image name),
    `references` (image name -> Output of `<registry>/<repository>:<content tag>`)."""

    repositories: dict[str, aws.ecr.Repository]
    """ECR repository per image."""
    images: dict[str, pulumi.CustomResource]
    """The build per image (`pulumi_docker_build.Image`, imported only when the stack builds)."""
    references: dict[str, pulumi.Output[str]]
    """The pushed reference per image (what the tasks run): known at preview, depending on
    the push."""

    def __init__(
        self, name: str, args: ImageBuildsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        validate_image_builds(args)
        super().__init__(TOKEN, name, None, opts)
        self._name = name
        self._child = pulumi.ResourceOptions(parent=self)
        self._invoke = pulumi.InvokeOutputOptions(parent=self)
        self._ctx = aws_context(self)
        self.repositories = {}
        self.images = {}
        self.references = {}
        for image, platforms in sorted(args.images.items()):
            repo = self._repository(image, args)
            self.repositories[image] = repo
            self.images[image], self.references[image] = self._build(image, platforms, repo)
        self.register_outputs({f"{k}Image": v for k, v in self.references.items()})

    def _repository(self, image: str, args: ImageBuildsArgs) -> aws.ecr.Repository:
        """The image's repository and its lifecycle policy."""
        repo = aws.ecr.Repository(
            f"{self._name}-{image}",
            name=f"{args.repository_prefix}/{image}",
            # Tags never move (a tag re-pointed under a running service would hide what is
            # deployed, and the content tag is what ECS runs), except the build cache, which
            # every build overwrites.
            image_tag_mutability="IMMUTABLE_WITH_EXCLUSION",
            image_tag_mutability_exclusion_filters=[
                aws.ecr.RepositoryImageTagMutabilityExclusionFilterArgs(
                    filter=CACHE_TAG, filter_type="WILDCARD"
                )
            ],
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(
                scan_on_push=True
            ),
            encryption_configurations=[
                aws.ecr.RepositoryEncryptionConfigurationArgs(encryption_type="AES256")
            ],
            force_delete=args.force_delete,
            # The name is unique in the registry and a new encryption replaces the repository:
            # the old one goes first (refused while it holds images, unless `force_delete`), and
            # the build is replaced with it (`replace_with` below), so the new one is pushed to.
            opts=pulumi.ResourceOptions.merge(
                self._child, pulumi.ResourceOptions(delete_before_replace=True)
            ),
        )
        aws.ecr.LifecyclePolicy(
            f"{self._name}-{image}",
            repository=repo.name,
            policy=lifecycle_policy(args.keep_images),
            opts=self._child,
        )
        return repo

    def _build(
        self, image: str, platforms: Sequence[str], repo: aws.ecr.Repository
    ) -> tuple[pulumi.CustomResource, pulumi.Output[str]]:
        """The build of `image` pushed to `repo`, and the reference the tasks run."""
        # Imported here: the plan (and every stack that does not build) needs only the pure
        # helpers above, and the provider SDK costs ~55 ms of import on every preview.
        import pulumi_docker_build as docker_build

        ctx = self._ctx
        # The repository's address from its name (what its `repositoryUrl` gets): known at
        # preview, and depending on the repository.
        url = pulumi.Output.all(repo.name, ctx.account_id, ctx.region, ctx.dns_suffix).apply(
            lambda a: ecr_repository_uri(a[0], account=a[1], region=a[2], dns_suffix=a[3])
        )
        # The private registry's id is the account's (`registryId`).
        registries = [_registry(ctx.account_id, self._invoke)]
        build_args: dict[str, pulumi.Input[str]] = {}
        base_account = _base_image_account(image)
        if base_account is not None:
            registries.append(_registry(base_account, self._invoke))
            build_args["DLC_REGION"] = ctx.region
        tag = pulumi.Output.from_input(build_args).apply(
            # Resolved: the values are plain strings here.
            lambda values: content_tag(image, platforms, cast("dict[str, str]", values))
        )
        pushed = pulumi.Output.all(url, tag).apply(lambda a: f"{a[0]}:{a[1]}")
        cache = url.apply(lambda u: f"{u}:{CACHE_TAG}")
        built = docker_build.Image(
            f"{self._name}-{image}",
            context=docker_build.BuildContextArgs(
                location=f"{IMAGES_DIR}/{image}",
                named={
                    ctx_name: docker_build.ContextArgs(location=path)
                    for ctx_name, path in NAMED_CONTEXTS.items()
                },
            ),
            dockerfile=docker_build.DockerfileArgs(location=f"{IMAGES_DIR}/{image}/Dockerfile"),
            platforms=[docker_build.Platform(p) for p in platforms],
            push=True,
            tags=[pushed],
            build_args=build_args or None,
            registries=registries,
            cache_from=[
                docker_build.CacheFromArgs(registry=docker_build.CacheFromRegistryArgs(ref=cache))
            ],
            # ECR only stores a cache exported as an OCI image manifest.
            cache_to=[
                docker_build.CacheToArgs(
                    registry=docker_build.CacheToRegistryArgs(
                        ref=cache,
                        mode=docker_build.CacheMode.MAX,
                        image_manifest=True,
                        oci_media_types=True,
                    )
                )
            ],
            # Pulling a 10+ GB engine base on every preview is not worth it; hadolint checks
            # the Dockerfiles and the build runs on `pulumi up`.
            build_on_preview=False,
            opts=pulumi.ResourceOptions.merge(
                self._child, pulumi.ResourceOptions(replace_with=[repo])
            ),
        )
        # The build's URN is known at preview (its digest is not): reading it puts the push
        # among the reference's dependencies without making the reference unknown.
        reference = pulumi.Output.all(pushed, built.urn).apply(lambda a: a[0])
        return built, reference


def _base_image_account(image: str) -> str | None:
    """The account of the ECR registry an engine image's Dockerfile builds FROM (the build logs
    in to it; its DLC_REGION build argument is the stack's region so one login covers it)."""
    if image not in engines.names():
        return None
    return engines.get(image).base_image_account


def _registry(
    registry_id: pulumi.Input[str], invoke: pulumi.InvokeOutputOptions
) -> docker_build.RegistryArgs:
    """Short-lived (12 h) credentials for one ECR registry, from the provider's own AWS
    identity; the password stays a secret in the state."""
    import pulumi_docker_build as docker_build

    token = aws.ecr.get_authorization_token_output(registry_id=registry_id, opts=invoke)
    return docker_build.RegistryArgs(
        address=token.proxy_endpoint.apply(lambda e: e.removeprefix("https://")),
        username=token.user_name,
        password=pulumi.Output.secret(token.password),
    )
