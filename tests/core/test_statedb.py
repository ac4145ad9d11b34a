"""core.statedb on databases built with core.hermes_schema (Hermes 0.19 shape)."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.compaction import hash_summary_body, match_summary
from memdeck.core.sessions.statedb import StateDB, status_section
from tests.helpers.statedb import build_history


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    p = tmp_path / "state.db"
    facts = build_history(p)
    return p, facts


def test_sessions_newest_first_with_live_and_counts(history) -> None:
    path, _ = history
    db = StateDB(path)
    assert db.status().state == "ok"
    assert db.status().schema_version == 22
    ss = db.sessions()
    assert [s.id for s in ss] == ["s4", "s2", "s1", "s3"]
    by = {s.id: s for s in ss}
    assert by["s2"].live and not by["s1"].live and not by["s4"].live
    assert by["s1"].end_reason == "compression" and by["s1"].ended_at == 4000
    assert by["s2"].parent_session_id == "s1" and by["s2"].title == "deploy work #2"
    assert by["s1"].compactions == 3  # two in place + one rotation out of it
    assert by["s2"].compactions == 0 and by["s3"].compactions == 0
    assert by["s3"].last_active == 502 and by["s3"].source == "telegram"
    assert db.live_session().id == "s2"
    assert db.session("s1").compactions == 3 and db.session("nope") is None
    assert [s.id for s in db.sessions(limit=2)] == ["s4", "s2"]


def test_lineage_root_to_tip(history) -> None:
    db = StateDB(history[0])
    assert [s.id for s in db.lineage("s2")] == ["s1", "s2"]
    assert [s.id for s in db.lineage("s1")] == ["s1", "s2"]
    assert [s.id for s in db.lineage("s3")] == ["s3"]
    assert db.lineage("missing") == []


def test_active_region_is_live_rows_in_id_order(history) -> None:
    db = StateDB(history[0])
    region = db.active_region("s1")
    assert region[0].text == "turn 0 about kubernetes deploy"
    assert region[1].text.startswith("[PRIOR CONTEXT")
    assert [m.id for m in region] == sorted(m.id for m in region)
    assert all(m.active for m in region)
    assert region[-1].text == "after second compaction"
    everything = db.messages("s1", include_inactive=True)
    assert len(everything) > len(region)
    assert sum(m.compacted for m in everything) == 6 + 8
    # rewound row is inactive, not compacted
    s3 = db.messages("s3", include_inactive=True)
    assert [(m.active, m.compacted) for m in s3] == [(True, False), (False, False)]
    assert [m.as_dict() for m in db.active_region("s3")] == [{"role": "user", "content": "kubernetes question from telegram"}]


def test_json_content_decoded_and_memory_context_stripped(tmp_path: Path) -> None:
    conn = hs.create_state_db(tmp_path / "state.db")
    hs.add_session(conn, "a", started_at=1)
    parts = [{"type": "text", "text": "look at this"}, {"type": "image_url", "image_url": {"url": "x"}}]
    hs.append_message(conn, "a", "user", parts, timestamp=2)
    hs.append_message(conn, "a", "assistant", "answer <memory-context>\nsecret recalled\n</memory-context> done", timestamp=3)
    raw = conn.execute("SELECT content FROM messages WHERE id = 1").fetchone()[0]
    assert raw.startswith("\x00json:")
    db = StateDB(tmp_path / "state.db")
    region = db.active_region("a")
    assert region[0].content == parts and region[0].text == "look at this"
    assert region[1].content == "answer  done"


def test_inplace_compaction_events_and_regions(history) -> None:
    db = StateDB(history[0])
    evs = db.compactions("s1")
    assert [(e.mode, e.session_id) for e in evs] == [("in_place", "s1"), ("in_place", "s1"), ("rotation", "s1")]
    first, second, rot = evs
    assert first.archived_count == 6 and first.kind == "current" and not first.merged
    assert first.index == 1 and second.index == 2
    assert abs(first.time - 2000) < 1e-3 and abs(second.time - 3000) < 1e-3
    assert db.region_after(first)[0].text.split()[0:2] == ["turn", "0"]
    texts = [m.text for m in db.region_after(first)]
    assert len(texts) == 4 and match_summary(texts[1]) is not None
    assert texts[2:] == ["turn 4 about kubernetes deploy", "turn 5 about kubernetes deploy"]
    assert match_summary(texts[1]).body_hash == first.summary_hash
    assert first.summary_hash == hash_summary_body(match_summary(texts[1]).body)
    # second compaction archived the live set of 4 + 4 appended rows
    assert second.archived_count == 8 and second.merged
    texts2 = [m.text for m in db.region_after(second)]
    assert texts2[0] == "turn 0 about kubernetes deploy" and texts2[1].startswith("[PRIOR CONTEXT") and texts2[2] == "turn 9 rollout"
    assert "after second compaction" not in texts2  # appended later, not part of the region
    assert rot.child_session_id == "s2" and rot.archived_count == 4 and rot.time == 4000
    rtexts = [m.text for m in db.region_after(rot)]
    assert match_summary(rtexts[1]) is not None and "in the child session" not in rtexts
    assert db.compactions("s2") == [rot]
    assert db.compactions() == evs  # s1 is the only compacted session


def test_compaction_with_preserved_timestamps_and_extra_tail(tmp_path: Path) -> None:
    """Copies keep their own stamps (a resumed session); the fresh user row joins the tail."""
    conn = hs.create_state_db(tmp_path / "state.db")
    hs.add_session(conn, "x", started_at=1)
    for i in range(8):
        hs.append_message(conn, "x", "user" if i % 2 == 0 else "assistant", f"m{i}", timestamp=10 + i)
    hs.compact_in_place(conn, "x", "S1", keep_head=2, keep_tail=2, now=100, keep_timestamps=True,
                        extra_tail=[{"role": "user", "content": "current turn"}])
    hs.append_message(conn, "x", "assistant", "reply", timestamp=150)
    for i in range(3):
        hs.append_message(conn, "x", "user", f"n{i}", timestamp=160 + i)
    hs.compact_in_place(conn, "x", "S2", keep_head=2, keep_tail=1, now=200, keep_timestamps=True)
    hs.append_message(conn, "x", "assistant", "later", timestamp=300)
    db = StateDB(tmp_path / "state.db")
    e1, e2 = db.compactions("x")
    assert [m.text for m in db.region_after(e1)] == ["m0", "m1", e1 and db.message(e1.summary_message_id).text, "m6", "m7", "current turn"]
    assert e1.archived_count == 8
    assert e2.archived_count == 2 + 1 + 3 + 1 + 3  # the whole live set before it
    assert [m.text for m in db.region_after(e2)][:2] == ["m0", "m1"]
    assert [m.text for m in db.region_after(e2)][-1] == "n2"


def test_legacy_and_historical_prefixes_are_events(tmp_path: Path) -> None:
    conn = hs.create_state_db(tmp_path / "state.db")
    hs.add_session(conn, "l", started_at=1)
    for i in range(4):
        hs.append_message(conn, "l", "user" if i % 2 == 0 else "assistant", f"q{i}", timestamp=2 + i)
    hs.compact_in_place(conn, "l", "old style", keep_head=1, keep_tail=1, now=50, prefix="[CONTEXT SUMMARY]:")
    db = StateDB(tmp_path / "state.db")
    (ev,) = db.compactions()
    assert ev.kind == "legacy" and ev.archived_count == 4


def test_no_compaction_without_archived_batch(tmp_path: Path) -> None:
    """A summary-looking message in a session with no compacted rows is not an event."""
    conn = hs.create_state_db(tmp_path / "state.db")
    hs.add_session(conn, "q", started_at=1)
    hs.append_message(conn, "q", "user", "[CONTEXT SUMMARY]: pasted by the user", timestamp=2)
    assert StateDB(tmp_path / "state.db").compactions() == []


def test_incremental_refresh(history) -> None:
    path, _ = history
    db = StateDB(path)
    first = db.refresh()
    assert first.reset and first.changed and set(first.sessions_changed) == {"s1", "s2", "s3", "s4"}
    assert db.refresh().changed is False
    w = hs.connect(path)
    mid = hs.append_message(w, "s2", "assistant", "fresh row", timestamp=4200)
    d = db.refresh()
    assert d.changed and not d.reset and [m.id for m in d.new_messages] == [mid] and d.sessions_changed == ("s2",)
    assert d.last_id == mid
    # a new session and an in-place compaction show up as new rows + events
    hs.add_session(w, "s5", started_at=6000)
    for i in range(4):
        hs.append_message(w, "s5", "user" if i % 2 == 0 else "assistant", f"x{i}", timestamp=6001 + i)
    hs.compact_in_place(w, "s5", "five", keep_head=1, keep_tail=1, now=7000)
    d = db.refresh()
    assert "s5" in d.sessions_changed and len(d.compactions) == 1 and d.compactions[0].session_id == "s5"
    # ending the live session without new rows is still seen (it was open)
    hs.end_session(w, "s2", "cli_close", ended_at=8000)
    d = db.refresh()
    assert d.changed and d.new_messages == () and "s2" in d.sessions_changed
    # max_rows paging
    for i in range(5):
        hs.append_message(w, "s5", "user", f"p{i}", timestamp=9000 + i)
    d1 = db.refresh(max_rows=3)
    d2 = db.refresh(max_rows=3)
    assert d1.truncated and len(d1.new_messages) == 3 and not d2.truncated and len(d2.new_messages) == 2
    assert db.refresh().changed is False
    w.close()


def test_reader_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    build_history(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    db = StateDB(path)
    db.sessions()
    db.compactions()
    db.refresh()
    db.active_region("s1")
    db.lineage("s2")
    from memdeck.core.sessions.recall import recall
    recall(db, "kubernetes")
    assert db._conn is not None
    with pytest.raises(sqlite3.OperationalError):
        db._conn.execute("CREATE TABLE evil (x)")
    db.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("state.db")) == ["state.db"]


# ----------------------------------------------------------------------------- hostile databases


def _every_call(db: StateDB) -> list[object]:
    return [db.sessions(), db.session("s1"), db.live_session(), db.lineage("s1"), db.messages("s1"),
            db.active_region("s1"), db.compactions(), db.refresh().new_messages, db.data_version()]


def test_missing_file(tmp_path: Path) -> None:
    db = StateDB(tmp_path / "nope.db")
    assert db.status().state == "missing"
    assert _every_call(db) == [[], None, None, [], [], [], [], (), None]
    assert not (tmp_path / "nope.db").exists()


@pytest.mark.parametrize("content,state", [
    (b"", "empty"),
    (random.Random(22).randbytes(4096), "not_sqlite"),  # seeded: every xdist worker collects the same test
    (b"SQLite format 3\x00" + b"\x00" * 20, "corrupt"),
], ids=["empty", "random-bytes", "header-only"])
def test_bad_files(tmp_path: Path, content: bytes, state: str) -> None:
    p = tmp_path / "state.db"
    p.write_bytes(content)
    db = StateDB(p)
    assert db.status().state == state
    assert _every_call(db)[:7] == [[], None, None, [], [], [], []]
    assert p.read_bytes() == content


def test_truncated_database(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    build_history(p)
    c = sqlite3.connect(p)
    c.execute("PRAGMA journal_mode=DELETE")
    c.close()
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 3])
    db = StateDB(p)
    st = db.status()
    assert st.state == "corrupt" and "truncated" in st.message
    assert _every_call(db) == [[], None, None, [], [], [], [], (), None]  # never raises
    assert db.status().state == "corrupt"
    assert p.read_bytes() == data[: len(data) // 3]


def test_sqlite_without_hermes_tables(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    sqlite3.connect(p).execute("CREATE TABLE other (x)").connection.commit()
    assert StateDB(p).status().state == "empty"


def test_unsupported_shape(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    c = sqlite3.connect(p)
    c.executescript("CREATE TABLE sessions (id TEXT); CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT);")
    c.close()
    db = StateDB(p)
    assert db.status().state == "unsupported" and "session_id" in db.status().message
    assert db.sessions() == []


def test_locked_by_exclusive_writer(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    build_history(p)
    c = sqlite3.connect(p)
    c.execute("PRAGMA journal_mode=DELETE")
    c.close()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        c = sqlite3.connect({str(p)!r}, isolation_level=None)
        c.execute("BEGIN EXCLUSIVE")
        c.execute("INSERT INTO state_meta VALUES ('k', 'v')")
        print("locked", flush=True)
        sys.stdin.readline()
        c.execute("ROLLBACK")
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        db = StateDB(p, timeout=0.1)
        assert db.status().state == "locked"
        assert db.sessions() == [] and db.compactions() == [] and db.active_region("s1") == []
        assert db.refresh().status.state == "locked"
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=10)
    assert db.status().state == "ok"  # recovers lazily
    assert len(db.sessions()) == 4


def test_older_schema_without_active_columns(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    c = sqlite3.connect(p)
    c.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (5);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL,
                               end_reason TEXT, message_count INTEGER DEFAULT 0, parent_session_id TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
                               content TEXT, timestamp REAL NOT NULL);
        INSERT INTO sessions VALUES ('o1', 'cli', 10, NULL, NULL, 2, NULL);
        INSERT INTO messages (session_id, role, content, timestamp) VALUES ('o1', 'user', 'old hello world', 11);
        INSERT INTO messages (session_id, role, content, timestamp) VALUES ('o1', 'assistant', 'old reply', 12);
    """)
    c.close()
    db = StateDB(p)
    st = db.status()
    assert st.state == "ok" and {"no_active_column", "no_compacted_column", "no_fts", "older_schema"} <= set(st.degraded)
    assert "treated as active" in st.message
    assert [m.text for m in db.active_region("o1")] == ["old hello world", "old reply"]
    (s,) = db.sessions()
    assert s.title is None and s.live and s.compactions == 0
    assert db.compactions() == []
    from memdeck.core.sessions.recall import recall
    (hit,) = recall(db, "hello")
    assert hit.session_id == "o1" and "hello" in hit.snippet


