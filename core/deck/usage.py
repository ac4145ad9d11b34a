"""Per-request API usage: memdeck.db ``api_usage`` (a migration of :data:`memdeck.core.deck.db.MIGRATIONS`).

The plugin records one row per API request from Hermes' ``post_api_request`` hook (Hermes 0.17-0.22
pass ``usage=agent._usage_summary_for_api_request_hook(response)``: the ``CanonicalUsage`` buckets of
``agent/usage_pricing.py`` ``normalize_usage``, which reads the Anthropic shape
``cache_read_input_tokens`` / ``cache_creation_input_tokens`` and the OpenAI shape
``prompt_tokens_details.cached_tokens`` alike and reports ``input_tokens`` without the cached ones).
Nothing is sent anywhere: the rows stay in the home's memdeck.db, read by ``memdeck context`` and the
dashboard.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..coerce import as_int
from ..home import HermesHome
from . import db as deckdb

BUCKETS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


@dataclass(frozen=True)
class ApiUsage:
    """One API request's usage as Hermes normalised it (tokens), with where it belongs.

    Attributes:
        session_id, turn_id, api_request_id: Hermes' ids (``turn_id`` / ``api_request_id`` None
            when that Hermes passes none).
        api_call_count: the request's number within its turn (1 = the turn's first), None if unknown.
        model, provider, api_mode, platform: as Hermes passed them ('' when absent).
        message_count: messages in the request (None if unknown).
        input_tokens: uncached input; output_tokens; cache_read_tokens; cache_write_tokens;
            reasoning_tokens: tokens.
        at: epoch seconds (the request's end).
        prompt_sha: 16 hex of the sha256 of the request's system message, tool_count: tools sent (both
            from ``pre_api_request`` of the same request; None when not seen).
    """

    session_id: str
    turn_id: str | None
    api_request_id: str | None
    api_call_count: int | None
    model: str
    provider: str
    api_mode: str
    platform: str
    message_count: int | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    at: float
    prompt_sha: str | None = None
    tool_count: int | None = None

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request: uncached + cache read + cache write (Hermes'
        ``CanonicalUsage.prompt_tokens``)."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def to_dict(self) -> dict[str, Any]:
        return {"turn_id": self.turn_id, "api_request_id": self.api_request_id, "api_call_count": self.api_call_count,
                "model": self.model, "provider": self.provider, "message_count": self.message_count,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens, "cache_write_tokens": self.cache_write_tokens,
                "reasoning_tokens": self.reasoning_tokens, "prompt_tokens": self.prompt_tokens, "at": self.at,
                "prompt_sha": self.prompt_sha, "tool_count": self.tool_count}


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else str(v))


def request_fingerprint(kwargs: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """``(prompt_sha, tool_count)`` of one ``pre_api_request`` call: 16 hex of the sha256 of the system
    message in ``request_messages`` (None when there is none) and ``tool_count`` (None when absent)."""
    import hashlib

    sha = None
    msgs = kwargs.get("request_messages")
    if isinstance(msgs, list) and msgs and isinstance(msgs[0], Mapping) and msgs[0].get("role") == "system":
        content = msgs[0].get("content")
        if not isinstance(content, str):  # a list of parts (cache_control markers): their text, joined
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping)) \
                if isinstance(content, list) else str(content)
        sha = hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    tools = kwargs.get("tool_count")
    return sha, (as_int(tools, 0) if tools is not None else None)


def from_hook(kwargs: Mapping[str, Any], *, now: float | None = None,
              fingerprint: tuple[str | None, int | None] = (None, None)) -> ApiUsage | None:
    """The row of one ``post_api_request`` call (its keyword arguments as Hermes passes them), or None
    when the call carries no ``usage`` dict or no session id (nothing to record); ``fingerprint``: the
    same request's :func:`request_fingerprint`."""
    usage = kwargs.get("usage")
    sid = kwargs.get("session_id")
    if not isinstance(usage, Mapping) or not isinstance(sid, str) or not sid:
        return None
    ended = kwargs.get("ended_at")
    at = float(ended) if isinstance(ended, (int, float)) and not isinstance(ended, bool) else (now or time.time())
    turn = kwargs.get("turn_id")
    req = kwargs.get("api_request_id")
    calls = kwargs.get("api_call_count")
    msgs = kwargs.get("message_count")
    return ApiUsage(
        session_id=sid, turn_id=None if turn is None else str(turn), api_request_id=None if req is None else str(req),
        api_call_count=as_int(calls, 0) if calls is not None else None,
        model=_text(kwargs.get("model")), provider=_text(kwargs.get("provider")),
        api_mode=_text(kwargs.get("api_mode")), platform=_text(kwargs.get("platform")),
        message_count=as_int(msgs, 0) if msgs is not None else None,
        **{b: max(0, as_int(usage.get(b), 0)) for b in BUCKETS}, at=at, prompt_sha=fingerprint[0],
        tool_count=fingerprint[1])


