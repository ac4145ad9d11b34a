"""A refresh costs what changed, on the real long-lived shape (issue 23).

A long-lived home: older sessions, each compacted (in place, some also rotated), ended, at the
lowest row ids, then the live one. One reader stays open (the dashboard) while Hermes goes on:
appends, compactions, rotations, ``/new``, rewinds, rows of other sessions. After every step its
events equal a fresh full scan (``tests.helpers.statedb.reference_compactions``), and the rows it
read belong only to the sessions that changed: a session with no new row costs nothing, and no
refresh reads the file ahead.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdeck.core.sessions import compaction_events
from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.statedb import reference_compactions

#: Per-session reads of the reader (the ones a refresh must not spend on an unchanged session).
_SESSION_READS = ("_stream_batches", "_window_sig", "_session_rows", "_first_row_id", "_session_sig")


def _long_lived(p: Path, *, older: int = 4, rows: int = 30) -> tuple[sqlite3.Connection, str, float]:
    """``older`` ended sessions (two in-place compactions each; every second one rotated into a
    child that ends too) at the lowest ids, then the live session with one compaction."""
    conn = hs.create_state_db(p)
    t = 10.0
    for k in range(older):
        sid = f"old{k}"
        hs.add_session(conn, sid, started_at=t)
        for c in range(2):
            for i in range(rows):
                t += 1.0
                hs.append_message(conn, sid, "user" if i % 2 else "assistant", f"old {k}.{c}.{i}", timestamp=t)
            hs.compact_in_place(conn, sid, f"summary {k}.{c}", keep_head=2, keep_tail=4, now=t + 0.5)
        if k % 2:
            t += 1.0
            sid = hs.rotate(conn, sid, f"old{k}child", f"rotation {k}", now=t)
            for i in range(5):
                t += 1.0
                hs.append_message(conn, sid, "user", f"after rotation {k}.{i}", timestamp=t)
        hs.end_session(conn, sid, "cli_close", ended_at=t)
    hs.add_session(conn, "live", started_at=t)
    for i in range(rows):
        t += 1.0
        hs.append_message(conn, "live", "user" if i % 2 else "assistant", f"live {i}", timestamp=t)
    hs.compact_in_place(conn, "live", "live summary", keep_head=2, keep_tail=4, now=t + 0.5)
    return conn, "live", t


class _Reads:
    """Which sessions the reader asked about, per step (its per-session reads wrapped)."""

    def __init__(self, reader: StateDB, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sessions: set[str] = set()
        self.first_scans: set[str] = set()  # sessions streamed as a first scan (the only reads that read ahead)
        self.read_ahead: list[int] = []
        for name in _SESSION_READS:
            orig = getattr(reader, name)

            def wrapped(conn, session_id, *a, _orig=orig, **kw):
                self.sessions.add(session_id)
                if kw.get("first_scan"):
                    self.first_scans.add(session_id)
                return _orig(conn, session_id, *a, **kw)
            monkeypatch.setattr(reader, name, wrapped)
        real = compaction_events.read_ahead

        def spy(path, rows, **kw):
            self.read_ahead.append(rows)
            return real(path, rows, **kw)
        monkeypatch.setattr(compaction_events, "read_ahead", spy)

    def take(self) -> set[str]:
        out, self.sessions = self.sessions, set()
        return out


def _assert_same(reader: StateDB, p: Path) -> None:
    ref = reference_compactions(p)
    assert reader.compactions() == ref
    counts: dict[str, int] = {}
    for ev in ref:
        counts[ev.session_id] = counts.get(ev.session_id, 0) + 1
    assert {s.id: s.compactions for s in reader.sessions()} == {s.id: counts.get(s.id, 0) for s in reader.sessions()}


def test_an_appended_message_reads_only_the_live_session(tmp_path: Path, monkeypatch) -> None:
    """The issue's cause: each refresh streamed every closed compacted session's "rows since its
    last id" up to the top of the table (and read the file ahead when that span was long)."""
    p = tmp_path / "state.db"
    conn, live, t = _long_lived(p)
    reader = StateDB(p)
    _assert_same(reader, p)
    reads = _Reads(reader, monkeypatch)
    for i in range(3):
        t += 1.0
        hs.append_message(conn, live, "user", f"one more {i}", timestamp=t)
        reads.take()
        _assert_same(reader, p)
        assert reads.take() <= {live}
    assert all(rows == 0 for rows in reads.read_ahead)  # no refresh reads ahead
    # a row of another, non-compacted session: only that one is asked about
    hs.add_session(conn, "side", started_at=t)
    hs.append_message(conn, "side", "user", "meanwhile", timestamp=t + 1)
    reads.take()
    _assert_same(reader, p)
    assert reads.take() <= {"side"}
    conn.close()
    reader.close()


