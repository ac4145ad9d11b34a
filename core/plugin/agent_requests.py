"""The plugin's part of the request queue (issue 33 #2, issue 34 #3): at a session's turn, the
requests memdeck queued for it in memdeck.db (:mod:`memdeck.core.requests.queue`), each claimed
once before it is acted on.

``correction``: its line is returned as ``pre_llm_call`` context, appended to this user turn by
Hermes (0.19 ``agent/turn_context.py``; 0.22 ``_collect_pre_llm_call_context``), stored in the
turn's ``api_content``; the system prompt is untouched.

``rebuild``: Hermes' own rebuild of the session's system prompt, in the agent's process, on the
``AIAgent`` running this turn (the hook's kwargs carry no agent: it is found on the stack of the
turn's thread, which holds it as ``agent`` in ``build_turn_context(agent, ...)`` in 0.19 as in
0.21.5 and 0.22.2, :func:`find_agent`).
The steps are the ones Hermes' compressor runs after a compaction (0.19
``agent/conversation_compression.py`` ``compress_context``; 0.21.5 / 0.22.2 the same file):
``agent._invalidate_system_prompt()`` (``agent/system_prompt.py`` ``invalidate_system_prompt``:
drops ``_cached_system_prompt``, reloads MEMORY.md / USER.md from disk; 0.21+ also the static
tier and the plugin sections' snapshot), ``agent._build_system_prompt(system_message)``, the new
prompt set as ``_cached_system_prompt`` and persisted by Hermes' own
``SessionDB.update_system_prompt`` (so a gateway's fresh agent per turn restores it, as it
restores any prompt). memdeck itself never writes state.db.

Hermes picks a turn's system prompt before any ``pre_llm_call`` hook runs (0.19
``build_turn_context``: ``active_system_prompt = agent._cached_system_prompt`` precedes the
hook), so the turn that consumes the request still sends the prompt it had; every later request
sends the rebuilt one, byte for byte the same from then on (the cache holds again).

Cost when nothing is queued: one indexed ``SELECT`` on a kept read-only connection, skipped
entirely while memdeck.db's ``PRAGMA data_version`` and file size say no other process committed.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..deck import db as deckdb
from ..home import HermesHome
from ..requests.queue import AgentRequest, claim, finish, queued_for
from .live import is_slash_command, user_turns

logger = logging.getLogger("memdeck.requests")

#: How many frames above the hook are searched for the running ``AIAgent``.
_MAX_FRAMES = 40


@dataclass(frozen=True)
class RequestOutcome:
    """What one turn did: ``text`` (the corrections' lines, ``""`` for none), ``delivered`` and
    ``failed`` request ids, ``rebuilt_chars`` (the rebuilt prompt's length, None when no rebuild)."""

    text: str = ""
    delivered: tuple[int, ...] = ()
    failed: tuple[int, ...] = ()
    rebuilt_chars: int | None = None


def _agent_in(f: Any, session_id: str) -> tuple[Any, Any]:
    for _ in range(_MAX_FRAMES):
        if f is None:
            break
        loc = f.f_locals
        for name in ("agent", "self"):
            a = loc.get(name)
            if (a is not None and getattr(a, "session_id", None) == session_id
                    and not getattr(a, "_persist_disabled", False)
                    and callable(getattr(a, "_invalidate_system_prompt", None))
                    and callable(getattr(a, "_build_system_prompt", None))):
                sm = loc.get("system_message")
                return a, sm if isinstance(sm, str) else None
        f = f.f_back
    return None, None


def find_agent(session_id: str, start: Any = None) -> tuple[Any, Any]:
    """The ``AIAgent`` running ``session_id``'s turn and that frame's ``system_message`` local
    (None when absent), or ``(None, None)``.

    Searched on the call stack above ``start`` (default: the caller), where 0.19 runs hooks
    (``hermes_cli/plugins.py`` ``invoke_hook`` calls each callback in the turn's thread); then on
    the other threads' stacks (``sys._current_frames``), where 0.21+ run them (the hot-path hooks
    are bounded by ``plugins.hook_callback_timeout`` in a worker thread while the turn's thread
    waits in ``build_turn_context``). A frame qualifies by its local ``agent`` (or ``self``) whose
    ``session_id`` is ``session_id``, that has Hermes' ``_invalidate_system_prompt`` and
    ``_build_system_prompt``, and is not a persistence-disabled fork (0.22's background review).
    """
    a, sm = _agent_in(start if start is not None else sys._getframe(1), session_id)
    if a is not None:
        return a, sm
    me = threading.get_ident()
    for tid, frame in sys._current_frames().items():
        if tid != me:
            a, sm = _agent_in(frame, session_id)
            if a is not None:
                return a, sm
    return None, None


def rebuild_prompt(agent: Any, system_message: str | None) -> str:
    """Hermes' own rebuild of ``agent``'s system prompt, as its compressor does after a compaction
    (see the module docstring); returns the new prompt. Raises whatever Hermes raises."""
    agent._invalidate_system_prompt()
    new = agent._build_system_prompt(system_message)
    agent._cached_system_prompt = new
    db = getattr(agent, "_session_db", None)
    if db is not None and not getattr(agent, "_persist_disabled", False):
        db.update_system_prompt(agent.session_id, new)
    return str(new)


class AgentRequests:
    """The queue's consumer for one home (one per plugin process).

    Args:
        home: the home.
        finder: ``session_id -> (agent, system_message)`` (default: :func:`find_agent` from the hook's stack).
        clock: epoch seconds.
    """

    def __init__(self, home: HermesHome, *, finder: Callable[[str], tuple[Any, Any]] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.home = home
        self._finder = finder
        self.clock = clock
        self._conn: sqlite3.Connection | None = None
        self._stamp: tuple[Any, ...] | None = None
        self._empty: set[str] = set()
        self._lock = threading.RLock()
        self.last: RequestOutcome | None = None

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is not None:
            return self._conn
        path = deckdb.db_path(self.home)
        if not path.exists():
            return None
        try:
            self._conn = sqlite3.connect("file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro", uri=True,
                                         timeout=0.5, check_same_thread=False)
        except sqlite3.Error:
            return None
        return self._conn

    def _pending(self, session_id: str) -> list[AgentRequest]:
        conn = self._connection()
        if conn is None:
            return []
        try:
            stamp = (conn.execute("PRAGMA data_version").fetchone()[0], deckdb.db_path(self.home).stat().st_size)
        except (sqlite3.Error, OSError):
            self._close()
            return []
        if stamp != self._stamp:
            self._stamp = stamp
            self._empty.clear()
        elif session_id in self._empty:
            return []
        try:
            rows = queued_for(conn, session_id)
        except sqlite3.Error:  # memdeck.db before the queue's migration, or busy: nothing this turn
            return []
        if not rows:
            self._empty.add(session_id)
        return rows

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None
                self._stamp = None

    def run_turn(self, session_id: str, history: Sequence[Any] | None = None, turn_id: Any = None,
                 frame: Any = None) -> RequestOutcome:
        """Claim and act on ``session_id``'s queued requests (oldest first). ``frame``: where
        :func:`find_agent` starts (the hook's caller). Never raises."""
        if not session_id:
            return RequestOutcome()
        with self._lock:
            rows = self._pending(session_id)
            if not rows:
                return RequestOutcome()
            self._empty.discard(session_id)
            turn, tid = user_turns(history), None if turn_id is None else str(turn_id)
            lines: list[str] = []
            delivered: list[int] = []
            failed: list[int] = []
            rebuilt: int | None = None
            for r in rows:
                if r.kind == "rebuild":
                    agent, sm = (self._finder(session_id) if self._finder is not None
                                 else find_agent(session_id, frame))
                    if agent is None:
                        continue  # not this process's session (another gateway): it stays queued
                    if not claim(self.home, r.request_id, turn=turn, turn_id=tid, at=self.clock()):
                        continue
                    try:
                        new = rebuild_prompt(agent, sm)
                    except Exception as exc:  # noqa: BLE001 - Hermes' failure is recorded, never raised into the turn
                        finish(self.home, r.request_id, failed=f"Hermes' rebuild failed: {type(exc).__name__}: {exc}")
                        failed.append(r.request_id)
                        continue
                    rebuilt = len(new)
                    finish(self.home, r.request_id, detail={"rebuilt_chars": rebuilt})
                    delivered.append(r.request_id)
                elif r.kind == "correction" and r.text:
                    if claim(self.home, r.request_id, turn=turn, turn_id=tid, at=self.clock()):
                        lines.append(r.text)
                        delivered.append(r.request_id)
            self.last = RequestOutcome("\n".join(lines), tuple(delivered), tuple(failed), rebuilt)
            return self.last

    def pre_llm_call(self, session_id: str = "", user_message: str = "", conversation_history: list[Any] | None = None,
                     turn_id: Any = None, **_: Any) -> dict[str, str] | None:
        """The ``pre_llm_call`` part: ``{"context": corrections}`` or None. Nothing on a slash-command turn."""
        if is_slash_command(user_message):
            return None
        out = self.run_turn(session_id, conversation_history, turn_id, frame=sys._getframe(1))
        return {"context": out.text} if out.text else None


__all__ = ["AgentRequests", "RequestOutcome", "find_agent", "rebuild_prompt"]
