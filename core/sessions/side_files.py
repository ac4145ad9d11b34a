"""The ``state.db-wal`` / ``state.db-shm`` side files beside Hermes' database: memdeck leaves them alone.

One concept: counting this process's connections to state.db (:mod:`memdeck.core.sqlite_files`
parks raw descriptors until the last one closes) without ever removing SQLite's side files.

A read-only connection to a WAL database creates ``state.db-wal`` (0 bytes) and ``state.db-shm``
when they are absent (SQLite needs the shared-memory index even to read). Up to issue 40 memdeck
removed the ones it had created after its last connection closed, under an exclusive lock on the
-shm's dead-man-switch byte (``os_unix.c`` ``unixOpenSharedMemory``, ``UNIX_SHM_DMS``). That lock
does not cover a process that has just opened the -wal and not yet locked the -shm (SQLite opens
the WAL, then maps the index): the unlink could remove the WAL a starting Hermes process had open,
and its commits went to a deleted file ("disk I/O error" in the next process; issue 40 item 9).
No lock memdeck can take proves that nobody is between those two steps, and the files are
Hermes': SQLite removes them itself when the last read-write connection closes. So memdeck never
unlinks them (``tests/core/test_statedb_sidefiles.py`` races a writer against the former unlink
point).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from .. import sqlite_files


def side_files_opening(path: Path) -> None:
    """Before a read-only connection to ``path`` opens: count it
    (:func:`memdeck.core.sqlite_files.connection_opened`)."""
    sqlite_files.connection_opened(sqlite_files.database_key(path))


def side_files_closed(path: Path) -> None:
    """After a connection to ``path`` closed: count it (descriptors parked for the database are
    closed after the process's last one). The side files are never removed (module docstring)."""
    sqlite_files.connection_closed(sqlite_files.database_key(path))


@contextlib.contextmanager
def side_files_tracked(path: Path) -> Iterator[None]:
    """Around a connection to ``path`` opened outside :class:`StateDB` (a raw ``sqlite3``
    connection): counted as StateDB's own are (close it inside the block)."""
    side_files_opening(path)
    try:
        yield
    finally:
        side_files_closed(path)
