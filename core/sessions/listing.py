"""Sessions and their messages: listing, one session, the live session, lineage, memory tool calls.

One concept: what is in state.db's ``sessions`` / ``messages`` tables, read through the
connection of :mod:`.connection`. ``live`` marks the open session with the newest activity.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from .. import jsondata
from .compaction_events import CompactionEventReader
from .connection import number_or_zero
from .records import Message, SessionInfo

class SessionReader(CompactionEventReader):
    """The session and message queries of :class:`.statedb.StateDB` (on its connection)."""

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
            key = (max(number_or_zero(r[3]), number_or_zero(r[10])), str(r[0]))
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

        Kept per session between calls: when the active rows up to the last one read are
        unchanged (:meth:`_active_sig`: their count, ids, content and ``api_content`` bytes
        and ``compacted`` flags), only the rows after it are read and decoded. Any rewind,
        compaction, deletion or rewrite of a different length reads the region again. A rewrite
        of content to exactly the same byte length is not seen.
        """
        def q(conn: sqlite3.Connection) -> list[Message]:
            if not self.has_active:  # known once connected: a schema without the flag
                return [self._to_message(r) for r in conn.execute(
                    f"SELECT {self._msg_select()} FROM messages m WHERE m.session_id = ? ORDER BY m.id", (session_id,))]
            began = not conn.in_transaction
            if began:
                conn.execute("BEGIN")  # one snapshot for the check, the new rows and the new signature
            try:
                kept = self._regions.get(session_id)
                rows: list[Message]
                if kept is not None and kept[0] is conn and self._active_sig(conn, session_id, kept[1]) == kept[2]:
                    rows = kept[3] + [self._to_message(r) for r in conn.execute(
                        f"SELECT {self._msg_select()} FROM messages m WHERE m.session_id = ? AND m.active = 1"
                        " AND m.id > ? ORDER BY m.id", (session_id, kept[1]))]
                else:
                    rows = [self._to_message(r) for r in conn.execute(
                        f"SELECT {self._msg_select()} FROM messages m WHERE m.session_id = ? AND m.active = 1"
                        " ORDER BY m.id", (session_id,))]
                last = rows[-1].id if rows else 0
                self._regions.pop(session_id, None)
                while len(self._regions) >= 4:
                    self._regions.pop(next(iter(self._regions)))
                self._regions[session_id] = (conn, last, self._active_sig(conn, session_id, last), rows)
                return list(rows)
            finally:
                if began and conn.in_transaction:
                    conn.execute("COMMIT")

        return self._run(q, [])

    def _active_sig(self, conn: sqlite3.Connection, session_id: str, last_id: int) -> tuple[Any, ...]:
        """What :meth:`active_region` compares to know its kept rows still stand: over the
        session's active rows with ``id <= last_id``, the count, the sums of ids and of their
        squares (a different set of the same size), the content and ``api_content`` bytes
        (Hermes 0.22 rewrites a user row's content and backfills ``api_content`` in place) and
        the ``compacted`` flags."""
        api = "length(CAST(m.api_content AS BLOB))" if "api_content" in self._mcols else "0"
        comp = "m.compacted" if "compacted" in self._mcols else "0"
        return tuple(conn.execute(
            f"SELECT COUNT(*), TOTAL(m.id), TOTAL(m.id * m.id), TOTAL(length(CAST(m.content AS BLOB))), TOTAL({api}),"
            f" TOTAL({comp}) FROM messages m WHERE m.session_id = ? AND m.active = 1 AND m.id <= ?",
            (session_id, last_id)).fetchone())

    def message(self, message_id: int) -> Message | None:
        """One row by id (any state), or None."""
        def q(conn: sqlite3.Connection) -> Message | None:
            r = conn.execute(f"SELECT {self._msg_select()} FROM messages m WHERE m.id = ?", (int(message_id),)).fetchone()
            return self._to_message(r) if r else None

        return self._run(q, None)

    def message_count(self) -> int:
        """Rows in ``messages`` (all states); 0 when unavailable."""
        return self._run(lambda c: int(c.execute("SELECT COUNT(*) FROM messages").fetchone()[0]), 0)

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
                                    "timestamp": number_or_zero(ts), **call})
            out.sort(key=lambda c: (c["timestamp"], c["message_id"]), reverse=True)
            return out[:limit]

        return self._run(q, [])


def _memory_calls(raw: Any) -> list[dict[str, Any]]:
    """The ``memory`` calls of one ``tool_calls`` value: ``[{"tool_call_id", "args"}]``."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        calls = jsondata.loads(raw) if isinstance(raw, str) else raw
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
                args = jsondata.loads(args)
            except ValueError:
                continue
        if isinstance(args, dict):
            found.append({"tool_call_id": c.get("id"), "args": args})
    return found

