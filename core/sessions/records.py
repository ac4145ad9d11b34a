"""The values the state.db reader returns: ``DBStatus``, ``SessionInfo``, ``Message``, ``CompactionEvent``, ``Delta``.

One concept: the shapes (frozen dataclasses; epoch seconds; ``as_dict`` gives the JSON form used by
``status --json`` and the CLI). Nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

#: The newest schema version this reader was verified against (Hermes 0.22.2.post1
#: ``SCHEMA_VERSION``, ``hermes_state_common.py:283``; the interop matrix covers 16-31).
KNOWN_SCHEMA_VERSION = 31
#: The oldest verified one (Hermes 0.17.0 ``hermes_state.py:110``).
OLDEST_SCHEMA_VERSION = 16
STATES = ("ok", "missing", "locked", "not_sqlite", "corrupt", "empty", "unsupported")


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
class PromptStamp:
    """What identifies one session's stored system prompt, read without reading the prompt.

    Attributes:
        session_id, source, title, model: the session row's.
        started_at, ended_at: epoch seconds.
        prompt_key: changes whenever the stored prompt does: ``"h:<sha256>"`` from
            ``sessions.system_prompt_hash`` (schema >= 23), else ``"t:<digest>"`` of the prompt's
            length, first 256 and last 8,192 chars; None when no prompt is stored.
        prompt_chars: the stored prompt's length in chars (0 when none, or unknown for a hashed
            prompt before it was read).
        first_active: epoch seconds of the session's oldest active row (Hermes builds the prompt at
            the first turn and again at each compaction, whose rows are stamped when it ran), or
            None without rows.
        input_tokens, cache_tokens, output_tokens, api_calls: the session's recorded usage
            (``cache_tokens`` = cache reads + cache writes), 0 when not recorded.
        last_active: epoch seconds of the session's newest row (None without rows).
        cache_read_tokens, cache_write_tokens: the two halves of ``cache_tokens`` (0 when not recorded).
    """

    session_id: str
    source: str
    title: str | None
    model: str | None
    started_at: float
    ended_at: float | None
    prompt_key: str | None
    prompt_chars: int
    first_active: float | None
    input_tokens: int = 0
    cache_tokens: int = 0
    output_tokens: int = 0
    api_calls: int = 0
    last_active: float | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def activity(self) -> float:
        """The newest of the start and the newest row (the rule that picks the live session)."""
        return max(self.started_at, self.last_active or 0.0)

    @property
    def frozen_at(self) -> float:
        """When the prompt was last built, best known: the oldest active row, else the start."""
        return self.first_active if self.first_active is not None else self.started_at


@dataclass(frozen=True)
class Message:
    """One ``messages`` row as Hermes loads it.

    Attributes:
        content: decoded content (``\\x00json:`` lists decoded; user/assistant strings passed
            through Hermes' ``sanitize_context`` and stripped, as ``_rows_to_conversation`` does).
        text: the plain text of ``content`` (list parts joined with ``\\n``).
        api_content: the exact API-bound text when it differed (plugin/recall injections), at
            most :data:`.bounds.MAX_STORED_TEXT_CHARS` chars of it.
        api_content_chars: the stored ``api_content``'s length (chars) when it was cut, else None.
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
    api_content_chars: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """``{"role", "content"}``: the shape of a conversation message (what MemLock audits)."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class UserTurn:
    """One user row of a session's active region, as stored (nothing sanitized or stripped).

    Attributes:
        id: ``messages.id`` (the turn's id: what a memory provider and the plugins appended to
            this turn is in this row).
        timestamp: epoch seconds (None when the row has none).
        content: the stored ``content`` (None when NULL; ``\x00json:`` lists left encoded).
        api_content: the API-bound text Hermes 0.19+ stores when it differed from ``content``
            (``agent/turn_context.py`` ``compose_user_api_content``: ``content + "\n\n" +
            injections``), else None; at most :data:`.bounds.MAX_STORED_TEXT_CHARS` chars of it.
        api_content_chars: the stored ``api_content``'s length (chars) when it was cut, else None.
    """

    id: int
    timestamp: float | None
    content: str | None
    api_content: str | None
    api_content_chars: int | None = None


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
    region_ids: Sequence[int] = field(default=(), repr=False, compare=False)  # a range when consecutive

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

