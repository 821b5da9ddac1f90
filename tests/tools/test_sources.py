"""The committed tables under contracts/flags and contracts/env are what their upstream
sources define: every one is declared by exactly one `tools.sources` module, and each read from
PyPI wheels is re-extracted here and compared byte for byte (`python -m tools.sources` rewrites
them). A table read from a checkout (a source not on PyPI) has its reader tested on a sample by
its engine's tests instead."""

from __future__ import annotations

import json

import pytest

from ecs_inference.contracts import env_table
from tools import engine_flags, sources
from tools.sources import __main__ as cli
from tools.sources.common import CONTRACTS, Table

WHEEL_TABLES = [t for t in sources.tables() if t.checkout is None]


@pytest.mark.parametrize("table", WHEEL_TABLES, ids=lambda t: f"{t.kind}/{t.stem}")
def test_committed_table_is_what_the_pinned_release_defines(table: Table) -> None:
    assert table.render(engine_flags.CACHE_DIR) == table.path.read_text(encoding="utf-8"), (
        f"rerun `python -m tools.sources {table.stem}`"
    )


def test_every_committed_table_is_declared_once() -> None:
    committed = sorted(p for kind in ("flags", "env") for p in (CONTRACTS / kind).glob("*.json"))
    declared = sorted(t.path for t in sources.tables())
    assert declared == committed


def test_each_table_names_its_release() -> None:
    for table in sources.tables():
        head = json.loads(table.path.read_text(encoding="utf-8"))
        assert table.stem.endswith(f"-{head['version']}"), table.path
        assert table.checkout is not None or table.releases, f"{table.stem}: no source"


def test_every_environment_table_a_contract_names_is_a_source_table() -> None:
    stems = {t.stem for t in sources.tables() if t.kind == "env"}
    assert {owner.table for owner in env_table.owners()} <= stems


def test_prefetch_covers_every_release_a_table_reads() -> None:
    releases = sources.releases()
    assert len(set(releases)) == len(releases)
    assert {r for t in WHEEL_TABLES for r in t.releases} == set(releases)


def test_a_checkout_table_is_not_rebuilt_without_its_checkout(capsys) -> None:
    (table, *_) = [t for t in sources.tables() if t.checkout is not None]
    with pytest.raises(SystemExit) as exit_:
        cli.main([table.stem])
    assert exit_.value.code == 2
    assert f"{table.stem} is read from a checkout of {table.checkout}" in capsys.readouterr().err


def test_an_unknown_stem_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["no-such-1.0"])
    assert "no table no-such-1.0" in capsys.readouterr().err
