"""Hermes 0.19 ``state.db`` schema and a small writer for demo homes, tests and benchmarks.

**Never use this module on a real Hermes home.** memdeck reads a real ``state.db`` only through
:mod:`core.statedb` (``mode=ro``). This writer exists so the demo generator, the tests and the
benchmarks can build databases with the exact shape Hermes 0.19 writes.

The DDL below is our own text describing the same tables, columns, defaults, indexes, FTS5
tables and triggers as Hermes 0.19 ``hermes_state.py`` (``SCHEMA_SQL`` :757-909,
``DEFERRED_INDEX_SQL`` :915-926, ``FTS_SQL``/``FTS_TRIGRAM_SQL`` :928-981, the partial and unique
indexes of ``_init_schema`` :1578-1585 / :1880-1883), at ``SCHEMA_VERSION = 22`` (:155).

Write semantics mirrored (same module):

* :func:`add_session` ~ ``_insert_session_row`` (:1940-2009);
* :func:`append_message` ~ ``append_message`` (:4152-4271): ``\\x00json:`` encoding of list
  content, ``active=1``, ``message_count``/``tool_call_count`` bumps;
* :func:`compact_in_place` ~ ``archive_and_compact`` (:4421-4471): every live row of the
  session becomes ``active=0, compacted=1``; head + summary + tail are inserted as new active
  rows in one transaction, stamped ``now, now+1e-6, ...`` (``_insert_message_rows``
  :4273-4357) unless a message carries its own timestamp; the counters track the live set;
* :func:`rotate` ~ rotation-mode compaction (``agent/conversation_compression.py:1234-1349``):
  ``end_session(old, 'compression')``, a child session with ``parent_session_id=old``, title
  "name #N", and the compacted handoff written by ``replace_messages``;
* :func:`end_session` ~ ``end_session`` (:2359-2375): the first end reason wins;
* :func:`rewind` ~ ``rewind_to_message`` (:5164): ``active=0`` (``compacted`` stays 0).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .compaction import CONTENT_JSON_PREFIX, MERGED_PRIOR_CONTEXT_HEADER, MERGED_SUMMARY_DELIMITER, SUMMARY_END_MARKER, SUMMARY_PREFIX_0_19

#: Hermes 0.19 ``SCHEMA_VERSION`` (hermes_state.py:155).
SCHEMA_VERSION = 22

#: The 20 ``messages`` columns of Hermes 0.19 after ``id``, in declaration order.
MESSAGE_COLUMNS = (
    "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "effect_disposition",
    "timestamp", "token_count", "finish_reason", "reasoning", "reasoning_content", "reasoning_details",
    "codex_reasoning_items", "codex_message_items", "platform_message_id", "observed", "active",
    "compacted", "api_content",
)

TABLES_SQL = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT, session_key TEXT, chat_id TEXT, chat_type TEXT, thread_id TEXT,
    display_name TEXT, origin_json TEXT, expiry_finalized INTEGER DEFAULT 0,
    model TEXT, model_config TEXT, system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT, git_branch TEXT, git_repo_root TEXT,
    billing_provider TEXT, billing_base_url TEXT, billing_mode TEXT,
    estimated_cost_usd REAL, actual_cost_usd REAL, cost_status TEXT, cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    handoff_state TEXT, handoff_platform TEXT, handoff_error TEXT,
    compression_failure_cooldown_until REAL, compression_failure_error TEXT,
    compression_fallback_streak INTEGER NOT NULL DEFAULT 0,
    profile_name TEXT,
    rewind_count INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, effect_disposition TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER, finish_reason TEXT, reasoning TEXT, reasoning_content TEXT,
    reasoning_details TEXT, codex_reasoning_items TEXT, codex_message_items TEXT,
    platform_message_id TEXT,
    observed INTEGER DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0,
    api_content TEXT
);

CREATE TABLE IF NOT EXISTS session_model_usage (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    model TEXT NOT NULL,
    billing_provider TEXT NOT NULL DEFAULT '', billing_base_url TEXT NOT NULL DEFAULT '',
    billing_mode TEXT NOT NULL DEFAULT '', task TEXT NOT NULL DEFAULT '',
    api_call_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL NOT NULL DEFAULT 0, actual_cost_usd REAL NOT NULL DEFAULT 0,
    cost_status TEXT, cost_source TEXT, first_seen REAL, last_seen REAL,
    PRIMARY KEY (session_id, model, billing_provider, billing_base_url, billing_mode, task)
);

CREATE TABLE IF NOT EXISTS state_meta (key TEXT PRIMARY KEY, value TEXT);

CREATE TABLE IF NOT EXISTS gateway_routing (
    scope TEXT NOT NULL DEFAULT '', session_key TEXT NOT NULL, entry_json TEXT NOT NULL,
    updated_at REAL NOT NULL, PRIMARY KEY (scope, session_key)
);

CREATE TABLE IF NOT EXISTS compression_locks (
    session_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
    acquired_at REAL NOT NULL, expires_at REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS async_delegations (
    delegation_id TEXT PRIMARY KEY, origin_session TEXT NOT NULL,
    origin_ui_session_id TEXT NOT NULL DEFAULT '', parent_session_id TEXT,
    state TEXT NOT NULL, dispatched_at REAL NOT NULL, completed_at REAL, updated_at REAL NOT NULL,
    event_json TEXT, result_json TEXT, delivery_state TEXT NOT NULL DEFAULT 'pending',
    delivery_attempts INTEGER NOT NULL DEFAULT 0, delivered_at REAL, owner_pid INTEGER,
    owner_started_at INTEGER, task_json TEXT, delivery_claim TEXT, delivery_claimed_at REAL
);
"""