def test_with_no_change_in_messages_nothing_is_read_per_session(tmp_path: Path, monkeypatch) -> None:
    """A commit that adds no row and changes no session row of interest (Hermes' token counters)
    reads no session's rows."""
    p = tmp_path / "state.db"
    conn, _live, _t = _long_lived(p)
    reader = StateDB(p)
    _assert_same(reader, p)
    reads = _Reads(reader, monkeypatch)
    conn.execute("UPDATE sessions SET input_tokens = input_tokens + 10 WHERE id = 'live'")
    conn.commit()
    _assert_same(reader, p)
    assert reads.take() == set()
    conn.close()
    reader.close()


@pytest.mark.parametrize("session_active_index", [True, False])
def test_the_change_queries_use_an_index(tmp_path: Path, session_active_index: bool) -> None:
    """The queries of a refresh go through the primary key or a Hermes index on every schema
    (0.17-0.22 all have ``idx_messages_session(session_id, timestamp)`` and
    ``idx_messages_session_active(session_id, active, timestamp)``; docs/HERMES_VERSIONS.md)."""
    p = tmp_path / "state.db"
    conn, _live, _t = _long_lived(p, older=2)
    if not session_active_index:
        conn.execute("DROP INDEX idx_messages_session_active")
        conn.commit()
    reader = StateDB(p)
    reader.compactions()
    plans: list[tuple[str, str]] = []

    def explain(c: sqlite3.Connection, sql: str, params: tuple) -> None:
        plans.append((sql, " | ".join(str(r[3]) for r in c.execute("EXPLAIN QUERY PLAN " + sql, params))))

    def probe(c: sqlite3.Connection) -> None:
        cols = reader._row_columns(("session_id", "active", "compacted", "content"))
        explain(c, f"SELECT {cols} FROM messages WHERE id > ? AND id <= ?", (1, 2))
        explain(c, "SELECT COALESCE(MAX(id), 0) FROM messages", ())
        if reader._session_active_index:
            explain(c, "SELECT 1 FROM sessions s WHERE s.id = ? AND EXISTS (SELECT 1 FROM messages m"
                       " WHERE m.session_id = s.id AND m.active = 0 AND m.compacted = 1)", ("live",))
        else:
            explain(c, "SELECT 1 FROM messages WHERE session_id = ? AND compacted = 1 LIMIT 1", ("live",))
    reader._run(probe, None)
    assert reader._session_active_index is session_active_index
    for sql, plan in plans:
        assert "SCAN messages" not in plan.replace("SCAN messages USING", "index"), (sql, plan)
    assert "INTEGER PRIMARY KEY" in plans[0][1]
    assert "idx_messages_session" in plans[2][1]
    conn.close()
    reader.close()


# ----------------------------------------------------------------------------- property test

_OP = st.one_of(
    st.tuples(st.just("msg"), st.sampled_from(["plain words", "[bracketed]", "  [CONTEXT SUMMARY]: pasted", ""])),
    st.tuples(st.just("compact"), st.integers(1, 3), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("rotate"),),
    st.tuples(st.just("new"),),
    st.tuples(st.just("rewind"), st.integers(0, 3)),
    st.tuples(st.just("old_msg"), st.integers(0, 3)),
    st.tuples(st.just("other_msg"),),
    st.tuples(st.just("tokens"),),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OP, min_size=1, max_size=20))
