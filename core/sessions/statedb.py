"""Read-only reader of Hermes' session store ``state.db``.

memdeck never writes to ``state.db``: it is opened ``file:<path>?mode=ro`` (URI), with a busy
timeout, without ``immutable`` (Hermes writes it live, in WAL mode), and it never runs DDL.
Columns are selected by name (Hermes adds columns with ``ALTER TABLE``, so physical order varies)
and features degrade when a column is missing:

* no ``messages.active`` column (very old schema): every row is treated as active;
* no ``messages.compacted`` column: in-place compaction cannot be detected (rotation still is);
* no ``messages_fts`` / ``messages_fts_trigram``: recall falls back to ``LIKE``.

:meth:`StateDB.status` says which of these apply. Every other method returns an empty result
instead of raising when the file is missing, locked, truncated, not SQLite or of an unknown
shape: a reader never shows a traceback.

**Threads.** One :class:`StateDB` holds one SQLite connection (``check_same_thread=False``),
used under an internal lock, so sharing an instance between threads is safe but serialised.
The TUI uses one instance per worker thread. The connection is opened lazily and re-opened
after any error (a locked database recovers on the next call).

**Compaction events.** Hermes keeps no event table; compactions are reconstructed from the
traces described in Hermes 0.19 ``hermes_state.archive_and_compact`` (:4421-4471),
``_insert_message_rows`` (:4273-4357) and ``agent/conversation_compression.py:1200-1349``.
See :meth:`StateDB.compactions` for the reconstruction rule and its limits.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import re
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .compaction import CONTENT_JSON_PREFIX, decode_content, match_summary, message_text

T = TypeVar("T")

_SHARED: dict[str, "StateDB"] | None = None


@contextlib.contextmanager
def sharing_readers() -> Iterator[None]:
    """Within the block, :meth:`StateDB.shared` gives one reader per database path; they are
    closed (and their side files tidied, see :meth:`StateDB.close`) when the block ends.
    Not thread-safe: for one command (``status``, a CLI verb) on one thread."""
    global _SHARED
    outer = _SHARED
    if outer is None:
        _SHARED = {}
    try:
        yield
    finally:
        if outer is None:
            readers, _SHARED = _SHARED or {}, None
            for db in readers.values():
                db._shared_in = False
                db.close()

#: The newest schema version this reader was verified against (Hermes 0.22.2.post1
#: ``SCHEMA_VERSION``, ``hermes_state_common.py:283``; the interop matrix covers 16-31).
KNOWN_SCHEMA_VERSION = 31
#: The oldest verified one (Hermes 0.17.0 ``hermes_state.py:110``).
OLDEST_SCHEMA_VERSION = 16
STATES = ("ok", "missing", "locked", "not_sqlite", "corrupt", "empty", "unsupported")

_SQLITE_MAGIC = b"SQLite format 3\x00"

# Hermes 0.19 agent/memory_manager.py:153-169 (sanitize_context), applied by
# hermes_state._rows_to_conversation to user/assistant string content on load.
_FENCE_TAG_RE = re.compile(r"</?\s*memory-context\s*>", re.IGNORECASE)
_INTERNAL_CONTEXT_RE = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.IGNORECASE)
_INTERNAL_NOTE_RE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\.\s*Treat as "
    r"(?:informational background data|authoritative reference data[^\]]*)\.\]\s*",
    re.IGNORECASE,
)


def sanitize_context(text: str) -> str:
    """Strip ``<memory-context>`` blocks, stray fence tags and the recall system note.

    Matches Hermes 0.19 ``agent/memory_manager.py`` ``sanitize_context`` (:164-169).
    """
    text = _INTERNAL_CONTEXT_RE.sub("", text)
    text = _INTERNAL_NOTE_RE.sub("", text)
    return _FENCE_TAG_RE.sub("", text)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class DBStatus:
    """What the reader could make of the file.

    Attributes:
        state: one of ``ok``, ``missing`` (no file), ``locked`` (a writer holds an exclusive
            lock past the busy timeout), ``not_sqlite`` (no SQLite header), ``corrupt``
            (SQLite header but unreadable: truncated or malformed), ``empty`` (a valid SQLite
            file without Hermes' tables), ``unsupported`` (Hermes tables without the columns
            memdeck needs).
        message: one human sentence, including any degradation (older/newer schema, FTS
            missing).
        schema_version: ``schema_version.version`` or None.
        degraded: short slugs of missing features: ``no_active_column``,
            ``no_compacted_column``, ``no_fts``, ``no_trigram``, ``newer_schema``, ``older_schema``.
    """

    state: str
    message: str
    schema_version: int | None = None
    path: str = ""
    degraded: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "message": self.message, "schema_version": self.schema_version,
                "path": self.path, "degraded": list(self.degraded)}


@dataclass(frozen=True)
class SessionInfo:
    """One row of ``sessions`` plus derived facts.

    Attributes:
        started_at, ended_at, last_active: epoch seconds (``last_active`` is the newest message
            timestamp, or ``started_at`` when the session has no message).
        message_count: Hermes' counter (the live rows after an in-place compaction).
        live: open (``ended_at`` NULL) and the most recently active open session.
        compactions: compaction events of this session (in-place ones plus a rotation out of it).
    """

    id: str
    title: str | None
    source: str
    started_at: float
    ended_at: float | None
    end_reason: str | None
    message_count: int
    parent_session_id: str | None
    last_active: float
    live: bool = False
    compactions: int = 0
    model: str | None = None

    @property
    def open(self) -> bool:
        return self.ended_at is None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Message:
    """One ``messages`` row as Hermes loads it.

    Attributes:
        content: decoded content (``\\x00json:`` lists decoded; user/assistant strings passed
            through Hermes' ``sanitize_context`` and stripped, as ``_rows_to_conversation`` does).
        text: the plain text of ``content`` (list parts joined with ``\\n``).
        api_content: the exact API-bound text when it differed (plugin/recall injections).
        timestamp: epoch seconds.
        active, compacted: the row flags (``active`` True on schemas without the column).
    """

    id: int
    session_id: str
    role: str
    content: Any
    text: str
    api_content: str | None
    timestamp: float
    active: bool
    compacted: bool
    tool_name: str | None

    def as_dict(self) -> dict[str, Any]:
        """``{"role", "content"}``: the shape of a conversation message (what MemLock audits)."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class CompactionEvent:
    """One compaction reconstructed from state.db.

    Attributes:
        session_id: the session that was compacted (rotation: the parent that ended).
        time: epoch seconds (in-place: the newest stamp of the inserted rows; rotation: the
            parent's ``ended_at``).
        mode: ``"in_place"`` or ``"rotation"``.
        summary_message_id: the row carrying the summary (None when no summary row was found).
        kind: ``"current"``, ``"historical"``, ``"legacy"`` or None (see core.compaction).
        merged: True for the merge-into-tail ``[PRIOR CONTEXT`` shape.
        summary_hash: sha256 hex of the summary body (MemLock ``hash_summary_body``) or None.
        archived_count: rows taken out of the live set (in-place: the ``compacted=1`` batch;
            rotation: the parent's live rows).
        child_session_id: the continuation session (rotation only).
        region_first_id, region_last_id: the id range of the inserted head + summary + tail.
        index: 1-based position of this event among the session's events.
    """

    session_id: str
    time: float
    mode: str
    summary_message_id: int | None
    kind: str | None
    merged: bool
    summary_hash: str | None
    archived_count: int
    child_session_id: str | None = None
    region_first_id: int | None = None
    region_last_id: int | None = None
    index: int = 1
    region_ids: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("region_ids", None)
        return d


@dataclass(frozen=True)
class Delta:
    """The result of :meth:`StateDB.refresh`.

    Attributes:
        changed: something was committed by another connection since the last refresh.
        reset: the cursor was rebuilt (first call, reconnect, rows vanished); callers should
            reload whatever they cache.
        data_version: ``PRAGMA data_version`` after the refresh (None when unreadable).
        last_id: the highest message id seen.
        new_messages: rows with ``id`` greater than the previous ``last_id`` (capped).
        sessions_changed: ids of sessions that are new, or whose row changed (end, title,
            counters), or that got new rows.
        compactions: compaction events detected in the new rows.
        truncated: more than ``max_rows`` new rows exist; the rest come on the next call.
    """

    changed: bool
    reset: bool
    data_version: int | None
    last_id: int
    new_messages: tuple[Message, ...] = ()
    sessions_changed: tuple[str, ...] = ()
    compactions: tuple[CompactionEvent, ...] = ()
    truncated: bool = False
    status: DBStatus | None = None


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
_side_open: dict[str, int] = {}
_side_ours: dict[str, bool] = {}


def _side_files_opening(path: Path) -> None:
    key = str(path.absolute())
    with _side_lock:
        if _side_open.get(key, 0) == 0:
            wal, shm = Path(key + "-wal"), Path(key + "-shm")
            _side_ours[key] = not wal.exists() and not shm.exists()
        _side_open[key] = _side_open.get(key, 0) + 1


def _side_files_closed(path: Path) -> None:
    key = str(path.absolute())
    with _side_lock:
        n = _side_open.get(key, 0) - 1
        if n > 0:
            _side_open[key] = n
            return
        _side_open.pop(key, None)
        ours = _side_ours.pop(key, False)
        if ours:
            tidy_side_files(Path(key))


@contextlib.contextmanager
def side_files_tracked(path: Path) -> Iterator[None]:
    """Around a connection to ``path`` opened outside :class:`StateDB` (a raw ``sqlite3``
    connection): the ``-wal``/``-shm`` it makes SQLite create are tidied as StateDB's own are,
    once the last connection of this process to ``path`` is closed (close it inside the block)."""
    _side_files_opening(path)
    try:
        yield
    finally:
        _side_files_closed(path)


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
        fd = os.open(shm, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"error: {exc}"
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _SHM_DMS_OFFSET, os.SEEK_SET)
        except OSError:
            return "in use"
        try:
            if wal.exists() and wal.stat().st_size != 0:
                return "wal not empty"
            if wal.exists():
                wal.unlink()
            shm.unlink()
            return "removed"
        except OSError as exc:
            return f"error: {exc}"
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- internals

_MSG_WANTED = ("id", "session_id", "role", "content", "api_content", "timestamp", "active", "compacted", "tool_name")
_SESSION_WANTED = ("id", "title", "source", "started_at", "ended_at", "end_reason", "message_count",
                   "parent_session_id", "model", "rewind_count")

#: Seconds within which rows inserted by one archive_and_compact call are stamped
#: (``now, now+1e-6, ...``); a row appended later by append_message is further away.
FRESH_STAMP_TOLERANCE = 5e-5


def _file_identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of ``path``, or None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _quote_ident(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _num(v: Any) -> float:
    try:
        return float(v) if v is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


class _Unavailable(Exception):
    def __init__(self, status: DBStatus) -> None:
        super().__init__(status.message)
        self.status = status


class StateDB:
    """A read-only view of one ``state.db``.

    Args:
        path: the database file (usually ``HermesHome.state_db``).
        timeout: SQLite busy timeout in seconds for each statement (a locked database
            degrades to ``status().state == "locked"`` after this long).

    Never raises for a bad file: see :meth:`status`.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 1.0) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        #: the last unexpected-data problem met by a query (the query returned its empty default)
        self.last_error: str | None = None
        self._lock = threading.RLock()
        self._status = DBStatus("missing", "not opened yet", path=str(self.path))
        self._mcols: frozenset[str] = frozenset()
        self._session_active_index = False
        self._scols: frozenset[str] = frozenset()
        self._tables: frozenset[str] = frozenset()
        self._schema_cookie: int | None = None
        # refresh cursor
        self._cursor_last_id: int | None = None
        self._cursor_data_version: int | None = None
        self._cursor_sessions: dict[str, tuple[Any, ...]] = {}
        self._cursor_sigs: dict[str, tuple[Any, ...]] = {}
        self._cursor_started_max: float = 0.0
        # full-scan cache
        self._events_cache: tuple[int | None, int, list[CompactionEvent]] | None = None
        # incremental per-session compaction tracks (kept across reconnects to the same file)
        self._tracks: dict[str, _Track] = {}
        self._tracks_conn: sqlite3.Connection | None = None
        #: ``progress(done, total)`` called while a session's history is first streamed (ids
        #: covered so far / ids to cover); may raise to abort the build (the TUI uses it to
        #: post progress and to stop promptly on quit).
        self.progress: Callable[[int, int], None] | None = None

    # ------------------------------------------------------------------ connection

    def close(self) -> None:
        """Close the connection (it is re-opened lazily on the next call)."""
        with self._lock:
            self._drop()

    def __enter__(self) -> "StateDB":
        return self

    def __exit__(self, *exc: object) -> None:
        if not getattr(self, "_shared_in", None):
            self.close()

    @classmethod
    def shared(cls, path: str | os.PathLike[str]) -> "StateDB":
        """The reader of ``path`` shared inside a :func:`sharing_readers` block (so the sections
        of one command reconstruct the history once), else a new reader. ``with`` on a shared
        reader does not close it; the block does."""
        key = str(Path(path).absolute())
        if _SHARED is not None:
            db = _SHARED.get(key)
            if db is None:
                db = _SHARED[key] = cls(path)
                db._shared_in = True
            return db
        return cls(path)

    def _classify(self, exc: BaseException) -> DBStatus:
        msg = str(exc).lower()
        p = str(self.path)
        if "locked" in msg or "busy" in msg:
            return DBStatus("locked", f"state.db is locked by another process ({exc}); retrying on the next refresh", path=p)
        if "not a database" in msg:
            return self._header_status() or DBStatus("corrupt", f"state.db is not a readable database ({exc})", path=p)
        if "malformed" in msg or "corrupt" in msg or "disk i/o" in msg:
            return DBStatus("corrupt", f"state.db is damaged or truncated ({exc})", path=p)
        if "unable to open" in msg:
            if not self.path.exists():
                return DBStatus("missing", f"no state.db at {p}", path=p)
            return DBStatus("corrupt", f"state.db could not be opened ({exc})", path=p)
        if "no such column" in msg or "no such table" in msg:
            return DBStatus("unsupported", f"state.db has an unexpected shape ({exc})", path=p)
        return DBStatus("corrupt", f"state.db could not be read ({exc})", path=p)

    def _header_status(self) -> DBStatus | None:
        p = str(self.path)
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(100)
        except FileNotFoundError:
            return DBStatus("missing", f"no state.db at {p}", path=p)
        except OSError as exc:
            return DBStatus("corrupt", f"state.db could not be read ({exc})", path=p)
        if len(head) == 0:
            return DBStatus("empty", "state.db is an empty file (Hermes has not written it yet)", path=p)
        if not head.startswith(_SQLITE_MAGIC):
            return DBStatus("not_sqlite", "state.db is not an SQLite database (no SQLite header)", path=p)
        if len(head) < 100:
            return DBStatus("corrupt", "state.db is truncated (shorter than an SQLite header)", path=p)
        return None

    def _open(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        bad = self._header_status()
        if bad is not None:
            raise _Unavailable(bad)
        uri = "file:" + urllib.parse.quote(str(self.path.absolute())) + "?mode=ro"
        _side_files_opening(self.path)
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            _side_files_closed(self.path)
            raise _Unavailable(self._classify(exc)) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA query_only = 1")
            self._conn = conn
            self._identity = _file_identity(self.path)
            self._introspect(conn)
        except _Unavailable:
            self._drop()
            raise
        except sqlite3.Error as exc:
            self._drop()
            raise _Unavailable(self._classify(exc)) from exc
        return conn

    def interrupt(self) -> None:
        """Abort the statement running on this reader's connection, from any thread (SQLite
        ``sqlite3_interrupt``); the interrupted call returns its empty default. For a
        superseded as-you-type recall query. No-op when nothing is open."""
        conn = self._conn
        if conn is not None:
            try:
                conn.interrupt()
            except sqlite3.Error:
                pass

    def reopen_if_replaced(self) -> bool:
        """Drop the connection when state.db was deleted or replaced by another file since it was
        opened (a restore from backup, ``hermes sessions`` maintenance); the next call reopens
        the file now at the path. One ``stat``; True when the connection was dropped."""
        with self._lock:
            if self._conn is None or _file_identity(self.path) == self._identity:
                return False
            self._drop()
            self._cursor_last_id = None
            self._tracks = {}
            return True

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            _side_files_closed(self.path)
        self._conn = None
        self._events_cache = None
        self._cursor_data_version = None

    def _introspect(self, conn: sqlite3.Connection) -> None:
        p = str(self.path)
        tables = frozenset(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
        self._tables = tables
        self._schema_cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
        if "sessions" not in tables or "messages" not in tables:
            if not tables:
                raise _Unavailable(DBStatus("empty", "state.db has no tables yet (Hermes has not initialised it)", path=p))
            raise _Unavailable(DBStatus("empty", "state.db has no sessions/messages tables (not a Hermes session store)", path=p))
        self._mcols = frozenset(r[1] for r in conn.execute("PRAGMA table_info(messages)"))
        self._session_active_index = any(
            [r[2] for r in sorted(conn.execute(f"PRAGMA index_info({_quote_ident(ix[1])})"))][:2] == ["session_id", "active"]
            for ix in conn.execute("PRAGMA index_list(messages)") if not ix[4]  # not a partial index
        )
        self._scols = frozenset(r[1] for r in conn.execute("PRAGMA table_info(sessions)"))
        missing = [c for c in ("id", "session_id", "role", "content") if c not in self._mcols]
        missing += [f"sessions.{c}" for c in ("id",) if c not in self._scols]
        if missing:
            raise _Unavailable(DBStatus("unsupported", f"state.db lacks required columns: {', '.join(missing)}", path=p))
        version = None
        if "schema_version" in tables:
            try:
                row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
                version = int(row[0]) if row and row[0] is not None else None
            except (sqlite3.Error, TypeError, ValueError):
                version = None
        degraded = []
        notes = []
        if "active" not in self._mcols:
            degraded.append("no_active_column")
            notes.append("no messages.active column: every row is treated as active")
        if "compacted" not in self._mcols:
            degraded.append("no_compacted_column")
            notes.append("no messages.compacted column: in-place compactions cannot be detected")
        if "messages_fts" not in tables:
            degraded.append("no_fts")
            notes.append("no messages_fts: recall uses LIKE")
        if "messages_fts_trigram" not in tables:
            degraded.append("no_trigram")
        if version is not None and version > KNOWN_SCHEMA_VERSION:
            degraded.append("newer_schema")
            notes.append(f"schema v{version} is newer than v{KNOWN_SCHEMA_VERSION}; unknown columns are ignored")
        elif version is not None and version < OLDEST_SCHEMA_VERSION:
            degraded.append("older_schema")
            notes.append(f"schema v{version} is older than v{OLDEST_SCHEMA_VERSION} (Hermes 0.17)")
        msg = "state.db readable" + (f" ({'; '.join(notes)})" if notes else "")
        self._status = DBStatus("ok", msg, version, p, tuple(degraded))

    @property
    def schema_cookie(self) -> int | None:
        """``PRAGMA schema_version`` as of the last query (it changes only with DDL: a Hermes
        upgrade migrating the database), or None before the first."""
        return self._schema_cookie

    def _run(self, fn: Callable[[sqlite3.Connection], T], default: T) -> T:
        """Run ``fn(conn)`` under the lock; on any SQLite/IO failure record the status, return default."""
        with self._lock:
            try:
                conn = self._open()
                cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
                if cookie != self._schema_cookie:
                    self._introspect(conn)
                    self._events_cache = None
                return fn(conn)
            except _Unavailable as exc:
                self._status = exc.status
                self._drop()
                return default
            except sqlite3.OperationalError as exc:
                if "interrupt" in str(exc).lower():  # interrupt(): a superseded query, the connection is fine
                    self.last_error = "interrupted"
                    return default
                self._status = self._classify(exc)
                self._drop()
                return default
            except (sqlite3.Error, OSError, MemoryError) as exc:
                self._status = self._classify(exc)
                self._drop()
                return default
            except (ValueError, TypeError, UnicodeError, OverflowError) as exc:  # a value of an unexpected type
                self.last_error = f"state.db holds data memdeck cannot interpret ({exc})"
                return default

    # ------------------------------------------------------------------ status

    def status(self) -> DBStatus:
        """Open (if needed) and report the database's state. Never raises."""
        def probe(conn: sqlite3.Connection) -> DBStatus:
            conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchall()
            conn.execute("SELECT 1 FROM messages LIMIT 1").fetchall()
            return self._status

        return self._run(probe, None) or self._status

    @property
    def has_active(self) -> bool:
        return "active" in self._mcols

    @property
    def has_compacted(self) -> bool:
        return "compacted" in self._mcols

    @property
    def tables(self) -> frozenset[str]:
        return self._tables

    def connection_for_reading(self) -> Callable[[Callable[[sqlite3.Connection], T], T], T]:
        """``run(fn, default)``: run ``fn(conn)`` on this reader's read-only connection.

        For sibling core modules (recall). Errors degrade to ``default`` like every method.
        """
        return self._run

    # ------------------------------------------------------------------ column helpers

    def _msg_select(self, alias: str = "m") -> str:
        parts = []
        for c in _MSG_WANTED:
            if c in self._mcols:
                parts.append(f"{alias}.{c}")
            elif c in ("active",):
                parts.append("1")
            elif c in ("compacted",):
                parts.append("0")
            elif c == "timestamp":
                parts.append("0.0")
            else:
                parts.append("NULL")
        return ", ".join(parts)

    def _active_clause(self, alias: str = "m") -> str:
        return f" AND {alias}.active = 1" if self.has_active else ""

    @staticmethod
    def _to_message(row: Sequence[Any]) -> Message:
        mid, sid, role, content, api_content, ts, active, compacted, tool_name = row
        role = role if isinstance(role, str) else str(role)
        decoded = decode_content(content if not isinstance(content, bytes) else content.decode("utf-8", "replace"))
        if role in ("user", "assistant") and isinstance(decoded, str):
            decoded = sanitize_context(decoded).strip()
        if isinstance(api_content, bytes):
            api_content = api_content.decode("utf-8", "replace")
        try:
            tsf = float(ts) if ts is not None else 0.0
        except (TypeError, ValueError):
            tsf = 0.0
        return Message(
            id=int(mid), session_id=str(sid), role=role, content=decoded, text=message_text(decoded),
            api_content=api_content if isinstance(api_content, str) else None, timestamp=tsf,
            active=bool(active) if active is not None else True, compacted=bool(compacted),
            tool_name=tool_name if isinstance(tool_name, str) else None,
        )

    def _session_select(self) -> str:
        parts = []
        for c in _SESSION_WANTED:
            if c in self._scols:
                parts.append(f"s.{c}")
            elif c in ("message_count", "rewind_count"):
                parts.append("0")
            elif c == "source":
                parts.append("'unknown'")
            elif c == "started_at":
                parts.append("0.0")
            else:
                parts.append("NULL")
        ts = "m.timestamp" if "timestamp" in self._mcols else "NULL"
        parts.append(f"(SELECT MAX({ts}) FROM messages m WHERE m.session_id = s.id)")
        return ", ".join(parts)

    @staticmethod
    def _to_session(row: Sequence[Any], live: bool = False, compactions: int = 0) -> SessionInfo:
        sid, title, source, started, ended, reason, count, parent, model, _rewinds, last = row

        def f(v: Any, d: float | None) -> float | None:
            try:
                return float(v) if v is not None else d
            except (TypeError, ValueError):
                return d

        started_f = f(started, 0.0) or 0.0
        return SessionInfo(
            id=str(sid), title=title if isinstance(title, str) else None, source=str(source or "unknown"),
            started_at=started_f, ended_at=f(ended, None), end_reason=reason if isinstance(reason, str) else None,
            message_count=int(count or 0), parent_session_id=parent if isinstance(parent, str) else None,
            last_active=max(started_f, f(last, 0.0) or 0.0), live=live, compactions=compactions,
            model=model if isinstance(model, str) else None,
        )

    # ------------------------------------------------------------------ sessions

    def _all_session_rows(self, conn: sqlite3.Connection, where: str = "", params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        order = "s.started_at DESC, s.id DESC" if "started_at" in self._scols else "s.rowid DESC"
        return [tuple(r) for r in conn.execute(f"SELECT {self._session_select()} FROM sessions s {where} ORDER BY {order}", params)]

    @staticmethod
    def _live_id(rows: Iterable[tuple[Any, ...]]) -> str | None:
        best, best_key = None, None
        for r in rows:
            if r[4] is not None:  # ended_at
                continue
            key = (max(_num(r[3]), _num(r[10])), str(r[0]))
            if best_key is None or key > best_key:
                best, best_key = str(r[0]), key
        return best

    def sessions(self, limit: int | None = None) -> list[SessionInfo]:
        """Every session, newest ``started_at`` first (``limit`` caps the count; below 0 counts as 0).

        ``live`` marks the open session with the newest activity; ``compactions`` counts each
        session's compaction events (a full scan, cached until the database changes).
        Returns ``[]`` when the database is unavailable (see :meth:`status`).
        """
        def q(conn: sqlite3.Connection) -> list[SessionInfo]:
            rows = self._all_session_rows(conn)
            live = self._live_id(rows)
            counts: dict[str, int] = {}
            for ev in self._events(conn):
                counts[ev.session_id] = counts.get(ev.session_id, 0) + 1
            out = [self._to_session(r, live=str(r[0]) == live, compactions=counts.get(str(r[0]), 0)) for r in rows]
            return out[:max(0, int(limit))] if limit is not None else out

        return self._run(q, [])

    def session(self, session_id: str) -> SessionInfo | None:
        """One session by id, or None (unknown id or database unavailable)."""
        def q(conn: sqlite3.Connection) -> SessionInfo | None:
            rows = self._all_session_rows(conn, "WHERE s.id = ?", (session_id,))
            if not rows:
                return None
            open_rows = self._all_session_rows(conn, "WHERE s.ended_at IS NULL") if "ended_at" in self._scols else rows
            live = self._live_id(open_rows)
            n = sum(1 for ev in self._session_events(conn, session_id) if ev.session_id == session_id)
            return self._to_session(rows[0], live=live == session_id, compactions=n)

        return self._run(q, None)

    def system_prompt(self, session_id: str) -> str:
        """The system prompt Hermes stored for ``session_id`` ('' when none or unavailable).

        Reads ``sessions.system_prompt``; when that column is NULL or empty and the home has a
        ``system_prompts`` table and ``sessions.system_prompt_hash`` (schema >= 23: Hermes 0.20
        ``hermes_state.py:169-170``, 0.22 ``hermes_state_sessions.py:738-742``, where
        ``update_system_prompt`` stores the prompt once by sha256 and sets the column NULL),
        the prompt is read from ``system_prompts.prompt`` by that hash, as
        ``SessionDB.get_session`` joins it back. Columns are selected by name. Never raises.
        """
        def q(conn: sqlite3.Connection) -> str:
            text = None
            if "system_prompt" in self._scols:
                row = conn.execute("SELECT system_prompt FROM sessions WHERE id = ?", (session_id,)).fetchone()
                text = row[0] if row else None
            if not text and "system_prompt_hash" in self._scols and "system_prompts" in self._tables:
                pcols = {r[1] for r in conn.execute("PRAGMA table_info(system_prompts)")}
                if {"hash", "prompt"} <= pcols:
                    row = conn.execute(
                        "SELECT p.prompt FROM sessions s JOIN system_prompts p ON p.hash = s.system_prompt_hash "
                        "WHERE s.id = ?", (session_id,)).fetchone()
                    text = row[0] if row else None
            return text if isinstance(text, str) else ""

        return self._run(q, "")

    def live_session(self) -> SessionInfo | None:
        """The open session (``ended_at`` NULL) with the newest message (else newest start), or None."""
        def q(conn: sqlite3.Connection) -> SessionInfo | None:
            where = "WHERE s.ended_at IS NULL" if "ended_at" in self._scols else ""
            rows = self._all_session_rows(conn, where)
            live = self._live_id(rows)
            if live is None:
                return None
            row = next(r for r in rows if str(r[0]) == live)
            n = sum(1 for ev in self._session_events(conn, live) if ev.session_id == live)
            return self._to_session(row, live=True, compactions=n)

        return self._run(q, None)

    def lineage(self, session_id: str) -> list[SessionInfo]:
        """The compression lineage through ``session_id``, root first, tip last.

        Up: ``parent_session_id`` links to the root (cycle-safe). Down: the newest child whose
        parent ended with ``end_reason='compression'`` (Hermes ``_COMPRESSION_CHILD_SQL``,
        hermes_state.py:83-87), repeatedly. ``[]`` for an unknown id.
        """
        def q(conn: sqlite3.Connection) -> list[SessionInfo]:
            chain: list[tuple[Any, ...]] = []
            seen: set[str] = set()
            cur: str | None = session_id
            while cur and cur not in seen:
                seen.add(cur)
                rows = self._all_session_rows(conn, "WHERE s.id = ?", (cur,))
                if not rows:
                    break
                chain.insert(0, rows[0])
                cur = rows[0][7] if "parent_session_id" in self._scols else None
            if not chain:
                return []
            tip = chain[-1]
            while "parent_session_id" in self._scols and tip[5] == "compression":
                kids = [r for r in self._all_session_rows(conn, "WHERE s.parent_session_id = ?", (str(tip[0]),)) if str(r[0]) not in seen]
                if not kids:
                    break
                tip = kids[0]  # newest started first
                seen.add(str(tip[0]))
                chain.append(tip)
            open_rows = self._all_session_rows(conn, "WHERE s.ended_at IS NULL") if "ended_at" in self._scols else chain
            live = self._live_id(open_rows)
            out = []
            for r in chain:
                n = sum(1 for ev in self._session_events(conn, str(r[0])) if ev.session_id == str(r[0]))
                out.append(self._to_session(r, live=str(r[0]) == live, compactions=n))
            return out

        return self._run(q, [])

    # ------------------------------------------------------------------ messages

    def messages(self, session_id: str, include_inactive: bool = False) -> list[Message]:
        """A session's rows in id (insertion) order; only active rows unless ``include_inactive``."""
        def q(conn: sqlite3.Connection) -> list[Message]:
            clause = "" if include_inactive else self._active_clause()
            return [self._to_message(r) for r in conn.execute(
                f"SELECT {self._msg_select()} FROM messages m WHERE m.session_id = ?{clause} ORDER BY m.id", (session_id,))]

        return self._run(q, [])

    def active_region(self, session_id: str) -> list[Message]:
        """The live conversation exactly as Hermes reloads it: ``active = 1`` rows in id order.

        Matches Hermes 0.19 ``get_messages_as_conversation`` (hermes_state.py:4842-4907):
        ``ORDER BY id`` (not timestamp), ``\\x00json:`` content decoded, user/assistant text
        passed through ``sanitize_context`` and stripped. Not reproduced: the defensive strip of
        background-review harness rows (``_strip_background_review_harness``).
        """
        return self.messages(session_id, include_inactive=False)

    def message(self, message_id: int) -> Message | None:
        """One row by id (any state), or None."""
        def q(conn: sqlite3.Connection) -> Message | None:
            r = conn.execute(f"SELECT {self._msg_select()} FROM messages m WHERE m.id = ?", (int(message_id),)).fetchone()
            return self._to_message(r) if r else None

        return self._run(q, None)

    def message_count(self) -> int:
        """Rows in ``messages`` (all states); 0 when unavailable."""
        return self._run(lambda c: int(c.execute("SELECT COUNT(*) FROM messages").fetchone()[0]), 0)

    # ------------------------------------------------------------------ compactions

    def compactions(self, session_id: str | None = None) -> list[CompactionEvent]:
        """Compaction events, oldest first.

        With ``session_id``: the events whose ``session_id`` or ``child_session_id`` is that
        session (its in-place compactions, the rotation out of it and the rotation into it).

        **In-place** (Hermes ``archive_and_compact``): one transaction flips every live row to
        ``active=0, compacted=1`` and inserts head + summary + tail as new active rows. For each
        session, a *summary row* is a row whose text :func:`core.compaction.match_summary`
        recognises (current, historical or legacy prefix, or the merge-into-tail
        ``[PRIOR CONTEXT`` shape) and whose content is not a copy of an earlier summary row of
        the session. For the k-th summary row at position p (session rows in id order):

        * *head*: if the summary row is still active, the active rows right before it; otherwise
          the longest run right before it that repeats (role, content) the first rows of the
          previous region (Hermes copies the first ``protect_first_n`` messages);
        * *batch*: the ``compacted = 1`` rows from the previous region's start (or the session
          start) up to the head; ``archived_count`` is its size. A candidate with an empty
          batch is not an in-place event (e.g. the handoff summary of a rotation child);
        * *tail*: the rows after the summary with consecutive global ids (one transaction),
          the same flags, and either a fresh stamp (within :data:`FRESH_STAMP_TOLERANCE` plus
          1e-6 s per row of the summary's stamp: ``_insert_message_rows`` stamps new rows
          ``now + i*1e-6``) or the (role, content) of a batch row (copies keep their stamps).

        Limits: a message appended within ~50 µs of the compaction with a consecutive id, or a
        later message repeating a batch message word for word right after the tail, is counted
        in the tail; a compaction whose summary row was later rewound or deleted is missed; a
        head longer than the previous region cannot be told apart.

        **Rotation**: a session with ``end_reason = 'compression'`` and a child whose
        ``parent_session_id`` points at it (the newest such child); the region after it is the
        child's initial rows (found with the same tail rule from the child's summary row).
        """
        def q(conn: sqlite3.Connection) -> list[CompactionEvent]:
            if session_id is None:
                return list(self._events(conn))
            return self._session_events(conn, session_id)

        return self._run(q, [])

    def region_after(self, event: CompactionEvent) -> list[Message]:
        """The active region as it stood right after ``event``: head + summary + tail rows.

        This is what Hermes sent on the next turn (before that turn's new messages) and so what
        MemLock audited. Ordered by id; ``[]`` when unavailable.
        """
        ids = event.region_ids
        if not ids:
            return []

        def q(conn: sqlite3.Connection) -> list[Message]:
            out: list[Message] = []
            chunk = 500
            for i in range(0, len(ids), chunk):
                part = ids[i:i + chunk]
                out += [self._to_message(r) for r in conn.execute(
                    f"SELECT {self._msg_select()} FROM messages m WHERE m.id IN ({','.join('?' * len(part))})", part)]
            return sorted(out, key=lambda m: m.id)

        return self._run(q, [])

    def _events(self, conn: sqlite3.Connection) -> list[CompactionEvent]:
        dv = conn.execute("PRAGMA data_version").fetchone()[0]
        if self._events_cache is not None and self._events_cache[0] == dv:
            return self._events_cache[2]
        events: list[CompactionEvent] = []
        for sid in self._compacted_session_ids(conn):
            events += self._inplace_events(conn, sid)
        events += self._rotation_events(conn, None)
        events.sort(key=lambda e: (e.time, e.session_id, e.region_first_id or 0))
        self._events_cache = (dv, 0, events)
        return events

    def _compacted_session_ids(self, conn: sqlite3.Connection) -> list[str]:
        """Ids of the sessions holding ``compacted = 1`` rows, sorted.

        With an index on ``messages(session_id, active, ...)`` (Hermes 0.19
        ``idx_messages_session_active``) this is one index probe per session: Hermes'
        ``archive_and_compact`` sets ``active = 0, compacted = 1`` together
        (hermes_state.py:4456), so only the session's ``active = 0`` rows are looked at.
        Without that index (older schemas) it is a scan of ``messages``.
        """
        if not self.has_compacted:
            return []
        if self._session_active_index and "active" in self._mcols:
            sql = ("SELECT s.id FROM sessions s WHERE EXISTS (SELECT 1 FROM messages m"
                   " WHERE m.session_id = s.id AND m.active = 0 AND m.compacted = 1)")
        else:
            sql = "SELECT DISTINCT session_id FROM messages WHERE compacted = 1"
        return sorted(str(r[0]) for r in conn.execute(sql) if r[0] is not None)

    def _session_events(self, conn: sqlite3.Connection, session_id: str) -> list[CompactionEvent]:
        events = self._inplace_events(conn, session_id) if self.has_compacted else []
        events += [e for e in self._rotation_events(conn, session_id)]
        events.sort(key=lambda e: (e.time, e.region_first_id or 0))
        return events

    def _session_rows(self, conn: sqlite3.Connection, session_id: str) -> list[tuple[Any, ...]]:
        cols = [c if c in self._mcols else {"active": "1", "compacted": "0", "timestamp": "0.0"}.get(c, "NULL")
                for c in ("id", "role", "content", "active", "compacted", "timestamp")]
        return [tuple(r) for r in conn.execute(
            f"SELECT {', '.join(cols)} FROM messages WHERE session_id = ? ORDER BY id", (session_id,))]

    @staticmethod
    def _row_text(content: Any) -> str:
        if isinstance(content, bytes):
            content = content.decode("utf-8", "replace")
        return message_text(decode_content(content))

    def _inplace_events(self, conn: sqlite3.Connection, session_id: str) -> list[CompactionEvent]:
        return list(self._tracked_events(conn, session_id))

    #: Rows read per statement while streaming a session (bounds the time between progress calls).
    STREAM_CHUNK_IDS = 20_000

    def _stream_rows(self, conn: sqlite3.Connection, session_id: str, from_id: int,
                     progress: Callable[[int, int], None] | None = None) -> Iterable[_Row]:
        """A session's rows with ``id >= from_id`` in id order, streamed.

        Read through the primary key (``id`` ranges) with the session test made unindexable
        (``+session_id``), so SQLite walks the table b-tree in id order: no temp b-tree sort,
        nothing written to disk (Hermes' ``idx_messages_session(session_id, timestamp)`` would
        deliver timestamp order and force a sort of the whole session). Rows of other
        sessions in the range are skipped by SQLite without reading their content.
        ``progress(done_ids, total_ids)`` is called between chunks (it may raise to abort).
        """
        cols = [c if c in self._mcols else {"active": "1", "compacted": "0", "timestamp": "0.0"}.get(c, "NULL")
                for c in ("id", "role", "content", "active", "compacted", "timestamp")]
        top = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])
        sql = (f"SELECT {', '.join(cols)} FROM messages WHERE id >= ? AND id < ? AND +session_id = ? ORDER BY id")
        lo = int(from_id)
        total = max(0, top - lo + 1)
        while lo <= top:
            hi = lo + self.STREAM_CHUNK_IDS
            yield from conn.execute(sql, (lo, hi, session_id))
            if progress is not None:
                progress(min(hi, top + 1) - int(from_id), total)
            lo = hi

    def _session_sig(self, conn: sqlite3.Connection, session_id: str) -> tuple[Any, ...]:
        if "rewind_count" not in self._scols:
            return ()
        row = conn.execute("SELECT rewind_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return tuple(row) if row else ()

    def _tracked_events(self, conn: sqlite3.Connection, session_id: str) -> list[CompactionEvent]:
        """The session's in-place events, found incrementally (see :class:`_Track`).

        First call per session: one streamed pass over its rows, holding only the rows from
        the last-but-one compaction on. Later calls with an unchanged ``PRAGMA data_version``
        return the kept events; otherwise only the window (the rows from the checkpoint's
        region start, usually the last two compactions' regions plus new rows) is re-read with
        its current flags. A rewind (``rewind_count`` changed) or vanished rows rebuild from
        scratch. The result equals the full-scan rule of :meth:`compactions`.
        """
        dv = int(conn.execute("PRAGMA data_version").fetchone()[0])
        track = self._tracks.get(session_id)
        if track is not None and track.data_version == dv and self._tracks_conn is conn:
            return track.events
        sig = self._session_sig(conn, session_id)
        if track is None or track.sig != sig:
            track = None
        for attempt in range(2):
            fresh = track is None
            t = _Track(sig=sig) if fresh else track
            try:
                self._advance(conn, session_id, t, progress=self.progress if fresh else None)
            except _Rebuild:
                track = None
                continue
            t.data_version = dv
            self._tracks[session_id] = t
            self._tracks_conn = conn
            return t.events
        return []

    def _advance(self, conn: sqlite3.Connection, session_id: str, track: _Track,
                 progress: Callable[[int, int], None] | None = None) -> None:
        buf: list[_Row] = []
        trim_at = 4096
        for r in self._stream_rows(conn, session_id, track.ckpt_start_id, progress):
            buf.append(tuple(r))
            if len(buf) >= trim_at:
                keep = _run_window(session_id, buf, self._row_text, track, complete=False)
                if keep:
                    del buf[:keep]
                trim_at = max(4096, 2 * len(buf))
        if track.ckpt is not None and (not buf or int(buf[0][0]) != track.ckpt_start_id):
            raise _Rebuild()
        _run_window(session_id, buf, self._row_text, track, complete=True)
        track.last_id = int(buf[-1][0]) if buf else 0

    def _rotation_events(self, conn: sqlite3.Connection, session_id: str | None) -> list[CompactionEvent]:
        if not {"parent_session_id", "end_reason"} <= self._scols:
            return []
        sql = ("SELECT p.id, p.ended_at, c.id, c.started_at FROM sessions p JOIN sessions c ON c.parent_session_id = p.id"
               " WHERE p.end_reason = 'compression'")
        params: tuple[Any, ...] = ()
        if session_id is not None:
            sql += " AND (p.id = ? OR c.id = ?)"
            params = (session_id, session_id)
        best: dict[str, tuple[Any, ...]] = {}
        for pid, ended, cid, cstart in conn.execute(sql + " ORDER BY c.started_at", params):
            best[str(pid)] = (pid, ended, cid, cstart)  # newest child wins
        out = []
        for pid, ended, cid, cstart in best.values():
            parent_rows = self._session_rows(conn, str(pid))
            live_parent = [r for r in parent_rows if r[3]]
            child_rows = self._session_rows(conn, str(cid))
            region, match, summary_id = _initial_region(child_rows, self._row_text, live_parent)
            t = _num(ended) if ended is not None else _num(cstart)
            out.append(CompactionEvent(
                session_id=str(pid), time=t, mode="rotation", summary_message_id=summary_id,
                kind=match.kind if match else None, merged=bool(match and match.merged),
                summary_hash=match.body_hash if match else None, archived_count=len(live_parent),
                child_session_id=str(cid), region_first_id=region[0] if region else None,
                region_last_id=region[-1] if region else None, index=1, region_ids=tuple(region),
            ))
        return out

    # ------------------------------------------------------------------ incremental refresh

    def memory_tool_calls(self, since: float, until: float, *, limit: int = 500) -> list[dict[str, Any]]:
        """Hermes ``memory`` tool calls made by assistant messages with ``since <= timestamp <= until``.

        Reads ``messages.tool_calls`` (a JSON list in OpenAI shape ``{id, type, function: {name,
        arguments}}`` or the flat ``{name, arguments}``; reference §2.7) of the sessions that
        overlap the window (``sessions.started_at <= until`` and ``ended_at`` NULL or
        ``>= since``), through Hermes' ``(session_id, timestamp)`` index. Columns by name;
        without ``tool_calls`` or ``timestamp`` columns the result is ``[]``.

        Args:
            since, until: epoch seconds. limit: at most this many calls, newest first.

        Returns:
            ``[{"message_id", "session_id", "source", "timestamp", "tool_call_id", "args"}]``,
            newest first; ``args`` is the decoded ``arguments`` dict (``action``, ``target``,
            ``content``, ``old_text``, ``operations``). Never raises (errors give ``[]``).
        """
        def q(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            if "tool_calls" not in self._mcols or "timestamp" not in self._mcols:
                return []
            where, params = "", ()
            if "started_at" in self._scols:
                where = " WHERE s.started_at IS NULL OR s.started_at <= ?"
                params = (until,)
                if "ended_at" in self._scols:
                    where += " AND (s.ended_at IS NULL OR s.ended_at >= ?)"
                    params = (until, since)
            src = "s.source" if "source" in self._scols else "NULL"
            sessions = conn.execute(f"SELECT s.id, {src} FROM sessions s{where}", params).fetchall()
            out: list[dict[str, Any]] = []
            for sid, source in sessions:
                rows = conn.execute(
                    "SELECT id, timestamp, tool_calls FROM messages WHERE session_id = ? AND timestamp >= ? "
                    "AND timestamp <= ? AND role = 'assistant' AND tool_calls IS NOT NULL", (sid, since, until)).fetchall()
                for mid, ts, raw in rows:
                    for call in _memory_calls(raw):
                        out.append({"message_id": int(mid), "session_id": str(sid),
                                    "source": source if isinstance(source, str) else None,
                                    "timestamp": _num(ts), **call})
            out.sort(key=lambda c: (c["timestamp"], c["message_id"]), reverse=True)
            return out[:limit]

        return self._run(q, [])

    def data_version(self) -> int | None:
        """``PRAGMA data_version`` of this connection (changes when another connection commits).

        None when the database is unavailable. A new value after a reconnect is not comparable
        with the old one (use :meth:`refresh`, which handles that).
        """
        return self._run(lambda c: int(c.execute("PRAGMA data_version").fetchone()[0]), None)

    def reset_cursor(self) -> None:
        """Forget the refresh cursor: the next :meth:`refresh` reports ``reset=True``."""
        with self._lock:
            self._cursor_last_id = None
            self._cursor_data_version = None
            self._cursor_sessions = {}
            self._cursor_sigs = {}

    def refresh(self, *, max_rows: int = 5000) -> Delta:
        """What changed since the last call, at a cost independent of the database size.

        Per call: ``PRAGMA data_version`` (unchanged -> return at once); rows with
        ``id > last_id`` through the primary key (at most ``max_rows``); a re-check of the
        session rows that are open, new since the last call, or got new rows (their end,
        title and counters; a rewind or an in-place compaction shows as a counter change).
        Ended sessions that are not touched are not re-read: a later rename of an ended
        session appears only on a full :meth:`sessions`. The first call (or the first after
        a reconnect or a vacuum that lowered the max id) sets ``reset=True`` and starts the
        cursor at the current max id without returning old rows.
        """
        def q(conn: sqlite3.Connection) -> Delta:
            dv = int(conn.execute("PRAGMA data_version").fetchone()[0])
            max_id = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])
            reset = self._cursor_last_id is None or self._cursor_data_version is None or max_id < (self._cursor_last_id or 0)
            if reset:
                self._cursor_last_id = max_id
                self._cursor_data_version = dv
                self._cursor_sessions = {}
                self._cursor_sigs = {}
                self._cursor_started_max = 0.0
                changed_sessions = self._recheck_sessions(conn, set())
                return Delta(True, True, dv, max_id, sessions_changed=tuple(changed_sessions), status=self._status)
            if dv == self._cursor_data_version:
                return Delta(False, False, dv, self._cursor_last_id or 0, status=self._status)
            last = self._cursor_last_id or 0
            rows = conn.execute(
                f"SELECT {self._msg_select()} FROM messages m WHERE m.id > ? ORDER BY m.id LIMIT ?", (last, max_rows + 1)).fetchall()
            truncated = len(rows) > max_rows
            rows = rows[:max_rows]
            msgs = tuple(self._to_message(r) for r in rows)
            touched = {m.session_id for m in msgs}
            changed_sessions = self._recheck_sessions(conn, touched)
            events: list[CompactionEvent] = []
            for sid in sorted({m.session_id for m in msgs if match_summary(m.text) is not None}):
                events += [e for e in self._session_events(conn, sid)
                           if (e.summary_message_id or 0) > last or (e.region_first_id or 0) > last]
            new_last = msgs[-1].id if msgs else last
            self._cursor_last_id = new_last
            if not truncated:
                self._cursor_data_version = dv
            self._events_cache = None
            return Delta(True, False, dv, new_last, msgs, tuple(sorted(changed_sessions | touched)), tuple(events), truncated, self._status)

        out = self._run(q, None)
        if out is None:
            with self._lock:
                self._cursor_data_version = None
            return Delta(False, True, None, self._cursor_last_id or 0, status=self._status)
        return out

    def _recheck_sessions(self, conn: sqlite3.Connection, touched: set[str]) -> set[str]:
        cols = [c for c in ("id", "ended_at", "end_reason", "title", "message_count", "rewind_count", "started_at") if c in self._scols]
        conds = []
        params: list[Any] = []
        if "ended_at" in self._scols and not self._cursor_sigs:
            conds.append("ended_at IS NULL")
        if "started_at" in self._scols:
            conds.append("started_at >= ?")
            params.append(self._cursor_started_max)
        if self._cursor_sessions:
            known_open = list(self._cursor_sessions)[:500]
            conds.append(f"id IN ({','.join('?' * len(known_open))})")
            params += known_open
        if touched:
            t = list(touched)[:500]
            conds.append(f"id IN ({','.join('?' * len(t))})")
            params += t
        where = " OR ".join(conds) if conds else "1"
        changed: set[str] = set()
        seen: dict[str, tuple[Any, ...]] = {}
        for r in conn.execute(f"SELECT {', '.join(cols)} FROM sessions WHERE {where}", params):
            sig = tuple(r)
            sid = str(r[0])
            if self._cursor_sigs.get(sid) != sig:
                changed.add(sid)
            self._cursor_sigs[sid] = sig
            if "ended_at" not in self._scols or r[cols.index("ended_at")] is None:
                seen[sid] = sig
            if "started_at" in self._scols and r[cols.index("started_at")] is not None:
                try:
                    self._cursor_started_max = max(self._cursor_started_max, float(r[cols.index("started_at")]))
                except (TypeError, ValueError):
                    pass
        self._cursor_sessions = seen
        return changed


