"""contracts/staging.py: the S3 staging and checkpoint check the Neuron and TGI entrypoints share.

The S3 client is a stand-in over a local directory (one folder per bucket) with boto3's
call shapes: `list_objects_v2` pages of at most `page_size` keys, `download_file`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_inference.contracts.envparse import ConfigError
from ecs_inference.contracts.staging import (
    RUNAI_STREAMER,
    WeightsError,
    check_runai_streamer,
    check_weights_dir,
    stage_s3_prefix,
)


class _Paginator:
    def __init__(self, client: FakeS3) -> None:
        self.client = client

    def paginate(self, *, Bucket: str, Prefix: str) -> list[dict[str, Any]]:  # noqa: N803
        keys = sorted(k for k in self.client.objects(Bucket) if k.startswith(Prefix))
        size = self.client.page_size
        return [
            {"Contents": [{"Key": k, "Size": len(self.client.objects(Bucket)[k])} for k in chunk]}
            for chunk in (keys[i : i + size] for i in range(0, len(keys), size))
        ] or [{}]  # an empty listing is one page without Contents


class FakeS3:
    """Buckets are dicts of key -> bytes; records every download."""

    def __init__(self, buckets: dict[str, dict[str, bytes]], page_size: int = 1000) -> None:
        self.buckets = buckets
        self.page_size = page_size
        self.downloads: list[str] = []

    def objects(self, bucket: str) -> dict[str, bytes]:
        return self.buckets[bucket]

    def get_paginator(self, operation_name: str, /) -> _Paginator:
        assert operation_name == "list_objects_v2"
        return _Paginator(self)

    def download_file(self, bucket: str, key: str, filename: str, /) -> None:
        self.downloads.append(key)
        Path(filename).write_bytes(self.buckets[bucket][key])


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_stages_the_prefix_and_only_the_prefix(tmp_path: Path) -> None:
    s3 = FakeS3(
        {
            "models": {
                "llama-8b/config.json": b"{}",
                "llama-8b/shards/model-1.safetensors": b"12345",
                "llama-8b/": b"",  # a console-created "folder" marker
                "llama-8b-old/config.json": b"stale",  # a sibling the prefix must not match
                "other/x": b"x",
            }
        },
        page_size=1,
    )
    fetched = stage_s3_prefix(s3, "s3://models/llama-8b", tmp_path)
    assert fetched == 2
    assert _tree(tmp_path) == {"config.json": b"{}", "shards/model-1.safetensors": b"12345"}


def test_a_second_run_keeps_files_of_the_same_size_and_refetches_the_rest(tmp_path: Path) -> None:
    s3 = FakeS3({"b": {"m/config.json": b"{}", "m/w.safetensors": b"abc"}})
    assert stage_s3_prefix(s3, "s3://b/m/", tmp_path) == 2
    (tmp_path / "w.safetensors").write_bytes(b"truncated")
    s3.downloads.clear()
    assert stage_s3_prefix(s3, "s3://b/m/", tmp_path) == 1
    assert s3.downloads == ["m/w.safetensors"]
    assert (tmp_path / "w.safetensors").read_bytes() == b"abc"


def test_a_whole_bucket_stages_with_no_prefix(tmp_path: Path) -> None:
    s3 = FakeS3({"b": {"config.json": b"{}", "a/b.bin": b"1"}})
    assert stage_s3_prefix(s3, "s3://b", tmp_path) == 2
    assert set(_tree(tmp_path)) == {"config.json", "a/b.bin"}


def test_a_key_escaping_the_model_directory_is_refused(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    s3 = FakeS3({"b": {"m/../../etc/passwd": b"root"}})
    with pytest.raises(WeightsError, match="escapes"):
        stage_s3_prefix(s3, "s3://b/m/", model_dir)
    assert not (tmp_path / "etc").exists()


@settings(max_examples=30, deadline=None)
@given(
    files=st.dictionaries(
        st.lists(st.from_regex(r"[a-z0-9_.-]{1,8}", fullmatch=True), min_size=1, max_size=3)
        .map("/".join)
        .filter(lambda k: all(part not in (".", "..") for part in k.split("/"))),
        st.binary(max_size=16),
        max_size=8,
    ),
    page_size=st.integers(1, 4),
)
def test_staging_reproduces_any_prefix_tree(
    tmp_path_factory: pytest.TempPathFactory, files: dict[str, bytes], page_size: int
) -> None:
    # A key that is also another key's folder cannot exist on disk; S3 allows it.
    keys = set(files)
    files = {k: v for k, v in files.items() if not any(o.startswith(k + "/") for o in keys)}
    model_dir = tmp_path_factory.mktemp("model")
    s3 = FakeS3({"b": {f"p/{k}": v for k, v in files.items()}}, page_size=page_size)
    assert stage_s3_prefix(s3, "s3://b/p/", model_dir) == len(files)
    assert _tree(model_dir) == files
    assert stage_s3_prefix(s3, "s3://b/p/", model_dir) == 0


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (None, "does not exist"),
        ({"model.safetensors": b""}, "no config.json"),
        ({"config.json": b"{}", "tokenizer.json": b"{}"}, "no *.safetensors or *.bin weights"),
    ],
)
def test_a_directory_without_a_checkpoint_is_refused(
    tmp_path: Path, files: dict[str, bytes] | None, message: str
) -> None:
    directory = tmp_path / "weights"
    if files is not None:
        directory.mkdir()
        for name, data in files.items():
            (directory / name).write_bytes(data)
    with pytest.raises(WeightsError, match=message.replace("*", r"\*")):
        check_weights_dir(directory)


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_a_checkpoint_directory_is_accepted(tmp_path: Path, weights: str) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / weights).write_bytes(b"\0")
    check_weights_dir(tmp_path)


def test_streaming_from_s3_needs_the_runai_streamer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, RUNAI_STREAMER, raising=False)
    if importlib.util.find_spec(RUNAI_STREAMER) is None:  # true in the project venv
        with pytest.raises(ConfigError, match=f"{RUNAI_STREAMER} is not installed"):
            check_runai_streamer()
    (tmp_path / RUNAI_STREAMER).mkdir()
    (tmp_path / RUNAI_STREAMER / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    check_runai_streamer()
