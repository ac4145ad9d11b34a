"""A rebuild request's checks and cost, before it is queued (``memdeck sessions rebuild SID``, the
Context panel's ``b``): the session must be in state.db and open, and the cost stated first is the
stored prompt's size in tokens by the home's Hermes estimator (``core/context/tokens.py``
``hermes_estimate``, Hermes' ``estimate_tokens_rough``): what the provider writes to its prompt cache
again, once. Reads state.db read-only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..context.tokens import hermes_estimate
from ..errors import Refused
from ..home import HermesHome
from ..sessions.profile import home_version
from ..sessions.statedb import StateDB
from .queue import AgentRequest, queue_rebuild


@dataclass(frozen=True)
class RebuildCost:
    """``session_id``, ``source`` (Hermes' ``sessions.source``), ``prompt_chars`` (the stored
    prompt's length, 0 when none is stored), ``prompt_tokens`` (Hermes' estimate of it)."""

    session_id: str
    source: str
    prompt_chars: int
    prompt_tokens: int

    def sentence(self) -> str:
        """The cost in words, first thing a person reads before confirming."""
        return (f"Rebuilding the system prompt of session {self.session_id} makes the provider write about "
                f"{self.prompt_tokens:,} tokens ({self.prompt_chars:,} chars) to its prompt cache again, once; "
                "other sessions are untouched.")


def rebuild_cost(home: HermesHome, session_id: str) -> RebuildCost:
    """The checks and cost of rebuilding ``session_id``'s prompt.

    Raises:
        Refused: ``code="unavailable"`` when state.db cannot be read; ``code="not_found"`` for an
            unknown session; ``code="ended"`` for a session that has ended (nothing runs it).
    """
    with StateDB(home.state_db) as db:
        st = db.status()
        if not st.ok:
            raise Refused(f"cannot rebuild session {session_id}: state.db is {st.state}: {st.message}",
                          code="unavailable")
        info = db.session(session_id)
        if info is None:
            raise Refused(f"no session {session_id!r} in state.db", code="not_found")
        if info.ended_at is not None:
            raise Refused(f"session {session_id} has ended: no running agent to rebuild it (a new session "
                          "builds its prompt from the files anyway)", code="ended")
        prompt = db.system_prompt(session_id) or ""
    line = home_version(home).line
    return RebuildCost(session_id, info.source or "", len(prompt), hermes_estimate(prompt, line))


def request_rebuild(home: HermesHome, session_id: str, *, actor: str = "cli") -> tuple[AgentRequest, RebuildCost]:
    """:func:`rebuild_cost`'s checks, then :func:`.queue.queue_rebuild`. Raises their refusals."""
    cost = rebuild_cost(home, session_id)
    return queue_rebuild(home, session_id, actor=actor, prompt_tokens=cost.prompt_tokens), cost


__all__ = ["RebuildCost", "rebuild_cost", "request_rebuild"]
