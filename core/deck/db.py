"""memdeck's own SQLite store: ``$HERMES_HOME/memdeck/memdeck.db``.

One database per Hermes home, WAL mode, ``synchronous=FULL``, busy timeout (default 10 s), so
many memdeck processes (CLI, TUI, plugin) can append at once. Hermes never reads it.

Tables (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`, reached through the steps of
:data:`MIGRATIONS`, each in one transaction; ``history_seen``/``history`` are described there and in ``core/history/``),
the first two generic over ``kind``
(``"memory"`` for MEMORY.md/USER.md entries, ``"anchor"`` for MemLock anchors):

``journal``
    ``journal_id`` INTEGER PK (monotonic), ``ts`` REAL (epoch seconds), ``actor`` TEXT
    (``cli``/``tui``/``plugin``), ``op`` TEXT (``add``, ``replace``, ``remove``, ``edit``,
    ``move``, ``normalize``, ``batch``, ``archive``, ``restore``, ``approve``, ``reject``,
    ``undo``, ... anchors add their own), ``kind`` TEXT, ``target`` TEXT (``memory``/``user``
    on ``kind="memory"`` rows, NULL on anchor rows), ``scope`` TEXT and ``session_id`` TEXT
    (anchor rows, NULL on memory rows: see *Anchor rows* below), ``before`` TEXT / ``after``
    TEXT (for ``kind="memory"``: the whole canonical file text of ``target`` before and after,
    or NULL), ``detail`` TEXT (JSON object; anchor rows: ``anchor_id``, ...), ``txn`` TEXT
    (groups rows of one multi-file operation, e.g. a ``move``), ``undone_by`` INTEGER (the
    ``journal_id`` of the undo that reverted this row), ``state`` TEXT (``intent``: committed
    before its file change, which may not have happened; ``done``; ``unknown``: recovery found
    neither the before nor the after content; migration 4).

``archive``
    ``archive_id`` INTEGER PK, ``kind``, ``target`` (memory rows: ``memory``/``user``; NULL on
    anchor rows), ``anchor_id``, ``scope``, ``session_id`` (anchor rows; NULL on memory rows),
    ``text`` (the archived entry/anchor text), ``payload`` TEXT (JSON object; anything the kind
    needs to restore faithfully), ``reason``, ``actor``, ``archived_at`` REAL, ``state`` TEXT
    (``archiving`` -> ``archived`` -> ``restoring`` -> ``restored``; the ``*ing`` states are
    crash-recovery intents, see ``core/deck/archive.py``), ``restored_at`` REAL or NULL.

``history_seen`` / ``history``
    ``target``, ``scope``, ``session_id`` as in ``journal`` (``history_seen`` rows of kind
    ``pending`` keep the pending write's ``target``); see ``core/history/``.

Anchor rows (migration 6): ``target`` is Hermes' memory target only and is NULL on them. Where
the anchor lives is said in MemLock's terms (shared/reference/memlock.md §1.2-1.3, ``guard_pin``
``scope`` §3.2): ``scope`` is ``global`` when the row covers the anchor's durable copy in
``memlock/persist/`` (a global pin; on unpin MemLock's ``scope="global"``), else ``session``;
``session_id`` is the MemLock session whose file the row covers, NULL when it covers none (a
change to ``persist/`` alone). So a global pin changed in session ``s1`` is
``scope="global", session_id="s1"``; a global pin made before any session exists is
``scope="global", session_id=NULL``. Archive rows keep the anchor id in ``anchor_id``.

The database is created on first use (directory 0700). Opening never deletes data; an
unknown newer ``user_version`` is refused rather than guessed at.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .. import sqlite_files
from ..errors import MemdeckError
from ..home import HermesHome

T = TypeVar("T")

DB_NAME = "memdeck.db"
DEFAULT_BUSY_TIMEOUT = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS journal (
    journal_id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    actor TEXT NOT NULL,
    op TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    before TEXT,
    after TEXT,
    detail TEXT NOT NULL DEFAULT '{}',
    txn TEXT,
    undone_by INTEGER
);
CREATE INDEX IF NOT EXISTS journal_kind_idx ON journal(kind, journal_id);
CREATE INDEX IF NOT EXISTS journal_txn_idx ON journal(txn);
CREATE TABLE IF NOT EXISTS archive (
    archive_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    text TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}',
    reason TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL,
    archived_at REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('archiving', 'archived', 'restoring', 'restored')),
    restored_at REAL
);
CREATE INDEX IF NOT EXISTS archive_state_idx ON archive(kind, state);
"""

