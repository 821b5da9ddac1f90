"""SOCI for the Fargate re-ranker: the size/compression rule and the deploy workflow's use of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import soci_plan

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / ".github" / "workflows" / "deploy.yml"
MIB = 1024 * 1024
GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def manifest(*layers: tuple[int, str], media_type: str = soci_plan._IMAGE_MANIFESTS[0]) -> dict:
    return {
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": 1},
        "layers": [
            {"mediaType": kind, "size": size, "digest": f"sha256:{i:064x}"}
            for i, (size, kind) in enumerate(layers)
        ],
    }


@pytest.mark.parametrize(
    ("layers", "convert", "fragment"),
    [
        (((30 * MIB, GZIP), (200 * MIB, GZIP)), False, "230 MiB compressed is at most 250"),
        (((250 * MIB, GZIP),), False, "at most 250"),
        (((200 * MIB, GZIP), (60 * MIB, DOCKER_GZIP), (MIB, GZIP)), True, "is above 250"),
        (((300 * MIB, "application/vnd.oci.image.layer.v1.tar+zstd"),), False, "zstd"),
        (tuple((9 * MIB, GZIP) for _ in range(40)), False, "nothing to index"),
    ],
)
def test_the_rule(layers, convert, fragment):
    decision = soci_plan.plan(manifest(*layers))
    assert decision.convert is convert
    assert fragment in decision.reason
    assert decision.compressed_mib == pytest.approx(sum(size for size, _ in layers) / MIB)


def test_small_layers_do_not_count_as_indexable():
    decision = soci_plan.plan(manifest((300 * MIB, GZIP), (5 * MIB, GZIP)))
    assert decision.indexable_mib == pytest.approx(300)


def test_an_index_is_refused_with_a_clear_error():
    index = {"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []}
    with pytest.raises(soci_plan.ManifestError, match="not an index"):
        soci_plan.plan(index)


def test_cli_writes_github_outputs(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest((400 * MIB, GZIP))))
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "soci_plan.py"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    assert lines["convert"] == "true" and lines["compressed-mib"] == "400"
    path.write_text("{}")
    bad = subprocess.run(
        [sys.executable, str(REPO / "tools" / "soci_plan.py"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("soci_plan: ")


def _images_job() -> dict:
    return yaml.safe_load(DEPLOY.read_text())["jobs"]["images"]


def test_deploy_indexes_only_the_fargate_image_and_deploys_what_it_produced():
    steps = _images_job()["steps"]
    names = [s.get("name", s.get("uses", "")) for s in steps]
    soci = next(s for s in steps if s.get("id") == "soci")
    assert names.index(soci["name"]) > names.index("Build and push")
    assert soci["if"] == "${{ matrix.image == 'reranker' }}"
    script = soci["run"]
    assert "tools/soci_plan.py" in script
    assert "soci convert --standalone" in script
    assert 'sha256sum --check "$asset.sha256sum"' in script
    assert soci["env"]["SOCI_VERSION"].count(".") == 2  # pinned, not "latest"
    record = next(s for s in steps if s.get("name") == "Record the digest")
    assert record["env"]["DIGEST"] == (
        "${{ steps.soci.outputs.digest || steps.build.outputs.digest }}"
    )
    # the re-ranker is the only image that runs on Fargate, the only place SOCI applies
    platforms = {i["image"]: i["platform"] for i in _images_job()["strategy"]["matrix"]["include"]}
    assert platforms["reranker"] == "linux/arm64"


def test_buildx_pushes_gzip_layers_so_soci_can_index_them():
    build = next(s for s in _images_job()["steps"] if s.get("name") == "Build and push")
    outputs = str(build["with"].get("outputs", ""))
    assert "zstd" not in outputs and "compression" not in outputs
