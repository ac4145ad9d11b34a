"""core/history/: migration, diff rules, attribution by memdeck's journal, anchors, bounds."""

from __future__ import annotations

import functools
import json
import sqlite3
import time

import pytest

from memdeck.core import history
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.deck import journal
from memdeck.core.errors import MemdeckError, Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from tests.helpers.memory import write_raw


def test_v1_database_is_migrated_keeping_its_rows(hermes_home: HermesHome) -> None:
    path = deckdb.db_path(hermes_home)
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.executescript(deckdb.MIGRATIONS[0])
    conn.execute("INSERT INTO journal (ts, actor, op, kind, target) VALUES (1.0, 'cli', 'add', 'memory', 'memory')")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    c = deckdb.connect(hermes_home)
    assert c.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION == len(deckdb.MIGRATIONS)
    assert c.execute("SELECT COUNT(*) FROM journal").fetchone()[0] == 1
    assert c.execute("SELECT COUNT(*) FROM history").fetchone()[0] == 0


@pytest.mark.parametrize(("old", "new", "want"), [
    (["a", "b"], ["a"], [("removed", "b", None)]),
    (["a"], ["a", "c"], [("added", None, "c")]),
    # one out, one in at the same place: replaced even if dissimilar (Hermes' replace keeps the index)
    (["keep", "totally old"], ["keep", "XYZ 123"], [("replaced", "totally old", "XYZ 123")]),
    # similar texts pair up even when the positions differ
    (["User lives in Leeds.", "x1", "y1"], ["y1", "User lives in York.", "zzzzzz"],
     [("replaced", "User lives in Leeds.", "User lives in York."), ("removed", "x1", None), ("added", None, "zzzzzz")]),
])
def test_diff_entries(old, new, want) -> None:
    assert history.diff_entries(old, new) == want


def test_first_sight_is_a_baseline_then_changes_are_attributed(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "one\n§\ntwo")
    assert history.observe(hermes_home) == []
    assert history.observe(hermes_home) == []  # nothing changed: no row
    s = MemoryStore(hermes_home, Config(), actor="tui")
    s.remove("memory", "two")
    write_raw(hermes_home, "memory", "one\n§\nthree")  # a manual edit after memdeck's write
    got = history.observe(hermes_home)
    assert [(c.op, c.before, c.after, c.actor) for c in got] == [
        ("removed", "two", None, "tui"), ("added", None, "three", "external")]
    assert got[0].attribution["journal_id"] == journal.entries(hermes_home, 1)[0].journal_id
    assert [c.change_id for c in history.list_changes(hermes_home)] == [got[1].change_id, got[0].change_id]
    assert history.list_changes(hermes_home, target="user") == []


def test_whitespace_drift_is_not_a_change(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "one\n§\ntwo")
    history.observe(hermes_home)
    write_raw(hermes_home, "memory", "one  \n§\n two\n")
    assert history.observe(hermes_home) == []


def test_history_is_bounded(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "")
    history.observe(hermes_home)
    for i in range(6):
        write_raw(hermes_home, "memory", f"entry {i}")
        history.observe(hermes_home, keep=4)
    rows = history.list_changes(hermes_home, limit=100)
    assert len(rows) == 4 and rows[0].after == "entry 5"


def test_anchor_removed_outside_memdeck_is_recorded_and_reverted(hermes_home: HermesHome) -> None:
    store = AnchorStore(hermes_home, Config())
    a = store.pin("Never deploy on Fridays.", session_id="s1")
    history.observe(hermes_home)
    path = store.find_session_file("s1")
    data = json.loads(path.read_text())
    del data["anchors"][a.id]
    path.write_text(json.dumps(data))
    ch = history.observe(hermes_home)
    assert [(c.op, c.target, c.scope, c.session_id, c.actor, c.anchor_id) for c in ch] == [
        ("anchor_removed", None, "session", "s1", "external", a.id)]
    res = history.revert(hermes_home, Config(), ch[0].change_id)
    assert store.load_session("s1").anchors[a.id].text == "Never deploy on Fridays."
    newest = history.list_changes(hermes_home, limit=1)[0]
    assert (newest.op, newest.actor, newest.attribution["journal_id"]) == ("anchor_added", "cli", res["journal_id"])
    with pytest.raises(Refused) as exc:
        history.revert(hermes_home, Config(), ch[0].change_id)
    assert exc.value.code == "conflict"


