"""Issue 13 #9/#10: entry texts that would not read back as written.

#9: text whose canonical join does not round-trip (ending in ``\\n§``, starting with ``§\\n``,
containing ``\\n§\\n``) would merge with or split from its neighbours: refused, file untouched.
#10: a CR inside an entry is read back by Hermes 0.19 as LF (``_read_file`` uses
``Path.read_text``: universal newlines, ``tools/memory_tool.py:702``), so memdeck stores the
LF form: undo works and a re-add is a no-op, not a hidden duplicate.
"""

from __future__ import annotations

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import journal
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import entry_id, parse_entries
from memdeck.core.memory.store import MemoryStore


@pytest.mark.parametrize("text", ["ends with\n§", "has\n§\ninside", "a\n§\n\n§\nb"])
@pytest.mark.parametrize("op", ["add", "replace"])
def test_text_that_does_not_round_trip_is_refused(hermes_home: HermesHome, text: str, op: str) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "first")
    s.add("memory", "last")
    before = hermes_home.memory_file("memory").read_bytes()
    with pytest.raises(Refused) as info:
        if op == "add":
            s.add("memory", text)
        else:
            s.replace("memory", "first", text)
    assert info.value.code == "delimiter"
    assert "§" in info.value.reason
    assert hermes_home.memory_file("memory").read_bytes() == before


def test_section_sign_inside_a_line_is_still_fine(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    r = s.add("memory", "price § 5\nnext § line")
    assert parse_entries(hermes_home.memory_file("memory").read_text()) == ["price § 5\nnext § line"]
    assert r.entry_id == entry_id("price § 5\nnext § line")


@pytest.mark.parametrize("text", ["line one\r\nline two", "line one\rline two"])
def test_cr_is_stored_as_hermes_reads_it(hermes_home: HermesHome, text: str) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "keep")
    r = s.add("memory", text)
    assert b"\r" not in hermes_home.memory_file("memory").read_bytes()
    assert r.entry_id == entry_id("line one\nline two")
    again = s.add("memory", text)
    assert again.changed is False  # no hidden duplicate
    s.undo_rows(journal.last_undoable(hermes_home))
    assert parse_entries(hermes_home.memory_file("memory").read_text()) == ["keep"]