_COLS = ("session_id, turn_id, api_request_id, api_call_count, model, provider, api_mode, platform, message_count, "
         "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, at, prompt_sha, tool_count")


def _row(r: Any) -> ApiUsage:
    return ApiUsage(str(r[0]), None if r[1] is None else str(r[1]), None if r[2] is None else str(r[2]),
                    None if r[3] is None else int(r[3]), str(r[4] or ""), str(r[5] or ""), str(r[6] or ""),
                    str(r[7] or ""), None if r[8] is None else int(r[8]),
                    int(r[9]), int(r[10]), int(r[11]), int(r[12]), int(r[13]), float(r[14]),
                    None if r[15] is None else str(r[15]), None if r[16] is None else int(r[16]))


def record(home: HermesHome | Path, row: ApiUsage, *, timeout: float = 0.5) -> bool:
    """Append ``row``, creating and migrating memdeck.db when needed; ``timeout``: seconds to wait
    for another writer (a hook must not hold the agent's turn). True when written; False (never an
    exception) when memdeck.db is locked, read-only or unusable."""
    return deckdb.write_quietly(home, lambda conn: insert(conn, row), timeout=timeout)


def insert(conn: sqlite3.Connection, row: ApiUsage) -> None:
    """Append ``row`` on an open memdeck.db connection (:func:`memdeck.core.deck.db.connect`), in one
    transaction. Raises ``sqlite3.Error`` / ``DeckDBError`` as the connection does."""
    with deckdb.transaction(conn):
        conn.execute(f"INSERT INTO api_usage ({_COLS}) VALUES ({', '.join('?' * 17)})",
                     (row.session_id, row.turn_id, row.api_request_id, row.api_call_count, row.model, row.provider,
                      row.api_mode, row.platform, row.message_count, row.input_tokens, row.output_tokens,
                      row.cache_read_tokens, row.cache_write_tokens, row.reasoning_tokens, row.at, row.prompt_sha,
                      row.tool_count))


def load_session(home: HermesHome | Path, session_id: str, *, limit: int = 5000) -> list[ApiUsage]:
    """The session's rows, oldest first (at most the newest ``limit``); ``[]`` when memdeck.db does not
    exist, predates the table or cannot be read. Read-only: never creates or migrates. Never raises."""
    rows: list[Any] = deckdb.read_quietly(home, lambda conn: conn.execute(
        f"SELECT {_COLS} FROM api_usage WHERE session_id = ? ORDER BY usage_id DESC LIMIT ?",
        (session_id, int(limit))).fetchall(), [])
    return [_row(r) for r in reversed(rows)]


def previous_session_row(home: HermesHome | Path, session_id: str) -> ApiUsage | None:
    """The newest row of another session recorded before ``session_id``'s first (what a new session's
    first request could have found in the provider's cache), None when none. Read-only; never raises."""
    def read(conn: sqlite3.Connection) -> ApiUsage | None:
        first = conn.execute("SELECT MIN(usage_id) FROM api_usage WHERE session_id = ?", (session_id,)).fetchone()
        if not first or first[0] is None:
            return None
        r = conn.execute(f"SELECT {_COLS} FROM api_usage WHERE usage_id < ? AND session_id != ? "
                         "ORDER BY usage_id DESC LIMIT 1", (int(first[0]), session_id)).fetchone()
        return _row(r) if r else None

    return deckdb.read_quietly(home, read, None)


def home_totals(home: HermesHome | Path) -> dict[str, int] | None:
    """``{requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens}``
    over every recorded request of the home, None when nothing is recorded. Read-only; never raises."""
    r = deckdb.read_quietly(home, lambda conn: conn.execute(
        "SELECT COUNT(*), " + ", ".join(f"COALESCE(SUM({b}), 0)" for b in BUCKETS) + " FROM api_usage").fetchone(), None)
    if not r or not r[0]:
        return None
    return {"requests": int(r[0]), **{b: int(v) for b, v in zip(BUCKETS, r[1:])}}


__all__ = ["BUCKETS", "ApiUsage", "from_hook", "home_totals", "insert", "load_session", "previous_session_row",
           "record", "request_fingerprint"]
