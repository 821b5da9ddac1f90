"""Decide whether an image gets a SOCI index, from its registry manifest.

Fargate (Linux platform version 1.4.0 or later) starts a container before its image has finished
downloading when the image in a private ECR repository comes with a SOCI index; AWS says it is
worth it for images larger than roughly 250 MiB compressed, and that zstd-compressed layers are
not supported (Amazon ECS Developer Guide, "Lazy loading container images using Seekable OCI").
The SOCI snapshotter builds a zTOC only for layers of at least 10 MiB (`soci convert
--min-layer-size`, default 10 MiB), so what counts is the compressed size of those layers.

Input: the image manifest as the registry serves it (`docker buildx imagetools inspect --raw`),
on stdin or from a file. Output (stdout, `key=value` lines for `$GITHUB_OUTPUT`): `convert=true`
or `convert=false`, the compressed and indexable sizes in MiB, and a one-line `reason`.
Exit 2 when the input is not a single-platform image manifest. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

MIN_COMPRESSED_MIB = 250
"""AWS's rule of thumb for when SOCI lazy loading pays off on Fargate."""
MIN_LAYER_MIB = 10
"""`soci convert` default `--min-layer-size`: smaller layers are pulled eagerly anyway."""
_MIB = 1024 * 1024
_IMAGE_MANIFESTS = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)


class ManifestError(ValueError):
    """Not a single-platform image manifest."""


@dataclass(frozen=True)
class SociPlan:
    """Whether to convert, with the numbers behind it."""

    convert: bool
    compressed_mib: float
    indexable_mib: float
    reason: str

    def github_output(self) -> str:
        return (
            f"convert={'true' if self.convert else 'false'}\n"
            f"compressed-mib={self.compressed_mib:.0f}\n"
            f"indexable-mib={self.indexable_mib:.0f}\n"
            f"reason={self.reason}\n"
        )


def plan(
    manifest: Mapping[str, object], min_compressed_mib: float = MIN_COMPRESSED_MIB
) -> SociPlan:
    """Apply the rule to one image manifest (`min_compressed_mib` default 250)."""
    media_type = manifest.get("mediaType")
    layers = manifest.get("layers")
    if media_type not in _IMAGE_MANIFESTS or not isinstance(layers, list) or not layers:
        raise ManifestError(
            f"expected a single-platform image manifest, got mediaType {media_type!r}; inspect "
            "the platform's manifest, not an index"
        )
    total = indexable = 0
    zstd: list[str] = []
    for layer in layers:
        if not isinstance(layer, Mapping) or not isinstance(layer.get("size"), int):
            raise ManifestError("a layer has no integer size")
        size = int(layer["size"])  # pyright: ignore[reportArgumentType]
        total += size
        if size >= MIN_LAYER_MIB * _MIB:
            indexable += size
        if "zstd" in str(layer.get("mediaType", "")):
            zstd.append(str(layer.get("digest", "?"))[:19])
    compressed, index_mib = total / _MIB, indexable / _MIB
    if zstd:
        return SociPlan(
            False,
            compressed,
            index_mib,
            f"zstd-compressed layers ({', '.join(zstd)}): Fargate's SOCI does not support zstd; "
            "build with gzip compression to lazy-load",
        )
    if compressed <= min_compressed_mib:
        return SociPlan(
            False,
            compressed,
            index_mib,
            f"{compressed:.0f} MiB compressed is at most {min_compressed_mib:g} MiB: a plain "
            "pull is as quick",
        )
    if index_mib == 0:
        return SociPlan(
            False, compressed, 0.0, f"no layer reaches {MIN_LAYER_MIB} MiB: nothing to index"
        )
    return SociPlan(
        True,
        compressed,
        index_mib,
        f"{compressed:.0f} MiB compressed ({index_mib:.0f} MiB in layers of at least "
        f"{MIN_LAYER_MIB} MiB) is above {min_compressed_mib:g} MiB",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `python3 tools/soci_plan.py [manifest.json] [--min-compressed-mib N]`."""
    parser = argparse.ArgumentParser(description="Decide whether an image gets a SOCI index.")
    parser.add_argument("manifest", nargs="?", type=Path, help="manifest JSON (default: stdin)")
    parser.add_argument("--min-compressed-mib", type=float, default=MIN_COMPRESSED_MIB)
    ns = parser.parse_args(argv)
    text = ns.manifest.read_text(encoding="utf-8") if ns.manifest else sys.stdin.read()
    try:
        decision = plan(json.loads(text), ns.min_compressed_mib)
    except (ManifestError, json.JSONDecodeError) as exc:
        print(f"soci_plan: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(decision.github_output())
    return 0


if __name__ == "__main__":
    sys.exit(main())
