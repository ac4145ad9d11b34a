"""The plugin's ``post_api_request`` hook (issue 37): each API request's token buckets into memdeck.db.

Hermes 0.17-0.22 call ``post_api_request`` after every API response with keyword arguments
(0.19 ``agent/conversation_loop.py`` :4479-4510; 0.22 ``agent/turn_response_intake.py``
``_fire_post_api_request_hook``): ``session_id``, ``turn_id``, ``api_request_id``, ``api_call_count``,
``model``, ``provider``, ``api_mode``, ``platform``, ``message_count``, ``started_at``, ``ended_at``
and ``usage`` (``agent._usage_summary_for_api_request_hook``: ``input_tokens``, ``output_tokens``,
``cache_read_tokens``, ``cache_write_tokens``, ``reasoning_tokens``, ``prompt_tokens``,
``total_tokens``), among others. The row is :func:`memdeck.core.deck.usage.from_hook`, inserted on one
memdeck.db connection the recorder keeps (SQLite's own: nothing else opens the file); the write waits
at most half a second for memdeck.db's lock and never raises into the turn.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from typing import Any

from ..deck import db as deckdb
from ..deck import usage
from ..home import HermesHome

logger = logging.getLogger("memdeck.plugin")


#: Requests whose ``pre_api_request`` was seen and ``post_api_request`` not yet (an error ends a request
#: without the latter): the oldest are dropped past this many.
PENDING_MAX = 64


def _key(kwargs: Any) -> tuple[str, str]:
    return (str(kwargs.get("session_id") or ""), str(kwargs.get("api_request_id") or kwargs.get("api_call_count") or ""))


class UsageRecorder:
    """``post_api_request``: records the request's usage for ``home``; returns None (a hook that
    observes). :meth:`pre` (``pre_api_request``) remembers the same request's system-message hash and
    tool count, so a cache break can be told from a rebuilt prompt or a changed tool list.
    ``written`` / ``skipped`` count what it did (tests and the bench read them)."""

    def __init__(self, home: HermesHome) -> None:
        self.home = home
        self.written = 0
        self.skipped = 0
        self._pending: dict[tuple[str, str], tuple[str | None, int | None]] = {}
        self._conn: sqlite3.Connection | None = None  # kept open: one connect per process, not per request
        self._lock = threading.Lock()

    def _record(self, row: usage.ApiUsage) -> bool:
        """Insert ``row`` on this process's memdeck.db connection (opened on first use, waiting at most
        half a second for another writer's lock); a failure closes it, the next request opens again."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = deckdb.connect(self.home, timeout=0.5)
                usage.insert(self._conn, row)
                return True
            except (deckdb.DeckDBError, sqlite3.Error, OSError):
                if self._conn is not None:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.close()
                self._conn = None
                return False

    def pre(self, **kwargs: Any) -> None:
        self._pending[_key(kwargs)] = usage.request_fingerprint(kwargs)
        while len(self._pending) > PENDING_MAX:
            self._pending.pop(next(iter(self._pending)))
        return None

    def __call__(self, **kwargs: Any) -> None:
        row = usage.from_hook(kwargs, fingerprint=self._pending.pop(_key(kwargs), (None, None)))
        if row is None:
            self.skipped += 1
            return None
        if self._record(row):
            self.written += 1
        else:
            self.skipped += 1
            logger.warning("memdeck: the API usage of session %s was not recorded (memdeck.db busy or unusable)",
                           row.session_id)
        return None


__all__ = ["PENDING_MAX", "UsageRecorder"]
