"""Stage the model bundle from S3 into MODEL_DIR at container start.

Models are never pulled from a model hub: the task role reads the bundle prepare.py produced
from the stack's own bucket, through the VPC's S3 gateway endpoint (no NAT needed). Only
botocore is used (no boto3/s3transfer): a bundle is a handful of files under ~100 MB, streamed
sequentially, and every dependency left out of the image shortens the Fargate image pull.

Files are written to a temporary name and renamed, and a `.staged` marker is written last, so a
task killed mid-download never serves a truncated model on a restarted container.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from contracts import reranker as c

LOG = logging.getLogger("reranker.staging")
MARKER = ".staged"
_CHUNK = 1 << 20


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """Split `s3://bucket/prefix` into (bucket, prefix-with-trailing-slash-or-empty)."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, prefix = uri[5:].partition("/")
    if not bucket:
        raise ValueError(f"S3 URI has no bucket: {uri!r}")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


def local_path(dest: Path, prefix: str, key: str) -> Path | None:
    """Where `key` lands under `dest`; None for folder markers or keys escaping `dest`."""
    rel = PurePosixPath(key[len(prefix) :])
    if not rel.parts or key.endswith("/") or any(p in ("..", "") for p in rel.parts):
        return None
    return dest.joinpath(*rel.parts)


def required_files(variant: str) -> tuple[str, ...]:
    """Files MODEL_DIR must hold to serve `variant` ("auto": the model file is the one
    reranker.json names as its default, checked once that is read)."""
    model = () if variant == c.VARIANT_AUTO else (c.MODEL_VARIANTS[variant],)
    return (*model, c.TOKENIZER_FILE, c.MODEL_CONFIG_FILE)


def missing_files(model_dir: Path, variant: str) -> list[str]:
    """Required files absent from `model_dir` (empty when the bundle is complete)."""
    return [name for name in required_files(variant) if not (model_dir / name).is_file()]


def _list_keys(client: Any, bucket: str, prefix: str) -> Iterable[str]:
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            yield obj["Key"]


def stage_from_s3(uri: str, dest: Path, variant: str, client: Any | None = None) -> list[Path]:
    """Download every object under `uri` into `dest`; return the files written.

    Skips the download when `dest` already holds a complete, marked bundle (container restart).
    `client` is a botocore S3 client (default: one from the task role's credentials).
    Raises FileNotFoundError if the prefix lacks a file that `variant` needs.
    """
    if (dest / MARKER).exists() and not missing_files(dest, variant):
        LOG.info("model already staged in %s", dest)
        return []
    if client is None:
        import botocore.session

        client = botocore.session.get_session().create_client("s3")
    bucket, prefix = parse_s3_uri(uri)
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for key in _list_keys(client, bucket, prefix):
        target = local_path(dest, prefix, key)
        if target is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".part")
        body = client.get_object(Bucket=bucket, Key=key)["Body"]
        with open(tmp, "wb") as fh:
            while chunk := body.read(_CHUNK):
                fh.write(chunk)
        os.replace(tmp, target)
        written.append(target)
        LOG.info("staged s3://%s/%s (%d bytes)", bucket, key, target.stat().st_size)
    missing = missing_files(dest, variant)
    if missing:
        raise FileNotFoundError(f"{uri} lacks {missing} needed for MODEL_VARIANT={variant}")
    (dest / MARKER).write_text(uri + "\n")
    return written
