"""Journal rows for every change, and undo of the last change when the file still holds it."""

from __future__ import annotations

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import archive, journal
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from memdeck.core.undo import undo
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
    jid = journal.record(hermes_home, actor="plugin", op="pin", kind="anchor", scope="session", session_id="s",
                         before=None, after='{"text": "x"}', detail={"anchor_id": "pin_1"})
    row = journal.get(hermes_home, jid)
    assert row.detail == {"anchor_id": "pin_1"}
    assert (row.target, row.scope, row.session_id, row.where) == (None, "session", "s", "s")
    assert row.to_dict()["target"] is None and row.to_dict()["session_id"] == "s"
    assert journal.entries(hermes_home, kind="memory") == []
    with pytest.raises(ValueError):
        journal.record(hermes_home, actor="cli", op="x", kind="bogus", target="t", before=None, after=None)


@pytest.mark.parametrize("kw", [
    {"kind": "anchor", "target": "s1", "scope": "session", "session_id": "s1"},  # target means memory/user only
    {"kind": "anchor", "scope": "session"},                                       # a session change names its session
    {"kind": "anchor", "scope": "sess", "session_id": "s1"},                      # MemLock's scopes only
    {"kind": "memory", "target": "global"},
    {"kind": "memory", "target": "memory", "session_id": "s1"},
])
def test_a_row_whose_target_scope_or_session_does_not_fit_its_kind_is_refused(hermes_home: HermesHome, kw) -> None:
    journal.record(hermes_home, actor="cli", op="add", kind="memory", target="user", before=None, after="a")
    with pytest.raises(ValueError):
        journal.record(hermes_home, actor="cli", op="x", before=None, after=None, **kw)
    assert [r.op for r in journal.entries(hermes_home)] == ["add"]  # nothing written


def test_a_global_anchor_row_has_no_session(hermes_home: HermesHome) -> None:
    jid = journal.record(hermes_home, actor="cli", op="pin", kind="anchor", scope="global", before=None, after="{}",
                         detail={"anchor_id": "p1"})
    row = journal.get(hermes_home, jid)
    assert (row.target, row.scope, row.session_id, row.where) == (None, "global", None, "global")


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
    write_raw(hermes_home, "memory", "c, edited by hermes\n§\nadded by hermes")  # the added entry is gone
    with pytest.raises(Refused) as ei:
        undo(hermes_home, Config())
    assert ei.value.code == "conflict" and text(hermes_home) == "c, edited by hermes\n§\nadded by hermes"


def test_undo_after_another_writer_reverts_only_its_own_entries(hermes_home: HermesHome) -> None:
    """Issue 22: an undo decides per entry; Hermes' entries written since stay."""
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "a")
    s.add("memory", "b")
    s.replace("memory", "a", "a2")
    write_raw(hermes_home, "memory", "a2\n§\nb\n§\nadded by hermes")
    undo(hermes_home, Config())
    assert text(hermes_home) == "a\n§\nb\n§\nadded by hermes"  # back in its place
    write_raw(hermes_home, "memory", "added by hermes\n§\na\n§\nb")
    undo(hermes_home, Config())  # the add of b
    assert text(hermes_home) == "added by hermes\n§\na"


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