INDEX_SQL = """
CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_source_id ON sessions(source, id);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_compression_locks_expires ON compression_locks(expires_at);
CREATE INDEX IF NOT EXISTS idx_session_model_usage_session ON session_model_usage(session_id);
CREATE INDEX IF NOT EXISTS idx_session_model_usage_model ON session_model_usage(model);
CREATE INDEX IF NOT EXISTS idx_async_delegations_delivery ON async_delegations(delivery_state, completed_at);
CREATE INDEX IF NOT EXISTS idx_messages_platform_msg_id ON messages(session_id, platform_message_id)
    WHERE platform_message_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_messages_session_active ON messages(session_id, active, timestamp);
CREATE INDEX IF NOT EXISTS idx_messages_active_null ON messages(active) WHERE active IS NULL;
CREATE INDEX IF NOT EXISTS idx_sessions_session_key ON sessions(session_key, started_at DESC);
CREATE INDEX IF NOT EXISTS idx_sessions_gateway_peer
    ON sessions(source, user_id, chat_id, chat_type, thread_id, started_at DESC);
CREATE INDEX IF NOT EXISTS idx_sessions_handoff_state ON sessions(handoff_state, started_at);
CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL;
"""

_FTS_DOC = "COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')"


def _fts_sql(table: str, tokenize: str | None, trigger_stem: str) -> str:
    tok = f",\n    tokenize='{tokenize}'" if tokenize else ""
    return f"""
CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(
    content{tok}
);
CREATE TRIGGER IF NOT EXISTS {trigger_stem}_insert AFTER INSERT ON messages BEGIN
    INSERT INTO {table}(rowid, content) VALUES (new.id, {_FTS_DOC});
END;
CREATE TRIGGER IF NOT EXISTS {trigger_stem}_delete AFTER DELETE ON messages BEGIN
    DELETE FROM {table} WHERE rowid = old.id;
END;
CREATE TRIGGER IF NOT EXISTS {trigger_stem}_update AFTER UPDATE ON messages BEGIN
    DELETE FROM {table} WHERE rowid = old.id;
    INSERT INTO {table}(rowid, content) VALUES (new.id, {_FTS_DOC});
END;
"""


#: ``messages_fts`` (unicode61) and ``messages_fts_trigram`` with their six triggers.
FTS_SQL = _fts_sql("messages_fts", None, "messages_fts") + _fts_sql("messages_fts_trigram", "trigram", "messages_fts_trigram")


def connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A read-write connection like Hermes' (WAL, foreign keys, autocommit, ``sqlite3.Row``).

    Only for databases this module created (demo, tests, benchmarks).
    """
    conn = sqlite3.connect(str(path), timeout=5.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def create_state_db(path: str | os.PathLike[str], *, fts: bool = True, version: int = SCHEMA_VERSION) -> sqlite3.Connection:
    """Create (or open) a Hermes 0.19-shaped ``state.db`` at ``path``; return a write connection.

    Args:
        fts: create ``messages_fts``/``messages_fts_trigram`` and their triggers (False builds a
            database "with FTS missing", for degradation tests).
        version: the value stored in ``schema_version`` (22 for Hermes 0.19).
    """
    conn = connect(path)
    conn.executescript(TABLES_SQL + INDEX_SQL + (FTS_SQL if fts else ""))
    if conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 0:
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    return conn



@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, *, immediate: bool = False) -> Iterator[sqlite3.Connection]:
    """``BEGIN`` (``BEGIN IMMEDIATE`` when ``immediate``) ... ``COMMIT``; ``ROLLBACK`` on any exception.
    ``conn`` must be in autocommit mode (``isolation_level=None``, as :func:`create_state_db` opens it)."""
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

def install_fts(conn: sqlite3.Connection) -> None:
    """Create both FTS5 tables, index every existing row in bulk, then add the six triggers.

    For generating large databases fast (benchmarks): insert rows with ``fts=False`` first, then
    call this. The result is the same index the per-row triggers would have built.
    """
    doc = "COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, '')"
    with _transaction(conn):
        for table, tok in (("messages_fts", ""), ("messages_fts_trigram", ", tokenize='trigram'")):
            conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(content{tok})")
            conn.execute(f"INSERT INTO {table}(rowid, content) SELECT id, {doc} FROM messages ORDER BY id")
    conn.executescript(FTS_SQL)


def add_session(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    source: str = "cli",
    title: str | None = None,
    started_at: float | None = None,
    parent_session_id: str | None = None,
    model: str | None = None,
    model_config: dict[str, Any] | None = None,
    system_prompt: str | None = None,
    ended_at: float | None = None,
    end_reason: str | None = None,
) -> str:
    """Insert a session row (Hermes ``_insert_session_row``; ``started_at`` epoch seconds)."""
    conn.execute(
        "INSERT INTO sessions (id, source, model, model_config, system_prompt, parent_session_id, started_at,"
        " title, ended_at, end_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, source, model, json.dumps(model_config) if model_config else None, system_prompt,
         parent_session_id, time.time() if started_at is None else float(started_at), title, ended_at, end_reason),
    )
    return session_id


def encode_content(content: Any) -> Any:
    """Hermes ``_encode_content``: str/None/number as is; list/dict -> ``"\\x00json:" + json.dumps``."""
    if content is None or isinstance(content, (str, bytes, int, float)):
        return content
    return CONTENT_JSON_PREFIX + json.dumps(content)


def _row_values(session_id: str, msg: dict[str, Any], timestamp: float) -> tuple[Any, ...]:
    tool_calls = msg.get("tool_calls")
    return (
        session_id, msg.get("role", "unknown"), encode_content(msg.get("content")), msg.get("tool_call_id"),
        json.dumps(tool_calls) if tool_calls else None, msg.get("tool_name"), msg.get("effect_disposition"),
        float(timestamp), msg.get("token_count"), msg.get("finish_reason"), msg.get("reasoning"),
        msg.get("reasoning_content"), None, None, None, msg.get("platform_message_id"),
        1 if msg.get("observed") else 0, 1, 0,
        msg.get("api_content") if isinstance(msg.get("api_content"), str) else None,
    )


_INSERT_SQL = f"INSERT INTO messages ({', '.join(MESSAGE_COLUMNS)}) VALUES ({', '.join('?' * len(MESSAGE_COLUMNS))})"


def _n_tool_calls(msg: dict[str, Any]) -> int:
    tc = msg.get("tool_calls")
    if not tc:
        return 0
    return len(tc) if isinstance(tc, list) else 1


def append_message(
    conn: sqlite3.Connection,
    session_id: str,
    role: str,
    content: Any,
    *,
    timestamp: float | None = None,
    api_content: str | None = None,
    tool_name: str | None = None,
    tool_calls: Any = None,
    tool_call_id: str | None = None,
) -> int:
    """Append one active message (Hermes ``append_message``); returns the new row id."""
    msg = {"role": role, "content": content, "api_content": api_content, "tool_name": tool_name,
           "tool_calls": tool_calls, "tool_call_id": tool_call_id}
    with _transaction(conn, immediate=True):
        cur = conn.execute(_INSERT_SQL, _row_values(session_id, msg, time.time() if timestamp is None else timestamp))
        conn.execute("UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?",
                     (_n_tool_calls(msg), session_id))
    return int(cur.lastrowid or 0)


def append_many(conn: sqlite3.Connection, rows: Iterable[tuple[str, str, Any, float]]) -> None:
    """Bulk-insert ``(session_id, role, content, timestamp)`` active rows in one transaction.

    For benchmarks (``executemany``). ``message_count`` is recomputed for the touched sessions.
    """
    with _transaction(conn):
        touched: set[str] = set()

        def gen():
            for sid, role, content, ts in rows:
                touched.add(sid)
                yield _row_values(sid, {"role": role, "content": content}, ts)

        conn.executemany(_INSERT_SQL, gen())
        for sid in touched:
            conn.execute("UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 1)"
                         " WHERE id = ?", (sid, sid))


def _insert_rows(conn: sqlite3.Connection, session_id: str, messages: Sequence[dict[str, Any]], now: float) -> tuple[int, int]:
    """Hermes ``_insert_message_rows``: explicit timestamps kept, others stamped ``now`` + 1e-6 steps."""
    inserted = tools = 0
    now_ts = now
    for msg in messages:
        ts = now_ts
        if msg.get("timestamp") is not None:
            ts = float(msg["timestamp"])
        conn.execute(_INSERT_SQL, _row_values(session_id, msg, ts))
        inserted += 1
        tools += _n_tool_calls(msg)
        now_ts = max(now_ts + 1e-6, ts + 1e-6)
    return inserted, tools


def summary_message(summary_text: str, *, role: str = "user", prefix: str = SUMMARY_PREFIX_0_19) -> dict[str, Any]:
    """The standalone summary message Hermes' compressor writes.

    Content: ``prefix + "\\n" + summary + "\\n\\n" + end marker`` (context_compressor.py:2648, :3633).
    """
    return {"role": role, "content": f"{prefix}\n{summary_text}\n\n{SUMMARY_END_MARKER}"}


def merged_summary_content(tail_text: str, summary_text: str, *, prefix: str = SUMMARY_PREFIX_0_19) -> str:
    """The merge-into-tail shape (context_compressor.py:190-191): prior text, delimiter, summary, end marker."""
    return (f"{MERGED_PRIOR_CONTEXT_HEADER}\n{tail_text}\n\n{MERGED_SUMMARY_DELIMITER}\n\n"
            f"{prefix}\n{summary_text}\n\n{SUMMARY_END_MARKER}")


def _summary_role(head: Sequence[dict[str, Any]]) -> str:
    """Hermes' first choice of summary role: ``user`` after an assistant/tool head, else ``assistant``."""
    last = head[-1].get("role") if head else None
    return "user" if last in {"assistant", "tool"} or last is None else "assistant"


