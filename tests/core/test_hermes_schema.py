"""core.hermes_schema: the writer used for demo homes, tests and benchmarks."""

from __future__ import annotations

from pathlib import Path

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.compaction import SUMMARY_END_MARKER, SUMMARY_PREFIX_0_19, match_summary


def _db(path: Path):
    conn = hs.create_state_db(path)
    conn.row_factory = None  # plain tuples for comparisons
    return conn


def test_schema_version_and_tables(tmp_path: Path) -> None:
    conn = _db(tmp_path / "state.db")
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(22,)]
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"sessions", "messages", "messages_fts", "messages_fts_trigram", "state_meta", "compression_locks"} <= names
    assert len([n for n in names if n.startswith("messages_fts") and n.endswith(("_insert", "_delete", "_update"))]) == 6
    assert [r[1] for r in conn.execute("PRAGMA table_info(messages)")][1:] == list(hs.MESSAGE_COLUMNS)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    hs.create_state_db(tmp_path / "state.db")  # idempotent
    assert conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 1


def test_append_counts_and_json_content(tmp_path: Path) -> None:
    conn = _db(tmp_path / "state.db")
    hs.add_session(conn, "a", started_at=1)
    hs.append_message(conn, "a", "user", [{"type": "text", "text": "hi"}], timestamp=2)
    hs.append_message(conn, "a", "assistant", "", timestamp=3, tool_calls=[{"id": "1"}, {"id": "2"}])
    assert conn.execute("SELECT message_count, tool_call_count FROM sessions").fetchone() == (2, 2)
    assert conn.execute("SELECT content FROM messages WHERE id = 1").fetchone()[0] == '\x00json:[{"type": "text", "text": "hi"}]'


def test_compact_in_place_mirrors_archive_and_compact(tmp_path: Path) -> None:
    conn = _db(tmp_path / "state.db")
    hs.add_session(conn, "a", started_at=1)
    for i in range(6):
        hs.append_message(conn, "a", "user" if i % 2 == 0 else "assistant", f"m{i}", timestamp=10 + i)
    assert hs.compact_in_place(conn, "a", "the summary", keep_head=1, keep_tail=2, now=100) == 4
    rows = conn.execute("SELECT content, active, compacted, timestamp FROM messages ORDER BY id").fetchall()
    assert [(r[1], r[2]) for r in rows[:6]] == [(0, 1)] * 6
    new = rows[6:]
    assert new[0][0] == "m0" and new[2][0] == "m4" and new[3][0] == "m5"
    assert new[1][0] == f"{SUMMARY_PREFIX_0_19}\nthe summary\n\n{SUMMARY_END_MARKER}"
    assert [r[3] for r in new] == [100, 100.000001, 100.000002, 100.000003] or all(
        abs(r[3] - (100 + k * 1e-6)) < 1e-7 for k, r in enumerate(new))
    assert conn.execute("SELECT message_count FROM sessions").fetchone()[0] == 4
    # the archived rows stay in the FTS index (UPDATE trigger re-indexes them)
    assert conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'm0'").fetchone()[0] == 2


def test_merge_into_tail_and_rotation(tmp_path: Path) -> None:
    conn = _db(tmp_path / "state.db")
    hs.add_session(conn, "a", started_at=1, title="work")
    for i in range(4):
        hs.append_message(conn, "a", "user" if i % 2 == 0 else "assistant", f"m{i}", timestamp=10 + i)
    hs.compact_in_place(conn, "a", "merged one", keep_head=1, keep_tail=1, merge_into_tail=True, now=50)
    merged = conn.execute("SELECT content FROM messages WHERE active = 1 ORDER BY id").fetchall()[1][0]
    m = match_summary(merged)
    assert m is not None and m.merged and m.body.startswith("merged one")
    hs.rotate(conn, "a", "b", "rotated", now=60)
    assert conn.execute("SELECT ended_at, end_reason FROM sessions WHERE id = 'a'").fetchone() == (60, "compression")
    assert conn.execute("SELECT parent_session_id, title FROM sessions WHERE id = 'b'").fetchone() == ("a", "work #2")
    hs.end_session(conn, "a", "other")  # first end reason wins
    assert conn.execute("SELECT end_reason FROM sessions WHERE id = 'a'").fetchone()[0] == "compression"
