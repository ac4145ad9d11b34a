"""Undo dispatch: the journal's most recent change, reverted by the store of its kind.

The journal (:mod:`memdeck.core.deck.journal`) is a ledger and knows no stores; this module
sits above them and names each kind's handler explicitly (no registration at import time).
A handler ``(home, config, rows, actor) -> result`` checks, under the lock of what it changes,
that the current state still equals the rows' ``after`` (``Refused(code="conflict")``
otherwise), writes ``before`` and journals an ``undo`` row that marks the rows undone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .anchors.store import AnchorStore
from .deck import journal
from .errors import Refused
from .home import HermesHome
from .memory.store import MemoryStore, recover_intents


def _undo_memory(home: HermesHome, config: Any, rows: Sequence[journal.JournalRow], actor: str) -> Any:
    return MemoryStore(home, config, actor=actor).undo_rows(rows)


def _undo_anchor(home: HermesHome, config: Any, rows: Sequence[journal.JournalRow], actor: str) -> Any:
    return AnchorStore(home, config, actor=actor).undo_rows(rows)


def _undo_request(home: HermesHome, config: Any, rows: Sequence[journal.JournalRow], actor: str) -> Any:
    from .requests.queue import cancel_rows  # a queued request to the agent: cancelled before delivery

    return cancel_rows(home, rows, actor)


#: journal ``kind`` -> the handler that reverts rows of that kind
UNDO_HANDLERS: dict[str, Callable[[HermesHome, Any, Sequence[journal.JournalRow], str], Any]] = {
    "memory": _undo_memory,
    "anchor": _undo_anchor,
    "request": _undo_request,
}


def recover_interrupted(home: HermesHome, config: Any) -> None:
    """Resolve every interrupted write of the home (memory and anchors), each under its file's
    lock, so the change an undo picks is one that happened (write-ahead journal, issue 13)."""
    recover_intents(home, config)
    AnchorStore(home, config).recover_intents()


def undo(home: HermesHome, config: Any, actor: str = "cli", kind: str | None = None) -> Any:
    """Undo the most recent change (of ``kind``, or of any kind) recorded in the journal.

    Returns whatever the kind's handler returns (memory: a ``WriteResult``; anchors: a dict; a
    reject: :func:`memdeck.core.memory.pending.unreject`'s dict).

    Raises:
        Refused: ``code="nothing"`` when there is nothing to undo; ``code="unsupported"`` for a
            kind without a handler; ``code="conflict"`` when the file no longer holds that
            change's result; any refusal of the handler's checks.
    """
    recover_interrupted(home, config)
    rows = journal.last_undoable(home, kind)
    if not rows:
        raise Refused("nothing to undo: the journal has no change that is not already undone", code="nothing")
    if rows[-1].op == "reject":  # a pending record removed: stage it again from the journal's copy
        from .memory.pending import unreject

        return unreject(home, rows[-1].journal_id, actor=actor)
    handler = UNDO_HANDLERS.get(rows[0].kind)
    if handler is None:
        raise Refused(f"cannot undo journal #{rows[-1].journal_id}: no undo handler for kind {rows[0].kind!r}",
                      code="unsupported")
    return handler(home, config, rows, actor)
