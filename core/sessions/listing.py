"""Sessions and their messages: listing, one session, the live session, lineage, memory tool calls.

One concept: what is in state.db's ``sessions`` / ``messages`` tables, read through the
connection of :mod:`.connection`. ``live`` marks the open session with the newest activity.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from .. import jsondata
from ..coerce import number_or_zero
from ..memory.context_fence import sanitize_context
from .bounds import bounded, head_sql, text_parts
from .compaction import decode_content
from .compaction_events import CompactionEventReader
from .records import Message, PromptStamp, SessionInfo, UserTurn

#: How much of a stored prompt's end (chars) the key of a schema <= 22 prompt covers (the memory
#: blocks and the session line of Hermes 0.17-0.19 are in it: ``PromptStamp.prompt_key``).
PROMPT_KEY_TAIL = 8192

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
        At most :data:`.bounds.MAX_STORED_TEXT_CHARS` chars are read (``substr`` in SQLite); a
        longer prompt is cut and the cut noted (:func:`.bounds.note_cut`: ``status`` shows it).
        """
        def q(conn: sqlite3.Connection) -> str:
            text = None
            if "system_prompt" in self._scols:
                row = conn.execute(f"SELECT {head_sql('system_prompt')}, rowid FROM sessions WHERE id = ?",
                                   (session_id,)).fetchone()
                if row:
                    text = bounded(conn, row[0], f"system prompt of session {session_id}", "sessions",
                                   "system_prompt", row[1])[0] if row[0] else None
            if not text and "system_prompt_hash" in self._scols and "system_prompts" in self._tables:
                pcols = {r[1] for r in conn.execute("PRAGMA table_info(system_prompts)")}
                if {"hash", "prompt"} <= pcols:
                    row = conn.execute(
                        f"SELECT {head_sql('p.prompt')}, p.rowid FROM sessions s JOIN system_prompts p "
                        "ON p.hash = s.system_prompt_hash WHERE s.id = ?", (session_id,)).fetchone()
                    if row:
                        text = bounded(conn, row[0], f"system prompt of session {session_id}", "system_prompts",
                                       "prompt", row[1])[0]
            return text if isinstance(text, str) else ""

        return self._run(q, "")

    def user_turns(self, session_id: str, limit: int = 200) -> list[UserTurn] | None:
        """The user rows of ``session_id``'s active region (what the next request still carries),
        oldest first, at most the newest ``limit``, with ``content`` and ``api_content`` as stored
        (:class:`.records.UserTurn`; ``api_content`` read at most :data:`.bounds.MAX_STORED_TEXT_CHARS`
        chars). None when ``messages`` has no ``api_content`` column (Hermes
        0.17 / 0.18 never store what was appended to a turn); ``[]`` when the database is
        unavailable. One query, through ``idx_messages_session_active`` on 0.19+."""
        def q(conn: sqlite3.Connection) -> list[UserTurn] | None:
            if "api_content" not in self._mcols:
                return None
            active = " AND active = 1" if self.has_active else ""
            ts = "timestamp" if "timestamp" in self._mcols else "NULL"
            rows = conn.execute(f"SELECT id, {ts}, content, {head_sql('api_content')} FROM messages WHERE "
                                f"session_id = ? AND role = 'user'{active} ORDER BY id DESC LIMIT ?",
                                (session_id, max(0, int(limit)))).fetchall()
            out = []
            for mid, t, content, api in rows:
                if isinstance(content, bytes):
                    content = content.decode("utf-8", "replace")
                api, api_chars = bounded(conn, api, f"api_content of message {mid}", "messages", "api_content", int(mid))
                if isinstance(api, bytes):
                    api = api.decode("utf-8", "replace")
                out.append(UserTurn(int(mid), float(t) if isinstance(t, (int, float)) else None,
                                    content if isinstance(content, str) else None,
                                    api if isinstance(api, str) and api else None,
                                    api_chars))
            return out[::-1]

        unavailable: list[UserTurn] | None = []
        return self._run(q, unavailable)

    def prompt_stamps(self, session_ids: Sequence[str] | None = None, *, limit: int = 500) -> list[PromptStamp]:
        """A :class:`.records.PromptStamp` of every open session (``ended_at`` NULL), newest start
        first, or of the sessions ``session_ids`` (open or not), without reading whole prompts.

        The key of a prompt stored by hash (schema >= 23, ``sessions.system_prompt_hash``; 0.20
        ``hermes_state.py:169-170``) is that hash; else a digest of the prompt's length, first 256
        and last :data:`PROMPT_KEY_TAIL` chars, read with ``substr`` (a rebuilt prompt changes its
        memory blocks and session line, which are in that end); a prompt over
        :data:`.bounds.MAX_STORED_TEXT_CHARS` bytes is read through the blob reader instead
        (:func:`.bounds.text_parts`: SQLite's ``substr``/``length`` materialise the whole value). ``first_active`` is one index probe
        per session with Hermes' ``idx_messages_session_active`` (0.19+). Columns are selected by
        name; ``[]`` when the database is unavailable. ``limit`` caps the count.
        """
        def q(conn: sqlite3.Connection) -> list[PromptStamp]:
            sc = self._scols

            def col(name: str, default: str = "NULL") -> str:
                return f"s.{name}" if name in sc else default

            UNKNOWN = "'unknown'"
            has_text = "system_prompt" in sc
            active = " AND m.active = 1" if self.has_active else ""
            ts = "m.timestamp" if "timestamp" in self._mcols else "NULL"
            sql = (f"SELECT s.id, {col('source', UNKNOWN)}, {col('title')}, {col('model')}, {col('started_at', '0.0')},"
                   f" {col('ended_at')},"
                   f" {'s.rowid' if has_text else 'NULL'},"
                   f" {col('system_prompt_hash')},"
                   f" (SELECT MIN({ts}) FROM messages m WHERE m.session_id = s.id{active}),"
                   f" (SELECT MAX({ts}) FROM messages m WHERE m.session_id = s.id),"
                   f" {col('input_tokens', '0')}, {col('cache_read_tokens', '0')}, {col('cache_write_tokens', '0')},"
                   f" {col('output_tokens', '0')}, {col('api_call_count', '0')} FROM sessions s")
            if session_ids is not None:
                ids = list(dict.fromkeys(str(i) for i in session_ids))[:limit]
                if not ids:
                    return []
                sql += f" WHERE s.id IN ({','.join('?' * len(ids))})"
                params: tuple[Any, ...] = tuple(ids)
            else:
                sql += " WHERE s.ended_at IS NULL" if "ended_at" in sc else ""
                params = ()
            order = "s.started_at DESC, s.id DESC" if "started_at" in sc else "s.rowid DESC"
            out = []
            for r in conn.execute(f"{sql} ORDER BY {order} LIMIT ?", (*params, int(limit))).fetchall():
                (sid, source, title, model, started, ended, rowid, phash, first, last,
                 inp, cread, cwrite, outp, calls) = r
                # one row at a time, a huge prompt through the blob reader (core/sessions/bounds.py)
                length, head, tail = (text_parts(conn, "sessions", "system_prompt", rowid, 256, PROMPT_KEY_TAIL)
                                      if rowid is not None else (None, None, None))
                key: str | None = None
                chars = 0
                if length:
                    chars = int(length)
                    digest = hashlib.sha256(f"{chars}\x00{head}\x00{tail}".encode("utf-8", "surrogatepass")).hexdigest()
                    key = "t:" + digest
                elif isinstance(phash, str) and phash:
                    key = "h:" + phash
                out.append(PromptStamp(
                    session_id=str(sid), source=str(source or "unknown"), title=title if isinstance(title, str) else None,
                    model=model if isinstance(model, str) else None, started_at=number_or_zero(started),
                    ended_at=number_or_zero(ended) if ended is not None else None, prompt_key=key, prompt_chars=chars,
                    first_active=number_or_zero(first) if first is not None else None,
                    input_tokens=int(number_or_zero(inp)), cache_tokens=int(number_or_zero(cread) + number_or_zero(cwrite)),
                    output_tokens=int(number_or_zero(outp)), api_calls=int(number_or_zero(calls)),
                    last_active=number_or_zero(last) if last is not None else None,
                    cache_read_tokens=int(number_or_zero(cread)), cache_write_tokens=int(number_or_zero(cwrite))))
            return out

        return self._run(q, [])

    def model_config(self, session_id: str) -> str | None:
        """``sessions.model_config`` of ``session_id`` (a JSON text Hermes writes; 0.21.5+ keeps its
        usage anchor there, ``agent/usage_anchor.py``), or None when absent or unavailable."""
        if "model_config" not in self._scols:
            return None

        def q(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT model_config FROM sessions WHERE id = ?", (session_id,)).fetchone()
            value = row[0] if row else None
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            return value if isinstance(value, str) else None

        return self._run(q, None)

    def conversation(self, session_id: str) -> list[dict[str, Any]]:
        """The session's active rows as Hermes loads them for a turn, in id order: the dicts of
        Hermes 0.19 ``SessionDB._rows_to_conversation`` (hermes_state.py:4909-4990) with the keys
        memdeck sizes the next request by: ``role``, ``content`` (``\\x00json:`` decoded; user and
        assistant text through ``sanitize_context``, stripped), ``api_content``, ``timestamp``,
        ``tool_call_id``, ``tool_name``, ``tool_calls`` (decoded JSON), and on assistant rows
        ``finish_reason``, ``reasoning``, ``reasoning_content``. Columns missing from the schema are
        left out. ``[]`` when unavailable.

        Kept per session between calls like :meth:`active_region` (the same signature of the rows
        read before): a refresh after appended messages decodes only the new rows.
        """
        wanted = ("content", "api_content", "timestamp", "tool_call_id", "tool_name", "tool_calls",
                  "finish_reason", "reasoning", "reasoning_content")

        def q(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            cols = [c for c in wanted if c in self._mcols]
            if not self.has_active:
                return [self._conversation_row(cols, r) for r in conn.execute(
                    f"SELECT role, {', '.join(cols)} FROM messages WHERE session_id = ? ORDER BY id", (session_id,))]
            began = not conn.in_transaction
            if began:
                conn.execute("BEGIN")  # one snapshot for the check, the new rows and the new signature
            try:
                kept = self._conversations.get(session_id)
                sql = f"SELECT id, role, {', '.join(cols)} FROM messages WHERE session_id = ? AND active = 1"
                if kept is not None and kept[0] is conn and self._active_sig(conn, session_id, kept[1]) == kept[2]:
                    fresh = conn.execute(sql + " AND id > ? ORDER BY id", (session_id, kept[1])).fetchall()
                    rows = kept[3] + [self._conversation_row(cols, r[1:]) for r in fresh]
                    last = fresh[-1][0] if fresh else kept[1]
                else:
                    fresh = conn.execute(sql + " ORDER BY id", (session_id,)).fetchall()
                    rows = [self._conversation_row(cols, r[1:]) for r in fresh]
                    last = fresh[-1][0] if fresh else 0
                self._conversations.pop(session_id, None)
                while len(self._conversations) >= 4:
                    self._conversations.pop(next(iter(self._conversations)))
                self._conversations[session_id] = (conn, last, self._active_sig(conn, session_id, last), rows)
                return list(rows)
            finally:
                if began and conn.in_transaction:
                    conn.execute("COMMIT")

        return self._run(q, [])

    @staticmethod
    def _conversation_row(cols: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
        """One row as Hermes 0.19 ``_rows_to_conversation`` builds its dict (see :meth:`conversation`)."""
        d = dict(zip(("role", *cols), row))
        role = d.get("role")
        content = d.get("content")
        if isinstance(content, bytes):
            content = content.decode("utf-8", "replace")
        content = decode_content(content)
        if role in ("user", "assistant") and isinstance(content, str):
            content = sanitize_context(content).strip()
        msg: dict[str, Any] = {"role": role, "content": content}
        if d.get("api_content"):
            msg["api_content"] = d["api_content"]
        if d.get("timestamp"):
            msg["timestamp"] = d["timestamp"]
        for k in ("tool_call_id", "tool_name"):
            if d.get(k):
                msg[k] = d[k]
        if d.get("tool_calls"):
            try:
                msg["tool_calls"] = jsondata.loads(d["tool_calls"])
            except (TypeError, ValueError):
                msg["tool_calls"] = []
        if role == "assistant":
            for k in ("finish_reason", "reasoning"):
                if d.get(k):
                    msg[k] = d[k]
            if d.get("reasoning_content") is not None and "reasoning_content" in cols:
                msg["reasoning_content"] = d["reasoning_content"]
        return msg

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

    def user_rows(self, session_id: str, first_id: int = 0, before_id: int | None = None) -> list[Message]:
        """A session's user rows (any state) with ``first_id <= id < before_id``, in id order: the
        turns a compaction compacted (``core/constraints/ledger.py``). A bounded range is read
        through the primary key (``+session_id`` keeps SQLite off Hermes' session index, which
        walked every row of a 200,000-row session for each compaction: 26 ms -> 1 ms); an open one
        through the session index."""
        def q(conn: sqlite3.Connection) -> list[Message]:
            upper = " AND m.id < ?" if before_id is not None else ""
            col = "+m.session_id" if before_id is not None else "m.session_id"
            args: tuple[Any, ...] = (session_id, int(first_id)) + ((int(before_id),) if before_id is not None else ())
            return [self._to_message(r) for r in conn.execute(
                f"SELECT {self._msg_select()} FROM messages m WHERE {col} = ? AND m.role = 'user' AND m.id >= ?"
                f"{upper} ORDER BY m.id", args)]

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
            where = ""
            params: tuple[float, ...] = ()
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
        fn = c["function"] if isinstance(c.get("function"), dict) else c
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

