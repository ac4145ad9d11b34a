"""The read-only reader and state.db's side files: memdeck never removes the -wal/-shm (they are
Hermes'; issue 40 item 9 replaced issue 9's tidying, which could unlink a WAL a starting Hermes
process had open)."""

from __future__ import annotations

import ctypes
import os
import select
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

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


def _side_files(p: Path) -> list[str]:
    return sorted(x.name for x in p.parent.iterdir() if x.name != "state.db")


def test_readers_never_remove_the_side_files(tmp_path: Path) -> None:
    """state.db's -wal/-shm are Hermes' (issue 40 item 9): a reader, two readers in one process,
    the shared readers, status and the Hermes profile's raw connection leave them where SQLite put
    them (SQLite removes them when Hermes' last read-write connection closes)."""
    from memdeck.core.home import HermesHome
    from memdeck.core.overview.status import build_status

    p = _quiet_wal_db(tmp_path)
    a, b = StateDB(p), StateDB(p)
    assert [s.id for s in a.sessions()] == ["s1"] and b.sessions()
    assert _side_files(p) == ["state.db-shm", "state.db-wal"]  # SQLite needs them while reading
    a.close()
    b.close()
    with sharing_readers():
        assert StateDB.shared(p) is StateDB.shared(p)
    st = build_status(HermesHome(p.parent))
    assert st["hermes"] and [s["id"] for s in st["sessions"]] == ["s1"]
    assert _side_files(p) == ["state.db-shm", "state.db-wal"]
    # and SQLite itself tidies them when a read-write connection (Hermes) closes last
    conn = sqlite3.connect(p)
    conn.execute("SELECT COUNT(*) FROM messages").fetchall()
    conn.close()
    assert _side_files(p) == []


_IN_OPEN = 0x20
_WRITES = 40

#: a writer as Hermes is one: opens state.db, commits rows one by one, then stays connected (so its
#: WAL is not checkpointed on close) until told to go
_WRITER = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
try:
    for i in range(int(sys.argv[2])):
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO race(n) VALUES (?)", (i,))
        c.execute("COMMIT")
    print("committed", flush=True)
except sqlite3.Error as exc:
    print(f"error: {exc}", flush=True)
sys.stdin.readline()
c.close()
"""

_READER = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=60)
print(c.execute("SELECT COUNT(*) FROM race").fetchone()[0], c.execute("PRAGMA integrity_check").fetchone()[0])
"""


class _Opens:
    """inotify ``IN_OPEN`` events of one directory (Linux): :meth:`wait_for` blocks until ``name``
    is opened by anyone, so the test waits for the writer's open of the -wal, never sleeps."""

    def __init__(self, directory: Path) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0 or self._libc.inotify_add_watch(self.fd, os.fsencode(directory), _IN_OPEN) < 0:
            pytest.skip(f"inotify is not available: {os.strerror(ctypes.get_errno())}")

    def drain(self) -> None:
        """Forget the events so far (this process's own opens)."""
        while select.select([self.fd], [], [], 0)[0]:
            os.read(self.fd, 65536)

    def wait_for(self, name: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"nobody opened {name} within {timeout} s"
            buf = os.read(self.fd, 65536)
            off = 0
            while off < len(buf):
                _wd, _mask, _cookie, length = struct.unpack_from("iIII", buf, off)
                got = buf[off + 16: off + 16 + length].rstrip(b"\0").decode()
                off += 16 + length
                if got == name:
                    return

    def close(self) -> None:
        os.close(self.fd)


def test_a_writer_opening_the_db_at_the_former_unlink_point_keeps_every_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40 item 9: a delay injected where memdeck used to unlink state.db's -wal/-shm (after
    its reader closed, under the -shm's dead-man-switch lock): a writer that opens the database
    meanwhile must keep working, and every row it committed must be seen by the next process while
    it is still connected. Old code: the writer's WAL was unlinked under it (its commits went to a
    deleted file: the next process saw none of them, or "disk I/O error")."""
    p = _quiet_wal_db(tmp_path)
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE race(n INTEGER)")
    conn.close()
    assert _side_files(p) == []
    opens = _Opens(p.parent)
    writer: list[subprocess.Popen[str]] = []
    unlinked: list[str] = []

    def start_writer() -> None:
        opens.drain()
        writer.append(subprocess.Popen([sys.executable, "-c", _WRITER, str(p), str(_WRITES)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        opens.wait_for("state.db-wal")  # it has the WAL open (and has not mapped the -shm yet)

    real_unlink, real_os_unlink = Path.unlink, os.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name in ("state.db-wal", "state.db-shm"):
            unlinked.append(self.name)
            if not writer:
                start_writer()  # the injected delay: a Hermes process opens the database now
        real_unlink(self, missing_ok=missing_ok)

    def os_unlink(path: Any, *a: Any, **k: Any) -> None:
        if os.path.basename(os.fsdecode(path)) in ("state.db-wal", "state.db-shm"):
            unlinked.append(os.path.basename(os.fsdecode(path)))
            if not writer:
                start_writer()
        real_os_unlink(path, *a, **k)

    monkeypatch.setattr(Path, "unlink", unlink)
    monkeypatch.setattr(os, "unlink", os_unlink)
    try:
        db = StateDB(p)
        assert [s.id for s in db.sessions()] == ["s1"]
        db.close()  # the former unlink point
        if not writer:
            start_writer()  # nothing was unlinked: the writer opens the database right after the close
        w = writer[0]
        assert w.stdout is not None and w.stdin is not None
        assert w.stdout.readline().strip() == "committed"
        seen = subprocess.run([sys.executable, "-c", _READER, str(p)], capture_output=True, text=True,
                              timeout=120, check=False)
        assert seen.stdout.split() == [str(_WRITES), "ok"], (seen.stdout, seen.stderr, unlinked)
        w.stdin.write("\n")
        w.stdin.flush()
        assert w.wait(timeout=60) == 0
    finally:
        opens.close()
        for w in writer:
            if w.poll() is None:
                w.kill()
                w.wait()
    assert unlinked == []  # memdeck never removes Hermes' side files


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
