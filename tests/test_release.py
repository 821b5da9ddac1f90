"""One version and a licence: pyproject.toml's version is the project's, the policy pack's
manifest and the running pack report the same one, and the changelog's newest entry is it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from google.protobuf import empty_pb2

from tools.analyzer_client import PolicyPackProcess

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_version_is_semantic() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


def test_the_pack_manifest_states_the_project_version() -> None:
    manifest = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert str(manifest["version"]) == VERSION


def test_the_running_pack_reports_the_project_version() -> None:
    """GetAnalyzerInfo straight from the pack (the client would fill in the manifest's): the
    version its own `<pack>@v<version>` diagnostics name."""
    with PolicyPackProcess(ROOT / "policy") as pack:
        reply = pack._call("GetAnalyzerInfo", empty_pb2.Empty())  # pyright: ignore[reportPrivateUsage]
    assert reply.version == VERSION


def test_the_changelog_opens_with_the_project_version() -> None:
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == VERSION


def test_the_licence_is_the_full_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    for section in range(1, 10):
        assert f"\n   {section}. " in text, f"section {section} missing"
    assert "END OF TERMS AND CONDITIONS" in text
    license_field = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert license_field == "Apache-2.0"