def test_newer_schema_extra_columns_ignored(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p, version=40)
    conn.execute("ALTER TABLE messages ADD COLUMN future_col TEXT")
    hs.add_session(conn, "n", started_at=1)
    hs.append_message(conn, "n", "user", "hi", timestamp=2)
    conn.close()
    db = StateDB(p)
    assert "newer_schema" in db.status().degraded
    assert [m.text for m in db.active_region("n")] == ["hi"]


def test_weird_content_does_not_break(tmp_path: Path) -> None:
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "w", started_at=1)
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('w', 'user', ?, 2)", (b"\xff\xfe bytes",))
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('w', 'user', ?, 3)", ("\x00json:{not json",))
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('w', 'tool', NULL, 'not-a-number')")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('w', 'user', 42, 5)")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted) VALUES ('w', 'user', ?, 6, 0, 1)",
                 ("[CONTEXT COMPACTION — REFERENCE ONLY]" + "x" * 100000,))
    conn.close()
    db = StateDB(p)
    msgs = db.messages("w", include_inactive=True)
    assert len(msgs) == 5 and msgs[1].content == "\x00json:{not json" and msgs[2].timestamp == 0.0
    assert msgs[3].text == "42"  # TEXT affinity
    db.compactions()
    db.sessions()
    assert db.status().state == "ok"


