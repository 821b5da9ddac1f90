"""The generated doc sections (`tools.doc_section`): stale is exit 1, `--write` splices the block
between its markers and leaves the rest of the doc alone, a doc without markers is an error."""

from __future__ import annotations

from pathlib import Path

from tools.doc_section import ROOT, DocSection

BEGIN, END = "<!-- t:begin -->", "<!-- t:end -->"


def _section(tmp_path: Path, text: str) -> DocSection:
    doc = tmp_path / "doc.md"
    doc.write_text(text)
    return DocSection(doc, BEGIN, END, "tools.example")


def test_a_stale_block_fails_the_check_and_write_mends_only_the_block(tmp_path, monkeypatch):
    monkeypatch.setattr("tools.doc_section.ROOT", tmp_path)
    section = _section(tmp_path, f"head\n{BEGIN}\nold\n{END}\ntail\n")
    block = f"{BEGIN}\nnew\n{END}"
    assert section.main(["--check"], block, "d") == 1
    assert section.main(["--write"], block, "d") == 0
    assert section.doc.read_text() == f"head\n{block}\ntail\n"
    assert section.main(["--check"], block, "d") == 0


def test_a_doc_without_markers_is_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("tools.doc_section.ROOT", tmp_path)
    section = _section(tmp_path, "no markers\n")
    assert section.main(["--write"], f"{BEGIN}\n{END}", "d") == 1
    assert "markers" in capsys.readouterr().err
    assert section.doc.read_text() == "no markers\n"


def test_the_docs_root_is_the_repository() -> None:
    assert (ROOT / "docs" / "configuration.md").is_file()
