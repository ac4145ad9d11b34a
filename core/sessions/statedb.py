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

import sqlite3
from pathlib import Path
from typing import Any

from .compaction import match_summary
from .listing import SessionReader
from .records import CompactionEvent, Delta


class StateDB(SessionReader):
    """A read-only view of one ``state.db``.

    Args:
        path: the database file (usually ``HermesHome.state_db``).
        timeout: SQLite busy timeout in seconds for each statement (a locked database
            degrades to ``status().state == "locked"`` after this long).

    Never raises for a bad file: see :meth:`status`. Composed of the connection
    (:class:`.connection.StateDBConnection`), the compaction-event queries
    (:class:`.compaction_events.CompactionEventReader`) and the session queries
    (:class:`.listing.SessionReader`); this class adds the incremental ``refresh``.
    """

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