#: Version 2: the change history of every writer (``core/history/``). ``history_seen`` holds
#: the last canonical content memdeck saw of each watched file (key: its path relative to the
#: home; ``stamp`` = ``"mtime_ns:size:ino"``; ``journal_mark`` = the highest journal id already
#: accounted for); ``history`` holds one row per change (entry/anchor added, removed, replaced).
_HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS history_seen (
    path TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    stamp TEXT,
    content TEXT,
    seen_at REAL NOT NULL,
    journal_mark INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS history (
    change_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    path TEXT NOT NULL,
    op TEXT NOT NULL,
    before TEXT,
    after TEXT,
    since REAL,
    until REAL NOT NULL,
    actor TEXT NOT NULL,
    attribution TEXT NOT NULL DEFAULT '{}',
    reverted_by INTEGER
);
CREATE INDEX IF NOT EXISTS history_target_idx ON history(target, change_id);
CREATE INDEX IF NOT EXISTS history_until_idx ON history(until);
"""

#: The schema as an ordered list of additive steps: step ``i`` (1-based) brings a database from
#: ``user_version = i - 1`` to ``i``. Each step only creates what is missing (``IF NOT EXISTS``),
#: so existing databases keep every row. Add a new table as a new step at the end.
_AUDIT_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit_verdicts (
    key TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    summary_hash TEXT,
    anchors_hash TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    verdicts TEXT NOT NULL,
    computed_at REAL NOT NULL
);
"""

#: The schema as an ordered list of steps: step ``i`` (1-based) brings a database from
#: ``user_version = i - 1`` to ``i``, in one transaction. Steps 1-5 only create what is missing
#: (``IF NOT EXISTS``); step 6 rebuilds tables, copying every row. Existing databases keep every
#: row. Append new steps at the end.
#: 4: the write-ahead journal (core/deck/journal.py): a row is committed as ``intent`` before its
#: file changes and marked ``done`` after; rows written before this step are ``done``.
_JOURNAL_STATE_SCHEMA = """
ALTER TABLE journal ADD COLUMN state TEXT NOT NULL DEFAULT 'done';
CREATE INDEX IF NOT EXISTS journal_state_idx ON journal(state, kind, target)
"""

#: 5: the per-session compaction tracks of the state.db reader (core/sessions/compaction_events.py
#: ``_Track``), so a restart resumes from the last checkpoint instead of re-reading the whole
#: session. ``first_id`` (the session's first row id), ``ckpt_id`` and ``ckpt_hash`` (the
#: checkpoint summary row's id and content hash), ``sig`` (the session's rewind signature, JSON)
#: and ``version`` (the track format) say when a stored track still applies; ``track`` is JSON.
_TRACK_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS session_tracks (
    session_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    first_id INTEGER NOT NULL,
    ckpt_id INTEGER NOT NULL,
    ckpt_hash TEXT NOT NULL,
    sig TEXT NOT NULL,
    track TEXT NOT NULL,
    saved_at REAL NOT NULL
)
"""

#: 6: ``target`` means only Hermes' memory target (``memory``/``user``) and is NULL on anchor
#: rows, which name where the anchor lives in MemLock's terms instead: ``scope`` (``session`` |
#: ``global``, MemLock's field, shared/reference/memlock.md §1.3 and ``guard_pin``'s ``scope``)
#: and ``session_id`` (the MemLock session whose file the row is about, NULL when none: a change
#: to ``persist/`` alone); the archive's anchor rows move the anchor id from ``target`` to
#: ``anchor_id``. Up to 5, anchor rows kept all of this in ``target`` (the session id, ``global``,
#: or for archive rows the anchor id). SQLite's "other kinds of table schema changes" procedure
#: (https://www.sqlite.org/lang_altertable.html §7): create the new table, copy every row with
#: the mapping, drop the old one, rename, recreate the indexes; the AUTOINCREMENT counter is
#: carried over (its ``sqlite_sequence`` row is renamed before the old table is dropped), so an
#: id is never reused. Old anchor rows map as: journal ``target = 'global'`` -> scope
#: ``global``, no session; another target -> that session, scope ``global`` when the row changed
#: the durable copy (``detail.global_before`` present), else ``session``; history/history_seen
#: ``global`` or a ``memlock/persist/`` path -> scope ``global``, else the session; archive ->
#: ``anchor_id`` = the old target, ``session_id``/``scope`` from the payload.
_JSON = "CASE WHEN json_valid({col}) THEN {expr} END"
_ANCHOR_SCOPE_SCHEMA = f"""
CREATE TABLE journal_v6 (
    journal_id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    actor TEXT NOT NULL,
    op TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT,
    scope TEXT CHECK (scope IN ('session', 'global')),
    session_id TEXT,
    before TEXT,
    after TEXT,
    detail TEXT NOT NULL DEFAULT '{{}}',
    txn TEXT,
    undone_by INTEGER,
    state TEXT NOT NULL DEFAULT 'done'
);
INSERT INTO journal_v6 (journal_id, ts, actor, op, kind, target, scope, session_id, before, after, detail, txn,
                        undone_by, state)
    SELECT journal_id, ts, actor, op, kind,
           CASE WHEN kind = 'anchor' THEN NULL ELSE target END,
           CASE WHEN kind != 'anchor' THEN NULL
                WHEN target = 'global' THEN 'global'
                WHEN {_JSON.format(col="detail", expr="json_type(detail, '$.global_before')")} IS NOT NULL THEN 'global'
                ELSE 'session' END,
           CASE WHEN kind = 'anchor' AND target != 'global' THEN target END,
           before, after, detail, txn, undone_by, state
    FROM journal ORDER BY journal_id;
DELETE FROM sqlite_sequence WHERE name = 'journal_v6';
UPDATE sqlite_sequence SET name = 'journal_v6' WHERE name = 'journal';
DROP TABLE journal;
ALTER TABLE journal_v6 RENAME TO journal;
CREATE INDEX journal_kind_idx ON journal(kind, journal_id);
CREATE INDEX journal_txn_idx ON journal(txn);
CREATE INDEX journal_state_idx ON journal(state, kind, target);
CREATE TABLE archive_v6 (
    archive_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    target TEXT,
    anchor_id TEXT,
    scope TEXT CHECK (scope IN ('session', 'global')),
    session_id TEXT,
    text TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{{}}',
    reason TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL,
    archived_at REAL NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('archiving', 'archived', 'restoring', 'restored')),
    restored_at REAL
);
INSERT INTO archive_v6 (archive_id, kind, target, anchor_id, scope, session_id, text, payload, reason, actor,
                        archived_at, state, restored_at)
    SELECT archive_id, kind,
           CASE WHEN kind = 'anchor' THEN NULL ELSE target END,
           CASE WHEN kind = 'anchor' THEN target END,
           CASE WHEN kind != 'anchor' THEN NULL
                WHEN {_JSON.format(col="payload", expr="json_extract(payload, '$.scope')")} = 'global' THEN 'global'
                ELSE 'session' END,
           CASE WHEN kind = 'anchor' THEN {_JSON.format(col="payload", expr="json_extract(payload, '$.session_id')")} END,
           text, payload, reason, actor, archived_at, state, restored_at
    FROM archive ORDER BY archive_id;
