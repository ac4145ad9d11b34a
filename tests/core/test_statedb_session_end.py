"""A later process knows where an older compacted session ends without walking its index entries
(issue 23, gap 1: ``status --json`` at 1M rows asked ``MAX(id)`` of each older session through
Hermes 0.19's ``idx_messages_session(session_id, timestamp)``, all of the session's entries,
~3 MB each; 0.20+ have a ``(session_id, id)`` index, 0.19 does not).

The track stored in memdeck.db keeps the session's ``message_count`` beside its ``last_id``; a later
process checks them with two index probes (the ``sessions`` row, ``MAX(id)`` of the *active* rows
through ``idx_messages_session_active``) and, when the window's signature is unchanged too, takes
the stored events without reading a row. Everything that could move the session's end is seen.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from memdeck.core.deck import db as deckdb
from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.statedb import reference_compactions

#: the statement that walks every index entry of a session on Hermes 0.19
FULL_END = re.compile(r"SELECT MAX\(id\) FROM messages WHERE session_id = (\?|'[^']*')$")  # traced: parameters bound


def _home(tmp_path: Path) -> tuple[Path, sqlite3.Connection, float]:
    """An older session compacted in place three times and ended, at the lowest ids; then a live
    session holding the rest (the shape of a long-lived home, bench/bighome.py generator 2)."""
    home = tmp_path / "home"
    home.mkdir()
    conn = hs.create_state_db(home / "state.db")
    hs.add_session(conn, "old", started_at=1)
    t = 10.0
    for k in range(3):
        for i in range(40):
            t += 1.0
            hs.append_message(conn, "old", "user" if i % 2 else "assistant", f"old turn {k}.{i}", timestamp=t)
        hs.compact_in_place(conn, "old", f"summary {k} of the old session", keep_head=2, keep_tail=4, now=t + 0.5)
    for i in range(6):
        t += 1.0
        hs.append_message(conn, "old", "user" if i % 2 else "assistant", f"old after {i}", timestamp=t)
    hs.end_session(conn, "old", "new_session", ended_at=t)
    hs.add_session(conn, "live", started_at=t)
    for i in range(300):
        t += 1.0
        hs.append_message(conn, "live", "user" if i % 2 else "assistant", f"live turn {i}", timestamp=t)
    deckdb.connect(home).close()
    return home, conn, t


@pytest.fixture
def traced(monkeypatch, tmp_path: Path) -> list[str]:
    """Every SQL statement the state.db readers run (their connections traced), and a long walk
    from a short distance (``LONG_WALK_IDS`` 0: every read past the top asks where it ends)."""
    statements: list[str] = []
    orig = StateDB._open

    def opening(self):
        fresh = self._conn is None
        conn = orig(self)
        if fresh and Path(self.path).is_relative_to(tmp_path):  # not an earlier test's reader still ending
            conn.set_trace_callback(lambda s: statements.append(" ".join(s.split())))
        return conn

    monkeypatch.setattr(StateDB, "_open", opening)
    monkeypatch.setattr(StateDB, "LONG_WALK_IDS", 0)
    return statements


@pytest.fixture
def streamed(monkeypatch, tmp_path: Path) -> list[int]:
    seen: list[int] = []
    orig = StateDB._stream_batches

    def counting(self, conn, session_id, from_id, progress=None, **kw):
        if not Path(self.path).is_relative_to(tmp_path):  # an earlier test's reader still ending
            yield from orig(self, conn, session_id, from_id, progress, **kw)
            return
        for batch in orig(self, conn, session_id, from_id, progress, **kw):
            seen.extend(int(r[0]) for r in batch if session_id == "old")
            yield batch
    monkeypatch.setattr(StateDB, "_stream_batches", counting)
    return seen


def _full_end_asked(statements: list[str]) -> int:
    return sum(1 for s in statements if FULL_END.search(s))


def test_a_later_process_asks_no_full_index_walk_and_reads_no_row_of_an_unchanged_session(
        tmp_path: Path, traced: list[str], streamed: list[int]) -> None:
    home, conn, _ = _home(tmp_path)
    p = home / "state.db"
    ref = reference_compactions(p)
    assert len([e for e in ref if e.session_id == "old"]) == 3
    assert StateDB(p).compactions() == ref             # first process: builds and stores the track
    stored = json.loads(deckdb.load_session_track(home, "old")["track"])
    assert stored["count"] == conn.execute("SELECT message_count FROM sessions WHERE id = 'old'").fetchone()[0]
    traced.clear()
    streamed.clear()
    assert StateDB(p).compactions() == ref             # a later process
    assert _full_end_asked(traced) == 0
    assert streamed == []
    conn.close()


def test_the_stored_end_probe_reads_only_the_active_entries_on_a_0_19_state_db(tmp_path: Path) -> None:
    """EXPLAIN QUERY PLAN on Hermes 0.19's schema (core/sessions/hermes_schema.py, checked equal to
    the real one by tests/interop/test_statedb_hermes.py): the probe searches
    ``idx_messages_session_active`` by ``(session_id, active)``; the full ``MAX(id)`` can only
    search by ``session_id``."""
    home, conn, _ = _home(tmp_path)
    conn.close()
    ro = sqlite3.connect(home / "state.db")
    names = {r[0] for r in ro.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages'")}
    assert "idx_messages_session_active" in names
    assert not any("session_id, id" in (r[0] or "") for r in ro.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages'"))  # 0.19: no (session_id, id)
    plan = " ".join(r[3] for r in ro.execute(
        "EXPLAIN QUERY PLAN SELECT MAX(id) FROM messages WHERE session_id = ? AND active = 1", ("old",)))
    assert "idx_messages_session_active (session_id=? AND active=?)" in plan
    full = " ".join(r[3] for r in ro.execute("EXPLAIN QUERY PLAN SELECT MAX(id) FROM messages WHERE session_id = ?", ("old",)))
    assert "(session_id=?)" in full and "active=?" not in full
    ro.close()


@pytest.mark.parametrize("change", ["append", "compact", "replace_live", "late_rows_then_compacted", "rewrite_live"])
def test_whatever_moves_the_end_or_the_window_is_seen(tmp_path: Path, traced: list[str], streamed: list[int],
                                                      change: str) -> None:
    home, conn, t = _home(tmp_path)
    p = home / "state.db"
    assert StateDB(p).compactions() == reference_compactions(p)
    last = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = 'old'").fetchone()[0]
    if change == "append":                # Hermes appends to a resumed session
        hs.append_message(conn, "old", "user", "a late turn in the old session", timestamp=t + 1)
    elif change == "compact":             # and compacts it
        for i in range(10):
            hs.append_message(conn, "old", "user" if i % 2 else "assistant", f"resumed {i}", timestamp=t + 1 + i)
        hs.compact_in_place(conn, "old", "summary 3 of the resumed session", keep_head=2, keep_tail=4, now=t + 20)
    elif change == "replace_live":        # replace_messages(active_only=True): live rows deleted, new ones inserted
        conn.execute("DELETE FROM messages WHERE session_id = 'old' AND active = 1")
        for i in range(3):
            hs.append_message(conn, "old", "user" if i % 2 else "assistant", f"replaced {i}", timestamp=t + 1 + i)
        conn.execute("UPDATE sessions SET message_count = 6 WHERE id = 'old'")  # the count it had: only the rows tell
    elif change == "late_rows_then_compacted":  # rows above the stored end, then archived by a compaction
        hs.append_message(conn, "old", "user", "late 1", timestamp=t + 1)
        hs.compact_in_place(conn, "old", "summary of the late rows", keep_head=2, keep_tail=1, now=t + 2)
    else:                                 # 0.22's set_user_message_content: a live row rewritten in place
        rid = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = 'old' AND active = 1 AND role = 'assistant'").fetchone()[0]
        conn.execute("UPDATE messages SET content = ? WHERE id = ?", ("[CONTEXT COMPACTION] a rewritten turn", rid))
    ref = reference_compactions(p)
    streamed.clear()
    assert StateDB(p).compactions() == ref
    assert streamed  # the session was read again
    if change != "rewrite_live":
        assert max(streamed) > last  # up to its new end
    # and that later process stored what it found: the next one reads nothing again
    streamed.clear()
    assert StateDB(p).compactions() == ref
    assert streamed == [] or change in ("append", "replace_live", "rewrite_live")  # no new compaction: track kept as stored
    conn.close()


def test_a_track_stored_before_the_end_was_kept_is_stored_again_with_it(tmp_path: Path, traced: list[str],
                                                                        streamed: list[int]) -> None:
    home, conn, _ = _home(tmp_path)
    p = home / "state.db"
    ref = reference_compactions(p)
    assert StateDB(p).compactions() == ref
    d = deckdb.connect(home)
    for sid, text in d.execute("SELECT session_id, track FROM session_tracks").fetchall():  # as an older memdeck stored it
        old = {k: v for k, v in json.loads(text).items() if k not in ("count", "pending", "window")}
        d.execute("UPDATE session_tracks SET track = ? WHERE session_id = ?", (json.dumps(old), sid))
    d.close()
    traced.clear()
    streamed.clear()
    assert StateDB(p).compactions() == ref
    assert _full_end_asked(traced) >= 1 and streamed     # it had to ask, once
    assert "count" in json.loads(deckdb.load_session_track(home, "old")["track"])
    traced.clear()
    streamed.clear()
    assert StateDB(p).compactions() == ref
    assert _full_end_asked(traced) == 0 and streamed == []
    conn.close()
