"""Requests to the running agent (issue 33 #2, issue 34 #3): one queue in memdeck.db
(``agent_requests``), journaled and undoable until delivered, consumed by memdeck's plugin inside
the agent's process at that session's next turn.

``rebuild``: the plugin asks Hermes to rebuild that session's system prompt through Hermes' own
invalidation (``core/plugin/agent_requests.py``). ``correction``: a one-time line the plugin
appends to the session's next user turn through ``pre_llm_call`` (the channel live memory uses).

:mod:`.queue` holds the rows, the journal rows and the undo; it reads and writes memdeck.db only.
"""

from __future__ import annotations

from .queue import (
    KINDS,
    STATES,
    AgentRequest,
    cancel_rows,
    claim,
    correction_line,
    finish,
    list_requests,
    queue_correction,
    queue_rebuild,
    queued_for,
)

__all__ = ["KINDS", "STATES", "AgentRequest", "cancel_rows", "claim", "correction_line", "finish", "list_requests",
           "queue_correction", "queue_rebuild", "queued_for"]