DELETE FROM sqlite_sequence WHERE name = 'archive_v6';
UPDATE sqlite_sequence SET name = 'archive_v6' WHERE name = 'archive';
DROP TABLE archive;
ALTER TABLE archive_v6 RENAME TO archive;
CREATE INDEX archive_state_idx ON archive(kind, state);
CREATE TABLE history_seen_v6 (
    path TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT,
    scope TEXT CHECK (scope IN ('session', 'global')),
    session_id TEXT,
    stamp TEXT,
    content TEXT,
    seen_at REAL NOT NULL,
    journal_mark INTEGER NOT NULL DEFAULT 0
);
INSERT INTO history_seen_v6 (path, kind, target, scope, session_id, stamp, content, seen_at, journal_mark)
    SELECT path, kind,
           CASE WHEN kind = 'anchor' THEN NULL ELSE target END,
           CASE WHEN kind != 'anchor' THEN NULL
                WHEN target = 'global' OR path LIKE 'memlock/persist/%' THEN 'global' ELSE 'session' END,
           CASE WHEN kind = 'anchor' AND NOT (target = 'global' OR path LIKE 'memlock/persist/%') THEN target END,
           stamp, content, seen_at, journal_mark
    FROM history_seen;
DROP TABLE history_seen;
ALTER TABLE history_seen_v6 RENAME TO history_seen;
CREATE TABLE history_v6 (
    change_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    target TEXT,
    scope TEXT CHECK (scope IN ('session', 'global')),
    session_id TEXT,
    path TEXT NOT NULL,
    op TEXT NOT NULL,
    before TEXT,
    after TEXT,
    since REAL,
    until REAL NOT NULL,
    actor TEXT NOT NULL,
    attribution TEXT NOT NULL DEFAULT '{{}}',
    reverted_by INTEGER
);
INSERT INTO history_v6 (change_id, kind, target, scope, session_id, path, op, before, after, since, until, actor,
                        attribution, reverted_by)
    SELECT change_id, kind,
           CASE WHEN kind = 'anchor' THEN NULL ELSE target END,
           CASE WHEN kind != 'anchor' THEN NULL
                WHEN target = 'global' OR path LIKE 'memlock/persist/%' THEN 'global' ELSE 'session' END,
           CASE WHEN kind = 'anchor' AND NOT (target = 'global' OR path LIKE 'memlock/persist/%') THEN target END,
           path, op, before, after, since, until, actor, attribution, reverted_by
    FROM history ORDER BY change_id;
DELETE FROM sqlite_sequence WHERE name = 'history_v6';
UPDATE sqlite_sequence SET name = 'history_v6' WHERE name = 'history';
DROP TABLE history;
ALTER TABLE history_v6 RENAME TO history;
CREATE INDEX history_target_idx ON history(target, change_id);
CREATE INDEX history_session_idx ON history(session_id, change_id);
CREATE INDEX history_until_idx ON history(until)
"""

#: 7: the state.db reader's final rotation-mode compaction events (core/sessions/
#: compaction_events.py ``_rotation_events``), one row per (parent, child) session pair, so a
#: restart does not reconstruct every pair of a long rotation chain. ``sig`` (JSON: the parent's
#: ``ended_at``, the child's ``started_at``, both ``rewind_count``), ``check_id``/``check_hash``
#: (a row of the child's handoff and its content hash), ``seen_top`` (state.db's highest row id
#: when the event was built: rows added to either session after it invalidate it) and
#: ``version`` (the event format) say when a stored event still applies; ``event`` is JSON.
_ROTATION_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS rotation_events (
    parent_id TEXT NOT NULL,
    child_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    sig TEXT NOT NULL,
    check_id INTEGER NOT NULL,
    check_hash TEXT NOT NULL,
    seen_top INTEGER NOT NULL,
    event TEXT NOT NULL,
    saved_at REAL NOT NULL,
    PRIMARY KEY (parent_id, child_id)
)
"""

#: 8: the semantic audit's caches (core/anchors/encoder.py). ``embeddings``: one vector per
#: window text and encoder (``key`` = sha256 of the encoder identity and the text, ``encoder`` =
#: that identity: the model's weights sha256 and max sequence length), ``vector`` float32
#: little-endian of ``dim`` values; ``weights_checks``: the sha256 of a model's weights file
#: remembered by ``(path, size, mtime_ns)``, so a launch does not hash 90 MB again.
_SEMANTIC_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY,
    encoder TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    computed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS weights_checks (
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    checked_at REAL NOT NULL,
    PRIMARY KEY (path, size, mtime_ns)
)
"""

#: 9: fewer pages written per recorded change (issue 23: an external memory change wrote 11
#: pages into the WAL, then again at the checkpoint). ``history`` is rebuilt with every row and
#: id kept, its ``change_id`` a plain ``INTEGER PRIMARY KEY``: ``AUTOINCREMENT`` wrote
#: ``sqlite_sequence`` on every insert, and ids stay increasing without it because the newest row
#: is never deleted (``core/history/observation.py`` ``_trim`` keeps it; SQLite gives a new row
#: the highest id plus one). Its per-target and per-session indexes become partial (``WHERE ...
#: IS NOT NULL``): a memory change has no ``session_id`` and an anchor change no ``target``, so
#: each change writes only the index it is found by (``target = ?`` and ``session_id = ?``
#: imply the index's condition, so the same queries use them).
_HISTORY_PAGES_SCHEMA = """
CREATE TABLE history_v9 (
    change_id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    target TEXT,
    scope TEXT CHECK (scope IN ('session', 'global')),
    session_id TEXT,
    path TEXT NOT NULL,
    op TEXT NOT NULL,
    before TEXT,
    after TEXT,
    since REAL,
    until REAL NOT NULL,
    actor TEXT NOT NULL,
    attribution TEXT NOT NULL DEFAULT '{}',
    reverted_by INTEGER
);
INSERT INTO history_v9 (change_id, kind, target, scope, session_id, path, op, before, after, since, until, actor,
                        attribution, reverted_by)
    SELECT change_id, kind, target, scope, session_id, path, op, before, after, since, until, actor, attribution,
           reverted_by
    FROM history ORDER BY change_id;
