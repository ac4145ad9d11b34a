"""The read-only reader leaves a WAL home as it found it (issue 9): the empty -wal and the -shm
its connection created are removed after it closes, unless another process is connected."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.connection import sharing_readers
from memdeck.core.sessions.statedb import StateDB


def _quiet_wal_db(tmp_path: Path) -> Path:
    (tmp_path / "h").mkdir()
    p = tmp_path / "h" / "state.db"
    conn = hs.create_state_db(p)
    hs.add_session(conn, "s1", started_at=1)
    hs.append_message(conn, "s1", "user", "hello", timestamp=2)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()  # the last connection of a WAL database removes its side files
    assert not Path(str(p) + "-wal").exists() and not Path(str(p) + "-shm").exists()
    return p


def test_reader_leaves_no_side_files_it_created(tmp_path: Path) -> None:
    p = _quiet_wal_db(tmp_path)
    db = StateDB(p)
    assert [s.id for s in db.sessions()] == ["s1"]
    assert Path(str(p) + "-shm").exists()  # SQLite needs them while reading
    db.close()
    assert sorted(x.name for x in p.parent.iterdir()) == ["state.db"]


def test_two_readers_in_one_process_tidy_only_after_the_last(tmp_path: Path) -> None:
    p = _quiet_wal_db(tmp_path)
    a, b = StateDB(p), StateDB(p)
    assert a.sessions() and b.sessions()
    a.close()
    assert Path(str(p) + "-shm").exists()  # b still uses it
    assert b.sessions()
    b.close()
    assert sorted(x.name for x in p.parent.iterdir()) == ["state.db"]
    with sharing_readers():
        assert StateDB.shared(p) is StateDB.shared(p)
    assert sorted(x.name for x in p.parent.iterdir()) == ["state.db"]


def test_side_files_stay_while_another_process_is_connected(tmp_path: Path) -> None:
    p = _quiet_wal_db(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('SELECT COUNT(*) FROM messages').fetchall();"
         " print('open', flush=True); sys.stdin.readline(); c.close()", str(p)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        db = StateDB(p)
        assert db.sessions()
        db.close()
        assert Path(str(p) + "-shm").exists()  # Hermes (here: another process) is connected: left alone
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)


def test_interrupt_stops_a_query_and_the_reader_keeps_working(tmp_path: Path) -> None:
    """A superseded recall query is interrupted inside SQLite (``conn.interrupt()``, here from
    the progress handler standing in for the UI thread): the call returns its empty default,
    the status stays ok and the next query runs on the same connection."""
    from memdeck.core.sessions.recall import recall

    p = _quiet_wal_db(tmp_path)
    db = StateDB(p)
    assert db.status().ok
    db._conn.set_progress_handler(lambda: db.interrupt(), 1)
    assert recall(db, "hello") == []
    assert db.last_error == "interrupted" and db.status().ok
    db._conn.set_progress_handler(None, 1)
    assert [h.session_id for h in recall(db, "hello")] == ["s1"]
    db.close()


def test_status_and_the_hermes_profile_leave_the_home_as_found(tmp_path: Path) -> None:
    """status --json reads state.db through several readers, the Hermes profile's own raw
    connection included: none of them may leave -wal/-shm behind on a quiet home."""
    from memdeck.core.home import HermesHome
    from memdeck.core.overview.status import build_status

    p = _quiet_wal_db(tmp_path)
    st = build_status(HermesHome(p.parent))
    assert st["hermes"] and [s["id"] for s in st["sessions"]] == ["s1"]
    assert sorted(x.name for x in p.parent.iterdir()) == ["state.db"]