def active_messages(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The live rows of a session as message dicts (role, content, api_content, tool_name, timestamp)."""
    rows = conn.execute("SELECT role, content, api_content, tool_name, timestamp FROM messages"
                        " WHERE session_id = ? AND active = 1 ORDER BY id", (session_id,)).fetchall()
    return [{"role": r[0], "content": r[1], "api_content": r[2], "tool_name": r[3], "timestamp": r[4]} for r in rows]


def _head_tail(live: list[dict[str, Any]], keep_head: int, keep_tail: int,
               keep_timestamps: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Copies of the first ``keep_head`` and last ``keep_tail`` live rows a compaction keeps
    (the tail never overlaps the head); without ``keep_timestamps`` the copies lose theirs."""
    def copy(m: dict[str, Any]) -> dict[str, Any]:
        return dict(m) if keep_timestamps else {k: v for k, v in m.items() if k != "timestamp"}

    return [copy(m) for m in live[:keep_head]], [copy(m) for m in live[max(keep_head, len(live) - keep_tail):]]


def compact_in_place(
    conn: sqlite3.Connection,
    session_id: str,
    summary_text: str,
    *,
    keep_head: int = 1,
    keep_tail: int = 2,
    now: float | None = None,
    summary_role: str | None = None,
    prefix: str = SUMMARY_PREFIX_0_19,
    merge_into_tail: bool = False,
    keep_timestamps: bool = False,
    extra_tail: Sequence[dict[str, Any]] = (),
) -> int:
    """In-place compaction, as Hermes ``archive_and_compact`` does it; returns the new live count.

    The compacted transcript is the first ``keep_head`` live rows, the summary row
    (``prefix + "\\n" + summary_text``), the last ``keep_tail`` live rows and ``extra_tail``
    (e.g. the current turn's not-yet-persisted user message). With ``merge_into_tail`` the
    summary is merged into the first tail message (the ``[PRIOR CONTEXT`` shape) instead of
    being its own row. With ``keep_timestamps`` the copies keep their original timestamps
    (as after a resume, when the messages were loaded from state.db); otherwise every new row
    is stamped ``now, now+1e-6, ...``.
    """
    head, tail = _head_tail(active_messages(conn, session_id), keep_head, keep_tail, keep_timestamps)
    tail += [dict(m) for m in extra_tail]
    if merge_into_tail and tail:
        first = tail[0]
        first["content"] = merged_summary_content(str(first.get("content") or ""), summary_text, prefix=prefix)
        compacted = head + tail
    else:
        role = summary_role or _summary_role(head)
        compacted = head + [summary_message(summary_text, role=role, prefix=prefix)] + tail
    with _transaction(conn, immediate=True):
        conn.execute("UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1", (session_id,))
        inserted, tools = _insert_rows(conn, session_id, compacted, time.time() if now is None else now)
        conn.execute("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", (inserted, tools, session_id))
    return inserted


def end_session(conn: sqlite3.Connection, session_id: str, end_reason: str, *, ended_at: float | None = None) -> None:
    """End a session; no-op when already ended (the first end reason wins, like Hermes)."""
    conn.execute("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
                 (time.time() if ended_at is None else ended_at, end_reason, session_id))


def rotate(
    conn: sqlite3.Connection,
    session_id: str,
    new_session_id: str,
    summary_text: str,
    *,
    keep_head: int = 1,
    keep_tail: int = 2,
    now: float | None = None,
    summary_role: str | None = None,
    prefix: str = SUMMARY_PREFIX_0_19,
) -> str:
    """Rotation-mode compaction: end ``session_id`` with ``'compression'``, start a child.

    The child gets ``parent_session_id=session_id``, the same source, the title "name #N" when
    the parent had one, and the compacted handoff (head + summary + tail) as its first rows.
    Returns ``new_session_id``.
    """
    now = time.time() if now is None else now
    parent = conn.execute("SELECT source, title FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if parent is None:
        raise KeyError(session_id)
    head, tail = _head_tail(active_messages(conn, session_id), keep_head, keep_tail, keep_timestamps=False)
    compacted = head + [summary_message(summary_text, role=summary_role or _summary_role(head), prefix=prefix)] + tail
    title = None
    if parent[1]:
        base = parent[1].split(" #")[0]
        n = 2
        while conn.execute("SELECT 1 FROM sessions WHERE title = ?", (f"{base} #{n}",)).fetchone():
            n += 1
        title = f"{base} #{n}"
    with _transaction(conn, immediate=True):
        conn.execute("UPDATE sessions SET ended_at = ?, end_reason = 'compression' WHERE id = ? AND ended_at IS NULL",
                     (now, session_id))
        add_session(conn, new_session_id, source=parent[0], title=title, started_at=now, parent_session_id=session_id)
        inserted, tools = _insert_rows(conn, new_session_id, compacted, now)
        conn.execute("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", (inserted, tools, new_session_id))
    return new_session_id


def rewind(conn: sqlite3.Connection, session_id: str, message_id: int) -> int:
    """Soft-delete ``message_id`` and every later row of the session (Hermes ``rewind_to_message``)."""
    cur = conn.execute("UPDATE messages SET active = 0 WHERE session_id = ? AND id >= ? AND active = 1", (session_id, message_id))
    conn.execute("UPDATE sessions SET rewind_count = rewind_count + 1,"
                 " message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 1) WHERE id = ?",
                 (session_id, session_id))
    return cur.rowcount
