"""The README stays true: the configuration reference matches the schema, and every policy the
pack serves is listed with its default level."""

from __future__ import annotations

import re
from pathlib import Path

from tools import config_reference

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_configuration_reference_is_generated_from_the_schema() -> None:
    assert config_reference.main(["--check"]) == 0, (
        "README configuration reference is stale: run python -m tools.config_reference --write"
    )
    # and the generator really covers nested sections
    text = config_reference.render()
    for key in (
        "platform.models.<name>.maxModelLen",
        "platform.gpuPools.<name>.warmPool.minSize",
        "platform.rerankers.<name>.needMemoryMib",
        "platform.endpoint.auth.apiScopes",
    ):
        assert f"`{key}`" in text


def test_readme_lists_every_policy_with_its_default_level(pack_info) -> None:
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| (mandatory|advisory) \|", README, re.M))
    served = {p["name"]: p["enforcementLevel"] for p in pack_info["policies"]}
    assert rows == served


def test_readme_opens_with_the_two_commands() -> None:
    head = README[: README.index("## Deploy")]
    assert "make preview" in head and "make test" in head
