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

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.compaction import LEGACY_SUMMARY_PREFIX, SUMMARY_LEAD
from memdeck.core.demo import build_demo_home
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
_OPS = st.lists(st.one_of(
    st.tuples(st.just("msg"), _TEXTS, st.sampled_from(["str", "json", "bytes"])),
    st.tuples(st.just("compact"), st.integers(1, 3), st.integers(0, 3), st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("rewind"), st.integers(0, 3)),
    st.tuples(st.just("legacy_compact"), st.integers(1, 2), st.integers(0, 2)),
    st.tuples(st.just("rotate"),),
), min_size=1, max_size=24)


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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_incremental_reader_matches_a_full_scan_after_every_step(tmp_path_factory, ops) -> None:
    d = tmp_path_factory.mktemp("inc")
    p = d / "state.db"
    conn = hs.create_state_db(p)
    sid, n, t = "g0", 0, 1000.0
    hs.add_session(conn, sid, started_at=t)
    reader = StateDB(p)
    for op in ops:
        t += 10.0
        sid, n = _apply(conn, sid, op, t, n)
        assert reader.compactions() == reference_compactions(p), repr(ops)
    conn.close()
    reader.close()
    shutil.rmtree(d, ignore_errors=True)


def test_a_long_session_is_streamed_in_trimmed_windows(tmp_path: Path, monkeypatch) -> None:
    """40 compactions of ~150 rows (6,000+ rows, beyond the 4,096-row buffer that is trimmed
    at each checkpoint), small id chunks, json and summary-like rows: same events as the full
    scan, on a fresh reader and on one that followed the growth."""
    monkeypatch.setattr(StateDB, "STREAM_CHUNK_IDS", 97)
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