DROP TABLE history;
ALTER TABLE history_v9 RENAME TO history;
DELETE FROM sqlite_sequence WHERE name IN ('history', 'history_v9');
CREATE INDEX history_target_idx ON history(target, change_id) WHERE target IS NOT NULL;
CREATE INDEX history_session_idx ON history(session_id, change_id) WHERE session_id IS NOT NULL;
CREATE INDEX history_until_idx ON history(until)
"""

#: 10: live memory (issue 33, ``core/live_memory/record.py``): what each session was sent, one row per
#: session and entry hash (``core/live_memory/changes.py`` ``entry_hash``). ``state`` ``delivered``
#: (the block of turn ``turn`` carried it) or ``withheld`` (``reason``: over budget; it waits for a
#: new session); ``mode`` the delivery mode then; ``turn_id`` Hermes' own turn id when it passes
#: one; ``at`` epoch seconds.
_LIVE_DELIVERY_SCHEMA = """
CREATE TABLE IF NOT EXISTS live_deliveries (
    session_id TEXT NOT NULL,
    entry_hash TEXT NOT NULL,
    target TEXT NOT NULL,
    change TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('delivered', 'withheld')),
    mode TEXT NOT NULL,
    reason TEXT,
    turn INTEGER,
    turn_id TEXT,
    at REAL NOT NULL,
    PRIMARY KEY (session_id, entry_hash)
) WITHOUT ROWID
"""

#: chat notices (issue 35, ``core/plugin/chat_notice.py``): which pending write each chat was told
#: about, one row per chat and pending id, so the line "N memory writes wait for review" ends a reply
#: at most once per record per chat whichever process serves the chat. ``chat`` is Hermes' gateway
#: session key (``agent:main:telegram:dm:42``) or ``session:<id>`` outside the gateway; ``reason``
#: ``staged`` (staged in that chat's session) or ``age`` (past ``alerts.pending_age_hours``);
#: ``session_id`` the session whose reply carried it; ``at`` epoch seconds.
_CHAT_NOTICE_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_notices (
    chat TEXT NOT NULL,
    pending_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    session_id TEXT,
    at REAL NOT NULL,
    PRIMARY KEY (chat, pending_id)
) WITHOUT ROWID
"""

#: requests to the running agent (issues 33 #2, 34 #3; ``core/requests/queue.py``): one row per request,
#: ``kind`` ``rebuild`` (the plugin asks Hermes to rebuild that session's system prompt) or
#: ``correction`` (a one-time line appended to that session's next user turn, ``text``); ``state``
#: ``queued`` -> ``delivered`` (``turn``, ``turn_id``, ``at``) | ``cancelled`` (an undo before delivery) |
#: ``failed`` (``reason``); ``journal_id`` the journal row that queued it. The partial index is what the
#: plugin reads on every turn.
_AGENT_REQUEST_SCHEMA = """
CREATE TABLE IF NOT EXISTS agent_requests (
    request_id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('rebuild', 'correction')),
    text TEXT,
    detail TEXT NOT NULL DEFAULT '{}',
    state TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'cancelled', 'failed')),
    actor TEXT NOT NULL,
    queued_at REAL NOT NULL,
    journal_id INTEGER,
    turn INTEGER,
    turn_id TEXT,
    at REAL,
    reason TEXT
);
CREATE INDEX IF NOT EXISTS agent_requests_queued ON agent_requests(session_id) WHERE state = 'queued';
"""

