"""Model weights on the task's local disk: staging an S3 prefix and checking a checkpoint.

Shared by the engine entrypoints: the Neuron image stages its precompiled artifact and the TGI
image its checkpoint; images that read EFS read a directory in place; streaming images read S3
with the Run:ai model streamer. The caller passes the S3 client (boto3's, which only the
staging images install), so this module stays standard library only and the tests stage from a
local stand-in.

Python 3.10-compatible (the Neuron DLC's interpreter).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Protocol

from .envparse import ConfigError

RUNAI_STREAMER = "runai_model_streamer"
"""The Run:ai model streamer's module: `--load-format runai_streamer` needs it."""


class WeightsError(RuntimeError):
    """The weights cannot be served (the entrypoints exit 1)."""


class S3Client(Protocol):
    """The two calls of boto3's S3 client that staging makes."""

    def get_paginator(self, operation_name: str, /) -> Any: ...

    def download_file(self, bucket: str, key: str, filename: str, /) -> None: ...


def stage_s3_prefix(s3: S3Client, uri: str, model_dir: Path) -> int:
    """Download every object under the S3 prefix `uri` (`s3://bucket/prefix/`) into `model_dir`
    and return how many files were fetched.

    Files already there with the object's size are kept (the entrypoint ran before in the same
    container); directory markers (keys ending in `/`) are skipped. Raises WeightsError for a
    key that would land outside `model_dir`."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    # Listing is by key prefix: without the slash `llama-8b` would also match `llama-8b-old/`.
    prefix = prefix.rstrip("/") + "/" if prefix else ""
    root = model_dir.resolve()
    fetched = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            relative = obj["Key"][len(prefix) :]
            if not relative or relative.endswith("/"):
                continue
            target = (model_dir / relative).resolve()
            if root not in target.parents:
                raise WeightsError(f"object key {obj['Key']!r} escapes {model_dir}")
            if target.is_file() and target.stat().st_size == obj["Size"]:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, obj["Key"], str(target))
            fetched += 1
    return fetched


def check_weights_dir(directory: Path) -> None:
    """Raise WeightsError unless `directory` holds a Hugging Face checkpoint an engine can load
    offline: `config.json` and `*.safetensors` or `*.bin` weights. Without them the engine would
    try to download or convert weights from the hub, which the images forbid."""
    if not directory.is_dir():
        raise WeightsError(
            f"{directory} does not exist: the EFS volume is not mounted there or the path in "
            "weightsUri is wrong"
        )
    if not (directory / "config.json").is_file():
        raise WeightsError(f"{directory} has no config.json: not a model directory")
    if not any(directory.glob("*.safetensors")) and not any(directory.glob("*.bin")):
        raise WeightsError(f"{directory} has no *.safetensors or *.bin weights")


def check_runai_streamer() -> None:
    """Raise ConfigError unless the Run:ai model streamer is importable in this image (a
    streaming engine would otherwise fail mid-load with a traceback)."""
    if importlib.util.find_spec(RUNAI_STREAMER) is None:
        raise ConfigError(
            f"{RUNAI_STREAMER} is not installed in this image; "
            "--load-format runai_streamer cannot stream weights from S3"
        )
