"""The ``state.db-wal`` / ``state.db-shm`` side files a read-only reader creates, and their tidying.

One concept: leaving the home as memdeck found it. See the comment below for when removing them
is provably safe (SQLite's own dead-man-switch check).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from .. import sqlite_files


# --------------------------------------------------------------------------- side files
# A read-only connection to a WAL database creates ``state.db-wal`` (0 bytes) and
# ``state.db-shm`` when they are absent (SQLite needs the shared-memory index even to read).
# Leaving them makes the home look in use (a peer dashboard that copies the database when a
# -wal exists copies it on every poll), so memdeck removes the ones *it* created, when that is
# provably safe: after this process's last connection to the file closed, the -wal is empty,
# and no other process has the database open. The last is checked the way SQLite's unix VFS
# checks it (os_unix.c ``unixOpenSharedMemory``): every connection holds a shared lock on the
# -shm's dead-man-switch byte (offset 128, ``UNIX_SHM_DMS``); if an exclusive ``F_SETLK`` on it
# succeeds, nobody else is connected. The files are unlinked while that lock is held. Within
# this process POSIX locks do not conflict (and closing a probe descriptor would drop SQLite's
# own locks), so nothing is probed while any reader of the same file is open here.

_SHM_DMS_OFFSET = 128
_side_lock = threading.Lock()
_side_ours: dict[str, bool] = {}


def side_files_opening(path: Path) -> None:
    """Before a read-only connection to ``path`` opens: note whether its side files exist yet
    (only the ones this process made are tidied) and count the connection
    (:func:`memdeck.core.sqlite_files.connection_opened`)."""
    key = sqlite_files.database_key(path)
    with _side_lock:
        if sqlite_files.connections(key) == 0:
            _side_ours[key] = not os.path.exists(key + "-wal") and not os.path.exists(key + "-shm")
        sqlite_files.connection_opened(key)


def side_files_closed(path: Path) -> None:
    """After a connection to ``path`` closed: count it; after the process's last one, tidy the
    side files it made."""
    key = sqlite_files.database_key(path)
    with _side_lock:
        if sqlite_files.connection_closed(key) > 0:
            return
        ours = _side_ours.pop(key, False)
        if ours:
            tidy_side_files(Path(key))


@contextlib.contextmanager
def side_files_tracked(path: Path) -> Iterator[None]:
    """Around a connection to ``path`` opened outside :class:`StateDB` (a raw ``sqlite3``
    connection): the ``-wal``/``-shm`` it makes SQLite create are tidied as StateDB's own are,
    once the last connection of this process to ``path`` is closed (close it inside the block)."""
    side_files_opening(path)
    try:
        yield
    finally:
        side_files_closed(path)


def tidy_side_files(path: Path) -> str:
    """Remove ``<path>-wal`` (only if empty) and ``<path>-shm`` when no connection holds the
    database open (see the note above). Returns what happened: ``"removed"``, ``"absent"``,
    ``"in use"`` (another process is connected), ``"wal not empty"`` or ``"error: ..."``.
    Call only when this process has no connection to ``path``. Never raises."""
    import fcntl

    wal, shm = Path(str(path) + "-wal"), Path(str(path) + "-shm")
    if not shm.exists():
        return "absent"
    try:
        with sqlite_files.raw_fd(shm, os.O_RDWR) as fd:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _SHM_DMS_OFFSET, os.SEEK_SET)
            except OSError:
                return "in use"
            if wal.exists() and wal.stat().st_size != 0:
                return "wal not empty"
            if wal.exists():
                wal.unlink()
            shm.unlink()
            return "removed"
    except OSError as exc:
        return f"error: {exc}"

