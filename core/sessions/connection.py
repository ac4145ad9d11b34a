"""``StateDBConnection``: one lazy, read-only SQLite connection to Hermes' ``state.db``.

One concept: opening and keeping the connection: the ``mode=ro`` URI, the busy timeout, the
classification of a bad file into ``DBStatus`` (never an exception), re-opening after errors or
when the file is replaced, schema introspection (which optional columns exist), the per-reader
lock, the readers shared within one command (:func:`sharing_readers`), and the column helpers
that map rows to :class:`.records.Message` / :class:`.records.SessionInfo` (message text passes
through Hermes' ``sanitize_context``, :mod:`..memory.context_fence`). The queries are in :mod:`.listing` and
:mod:`.compaction_events`; :class:`.statedb.StateDB` composes them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from .. import sqlite_files
from ..memory.context_fence import sanitize_context
from .bounds import MAX_STORED_TEXT_CHARS, bounded, head_sql
from .compaction import decode_content, message_text
from .records import KNOWN_SCHEMA_VERSION, OLDEST_SCHEMA_VERSION, CompactionEvent, DBStatus, Message, SessionInfo
from .side_files import side_files_closed, side_files_opening

if TYPE_CHECKING:  # the tracks live with the reconstruction; a type-only import (no cycle)
    from .compaction_events import _Track

T = TypeVar("T")

_SHARED: dict[str, StateDBConnection] | None = None


@contextlib.contextmanager
def sharing_readers() -> Iterator[None]:
    """Within the block, :meth:`StateDB.shared` gives one reader per database path; they are
    closed when the block ends.
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

_SQLITE_MAGIC = b"SQLite format 3\x00"


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


class _Unavailable(Exception):
    def __init__(self, status: DBStatus) -> None:
        super().__init__(status.message)
        self.status = status


#: how SQLite's text decoding fails on bytes that are not UTF-8 (``sqlite3`` module, CPython 3.11)
_NOT_UTF8 = "Could not decode to UTF-8"


def _lenient_text(raw: bytes) -> str:
    """A state.db text value with bytes that are not UTF-8 as U+FFFD (see ``StateDBConnection._run``)."""
    return raw.decode("utf-8", "replace")