def test_status_section_shape(history, tmp_path: Path) -> None:
    path, _ = history
    sec = status_section(path.parent)
    assert [s["id"] for s in sec["sessions"]] == ["s4", "s2", "s1", "s3"]
    assert set(sec["sessions"][0]) == {"id", "title", "source", "started_at", "ended_at", "message_count", "compactions", "live"}
    assert json.loads(json.dumps(sec))["state_db"]["state"] == "ok"
    expected = {"sessions": [], "state_db": StateDB(tmp_path / "nothing" / "state.db").status().as_dict()}
    assert status_section(tmp_path / "nothing") == expected


def test_install_fts_bulk_equals_triggers(tmp_path: Path) -> None:
    a = hs.create_state_db(tmp_path / "a.db")
    b = hs.create_state_db(tmp_path / "b.db", fts=False)
    for conn in (a, b):
        hs.add_session(conn, "z", started_at=1)
        for i in range(20):
            hs.append_message(conn, "z", "user", f"word{i % 5} filler {i}", timestamp=2 + i)
    hs.install_fts(b)
    hs.append_message(b, "z", "user", "word9 after install", timestamp=50)
    hs.append_message(a, "z", "user", "word9 after install", timestamp=50)
    for q in ("word1", "filler", "word9", "wor*"):
        qa = [r[0] for r in a.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", (q,))]
        qb = [r[0] for r in b.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", (q,))]
        assert qa == qb and qa


def test_refresh_after_close_sees_rows_written_while_closed(history) -> None:
    """close() must forget the data_version cursor: a new connection's counter restarts, so
    an old value could equal the new one and hide rows committed while the reader was closed."""
    path, _ = history
    db = StateDB(path)
    db.refresh()
    db.close()
    w = hs.connect(path)
    mid = hs.append_message(w, "s2", "assistant", "written while closed", timestamp=4300)
    w.close()
    d = db.refresh()
    assert d.changed
    assert d.reset and d.last_id == mid  # a reconnect restarts the cursor at the current max id
    db.close()
