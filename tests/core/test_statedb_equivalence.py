"""The fast compaction scan gives exactly the events of the slow, obvious one.

``tests.helpers.statedb.reference_compactions`` is a frozen copy of the reconstruction before
the reader was made faster (every row decoded, compacted sessions found by a full scan). Every
database here is compared event for event: the full scan, per-session scans, session counts.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdeck.core.deck import db as deckdb
from memdeck.core.demo import build_demo_home
from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.compaction import LEGACY_SUMMARY_PREFIX, SUMMARY_LEAD
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.statedb import build_history, reference_compactions


def _assert_same(path: Path) -> list:
    ref = reference_compactions(path)
    db = StateDB(path)
    assert db.compactions() == ref
    counts: dict[str, int] = {}
    for ev in ref:
        counts[ev.session_id] = counts.get(ev.session_id, 0) + 1
    sessions = db.sessions()
    assert {s.id: s.compactions for s in sessions} == {s.id: counts.get(s.id, 0) for s in sessions}
    for s in sessions:
        mine = [e for e in ref if e.session_id == s.id or e.child_session_id == s.id]
        assert db.compactions(s.id) == sorted(mine, key=lambda e: (e.time, e.region_first_id or 0))
        info = db.session(s.id)
        assert info is not None and info.compactions == counts.get(s.id, 0)
    live = db.live_session()
    if live is not None:
        assert live.compactions == counts.get(live.id, 0)
    db.close()
    return ref


def test_history_fixture(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    build_history(p)
    assert len(_assert_same(p)) == 3


def test_demo_home(tmp_path: Path) -> None:
    home = build_demo_home(tmp_path / "home")
    assert len(_assert_same(home.state_db)) == 3


def test_without_the_session_active_index(tmp_path: Path) -> None:
    """Older schemas lack idx_messages_session_active: the scan falls back, same events."""
    p = tmp_path / "state.db"
    build_history(p)
    c = sqlite3.connect(p)
    c.execute("DROP INDEX idx_messages_session_active")
    c.commit()
    c.close()
    db = StateDB(p)
    db.status()
    assert db._session_active_index is False
    assert len(_assert_same(p)) == 3


def test_summary_like_rows_with_leading_blanks_and_json_content(tmp_path: Path) -> None:
    """Rows that only look like summaries after decoding or stripping are still candidates."""
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "g0", started_at=1)
    texts = ["hello", "  [CONTEXT SUMMARY]: pasted with blanks", "more",
             "\x00json:" + json.dumps([{"type": "text", "text": "[CONTEXT SUMMARY]: in parts"}]), "x", "y"]
    for i, t in enumerate(texts):
        hs.append_message(conn, "g0", "user" if i % 2 == 0 else "assistant", t, timestamp=10 + i)
    hs.compact_in_place(conn, "g0", "real summary", keep_head=1, keep_tail=1, now=100)
    conn.close()
    ref = _assert_same(p)
    assert len(ref) == 3  # the two look-alikes (each with a compacted batch before it) and the real one


_TEXTS = st.sampled_from([
    "plain words about kubernetes", "  leading blanks then words", "[bracketed but not a summary]",
    "\tindented", "", "[CONTEXT SUMMARY]: pasted by the user", "same text",
    "  [CONTEXT SUMMARY]: pasted with leading blanks", "\n" + SUMMARY_LEAD + "\nnot really a summary",
])
_OP = st.one_of(
    st.tuples(st.just("msg"), _TEXTS, st.sampled_from(["str", "json", "bytes"])),
    st.tuples(st.just("compact"), st.integers(1, 3), st.integers(0, 3), st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("rewind"), st.integers(0, 3)),
    st.tuples(st.just("legacy_compact"), st.integers(1, 2), st.integers(0, 2)),
    st.tuples(st.just("rotate"),),
)
_OPS = st.lists(_OP, min_size=1, max_size=24)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_generated_histories(tmp_path_factory, ops) -> None:
    d = tmp_path_factory.mktemp("gen")
    p = d / "state.db"
    conn = hs.create_state_db(p)
    sid, n, t = "g0", 0, 1000.0
    hs.add_session(conn, sid, started_at=t)
    for op in ops:
        t += 10.0
        live = hs.active_messages(conn, sid)
        if op[0] == "msg":
            _, text, enc = op
            n += 1
            content = f"{text} #{n}" if text else text
            if enc == "json":
                content = "\x00json:" + json.dumps([{"type": "text", "text": content}])
            elif enc == "bytes":
                content = content.encode("utf-8")
            conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
                         " VALUES (?, ?, ?, ?, 1, 0)", (sid, "user" if n % 2 else "assistant", content, t))
        elif op[0] == "compact" and len(live) >= 2:
            _, head, tail, merge, keep_ts, extra = op
            hs.compact_in_place(conn, sid, f"summary at {t}", keep_head=min(head, len(live)), keep_tail=tail, now=t,
                                merge_into_tail=merge, keep_timestamps=keep_ts,
                                extra_tail=[{"role": "user", "content": f"turn at {t}"}] if extra else ())
        elif op[0] == "legacy_compact" and len(live) >= 2:
            _, head, tail = op
            hs.compact_in_place(conn, sid, f"legacy summary {t}", keep_head=min(head, len(live)), keep_tail=tail, now=t,
                                prefix=LEGACY_SUMMARY_PREFIX)
        elif op[0] == "rewind" and live:
            rows = conn.execute("SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (sid,)).fetchall()
            hs.rewind(conn, sid, rows[max(0, len(rows) - 1 - op[1])][0])
        elif op[0] == "rotate" and live:
            new = f"g{int(sid[1:]) + 1}"
            hs.rotate(conn, sid, new, f"rotation summary {t}", now=t)
            sid = new
    conn.commit()
    conn.close()
    _assert_same(p)
    shutil.rmtree(d, ignore_errors=True)


# ----------------------------------------------------------------------------- incremental reader
# One reader kept open while the history grows: after every operation its incrementally found
# events (window re-read from the checkpoint, rewinds rebuilding) equal a fresh full scan.


def _apply(conn, sid: str, op: tuple, t: float, n: int) -> tuple[str, int]:
    live = hs.active_messages(conn, sid)
    if op[0] == "msg":
        _, text, enc = op
        n += 1
        content = f"{text} #{n}" if text else text
        if enc == "json":
            content = "\x00json:" + json.dumps([{"type": "text", "text": content}])
        elif enc == "bytes":
            content = content.encode("utf-8")
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
                     " VALUES (?, ?, ?, ?, 1, 0)", (sid, "user" if n % 2 else "assistant", content, t))
    elif op[0] == "msg_fresh":
        # stamped like the rows of the operation before (a compaction's tail, when it was one):
        # the next consecutive id with a fresh stamp continues that compaction's tail
        n += 1
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
                     " VALUES (?, ?, ?, ?, 1, 0)", (sid, "user" if n % 2 else "assistant", op[1], t - 10.0 + 1e-6))
    elif op[0] == "other_msg":  # another session writes between two of this session's rows
        hs.add_session(conn, "elsewhere", started_at=t) if not conn.execute(
            "SELECT 1 FROM sessions WHERE id = 'elsewhere'").fetchone() else None
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
                     " VALUES ('elsewhere', 'user', 'meanwhile', ?, 1, 0)", (t,))
    elif op[0] == "compact" and len(live) >= 2:
        _, head, tail, merge, keep_ts, extra = op
        hs.compact_in_place(conn, sid, f"summary at {t}", keep_head=min(head, len(live)), keep_tail=tail, now=t,
                            merge_into_tail=merge, keep_timestamps=keep_ts,
                            extra_tail=[{"role": "user", "content": f"turn at {t}"}] if extra else ())
    elif op[0] == "legacy_compact" and len(live) >= 2:
        _, head, tail = op
        hs.compact_in_place(conn, sid, f"legacy summary {t}", keep_head=min(head, len(live)), keep_tail=tail, now=t,
                            prefix=LEGACY_SUMMARY_PREFIX)
    elif op[0] == "rewind" and live:
        rows = conn.execute("SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (sid,)).fetchall()
        hs.rewind(conn, sid, rows[max(0, len(rows) - 1 - op[1])][0])
    elif op[0] == "rotate" and live:
        new = f"g{int(sid[1:]) + 1}"
        hs.rotate(conn, sid, new, f"rotation summary {t}", now=t)
        sid = new
    return sid, n


#: The operations above plus the ones that probe the appended-rows shortcut of the reader: a
#: fresh-stamped row right after a compaction (its tail continues) and another session's rows.
_INC_OPS = st.lists(st.one_of(
    _OP,
    st.tuples(st.just("msg_fresh"), _TEXTS),
    st.tuples(st.just("other_msg"),),
), min_size=1, max_size=30)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_INC_OPS)
def test_incremental_reader_matches_a_full_scan_after_every_step(tmp_path_factory, ops) -> None:
    d = tmp_path_factory.mktemp("inc")
    p = d / "state.db"
    conn = hs.create_state_db(p)
    deckdb.connect(d).close()  # a memdeck.db: each step's new reader resumes from what earlier ones stored
    sid, n, t = "g0", 0, 1000.0
    hs.add_session(conn, sid, started_at=t)
    reader = StateDB(p)
    for op in ops:
        t += 10.0
        sid, n = _apply(conn, sid, op, t, n)
        ref = reference_compactions(p)
        assert reader.compactions() == ref, repr(ops)
        later = StateDB(p)  # a later process
        assert later.compactions() == ref, repr(ops)
        later.close()
    conn.close()
    reader.close()
    shutil.rmtree(d, ignore_errors=True)


def test_a_long_session_is_streamed_in_trimmed_windows(tmp_path: Path, monkeypatch) -> None:
    """40 compactions of ~150 rows (6,000+ rows, beyond the 4,096-row buffer that is trimmed
    at each checkpoint), small id chunks, json and summary-like rows: same events as the full
    scan, on a fresh reader and on one that followed the growth."""
    monkeypatch.setattr(StateDB, "STREAM_CHUNK_IDS", 97)
    monkeypatch.setattr(StateDB, "STREAM_BATCH_ROWS", 13)
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "big", started_at=1)
    hs.add_session(conn, "other", started_at=2)
    follower = StateDB(p)
    t = 10.0
    for k in range(40):
        for i in range(150):
            t += 1.0
            content = f"turn {k}.{i}" if i % 7 else "\x00json:" + json.dumps([{"type": "text", "text": f"[part {k}.{i}]"}])
            hs.append_message(conn, "big" if i % 13 else "other", "user" if i % 2 else "assistant", content, timestamp=t)
        hs.compact_in_place(conn, "big", f"summary {k}", keep_head=3, keep_tail=5, now=t + 0.5)
        if k % 9 == 0:
            assert follower.compactions() == reference_compactions(p)
    ref = reference_compactions(p)
    assert len(ref) == 40
    assert follower.compactions() == ref
    assert StateDB(p).compactions("big") == ref
    conn.close()


# ----------------------------------------------------------------------------- appended rows
# A refresh after appended messages skips the window when nothing in it changed. These are the
# cases where something did, although no compaction summary was appended.


def _follow(p: Path) -> tuple[StateDB, list[int]]:
    """A reader that has caught up with ``p``, and the ids every later read streams."""
    reader = StateDB(p)
    assert reader.compactions() == reference_compactions(p)
    seen: list[int] = []
    orig = reader._stream_batches

    def counting(conn, session_id, from_id, progress=None, **kw):
        for batch in orig(conn, session_id, from_id, progress, **kw):
            seen.extend(int(r[0]) for r in batch)
            yield batch
    reader._stream_batches = counting  # type: ignore[method-assign]
    return reader, seen


def _grown(tmp_path: Path) -> tuple[Path, sqlite3.Connection, float]:
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    t = 10.0
    for k in range(3):
        for i in range(40):
            t += 1.0
            hs.append_message(conn, "s", "user" if i % 2 else "assistant", f"turn {k}.{i}", timestamp=t)
        hs.compact_in_place(conn, "s", f"summary {k}", keep_head=2, keep_tail=4, now=t + 0.5)
    for i in range(10):
        t += 1.0
        hs.append_message(conn, "s", "user", f"after {i}", timestamp=t)
    return p, conn, t


def test_appended_messages_stream_only_the_new_rows(tmp_path: Path) -> None:
    p, conn, t = _grown(tmp_path)
    reader, seen = _follow(p)
    before = max(_ids(p))
    hs.append_message(conn, "s", "user", "one more", timestamp=t + 1)
    hs.append_message(conn, "s", "assistant", "and its answer", timestamp=t + 2)
    assert reader.compactions() == reference_compactions(p)
    assert seen == [before + 1, before + 2]


def test_a_deleted_row_in_the_window_is_seen_beside_an_append(tmp_path: Path) -> None:
    p, conn, t = _grown(tmp_path)
    reader, seen = _follow(p)
    region = reference_compactions(p)[-1].region_ids
    conn.execute("DELETE FROM messages WHERE id = ?", (region[-1],))  # the newest tail's last row
    hs.append_message(conn, "s", "user", "one more", timestamp=t + 1)
    assert reader.compactions() == reference_compactions(p)
    assert len(seen) > 2  # the window was read again


def test_a_summary_pasted_after_an_unrecognised_compaction_is_an_event(tmp_path: Path) -> None:
    """Compacted rows with no summary row this reader recognises, then a user message that looks
    like a summary: the full-scan rule counts it (its batch is the compacted rows), so the
    appended row cannot be skipped."""
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    for i in range(6):
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
                     " VALUES ('s', 'user', ?, ?, 0, 1)", (f"old {i}", 10.0 + i))
    for i in range(3):
        hs.append_message(conn, "s", "user", f"live {i}", timestamp=20.0 + i)
    reader, _ = _follow(p)
    assert reference_compactions(p) == []
    hs.append_message(conn, "s", "user", "[CONTEXT SUMMARY]: pasted by the user", timestamp=30.0)
    ref = reference_compactions(p)
    assert len(ref) == 1
    assert reader.compactions() == ref


def _ids(p: Path) -> list[int]:
    c = sqlite3.connect(p)
    try:
        return [r[0] for r in c.execute("SELECT id FROM messages ORDER BY id")]
    finally:
        c.close()


def test_a_rewritten_row_in_the_window_is_seen_beside_an_append(tmp_path: Path) -> None:
    """Hermes 0.22's ``set_user_message_content`` rewrites an active user row in place: here into
    a summary look-alike after an unrecognised compaction, which makes it an event."""
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    for i in range(6):
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
                     " VALUES ('s', 'user', ?, ?, 0, 1)", (f"old {i}", 10.0 + i))
    for i in range(3):
        hs.append_message(conn, "s", "user", f"live {i}", timestamp=20.0 + i)
    reader, _seen = _follow(p)
    last = max(_ids(p))
    conn.execute("UPDATE messages SET content = ? WHERE id = ?", ("[CONTEXT SUMMARY]: expanded", last))
    hs.append_message(conn, "s", "assistant", "an answer", timestamp=30.0)
    ref = reference_compactions(p)
    assert len(ref) == 1
    assert reader.compactions() == ref


def test_the_window_signature_is_the_same_in_python_and_in_sqlite(tmp_path: Path) -> None:
    """The reader computes a window's signature in Python after reading it and in SQL before
    skipping it: the two must agree for every content Hermes stores, or no refresh is skipped."""
    from memdeck.core.sessions.compaction_events import _rows_sig

    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    contents = ["plain", "\x00json:" + json.dumps([{"type": "text", "text": "part ☃"}]), "héllo 𝄞", b"\x00\x01\xff",
                None, 12345, ""]
    for i, c in enumerate(contents):
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted)"
                     " VALUES ('s', 'user', ?, ?, ?, ?)", (c, 10.0 + i, i % 2, 1 - i % 2))
    reader = StateDB(p)
    rows = reader._run(lambda c: [r for b in reader._stream_batches(c, "s", 0) for r in b], [])
    assert len(rows) == len(contents)
    assert reader._run(lambda c: reader._window_sig(c, "s", 0, 10**9), None) == _rows_sig(rows)
    reader.close()


def test_a_row_after_the_tail_with_a_batch_text_but_another_role_is_not_a_copy(tmp_path: Path) -> None:
    """The tail test compares (role, text): the user's "ok" right after a compaction whose batch
    holds the assistant's "ok" is not part of the compaction's tail."""
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    for i in range(8):
        hs.append_message(conn, "s", "assistant" if i % 2 else "user", "ok" if i == 3 else f"turn {i}", timestamp=10.0 + i)
    hs.compact_in_place(conn, "s", "first summary", keep_head=1, keep_tail=1, now=100.0, keep_timestamps=True)
    hs.append_message(conn, "s", "user", "ok", timestamp=200.0)  # the next id, same text as batch row 4, a user's
    hs.append_message(conn, "s", "assistant", "more", timestamp=201.0)
    hs.compact_in_place(conn, "s", "second summary", keep_head=1, keep_tail=1, now=300.0, keep_timestamps=True)
    ref = reference_compactions(p)
    assert len(ref) == 2
    ok_id = conn.execute("SELECT id FROM messages WHERE role = 'user' AND content = 'ok'").fetchone()[0]
    assert ok_id == ref[0].region_last_id + 1  # right after the tail, kept out of it by its role
    assert StateDB(p).compactions() == ref