#: the constraint ledger (issue 34, ``core/constraints/ledger.py``): one compaction's ledger, computed
#: once. ``key`` is the sha256 of what determines it (the compaction's identity: session, mode, summary
#: row and hash, the compacted rows' id range and the region's; the method; the rule version), so a
#: new rule version or the other method computes again and an unchanged compaction never does.
#: ``items`` is the ledger's JSON before the anchors' and MEMORY/USER's check (applied when read: a
#: memory change never recomputes a ledger); ``counts`` its verdicts per kind (JSON).
_CONSTRAINT_LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS constraint_ledgers (
    key TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    compaction_id INTEGER NOT NULL,
    method TEXT NOT NULL,
    rule_version INTEGER NOT NULL,
    entry TEXT NOT NULL,
    counts TEXT NOT NULL,
    computed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS constraint_ledgers_session_idx ON constraint_ledgers(session_id)
"""

#: API usage (issue 37, ``core/deck/usage.py``): one row per API request the plugin saw through Hermes'
#: ``post_api_request`` hook, with the token buckets Hermes normalised (``agent/usage_pricing.py``
#: ``normalize_usage``): ``input_tokens`` (uncached input), ``output_tokens``, ``cache_read_tokens``,
#: ``cache_write_tokens``, ``reasoning_tokens``; ``turn_id`` / ``api_request_id`` / ``api_call_count`` as
#: Hermes passes them; ``message_count`` the request's messages; ``prompt_sha`` (16 hex of the system message's
#: sha256) and ``tool_count`` from ``pre_api_request`` of the same request (NULL when not seen); ``at`` epoch
#: seconds (the request's end).
_API_USAGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS api_usage (
    usage_id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    turn_id TEXT,
    api_request_id TEXT,
    api_call_count INTEGER,
    platform TEXT,
    model TEXT,
    provider TEXT,
    api_mode TEXT,
    message_count INTEGER,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    prompt_sha TEXT,
    tool_count INTEGER,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS api_usage_session_idx ON api_usage(session_id, usage_id)
"""

MIGRATIONS: tuple[str, ...] = (
    _SCHEMA,              # 1: journal, archive
    _HISTORY_SCHEMA,      # 2: history_seen, history (core/history/)
    _AUDIT_CACHE_SCHEMA,  # 3: per-compaction audit verdicts (core/anchors/integrity_history.py), keyed by what determines them
    _JOURNAL_STATE_SCHEMA,  # 4: journal.state (intent | done | unknown)
    _TRACK_CACHE_SCHEMA,  # 5: session_tracks (the state.db reader's per-session compaction tracks)
    _ANCHOR_SCOPE_SCHEMA,  # 6: target = memory/user only; anchor rows get scope/session_id (archive: anchor_id)
    _ROTATION_CACHE_SCHEMA,  # 7: rotation_events (the state.db reader's final rotation events)
    _SEMANTIC_CACHE_SCHEMA,  # 8: embeddings, weights_checks (the semantic audit's encoder, core/anchors/encoder.py)
    _HISTORY_PAGES_SCHEMA,  # 9: history without AUTOINCREMENT, partial target/session indexes (fewer pages per change)
    _LIVE_DELIVERY_SCHEMA,  # 10: live_deliveries (what each session was sent, core/live_memory/record.py)
    _CHAT_NOTICE_SCHEMA,  # chat_notices (which pending write each chat was told about, core/plugin/chat_notice.py)
    _AGENT_REQUEST_SCHEMA,  # agent_requests (rebuild / correction requests to a running session, core/requests/)
    _CONSTRAINT_LEDGER_SCHEMA,  # constraint_ledgers (one compaction's constraint ledger, core/constraints/ledger.py)
    _API_USAGE_SCHEMA,  # api_usage (per-request token buckets from the plugin's post_api_request, core/deck/usage.py)
)
SCHEMA_VERSION = len(MIGRATIONS)


class DeckDBError(MemdeckError):
    """memdeck.db cannot be opened or has an unknown schema version."""


def db_path(home: HermesHome | Path) -> Path:
    """``<home>/memdeck/memdeck.db``."""
    base = home.memdeck_dir if isinstance(home, HermesHome) else Path(home) / "memdeck"
    return base / DB_NAME


def connect(home: HermesHome | Path, *, timeout: float = DEFAULT_BUSY_TIMEOUT) -> sqlite3.Connection:
    """Open (creating if needed) memdeck.db in autocommit mode with WAL and a busy timeout.

    Args:
        home: the Hermes home.
        timeout: seconds SQLite waits on a locked database before ``sqlite3.OperationalError``.

    Returns:
        a connection with ``row_factory = sqlite3.Row``; use :func:`transaction` for writes.

    Raises:
        DeckDBError: the directory cannot be created, the file is not a database, or its
            schema version is newer than this memdeck understands.
    """
    path = db_path(home)
    _refuse_links(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with sqlite_files.creating(path):
            _refuse_links(path)  # a link created while we looked
            if not sqlite_files.create_private(path):
                _make_private(path)
            conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise DeckDBError(f"cannot open {path}: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise DeckDBError(f"{path} has schema version {version}; this memdeck understands {SCHEMA_VERSION}")
        if version < SCHEMA_VERSION:
            with transaction(conn):
                # re-read under the write lock: another process may have migrated meanwhile
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                for step in MIGRATIONS[version:]:
                    for stmt in step.split(";"):
                        if stmt.strip():
                            conn.execute(stmt)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        _check_tables(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise DeckDBError(f"{path} is not usable: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _expected_tables() -> dict[str, frozenset[str]]:
    """``table -> column names`` of the current schema, read from a database built in memory by
    :data:`MIGRATIONS` (so it never drifts from them; built once per list of migrations)."""
    return _tables_of(tuple(MIGRATIONS))


@functools.lru_cache(maxsize=4)
def _tables_of(migrations: tuple[str, ...]) -> dict[str, frozenset[str]]:
    conn = sqlite3.connect(":memory:")
    try:
        for step in migrations:
            for stmt in step.split(";"):
                if stmt.strip():
                    conn.execute(stmt)
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {t: frozenset(r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')) for t in tables}
    finally:
        conn.close()


def _check_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a memdeck.db whose tables memdeck cannot read and write by column name (issue 22 #7):
    a table of the schema that is missing or lacks one of its columns, or holds an extra column
    that is ``NOT NULL`` without a default (no row memdeck writes could satisfy it). Other extra
    columns, and any column order, are fine: every statement names its columns.

    Raises:
        DeckDBError: naming the table and the columns, before anything is read or written.
    """
    problems: list[str] = []
    for table, want in _expected_tables().items():
        info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        if not info:
            problems.append(f"it has no {table} table")
            continue
        have = {r[1] for r in info}
        missing = sorted(want - have)
        if missing:
            problems.append(f"its {table} table lacks the column(s) {', '.join(missing)}")
        blocking = sorted(r[1] for r in info if r[1] not in want and r[3] and r[4] is None and not r[5])
        if blocking:
            problems.append(f"its {table} table has extra NOT NULL column(s) without a default: {', '.join(blocking)}")
    if problems:
        raise DeckDBError(f"{path} does not have the tables this memdeck writes ({'; '.join(problems)}); it was made or "
                          "changed by another program. memdeck neither reads nor writes it: keep a copy and move it "
                          "aside to let memdeck start a new one (its journal and archive stay in the copy)")


def _make_private(path: Path) -> None:
    """Take group and other permissions off an existing memdeck.db (one made by an older memdeck
    or by hand) by path: never through a descriptor, whose ``close()`` would drop this process's
    SQLite locks on the file (``core/sqlite_files.py``). ``lstat`` first: a link is never
    followed (``_refuse_links`` has refused one already; this closes the window after it). The
    owner's bits are kept: a memdeck.db someone made read-only stays read-only (it was made 0600,
    writable, until the hostile homes caught it)."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)


def _refuse_links(path: Path) -> None:
    """Refuse a symlinked ``memdeck/`` directory or ``memdeck.db`` (or its ``-wal``/``-shm``/
    ``-journal``), as the lock files refuse theirs (``core/fsio.py`` ``O_NOFOLLOW``): followed,
    a link to ``../state.db`` would put memdeck's tables in Hermes' database and chmod it, and a
    dangling one would create a database outside the home (issue 13 #13).

    Raises:
        DeckDBError: naming the link.
    """
    for p in (path.parent, path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        if os.path.islink(p):
            raise DeckDBError(f"refusing to use {p}: it is a symlink (memdeck keeps its database inside the home; "
                              "remove the link)")


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any exception).

    ``BEGIN IMMEDIATE`` takes the database's write lock up front, so a caller that changes a
    file inside the block learns that memdeck.db is locked (past the busy timeout), read-only
    or damaged *before* touching the file.

    Raises:
        DeckDBError: BEGIN, a statement of the block, or COMMIT failed with an SQLite error
            (the message says which, e.g. "memdeck.db is locked by another process").
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise DeckDBError(_describe(exc, "start a write")) from exc
    try:
        yield conn
    except BaseException as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise DeckDBError(_describe(exc, "write")) from exc
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise DeckDBError(_describe(exc, "commit")) from exc


def _describe(exc: sqlite3.Error, what: str) -> str:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"memdeck.db is locked by another process (could not {what}: {text}); nothing was recorded"
    return f"memdeck.db is not usable (could not {what}: {text})"


class DeckDB:
    """One memdeck.db connection kept open by a long-lived reader (the dashboard).

    Each :func:`opened` without a connection would open memdeck.db and close it again; closing
    the last connection of a WAL database checkpoints it and deletes its ``-wal`` and ``-shm``,
    and the next open writes a fresh 32 KiB ``-shm``: on a live home (a refresh every couple of
    seconds) that was about 1 MB of disk writes a minute while nothing of memdeck's changed.
    Inside ``with deck.bound():`` every :func:`opened` of the same home on this thread (or
    task) uses the one held connection instead. The connection is opened on first use and
    reopened when memdeck.db was deleted or replaced (another inode).
    """

    def __init__(self, home: HermesHome | Path) -> None:
        self.path = db_path(home)
        self._home = home
        self._conn: sqlite3.Connection | None = None
        self._ino: tuple[int, int] | None = None

    def connection(self) -> sqlite3.Connection:
        """The held connection, (re)opened if needed. Raises :class:`DeckDBError` as :func:`connect`."""
        try:
            st = os.stat(self.path)
            ino: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            ino = None
        if self._conn is not None and (ino is None or ino != self._ino):
            self.close()  # deleted or replaced under us: never write into the old file
        if self._conn is None:
            self._conn = connect(self._home)
            st = os.stat(self.path)
            self._ino = (st.st_dev, st.st_ino)
        return self._conn

    @contextlib.contextmanager
    def bound(self) -> Iterator[DeckDB]:
        """Make :func:`opened` use this connection for this home within the block."""
        token = _BOUND.set(self)
        try:
            yield self
        finally:
            _BOUND.reset(token)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn, self._ino = None, None


_BOUND: contextvars.ContextVar[DeckDB | None] = contextvars.ContextVar("memdeck_deckdb", default=None)


def _held_for(home: HermesHome | Path) -> DeckDB | None:
    held = _BOUND.get()
    return held if held is not None and held.path == db_path(home) else None


@contextlib.contextmanager
def opened(home: HermesHome | Path, conn: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
    """Yield ``conn`` if given, else the :class:`DeckDB` bound for this home (kept open), else
    a fresh connection closed on exit."""
    if conn is not None:
        yield conn
        return
    held = _held_for(home)
    if held is not None:
        yield held.connection()
        return
    c = connect(home)
    try:
        yield c
    finally:
        c.close()


def read_quietly(home: HermesHome | Path, read: Callable[[sqlite3.Connection], T], default: T) -> T:
    """``read(conn)`` on the :class:`DeckDB` bound for ``home``, else on memdeck.db opened read-only
    (never created, migrated or written); ``default`` when the file does not exist, predates the
    table ``read`` asks for, or cannot be read (``sqlite3.Error``). Never raises for those."""
    conn, own = _read_only(home)
    if conn is None:
        return default
    try:
        return read(conn)
    except sqlite3.Error:
        return default
    finally:
        if own:
            conn.close()


def write_quietly(home: HermesHome | Path, write: Callable[[sqlite3.Connection], None], *, timeout: float = 0.5) -> bool:
    """Run ``write(conn)`` on the :class:`DeckDB` bound for ``home``, else on a fresh connection
    (creating and migrating memdeck.db when needed) that waits at most ``timeout`` seconds for another
    writer's lock, closed afterwards. For writes made inside Hermes' process (the plugin's hooks: a
    hook must neither hold the agent's turn nor raise into it): True when written; False, never an
    exception, when memdeck.db is locked, read-only or unusable (``DeckDBError``, ``sqlite3.Error``,
    ``OSError``). ``write`` opens its own :func:`transaction`."""
    held = _held_for(home)
    try:
        conn = held.connection() if held is not None else connect(home, timeout=timeout)
    except (DeckDBError, OSError):
        return False
    try:
        write(conn)
        return True
    except (DeckDBError, sqlite3.Error, OSError):
        return False
    finally:
        if held is None:
            conn.close()


# --------------------------------------------------------------------------- audit verdict cache


def _read_only(home: HermesHome | Path) -> tuple[sqlite3.Connection | None, bool]:
    """A connection for reading memdeck.db without creating it: the bound one, else the file
    opened ``mode=ro``; ``(None, False)`` when it does not exist or cannot be opened. The bool
    tells whether the connection is the caller's to close."""
    path = db_path(home)
    if not path.exists():
        return None, False
    held = _held_for(home)
    try:
        if held is not None:
            return held.connection(), False
        import urllib.parse

        with sqlite_files.creating(path):  # never between create_private's open and close
            return sqlite3.connect("file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro", uri=True,
                                   timeout=1.0), True
    except (sqlite3.Error, DeckDBError):
        return None, False


def load_decided_pending(home: HermesHome | Path, ids: Sequence[str]) -> dict[str, str]:
    """``{pending id: op}`` for the ids among ``ids`` that memdeck's journal shows memdeck decided
    before (an approval, whose row's ``op`` is the write's, or ``reject``) with a copy of the
    record: a record of that id staged now was put back by memdeck (the undo of that decision,
    ``core/memory/approval.py`` ``restage``, ``core/memory/pending.py`` ``unreject``), since
    Hermes never stages two records under one id. ``{}`` when memdeck.db does not exist or cannot
    be read; opens it read-only. Never raises."""
    if not ids:
        return {}
    conn, own = _read_only(home)
    if conn is None:
        return {}
    out: dict[str, str] = {}
    try:
        part = list(ids)[:500]
        for pid, op in conn.execute(
                "SELECT json_extract(detail, '$.pending_id'), op FROM journal WHERE kind = 'memory' "
                "AND op != 'undo' AND state IN ('done', 'unknown') AND json_valid(detail) "
                "AND json_type(detail, '$.record') = 'text' "
                f"AND json_extract(detail, '$.pending_id') IN ({','.join('?' * len(part))}) ORDER BY journal_id",
                part):
            out[str(pid)] = str(op)
    except sqlite3.Error:
        return out
    finally:
        if own:
            conn.close()
    return out


def _load_by_keys(home: HermesHome | Path, table: str, value: str, keys: Sequence[str]) -> dict[str, Any]:
    """``{key: value column}`` of ``table``'s rows among ``keys`` (500 keys a query, SQLite's bound
    parameters), read as :func:`read_quietly` reads: ``{}`` when memdeck.db does not exist, predates
    ``table`` or cannot be read (the rows read before an error are kept). Never raises."""
    out: dict[str, Any] = {}
    if not keys:
        return out

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        ks = list(keys)
        for i in range(0, len(ks), 500):
            part = ks[i:i + 500]
            out.update(conn.execute(f"SELECT key, {value} FROM {table} WHERE key IN ({','.join('?' * len(part))})", part))
        return out

    return read_quietly(home, read, out)


def load_audit_verdicts(home: HermesHome | Path, keys: list[str]) -> dict[str, str]:
    """``{key: verdicts JSON}`` for the cached keys among ``keys``; ``{}`` when memdeck.db does not
    exist, predates the cache table, or cannot be read. Opens the file read-only
    (``mode=ro``): never creates, migrates or writes anything. Never raises.
    """
    return {str(k): str(v) for k, v in _load_by_keys(home, "audit_verdicts", "verdicts", keys).items()}


def store_audit_verdicts(home: HermesHome | Path, rows: list[tuple[str, str, str | None, str, str, str, float]]) -> bool:
    """Append ``(key, session_id, summary_hash, anchors_hash, config_hash, verdicts JSON, epoch s)``
    rows (existing keys are kept). Only into an existing memdeck.db (reading a home never
    creates it); True when written. Never raises: a locked or read-only store is skipped (the
    verdicts stay in memory for this process).
    """
    if not rows:
        return False
    return _write_if_exists(home, lambda conn: conn.executemany(
        "INSERT OR IGNORE INTO audit_verdicts (key, session_id, summary_hash, anchors_hash,"
        " config_hash, verdicts, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?)", rows))


def load_constraint_ledgers(home: HermesHome | Path, keys: Sequence[str]) -> dict[str, str]:
    """``{key: entry JSON}`` for the stored ledgers among ``keys`` (``constraint_ledgers``); ``{}``
    when memdeck.db does not exist, predates the table or cannot be read. Read-only. Never raises."""
    return {str(k): str(v) for k, v in _load_by_keys(home, "constraint_ledgers", "entry", keys).items()}


def store_constraint_ledgers(home: HermesHome | Path,
                             rows: Sequence[tuple[str, str, int, str, int, str, str, float]]) -> bool:
    """Keep ``(key, session_id, compaction_id, method, rule_version, entry JSON, counts JSON, epoch s)``
    rows (an existing key is kept). Only into an existing memdeck.db; True when written; never
    raises (a locked or read-only store is skipped)."""
    if not rows:
        return False
    return _write_if_exists(home, lambda conn: conn.executemany(
        "INSERT OR IGNORE INTO constraint_ledgers (key, session_id, compaction_id, method, rule_version, entry,"
        " counts, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows))


def _write_if_exists(home: HermesHome | Path, write: Callable[[sqlite3.Connection], object]) -> bool:
    """Run ``write(conn)`` in one transaction on an existing memdeck.db (the held :class:`DeckDB`
    connection when one is bound, else a fresh one with a 1 s busy timeout). A cache write: True
    when written, False (never an exception) when memdeck.db is absent, locked, read-only or
    damaged."""
    if not db_path(home).exists():
        return False

    def in_one_transaction(conn: sqlite3.Connection) -> None:
        with transaction(conn):
            write(conn)

    return write_quietly(home, in_one_transaction, timeout=1.0)


# --------------------------------------------------------------------------- session track cache


def load_session_track(home: HermesHome | Path, session_id: str) -> dict[str, object] | None:
    """The stored compaction track of ``session_id`` as ``{"version": int, "first_id": int,
    "ckpt_id": int, "ckpt_hash": str, "sig": str (JSON), "track": str (JSON)}``, or None when
    memdeck.db does not exist, predates the table (migration 5), holds no row for the session
    or cannot be read. Opens the file read-only: never creates, migrates or writes. Never raises.
    The caller checks that the track still applies (see ``core/sessions/compaction_events.py``).
    """
    conn, own = _read_only(home)
    if conn is None:
        return None
    try:
        row = conn.execute("SELECT version, first_id, ckpt_id, ckpt_hash, sig, track FROM session_tracks"
                           " WHERE session_id = ?", (session_id,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        if own:
            conn.close()
    if row is None:
        return None
    return {"version": row[0], "first_id": row[1], "ckpt_id": row[2], "ckpt_hash": row[3], "sig": row[4],
            "track": row[5]}


def store_session_track(home: HermesHome | Path, session_id: str, *, version: int, first_id: int, ckpt_id: int,
                        ckpt_hash: str, sig: str, track: str, saved_at: float) -> bool:
    """Store (replace) the compaction track of ``session_id`` (fields as :func:`load_session_track`;
    ``saved_at`` epoch seconds). Only into an existing memdeck.db (reading a home never creates
    it); True when written. Never raises: a locked, read-only or damaged store is skipped (the
    track stays in memory for this process).
    """
    return _write_if_exists(home, lambda conn: conn.execute(
        "INSERT OR REPLACE INTO session_tracks (session_id, version, first_id, ckpt_id, ckpt_hash,"
        " sig, track, saved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, int(version), int(first_id), int(ckpt_id), ckpt_hash, sig, track, float(saved_at))))


# --------------------------------------------------------------------------- rotation event cache


def load_rotation_events(home: HermesHome | Path) -> dict[tuple[str, str], dict[str, object]]:
    """Every stored rotation event as ``{(parent_id, child_id): {"version": int, "sig": str
    (JSON), "check_id": int, "check_hash": str, "seen_top": int, "event": str (JSON)}}``; ``{}`` when memdeck.db
    does not exist, predates the table (migration 7) or cannot be read. Opens the file
    read-only: never creates, migrates or writes. Never raises. The caller checks that each
    event still applies (see ``core/sessions/compaction_events.py``).
    """
    conn, own = _read_only(home)
    if conn is None:
        return {}
    try:
        rows = conn.execute("SELECT parent_id, child_id, version, sig, check_id, check_hash, seen_top, event"
                            " FROM rotation_events").fetchall()
    except sqlite3.Error:
        return {}
    finally:
        if own:
            conn.close()
    return {(str(r[0]), str(r[1])): {"version": r[2], "sig": r[3], "check_id": r[4], "check_hash": r[5],
                                      "seen_top": r[6], "event": r[7]} for r in rows}


def store_rotation_events(home: HermesHome | Path, rows: Sequence[dict[str, object]], *, saved_at: float) -> bool:
    """Store (replace) rotation events, each a dict with ``parent_id``, ``child_id`` and the
    fields of :func:`load_rotation_events`, in one transaction; ``saved_at`` epoch seconds. Only
    into an existing memdeck.db; True when written. Never raises (a locked, read-only or damaged
    store is skipped: the events stay in memory for this process).
    """
    if not rows:
        return True
    return _write_if_exists(home, lambda conn: conn.executemany(
        "INSERT OR REPLACE INTO rotation_events (parent_id, child_id, version, sig, check_id, check_hash, seen_top,"
        " event, saved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(str(r["parent_id"]), str(r["child_id"]), int(r["version"]), str(r["sig"]), int(r["check_id"]),  # type: ignore[call-overload]
          str(r["check_hash"]), int(r["seen_top"]), str(r["event"]), float(saved_at)) for r in rows]))  # type: ignore[call-overload]


# --------------------------------------------------------------------------- semantic audit caches


def load_embeddings(home: HermesHome | Path, keys: Sequence[str]) -> dict[str, bytes]:
    """``{key: vector bytes (float32 little-endian)}`` for the cached keys among ``keys``; ``{}``
    when memdeck.db does not exist, predates the table (migration 8) or cannot be read. Opens the
    file read-only: never creates, migrates or writes. Never raises."""
    return {str(k): bytes(v) for k, v in _load_by_keys(home, "embeddings", "vector", keys).items()}


def store_embeddings(home: HermesHome | Path, encoder: str, dim: int, rows: Sequence[tuple[str, bytes]]) -> bool:
    """Append ``(key, vector bytes)`` rows of ``encoder`` (its identity) with ``dim`` values each
    (existing keys are kept), in one transaction. Only into an existing memdeck.db; True when
    written. Never raises: a locked, read-only or damaged store is skipped (the vectors stay in
    the caller's memory)."""
    if not rows:
        return True
    import time as _time

    now = _time.time()
    return _write_if_exists(home, lambda conn: conn.executemany(
        "INSERT OR IGNORE INTO embeddings (key, encoder, dim, vector, computed_at) VALUES (?, ?, ?, ?, ?)",
        [(str(k), str(encoder), int(dim), sqlite3.Binary(v), now) for k, v in rows]))


def load_weights_check(home: HermesHome | Path, path: str, size: int, mtime_ns: int) -> str | None:
    """The sha256 remembered for the weights file ``path`` at ``size`` bytes and ``mtime_ns``, or
    None (not checked at that size and mtime, no memdeck.db, or unreadable). Read-only. Never raises."""
    conn, own = _read_only(home)
    if conn is None:
        return None
    try:
        row = conn.execute("SELECT sha256 FROM weights_checks WHERE path = ? AND size = ? AND mtime_ns = ?",
                           (str(path), int(size), int(mtime_ns))).fetchone()
    except sqlite3.Error:
        return None
    finally:
        if own:
            conn.close()
    return str(row[0]) if row else None


def store_weights_check(home: HermesHome | Path, path: str, size: int, mtime_ns: int, sha256: str) -> bool:
    """Remember ``sha256`` for the weights file ``path`` at ``size`` and ``mtime_ns`` (replacing the
    rows of that path). Only into an existing memdeck.db; True when written. Never raises."""
    import time as _time

    def write(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM weights_checks WHERE path = ?", (str(path),))
        conn.execute("INSERT INTO weights_checks (path, size, mtime_ns, sha256, checked_at) VALUES (?, ?, ?, ?, ?)",
                     (str(path), int(size), int(mtime_ns), str(sha256), _time.time()))

    return _write_if_exists(home, write)
