"""The active region kept between refreshes equals a fresh read after every kind of write (issue 9).

``StateDB.active_region`` keeps the rows it read and, when the session's active rows up to the
last one are unchanged, reads only the rows after it. Every write Hermes makes to a session's
rows (appends, a compaction, a rewind and its restore, a deletion, Hermes 0.22's in-place
rewrite of a user row's content and ``api_content`` backfill) is applied here in random order,
and after each one the kept reader must give exactly what a new reader gives.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.statedb import StateDB

_OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("compact"), st.integers(1, 3), st.integers(0, 3)),
    st.tuples(st.just("rewind"), st.integers(0, 3)),
    st.tuples(st.just("restore"),),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("rewrite"), st.sampled_from(["expanded @file.txt contents", "short", ""])),
    st.tuples(st.just("api_content"), st.sampled_from(["with the reminder block", "x"])),
    st.tuples(st.just("other_session"),),
), min_size=1, max_size=30)


def _newest_user(conn, sid: str) -> int | None:
    r = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = ? AND role = 'user' AND active = 1", (sid,)).fetchone()
    return r[0]


def _apply(conn, op: tuple, t: float, n: int) -> int:
    sid = "s"
    if op[0] == "append":
        for _ in range(op[1]):
            n += 1
            hs.append_message(conn, sid, "user" if n % 2 else "assistant", f"turn {n}", timestamp=t + n * 1e-3)
    elif op[0] == "compact" and hs.active_messages(conn, sid):
        hs.compact_in_place(conn, sid, f"summary at {t}", keep_head=op[1], keep_tail=op[2], now=t)
    elif op[0] == "rewind":
        rows = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (sid,))]
        if rows:
            hs.rewind(conn, sid, rows[max(0, len(rows) - 1 - op[1])])
    elif op[0] == "restore":  # Hermes restore_rewound: the rewound rows live again
        conn.execute("UPDATE messages SET active = 1 WHERE session_id = ? AND active = 0 AND compacted = 0", (sid,))
    elif op[0] == "delete":
        rows = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY id", (sid,))]
        if rows:
            conn.execute("DELETE FROM messages WHERE id = ?", (rows[min(op[1], len(rows) - 1)],))
    elif op[0] == "rewrite":  # Hermes 0.22 set_user_message_content
        rid = _newest_user(conn, sid)
        if rid is not None:
            conn.execute("UPDATE messages SET content = ? WHERE id = ?", (op[1], rid))
    elif op[0] == "api_content":  # Hermes set_latest_user_api_content
        rid = _newest_user(conn, sid)
        if rid is not None:
            conn.execute("UPDATE messages SET api_content = ? WHERE id = ?", (op[1], rid))
    elif op[0] == "other_session":
        hs.append_message(conn, "elsewhere", "user", "meanwhile", timestamp=t)
    return n


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_the_kept_region_equals_a_fresh_read_after_every_write(tmp_path_factory, ops) -> None:
    d = tmp_path_factory.mktemp("region")
    p = d / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    hs.add_session(conn, "elsewhere", started_at=2)
    n = _apply(conn, ("append", 3), 10.0, 0)
    kept = StateDB(p)
    kept.active_region("s")
    t = 10.0
    for op in ops:
        t += 10.0
        n = _apply(conn, op, t, n)
        fresh = StateDB(p)
        try:
            assert kept.active_region("s") == fresh.active_region("s"), repr(ops)
        finally:
            fresh.close()
    kept.close()
    conn.close()
    shutil.rmtree(d, ignore_errors=True)


def test_an_appended_message_reads_only_the_new_row(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    for i in range(50):
        hs.append_message(conn, "s", "user" if i % 2 else "assistant", f"turn {i}", timestamp=10.0 + i)
    reader = StateDB(p)
    first = reader.active_region("s")
    decoded: list[int] = []
    orig = reader._to_message
    reader._to_message = lambda row: decoded.append(row[0]) or orig(row)  # type: ignore[method-assign]
    hs.append_message(conn, "s", "user", "one more", timestamp=100.0)
    region = reader.active_region("s")
    assert [m.id for m in region] == [m.id for m in first] + [decoded[0]]
    assert len(decoded) == 1
    reader.close()
    conn.close()


def test_another_set_of_active_rows_with_the_same_count_ids_sum_and_bytes_is_seen(tmp_path: Path) -> None:
    """Rows 2 and 5 leave the active set and rows 3 and 4 join it: the count (4), the id sum (12)
    and the content bytes are the same, the rows are not."""
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s", started_at=1)
    for i in range(1, 7):
        hs.append_message(conn, "s", "user", f"turn {i}", timestamp=10.0 + i)
    conn.execute("UPDATE messages SET active = 0 WHERE id IN (3, 4)")
    reader = StateDB(p)
    assert [m.id for m in reader.active_region("s")] == [1, 2, 5, 6]
    conn.execute("UPDATE messages SET active = 0 WHERE id IN (2, 5)")
    conn.execute("UPDATE messages SET active = 1 WHERE id IN (3, 4)")
    assert [m.id for m in reader.active_region("s")] == [1, 3, 4, 6]
    reader.close()
    conn.close()