def test_a_reader_beside_a_long_lived_home_matches_a_full_scan_and_reads_only_what_changed(
        tmp_path_factory, monkeypatch_session, ops) -> None:
    d = tmp_path_factory.mktemp("live")
    p = d / "state.db"
    conn, live, t = _long_lived(p, older=4, rows=12)
    reader = StateDB(p)
    _assert_same(reader, p)
    with monkeypatch_session.context() as mp:
        reads = _Reads(reader, mp)
        for n, op in enumerate(ops, start=1):
            t += 10.0
            changed = {live}
            reads.read_ahead.clear()
            rows = [r[0] for r in conn.execute(
                "SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (live,))]
            if op[0] == "msg":
                hs.append_message(conn, live, "user" if n % 2 else "assistant", f"{op[1]} #{n}", timestamp=t)
            elif op[0] == "compact" and len(rows) >= 2:
                hs.compact_in_place(conn, live, f"summary at {t}", keep_head=min(op[1], len(rows)), keep_tail=op[2],
                                    now=t, merge_into_tail=op[3])
            elif op[0] == "rotate" and rows:
                new = f"live{n}"
                hs.rotate(conn, live, new, f"rotation at {t}", now=t)
                changed, live = {live, new}, new
            elif op[0] == "new":  # /new: the live session ends, a new one starts
                new = f"new{n}"
                hs.end_session(conn, live, "new_session", ended_at=t)
                hs.add_session(conn, new, started_at=t)
                hs.append_message(conn, new, "user", "hello", timestamp=t + 1)
                changed, live = {live, new}, new
            elif op[0] == "rewind" and rows:
                hs.rewind(conn, live, rows[max(0, len(rows) - 1 - op[1])])
            elif op[0] == "old_msg":  # a rare row in an old, ended session
                sid = f"old{op[1]}"
                hs.append_message(conn, sid, "user", f"late row #{n}", timestamp=t)
                changed = {sid}
            elif op[0] == "other_msg":
                if not conn.execute("SELECT 1 FROM sessions WHERE id = 'elsewhere'").fetchone():
                    hs.add_session(conn, "elsewhere", started_at=t)
                hs.append_message(conn, "elsewhere", "user", "meanwhile", timestamp=t)
                changed = {"elsewhere"}
            elif op[0] == "tokens":
                conn.execute("UPDATE sessions SET input_tokens = input_tokens + 1 WHERE id = ?", (live,))
                conn.commit()
                changed = set()
            else:
                changed = set()
            reads.take()
            tracked = set(reader._tracks)
            _assert_same(reader, p)
            asked = reads.take()
            # a rotation pair is read together (its child's handoff depends on the parent's rows)
            partners = {str(r[0]) for s in changed for r in conn.execute(
                "SELECT id FROM sessions WHERE parent_session_id = ? UNION SELECT parent_session_id FROM sessions"
                " WHERE id = ? AND parent_session_id IS NOT NULL", (s, s))}
            assert asked <= changed | partners, (ops, op, asked, changed)
            # only a session first compacted now is scanned as a first scan (may read ahead): not a
            # rebuild after a rewind, never a session that did not change
            assert reads.first_scans <= changed - tracked, (ops, op)
            assert not [r for r in reads.read_ahead if r] or reads.first_scans, (ops, op)
            reads.first_scans.clear()
    later = StateDB(p)  # a later process (stored tracks and rotation events) agrees too
    assert later.compactions() == reference_compactions(p)
    later.close()
    conn.close()
    reader.close()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def monkeypatch_session():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_a_later_process_reads_an_older_session_only_up_to_its_last_row(tmp_path: Path) -> None:
    """A later process resuming an older session's stored track reads from its checkpoint to the
    session's last row: not to the top of the table, and no chunk of ids past that row (each
    chunk asked for 20,000 ids: 8 MB of other sessions' rows per older session at 200k rows)."""
    import re

    from memdeck.core.deck import db as deckdb

    home = tmp_path / "home"
    home.mkdir()
    p = home / "state.db"
    conn, live, t = _long_lived(p, older=2, rows=30)
    for i in range(3000):  # the live session goes on far above the older ones
        t += 1.0
        hs.append_message(conn, live, "user" if i % 2 else "assistant", f"more {i}", timestamp=t)
    deckdb.connect(home).close()
    first = StateDB(p)
    assert first.compactions() == reference_compactions(p)  # stores the tracks
    first.close()
    last_of = {sid: int(conn.execute("SELECT MAX(id) FROM messages WHERE session_id = ?", (sid,)).fetchone()[0])
               for sid in ("old0", "old1")}
    later = StateDB(p)
    later.LONG_WALK_IDS = 100  # the test home is small: walks of more ids ask where a session ends
    asked: list[str] = []
    later.status()
    later._conn.set_trace_callback(asked.append)
    assert later.compactions() == reference_compactions(p)
    def spans_of(statements: list[str]) -> list[tuple[int, int, str]]:
        return [(int(m.group(1)), int(m.group(2)), m.group(3)) for s in statements
                if (m := re.search(r"WHERE id >= (\d+) AND id < (\d+) AND \+session_id = '([^']+)'", s))]

    # unchanged since their tracks were stored: not read at all (issue 23 gap 1: the stored end)
    assert [s for _lo, _hi, s in spans_of(asked) if s in last_of] == []
    later.close()
    # a row appended to old0 since: its window is read again, up to its last row and no further
    t += 1.0
    hs.append_message(conn, "old0", "user", "a late turn", timestamp=t)
    last_of["old0"] = int(conn.execute("SELECT MAX(id) FROM messages WHERE session_id = 'old0'").fetchone()[0])
    later = StateDB(p)
    later.LONG_WALK_IDS = 100
    asked.clear()
    later.status()
    later._conn.set_trace_callback(asked.append)
    assert later.compactions() == reference_compactions(p)
    spans = spans_of(asked)
    mine = [(lo, hi) for lo, hi, s in spans if s == "old0"]
    assert mine, spans
    assert all(hi <= last_of["old0"] + 1 for _lo, hi in mine), (last_of, mine)
    assert not [s for _lo, _hi, s in spans if s == "old1"]
    later.close()
    conn.close()