# --------------------------------------------------------------------------- reconstruction

_Row = tuple[Any, ...]  # (id, role, content, active, compacted, timestamp)


def _memory_calls(raw: Any) -> list[dict[str, Any]]:
    """The ``memory`` calls of one ``tool_calls`` value: ``[{"tool_call_id", "args"}]``."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        calls = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return []
    found = []
    for c in calls if isinstance(calls, list) else []:
        if not isinstance(c, dict):
            continue
        fn = c.get("function") if isinstance(c.get("function"), dict) else c
        if fn.get("name") != "memory":
            continue
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                continue
        if isinstance(args, dict):
            found.append({"tool_call_id": c.get("id"), "args": args})
    return found


class _Texts:
    """Per-row texts of one session's rows, decoded at most once and only when asked for.

    Most rows are plain strings that cannot start a summary; :meth:`may_be_summary` rejects
    them from the raw column value without decoding, so a reconstruction decodes only the
    candidate rows and the rows it compares (heads, tails).
    """

    __slots__ = ("rows", "text_of", "_cache")

    def __init__(self, rows: Sequence[_Row], text_of: Callable[[Any], str]) -> None:
        self.rows = rows
        self.text_of = text_of
        self._cache: dict[int, str] = {}

    def text(self, i: int) -> str:
        raw = self.rows[i][2]
        if type(raw) is str and not raw.startswith(CONTENT_JSON_PREFIX):
            return raw  # a plain string is its own text (message_text), nothing to decode
        t = self._cache.get(i)
        if t is None:
            t = self._cache[i] = self.text_of(raw)
        return t

    def key(self, i: int) -> tuple[str, str]:
        return (str(self.rows[i][1]), self.text(i))

    def may_be_summary(self, i: int) -> bool:
        """False only for rows whose text cannot be a summary (a summary starts with ``[``
        or whitespace; ``\\x00json:`` and bytes content are decoded first)."""
        raw = self.rows[i][2]
        if isinstance(raw, str) and not raw.startswith(CONTENT_JSON_PREFIX):
            return raw[:1] in _SUMMARY_FIRST_CHARS and raw != ""
        text = self.text(i)
        if not text or text[:1] not in _SUMMARY_FIRST_CHARS:
            return isinstance(raw, str) and raw.startswith(CONTENT_JSON_PREFIX)
        return True


#: The first character of any text :func:`core.compaction.match_summary` accepts.
_SUMMARY_FIRST_CHARS = "[ \t\n\r"


def _tail_end(rows: Sequence[_Row], p: int, stop: int, is_copy: Callable[[int], bool]) -> int:
    """Index one past the last row of the inserted set that contains the summary at ``p``.

    ``is_copy(j)`` tells whether row ``j`` repeats the (role, text) of a batch row; it is
    called only when a row is not freshly stamped (so the batch keys are built only when needed).
    """
    try:
        ts0 = float(rows[p][5] or 0.0)
    except (TypeError, ValueError):
        ts0 = 0.0
    j = p + 1
    while j < stop:
        prev, cur = rows[j - 1], rows[j]
        if int(cur[0]) != int(prev[0]) + 1 or bool(cur[3]) != bool(rows[p][3]) or bool(cur[4]) != bool(rows[p][4]):
            break
        try:
            ts = float(cur[5] or 0.0)
        except (TypeError, ValueError):
            ts = 0.0
        fresh = abs(ts - ts0) <= FRESH_STAMP_TOLERANCE + 1e-6 * (j - p + 1)
        if not fresh and not is_copy(j):
            break
        j += 1
    return j


def _lazy_set(build: Callable[[], set[Any]]) -> Callable[[], set[Any]]:
    box: list[set[Any]] = []

    def get() -> set[Any]:
        if not box:
            box.append(build())
        return box[0]
    return get


def _ids_of(first: int, last: int, ids: list[int]) -> Sequence[int]:
    """A region's ids: a ``range`` when consecutive (one transaction, the usual case), else a tuple."""
    return range(first, last + 1) if len(ids) == last - first + 1 else tuple(ids)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass
class _Accepted:
    p: int                      # index of the summary row in the window
    match: Any                  # SummaryMatch (None for a carried checkpoint: taken from ``event``)
    start: int                  # index of the region's first row (head start)
    batch: list[int] | None     # indices of the batch rows (None for a carried checkpoint)
    archived: int
    event: CompactionEvent | None = None  # the checkpoint's event, carried from the last run


@dataclass
class _Track:
    """The incremental reconstruction state of one session (see :meth:`StateDB._tracked_events`).

    ``final``: events that can no longer change (their summary row is inactive and a later
    event exists). The *checkpoint* is the last event whose summary row is inactive: its
    region start ``ckpt_start_id`` is where the next run's window begins (rows before it are
    never read again); ``ckpt_copies`` holds the hashes of its batch rows' (role, text) keys
    (its tail test needs them and its batch lies before the window). ``seen``: digests of every
    summary candidate text up to the checkpoint's summary row. ``pending``: the checkpoint and
    the events after it, as of the last run (recomputed on every run).
    """

    final: list[CompactionEvent] = field(default_factory=list)
    ckpt: CompactionEvent | None = None
    ckpt_start_id: int = 0
    ckpt_copies: frozenset[int] = frozenset()
    seen: dict[bytes, int] = field(default_factory=dict)
    pending: list[CompactionEvent] = field(default_factory=list)
    data_version: int | None = None
    sig: tuple[Any, ...] = ()
    last_id: int = 0

    @property
    def events(self) -> list[CompactionEvent]:
        return self.final + self.pending


def _run_window(session_id: str, rows: Sequence[_Row], text_of: Callable[[Any], str], track: _Track,
                *, complete: bool) -> int:
    """Run the in-place reconstruction over ``rows`` (the window: the session's rows from
    ``track.ckpt_start_id`` in id order, read with their current flags) and advance ``track``.

    Exactly the rule of :meth:`StateDB.compactions` restricted to the window: the loop state
    at the checkpoint (its region start as ``lower``, the candidate texts seen so far) is all
    the rule needs from the rows before it. Returns the window index from which rows must be
    kept for the next run (the new checkpoint's region start). With ``complete`` the rows are
    the whole window up to the newest row (``pending`` is set); otherwise only events before
    the new checkpoint are committed (a first build that trims its buffer as it goes).
    """
    tx = _Texts(rows, text_of)
    ck = track.ckpt
    p_ck = -1
    accepted: list[_Accepted] = []
    lower = 0
    if ck is not None and ck.summary_message_id is not None:
        p_ck = bisect.bisect_left(_IdView(rows), int(ck.summary_message_id))
        if p_ck >= len(rows) or int(rows[p_ck][0]) != int(ck.summary_message_id):
            raise _Rebuild()
        accepted.append(_Accepted(p_ck, None, 0, None, ck.archived_count, ck))
    seen_local = set(track.seen)
    new_seen: list[tuple[bytes, int]] = []
    for i in range(p_ck + 1, len(rows)):
        if not tx.may_be_summary(i):
            continue
        text = tx.text(i)
        m = match_summary(text)
        if m is None:
            continue
        d = _digest(text)
        if d in seen_local:
            continue
        seen_local.add(d)
        new_seen.append((d, int(rows[i][0])))
        p = i
        if p < lower:
            continue
        if rows[p][3]:  # summary still live: the head is the live run right before it
            h = 0
            while p - h - 1 >= lower and rows[p - h - 1][3]:
                h += 1
        else:
            h = 0
            limit = (p - lower) // 2
            k0 = tx.key(lower) if limit > 0 else None
            for j in range(limit, 0, -1):
                if tx.key(p - j) == k0 and all(tx.key(p - j + t) == tx.key(lower + t) for t in range(1, j)):
                    h = j
                    break
        start = p - h
        batch = [k for k in range(lower, start) if rows[k][4]]
        if not batch:
            continue
        accepted.append(_Accepted(p, m, start, batch, len(batch)))
        lower = start
    # the new checkpoint: the last accepted event whose summary row is inactive
    # (and no live row before its start: only live rows change flags later — a compaction or a
    # rewind flips them — so every row before the checkpoint's start is frozen)
    first_live = next((i for i in range(len(rows)) if rows[i][3]), len(rows))
    new_ck = None
    for k in range(len(accepted) - 1, -1, -1):
        if not rows[accepted[k].p][3] and accepted[k].start <= first_live:
            new_ck = k
            break
    if not complete and new_ck is None:
        return 0
    base = len(track.final)
    events: list[CompactionEvent] = []
    upto = len(accepted) if complete else new_ck
    for k in range(upto if upto is not None else 0):
        a = accepted[k]
        stop = accepted[k + 1].start if k + 1 < len(accepted) else len(rows)
        if a.batch is None:
            copies_hashes = track.ckpt_copies
            is_copy = lambda j, c=copies_hashes: hash(tx.key(j)) in c  # noqa: E731
        else:
            copies = _lazy_set(lambda b=a.batch: {hash(tx.key(i)) for i in b})
            is_copy = lambda j, c=copies: hash(tx.key(j)) in c()  # noqa: E731
        end = _tail_end(rows, a.p, stop, is_copy)
        region = [int(rows[i][0]) for i in range(a.start, end)]
        stamps = []
        for i in range(a.start, end):
            try:
                stamps.append(float(rows[i][5] or 0.0))
            except (TypeError, ValueError):
                pass
        if a.match is not None:
            kind, merged, shash = a.match.kind, a.match.merged, a.match.body_hash
        else:
            kind, merged, shash = a.event.kind, a.event.merged, a.event.summary_hash  # type: ignore[union-attr]
        events.append(CompactionEvent(
            session_id=session_id, time=max(stamps) if stamps else 0.0, mode="in_place",
            summary_message_id=int(rows[a.p][0]), kind=kind, merged=merged, summary_hash=shash,
            archived_count=a.archived, region_first_id=region[0], region_last_id=region[-1], index=base + k + 1,
            region_ids=_ids_of(region[0], region[-1], region),
        ))
    keep_from = 0
    if new_ck is not None:
        a = accepted[new_ck]
        if a.batch is not None:  # a new checkpoint: remember its batch keys
            track.ckpt_copies = frozenset(hash(tx.key(i)) for i in a.batch)
        if complete:
            track.final += events[:new_ck]
            track.ckpt = events[new_ck]
            track.pending = events[new_ck:]
        else:
            track.final += events
            ck_ev = CompactionEvent(
                session_id=session_id, time=0.0, mode="in_place", summary_message_id=int(rows[a.p][0]),
                kind=a.match.kind if a.match is not None else a.event.kind,  # type: ignore[union-attr]
                merged=a.match.merged if a.match is not None else a.event.merged,  # type: ignore[union-attr]
                summary_hash=a.match.body_hash if a.match is not None else a.event.summary_hash,  # type: ignore[union-attr]
                archived_count=a.archived)
            track.ckpt = ck_ev
            track.pending = []
        track.ckpt_start_id = int(rows[a.start][0])
        limit_id = int(rows[a.p][0])
        for d, rid in new_seen:
            if rid <= limit_id:
                track.seen[d] = rid
        keep_from = a.start
    elif complete:
        track.pending = events
    return keep_from


class _IdView:
    """``rows`` seen as their ids, for :func:`bisect.bisect_left`."""

    __slots__ = ("rows",)

    def __init__(self, rows: Sequence[_Row]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> int:
        return int(self.rows[i][0])


class _Rebuild(Exception):
    """The tracked state no longer matches the database (rows vanished): rebuild from scratch."""


def _reconstruct_inplace(session_id: str, rows: Sequence[_Row], text_of: Callable[[Any], str]) -> list[CompactionEvent]:
    """Every in-place event of a session from all its rows in id order (one window run)."""
    track = _Track()
    _run_window(session_id, rows, text_of, track, complete=True)
    return track.events


def _initial_region(rows: Sequence[_Row], text_of: Callable[[Any], str], parent_live: Sequence[_Row]) -> tuple[list[int], Any, int | None]:
    """A rotation child's initial rows (the compacted handoff) and its summary match."""
    if not rows:
        return [], None, None
    tx = _Texts(rows, text_of)
    p = None
    match = None
    for i in range(min(64, len(rows))):
        m = match_summary(tx.text(i))
        if m is not None:
            p, match = i, m
            break
    if p is None:
        # no summary row: the first run of consecutive ids
        end = 1
        while end < len(rows) and int(rows[end][0]) == int(rows[end - 1][0]) + 1:
            end += 1
        return [int(r[0]) for r in rows[:end]], None, None
    copies = _lazy_set(lambda: {(str(r[1]), text_of(r[2])) for r in parent_live})
    end = _tail_end(rows, p, len(rows), lambda j: tx.key(j) in copies())
    return [int(r[0]) for r in rows[:end]], match, int(rows[p][0])


# --------------------------------------------------------------------------- status section


def status_section(home: Any, config: Any = None, *, limit: int = 50) -> dict[str, Any]:
    """The ``sessions`` part of ``status --json``.

    Returns ``{"sessions": [{id, title, source, started_at, ended_at, message_count,
    compactions, live}], "state_db": DBStatus.as_dict()}`` (epoch seconds; newest first,
    at most ``limit``). Never raises.

    Args:
        home: a ``HermesHome`` or the home directory.
        config: unused (kept for the uniform ``section(home, config)`` signature).
    """
    path = home.state_db if hasattr(home, "state_db") else Path(home) / "state.db"
    with StateDB.shared(path) as db:
        st = db.status()
        items = db.sessions(limit=limit) if st.ok else []
        st = db.status() if st.ok else st
    return {
        "sessions": [
            {"id": s.id, "title": s.title, "source": s.source, "started_at": s.started_at, "ended_at": s.ended_at,
             "message_count": s.message_count, "compactions": s.compactions, "live": s.live}
            for s in items
        ],
        "state_db": st.as_dict(),
    }
