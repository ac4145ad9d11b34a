"""Nothing but SQLite opens an SQLite file while this process has a connection on it
(``core/sqlite_files.py``; issue 22's blocker): closing any descriptor of the file drops the
process's SQLite locks."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from memdeck.core import sqlite_files
from memdeck.core.home import HermesHome
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.commands import SAMPLES
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]

_PROBE = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128, os.SEEK_SET)
        print("free")
    except OSError:
        print("held")
""")


def _dms_lock(shm: Path) -> str:
    """Whether another process could take SQLite's dead-man-switch byte of ``shm`` exclusively
    ("free": nobody else is connected, as SQLite itself would conclude)."""
    return subprocess.run([sys.executable, "-c", _PROBE, str(shm)], capture_output=True, text=True,
                          check=True).stdout.strip()


def _wal_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    # keep the WAL and -shm: a connection that stays open while the test runs
    return conn


def test_a_raw_read_beside_a_connection_keeps_its_locks(tmp_path: Path) -> None:
    """The header check and the read-ahead read state.db raw while the reader is connected: the
    descriptor is parked, so the reader's shared lock on the -shm survives (a plain close
    dropped it, and another process would believe it was alone)."""
    db = tmp_path / "state.db"
    keeper = _wal_db(db)
    uri = f"file:{db}?mode=ro"
    sqlite_files.connection_opened(db)
    conn = sqlite3.connect(uri, uri=True)
    conn.execute("SELECT * FROM t").fetchall()
    keeper.close()  # only our read-only connection is left
    shm = Path(str(db) + "-shm")
    assert _dms_lock(shm) == "held"
    with sqlite_files.raw_fd(db) as fd:
        assert os.pread(fd, 16, 0) == b"SQLite format 3\x00"
    with sqlite_files.raw_fd(shm, os.O_RDWR) as fd:
        pass
    assert sqlite_files.parked_count(db) == 2
    assert _dms_lock(shm) == "held"  # a plain os.close here made it "free"
    conn.close()
    assert sqlite_files.connection_closed(db) == 0
    assert sqlite_files.parked_count(db) == 0  # closed once no connection is left


def test_without_a_connection_a_raw_descriptor_is_closed_at_once(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    db.write_bytes(b"")
    with sqlite_files.raw_fd(db) as fd:
        pass
    assert sqlite_files.parked_count(db) == 0
    try:
        os.fstat(fd)
        raise AssertionError("the descriptor is still open")
    except OSError:
        pass


def test_state_db_readers_count_their_connections(demo_home: HermesHome) -> None:  # noqa: F811 - the fixture
    db = StateDB(demo_home.state_db)
    assert sqlite_files.connections(demo_home.state_db) == 0
    db.sessions()
    assert sqlite_files.connections(demo_home.state_db) == 1
    db.close()
    assert sqlite_files.connections(demo_home.state_db) == 0


def test_memdeck_db_is_created_private_without_a_second_descriptor(tmp_path: Path) -> None:
    from memdeck.core.deck import db as deckdb

    home = tmp_path / "h"
    (home / "memories").mkdir(parents=True)
    conn = deckdb.connect(HermesHome(home))
    conn.close()
    assert os.stat(deckdb.db_path(HermesHome(home))).st_mode & 0o777 == 0o600
    # an older memdeck's (or a hand-made) 0644 file is made private by path, never by a descriptor
    os.chmod(deckdb.db_path(HermesHome(home)), 0o644)
    deckdb.connect(HermesHome(home)).close()
    assert os.stat(deckdb.db_path(HermesHome(home))).st_mode & 0o777 == 0o600


def test_no_command_and_no_panel_opens_an_sqlite_file_outside_sqlite(demo_home: HermesHome, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    """Every command of :data:`tests.helpers.commands.SAMPLES` (every command the parser has:
    ``test_every_command.py``) and every panel of the dashboard, under an audit hook that
    records each Python-level open of state.db, memdeck.db or their side files made anywhere
    but ``core/sqlite_files.py``."""
    home = tmp_path / "audited"
    shutil.copytree(demo_home.path, home, symlinks=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TZ": "UTC", "HERMES_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "tests.helpers.raw_open_audit", str(home)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["commands"] == sum(len(v) for v in SAMPLES.values())
    assert report["violations"] == []
