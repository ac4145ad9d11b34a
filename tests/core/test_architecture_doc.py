"""docs/ARCHITECTURE.md's first figure is the parts table (core/overview/parts.py), and the table
itself is well formed: a part missing from the doc, a part or module the doc names that does not
exist, or a part taking an input nothing fills fails here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from memdeck.core.overview import parts
from memdeck.core.overview.snapshot import DeckSnapshot

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _figure_in_doc() -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"## The read spine: watcher -> parts -> snapshot -> views\n.*?```\n(.*?)\n```", text, re.DOTALL)
    assert m, "docs/ARCHITECTURE.md lost its read-spine figure"
    return m.group(1)


def _part_rows(figure: str) -> list[str]:
    lines = figure.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["part", "inputs"]) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "▼")
    return [lines[i].split()[0] for i in range(start, end)]


def test_the_first_figure_is_drawn_from_the_parts_table() -> None:
    figure = _figure_in_doc()
    text = DOC.read_text(encoding="utf-8")
    assert text.index("```\n") + 4 == text.index(figure), "the read spine is not the doc's first figure"
    names = _part_rows(figure)
    table = [p.name for p in parts.PARTS]
    assert [n for n in table if n not in names] == [], "parts missing from docs/ARCHITECTURE.md"
    assert [n for n in names if n not in table] == [], "docs/ARCHITECTURE.md names parts that do not exist"
    assert figure == parts.figure(), "regenerate the figure: python -m memdeck.core.overview.parts"


def test_every_module_the_figure_names_exists() -> None:
    paths = re.findall(r"\b((?:core|tui)/[\w/]+(?:\.py|/))", _figure_in_doc())
    assert paths
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_the_table_is_well_formed() -> None:
    fields = {f.name for f in dataclasses.fields(DeckSnapshot)}
    panels = set(__import__("memdeck.core.overview.snapshot", fromlist=["PANELS"]).PANELS)
    filled: set[str] = set()
    for p in parts.PARTS:
        assert all(f in fields or f.startswith("_") for f in p.fills), p.name
        assert p.name in p.fills, p.name
        for i in p.inputs:
            assert i in parts.SOURCE_INPUTS or i in filled, f"{p.name} takes {i}, which no earlier part fills"
        assert ("unfinished" in p.inputs) == (p.unfinished is not None), p.name
        assert set(p.panels) <= panels, p.name
        assert not (set(p.fills) & filled), f"{p.name} fills a field another part fills"
        filled |= set(p.fills)
    # every field the snapshot shows from its sources is some part's (the rest: the read's own)
    own = {"taken_at", "home", "config", "errors", "notices", "warnings", "stamps", "partial"}
    assert fields - filled == own
