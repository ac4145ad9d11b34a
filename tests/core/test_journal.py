"""Journal rows for every change, and undo of the last change when the file still holds it."""

from __future__ import annotations

from memdeck.core.undo import undo

import pytest

from memdeck.core.deck import archive

from memdeck.core.deck import journal
from memdeck.core.config import Config
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from tests.helpers.memory import write_raw


def text(home: HermesHome, target: str = "memory") -> str:
    p = home.memory_file(target)
    return p.read_text() if p.exists() else ""


def test_every_mutation_is_journaled(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config(), actor="tui")
    s.add("memory", "a")
    s.replace("memory", "a", "b")
    s.remove("memory", "b")
    rows = journal.entries(hermes_home, limit=10)
    assert [(r.op, r.actor, r.kind, r.target) for r in rows] == [
        ("remove", "tui", "memory", "memory"), ("replace", "tui", "memory", "memory"), ("add", "tui", "memory", "memory")]
    assert (rows[1].before, rows[1].after) == ("a", "b")
    assert rows[2].detail["text"] == "a"


def test_journal_is_generic_over_kind(hermes_home: HermesHome) -> None:
    jid = journal.record(hermes_home, actor="plugin", op="pin", kind="anchor", target="pin_1", before=None,
                         after='{"text": "x"}', detail={"session": "s"})
    assert journal.get(hermes_home, jid).detail == {"session": "s"}
    assert journal.entries(hermes_home, kind="memory") == []
    with pytest.raises(ValueError):
        journal.record(hermes_home, actor="cli", op="x", kind="bogus", target="t", before=None, after=None)


def test_undo_walks_back_and_refuses_on_conflict(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "a")
    s.add("memory", "b")
    undo(hermes_home, Config())
    assert text(hermes_home) == "a"
    undo(hermes_home, Config())
    assert text(hermes_home) == ""
    with pytest.raises(Refused) as ei:
        undo(hermes_home, Config())
    assert ei.value.code == "nothing"
    s.add("memory", "c")
    write_raw(hermes_home, "memory", "c\n§\nadded by hermes")
    with pytest.raises(Refused) as ei:
        undo(hermes_home, Config())
    assert ei.value.code == "conflict" and text(hermes_home) == "c\n§\nadded by hermes"


def test_undo_move_reverts_both_files(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "x")
    s.move("memory", "x", "user")
    undo(hermes_home, Config())
    assert (text(hermes_home), text(hermes_home, "user")) == ("x", "")


def test_undo_archive_marks_the_row_restored(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "x")
    aid = s.archive(None, "x").archive_id
    undo(hermes_home, Config())
    assert text(hermes_home) == "x" and archive.get(hermes_home, aid).state == "restored"


def test_undo_refuses_when_budget_shrank(hermes_home: HermesHome) -> None:
    MemoryStore(hermes_home, Config()).add("memory", "a" * 50)
    MemoryStore(hermes_home, Config()).remove("memory", "aaa")
    with pytest.raises(Refused) as ei:
        undo(hermes_home, Config(memory_char_limit=10))
    assert ei.value.code == "overflow" and text(hermes_home) == ""
