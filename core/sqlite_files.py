"""This process's SQLite connections per database file, and raw descriptors that keep their locks.

SQLite's unix VFS keeps its locks as POSIX advisory locks, and POSIX locks belong to a process and
an inode: closing *any* descriptor of the file in that process drops every lock the process holds
on it, SQLite's included (sqlite.org, "How To Corrupt An SQLite Database File", §2.2). Another
process then believes it is alone: it checkpoints and deletes the WAL under a live connection, or
rebuilds the ``-shm`` index a reader still maps. For memdeck.db, which every memdeck process
shares, that lost user data (issue 22: 245 of 300 CLI commands failed with "database disk image is
malformed" after a ``close()`` of a descriptor opened only to ``fchmod``).

So in memdeck nothing but SQLite opens an SQLite file (``state.db``, ``memdeck.db`` or their
``-wal``/``-shm``/``-journal``) except through this module:

- :func:`raw_fd` opens a descriptor for a raw read (the header check, the read-ahead, the
  ``-shm`` probe of the side-file tidying). When this process has a connection on the database,
  the descriptor is *parked* on exit instead of closed, and closed only when the process's last
  registered connection to that database closes: SQLite's own answer to the same problem
  (``os_unix.c``, ``unixInodeInfo.pUnused``).
- :func:`create_private` creates a database file that does not exist yet, mode 0600, before
  SQLite opens it (a new inode, on which no lock of this process can exist), so no descriptor is
  needed later to set its mode.

Connections are counted per database by :func:`connection_opened` / :func:`connection_closed`
(the state.db reader does; memdeck.db is never opened raw at all). ``tests/core/test_sqlite_files.py``
runs every command and the dashboard under an audit hook that fails on any other open of an
SQLite file.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

#: The suffixes of the files SQLite keeps beside a database.
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")

_lock = threading.Lock()
_connections: dict[str, int] = {}
_parked: dict[str, list[int]] = {}


def database_key(path: str | os.PathLike[str]) -> str:
    """The key of the database a path belongs to: the absolute path of the main file (a
    ``-wal``/``-shm``/``-journal`` path maps to its database)."""
    s = os.path.abspath(os.fspath(path))
    for suffix in SIDE_SUFFIXES:
        if s.endswith(suffix):
            return s[: -len(suffix)]
    return s


def connection_opened(path: str | os.PathLike[str]) -> int:
    """Count one more connection of this process on the database at ``path``; returns the count."""
    key = database_key(path)
    with _lock:
        n = _connections.get(key, 0) + 1
        _connections[key] = n
        return n


def connection_closed(path: str | os.PathLike[str]) -> int:
    """Count one connection fewer (call after the connection is closed); returns the count left.

    When none is left, the descriptors parked for this database are closed now: SQLite's own
    locks on the file are gone already, so closing them drops nothing.
    """
    key = database_key(path)
    with _lock:
        n = max(0, _connections.get(key, 0) - 1)
        if n:
            _connections[key] = n
            return n
        _connections.pop(key, None)
        parked = _parked.pop(key, [])
    for fd in parked:
        with contextlib.suppress(OSError):
            os.close(fd)
    return 0


def connections(path: str | os.PathLike[str]) -> int:
    """How many registered connections this process has on the database at ``path``."""
    with _lock:
        return _connections.get(database_key(path), 0)


def parked_count(path: str | os.PathLike[str]) -> int:
    """How many raw descriptors wait for the database's last connection to close (for tests)."""
    with _lock:
        return len(_parked.get(database_key(path), ()))


def _release(key: str, fd: int) -> None:
    with _lock:
        if _connections.get(key, 0) > 0:
            _parked.setdefault(key, []).append(fd)
            return
    os.close(fd)


@contextlib.contextmanager
def raw_fd(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> Iterator[int]:
    """Open ``path`` (an SQLite database or one of its side files) for a raw read or lock probe.

    Yields the descriptor (``O_CLOEXEC`` added). On exit it is closed, unless this process has a
    registered connection on the database: then it is parked until the last one closes (see the
    module docstring). Raises ``OSError`` from ``os.open`` (nothing to close then).
    """
    key = database_key(path)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        yield fd
    finally:
        _release(key, fd)


_create_lock = threading.Lock()


@contextlib.contextmanager
def creating(path: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, no other thread of this process creates or first opens ``path`` through
    :func:`create_private`; wrap the creation and the first ``sqlite3.connect`` together."""
    with _create_lock:
        yield


def create_private(path: str | os.PathLike[str]) -> bool:
    """Create ``path`` as an empty file of mode 0600 if it does not exist (``O_CREAT | O_EXCL |
    O_NOFOLLOW``): SQLite then opens a file that already has the right mode, and gives its
    ``-wal``/``-shm`` the same mode. Returns True when this call created it, False when it existed
    already (or a link stands there: the caller refuses links). Closing this descriptor is safe:
    the inode is new, and callers hold :func:`creating` so no thread of this process connects to
    it meanwhile. Raises ``OSError`` for anything but "exists".
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True