class StateDBConnection:
    """The read-only connection to one ``state.db`` (the base of :class:`.statedb.StateDB`).

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
        #: set while the reader is shared inside a sharing_readers block (see shared())
        self._shared_in = False
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
        #: what CompactionEventReader._changes saw last: (connection, highest row id, sessions' signatures)
        self._change_state: tuple[sqlite3.Connection, int, dict[str, tuple[Any, ...]]] | None = None
        #: the sessions holding compacted rows as of the last event pass (None: ask again)
        self._compacted_ids: set[str] | None = None
        # per-session active regions (SessionReader.active_region): (conn, last id, signature, rows)
        self._regions: dict[str, tuple[Any, ...]] = {}
        # per-session conversations (SessionReader.conversation): (conn, last id, signature, dicts)
        self._conversations: dict[str, tuple[Any, ...]] = {}
        # incremental per-session compaction tracks (kept across reconnects to the same file)
        self._tracks: dict[str, _Track] = {}
        self._tracks_conn: sqlite3.Connection | None = None
        #: sessions whose stored track (memdeck.db ``session_tracks``) was already looked up
        self._tracks_tried: set[str] = set()
        #: final rotation events by (parent, child), with the session fields that could change
        #: them (``CompactionEventReader._rotation_events``)
        self._rotations: dict[tuple[str, str], tuple[tuple[Any, ...], CompactionEvent]] = {}
        #: open rotation events (the child has no row after its handoff yet), kept in this process
        #: until either session gains a row
        self._rotations_open: dict[tuple[str, str], tuple[tuple[Any, ...], CompactionEvent]] = {}
        #: the rotation events stored in memdeck.db, read once (None: not yet), and the highest
        #: row id of each session that gained rows since the oldest of them was stored
        self._rotations_stored: dict[tuple[str, str], dict[str, object]] | None = None
        self._rotations_newest: dict[str, int] = {}
        #: stored rotation events that rows added since this process read them may have changed
        self._rotations_stale: set[tuple[str, str]] = set()
        #: state.db's highest row id at the last rotation read (None: none yet)
        self._rotations_top: int | None = None
        #: the Hermes home whose memdeck.db keeps the tracks across processes (state.db's
        #: directory; None: keep them in memory only)
        self.track_home: Path | None = self.path.parent
        #: ``progress(done, total)`` called while a session's history is first streamed (ids
        #: covered so far / ids to cover); may raise to abort the build (the TUI uses it to
        #: post progress and to stop promptly on quit).
        self.progress: Callable[[int, int], None] | None = None

    # ------------------------------------------------------------------ connection

    def close(self) -> None:
        """Close the connection (it is re-opened lazily on the next call)."""
        with self._lock:
            self._drop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._shared_in:
            self.close()

    @classmethod
    def shared(cls, path: str | os.PathLike[str]) -> Self:
        """The reader of ``path`` shared inside a :func:`sharing_readers` block (so the sections
        of one command reconstruct the history once), else a new reader. ``with`` on a shared
        reader does not close it; the block does."""
        key = str(Path(path).absolute())
        if _SHARED is not None:
            db = _SHARED.get(key)
            if db is None:
                db = _SHARED[key] = cls(path)
                db._shared_in = True
            return cast(Self, db)
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
            with sqlite_files.raw_fd(self.path) as fd:  # never a plain open(): see core/sqlite_files.py
                head = os.pread(fd, 100, 0)
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
        side_files_opening(self.path)
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            side_files_closed(self.path)
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
            self._tracks_tried = set()
            self._rotations = {}
            self._rotations_open = {}
            self._rotations_stored = None
            self._rotations_stale = set()
            self._rotations_top = None
            return True

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            side_files_closed(self.path)
        self._conn = None
        self._events_cache = None
        self._change_state = None
        self._compacted_ids = None
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
        """Run ``fn(conn)`` under the lock; on any SQLite/IO failure record the status, return default.

        Text that is not valid UTF-8 (a damaged or hand-edited state.db: Hermes writes through
        Python, always UTF-8) makes SQLite's default decoding raise for the whole query, which
        showed as no sessions and no recall at all; the query is run again with such text
        decoded leniently (bad bytes as U+FFFD), and the connection keeps reading that way."""
        with self._lock:
            try:
                conn = self._open()
                cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
                if cookie != self._schema_cookie:
                    self._introspect(conn)
                    self._events_cache = None
                    self._change_state = None
                try:
                    return fn(conn)
                except sqlite3.OperationalError as exc:
                    if not str(exc).startswith(_NOT_UTF8) or conn.text_factory is _lenient_text:
                        raise
                    conn.text_factory = _lenient_text
                    self.last_error = f"state.db holds text that is not valid UTF-8 (shown with U+FFFD): {exc}"
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
            if c == "api_content" and c in self._mcols:  # at most MAX_STORED_TEXT_CHARS (+1: a cut shows)
                parts.append(head_sql(f"{alias}.{c}"))
            elif c in self._mcols:
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

    def _to_message(self, row: Sequence[Any]) -> Message:
        """A :class:`Message` of a row selected with :meth:`_msg_select` (``api_content`` read
        at most :data:`.bounds.MAX_STORED_TEXT_CHARS` chars; a cut is noted and kept in
        ``api_content_chars``)."""
        mid, sid, role, content, api_content, ts, active, compacted, tool_name = row
        role = role if isinstance(role, str) else str(role)
        decoded = decode_content(content if not isinstance(content, bytes) else content.decode("utf-8", "replace"))
        if role in ("user", "assistant") and isinstance(decoded, str):
            decoded = sanitize_context(decoded).strip()
        api_chars = None
        if isinstance(api_content, (str, bytes)) and len(api_content) > MAX_STORED_TEXT_CHARS and self._conn is not None:
            api_content, api_chars = bounded(self._conn, api_content, f"api_content of message {mid}", "messages",
                                             "api_content", int(mid))
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
            api_content_chars=api_chars,
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