def test_anchor_revert_is_write_ahead_a_locked_memdeck_db_leaves_the_session_file_untouched(
        hermes_home: HermesHome, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal row is committed before the session file is replaced (issue 13): when
    memdeck.db cannot take the row, the revert is an error and the file keeps its bytes (the
    journal-after-write order replaced the file first and then failed)."""
    store = AnchorStore(hermes_home, Config())
    a = store.pin("Never deploy on Fridays.", session_id="s1")
    history.observe(hermes_home)
    path = store.find_session_file("s1")
    data = json.loads(path.read_text())
    data["anchors"][a.id]["text"] = "Deploy whenever."
    path.write_text(json.dumps(data))
    (ch,) = history.observe(hermes_home)
    before = path.read_bytes()
    monkeypatch.setattr(deckdb, "connect", functools.partial(deckdb.connect, timeout=0.2))
    other = sqlite3.connect(str(deckdb.db_path(hermes_home)), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(MemdeckError, match="locked"):
            history.revert(hermes_home, Config(), ch.change_id)
        assert path.read_bytes() == before
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert [r.op for r in journal.intents(hermes_home, "anchor")] == []
    res = history.revert(hermes_home, Config(), ch.change_id)  # memdeck.db free again: the revert goes through
    row = journal.get(hermes_home, res["journal_id"])
    assert row is not None and (row.op, row.state, row.target, row.session_id) == ("revert", "done", None, "s1")
    assert row.detail == {"anchor_id": a.id, "change_id": ch.change_id, "change_op": "anchor_changed"}
    assert json.loads(row.after)["text"] == "Never deploy on Fridays."
    assert store.load_session("s1").anchors[a.id].text == "Never deploy on Fridays."
    assert history.get_change(hermes_home, ch.change_id).reverted_by == res["journal_id"]


def test_revert_unknown_change_is_refused(hermes_home: HermesHome) -> None:
    with pytest.raises(Refused) as exc:
        history.revert(hermes_home, Config(), 999)
    assert exc.value.code == "not_found"


def test_observe_is_cheap_when_nothing_changed(hermes_home: HermesHome) -> None:
    write_raw(hermes_home, "memory", "\n§\n".join(f"entry {i}" for i in range(50)))
    history.observe(hermes_home)
    conn = deckdb.connect(hermes_home)
    t = time.perf_counter()
    for _ in range(50):
        history.observe(hermes_home, conn=conn)
    assert (time.perf_counter() - t) / 50 < 0.01


def test_a_pending_copy_is_kept_while_its_file_is_there_and_forgotten_a_week_after_it_is_gone(hermes_home: HermesHome) -> None:
    """``remember_pending`` forgets a staged write's copy older than 7 days only when its file is
    gone: a write pending for weeks keeps its attribution (the copy was dropped at 7 days, and
    every later process read and parsed the record again)."""
    from memdeck.core.history.attribution import remember_pending

    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    (d / "a1.json").write_text(json.dumps({"id": "a1", "payload": {"action": "add", "target": "memory",
                                                                   "content": "x"}}), encoding="utf-8")
    (d / "b2.json").write_text(json.dumps({"id": "b2", "payload": {"action": "add", "target": "user",
                                                                   "content": "y"}}), encoding="utf-8")
    t0 = 1_800_000_000.0
    conn = deckdb.connect(hermes_home)
    try:
        remember_pending(conn, hermes_home, t0)
        (d / "b2.json").unlink()
        remember_pending(conn, hermes_home, t0 + 8 * 86400)
        kept = {(p, at) for p, at in conn.execute("SELECT path, seen_at FROM history_seen WHERE kind = 'pending'")}
    finally:
        conn.close()
    assert kept == {("pending/memory/a1.json", t0)}


def test_cli_history_keeps_the_date_of_a_window_across_midnight(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39 item 8: ``05:22:40 .. 03:22:03`` read as a window going backwards; the end now
    carries its date when it falls on another day than the start."""
    import datetime as dt

    from memdeck.core.cli.history_cmds import _show
    from memdeck.core.history.changes import Change

    since = dt.datetime(2026, 7, 22, 23, 50, 1).timestamp()  # local time, as the CLI prints it
    until = dt.datetime(2026, 7, 23, 0, 10, 2).timestamp()
    _show(Change(1, "memory", "memory", "memories/MEMORY.md", "added", None, "a fact", since, until, "cli"))
    _show(Change(2, "memory", "memory", "memories/MEMORY.md", "added", None, "a fact", until, until + 60, "cli"))
    first, _, second, _ = capsys.readouterr().out.splitlines()
    assert "2026-07-22 23:50:01 .. 2026-07-23 00:10:02" in first
    assert "2026-07-23 00:10:02 .. 00:11:02" in second  # the same day: the time alone
