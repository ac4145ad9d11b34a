"""Messages that carry results from worker threads back to the UI thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


class SnapshotReady(Message):
    """A new :class:`memdeck.core.overview.snapshot.DeckSnapshot` was built off the UI thread.

    ``final`` is False for the memory-only first paint of a launch: the build goes on.
    """

    def __init__(self, snapshot: Any, final: bool = True) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.final = final


class BuildProgress(Message):
    """The first full build is reading a session's history: ``done`` of ``total`` rows (ids)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done = done
        self.total = total


class SourcesChanged(Message):
    """The watcher saw changes to files the dashboard shows.

    ``kinds`` holds the sources touched (``memory``, ``config``, ``pending``, ``memlock``,
    ``statedb``; see :func:`tui.watcher.source_of`).
    """

    def __init__(self, kinds: frozenset[str]) -> None:
        super().__init__()
        self.kinds = kinds


@dataclass
class WriteOutcome:
    """The result of one write action, shown as a toast.

    Attributes:
        ok: True on success.
        message: one line for the toast (success text, or the refusal reason).
        code: ``Refused.code`` on refusal, ``"error"`` for other failures, ``""`` on success.
        detail: extra lines (e.g. the entries you could archive on overflow).
    """

    ok: bool
    message: str
    code: str = ""
    detail: list[str] = field(default_factory=list)


class WriteDone(Message):
    """A write worker finished (successfully or not)."""

    def __init__(self, action: str, outcome: WriteOutcome) -> None:
        super().__init__()
        self.action = action
        self.outcome = outcome


class RecallReady(Message):
    """Recall results for ``query`` were computed off the UI thread.

    ``final`` is False for a newest-first page shown while Hermes' ranking is computed, True
    for the last message of the query. A query superseded by a newer one posts none.
    """

    def __init__(self, query: str, result: Any, error: str | None = None, *, final: bool = True) -> None:
        super().__init__()
        self.query = query
        self.result = result
        self.error = error
        self.final = final


class RecallRequested(Message):
    """The Recall panel asks for ``query`` to be searched (the app runs the worker)."""

    def __init__(self, query: str) -> None:
        super().__init__()
        self.query = query


class RowActionsRequested(Message):
    """Enter on a table row: the app offers the actions for ``selection`` (a panel Selection)."""

    def __init__(self, selection: Any) -> None:
        super().__init__()
        self.selection = selection


class FleetRowsReady(Message):
    """The fleet screen's refresh worker read the fleet: ``rows`` (:class:`memdeck.core.fleet.rows.FleetRow`,
    sorted by what needs attention); ``local`` the addresses it read again (None: all)."""

    def __init__(self, rows: Any, local: Any = None) -> None:
        super().__init__()
        self.rows = rows
        self.local = local


class FleetHomeChanged(Message):
    """A watched source of the local fleet home at ``address`` changed (``kinds`` as :class:`SourcesChanged`)."""

    def __init__(self, address: str, kinds: frozenset[str]) -> None:
        super().__init__()
        self.address = address
        self.kinds = kinds


class FleetRemoteRead(Message):
    """The remote worker read ``count`` remote homes (their rows are rebuilt from the new data)."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count


class ExactCountsReady(Message):
    """Exact token counts of a session's prompt are ready (the Context panel's worker).

    Attributes:
        key: ``(prompt sha256, tokenizer)``; counts: ``{"sections": {name: n}, ...}`` or None;
        reason: why there are none (no offline tokenizer), else None.
    """

    def __init__(self, key: tuple[str, str], counts: Any, reason: str | None = None) -> None:
        super().__init__()
        self.key = key
        self.counts = counts
        self.reason = reason


class HistoryFillProgress(Message):
    """The history worker audited more compactions of ``session_id``'s first semantic history:
    ``remaining`` are not audited yet (0: the history is complete)."""

    def __init__(self, session_id: str, remaining: int) -> None:
        super().__init__()
        self.session_id = session_id
        self.remaining = remaining


class HistoryFilled(Message):
    """The history worker stopped for ``session_id``: ``remaining`` compactions are still not
    audited (0: complete; more: it made no progress, or ``error`` says why it stopped)."""

    def __init__(self, session_id: str, remaining: int, error: str | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.remaining = remaining
        self.error = error


class LedgerFillProgress(Message):
    """The ledger worker computed more constraint ledgers of ``session_id``: ``remaining`` are not
    computed yet (0: the session's ledger is complete)."""

    def __init__(self, session_id: str, remaining: int) -> None:
        super().__init__()
        self.session_id = session_id
        self.remaining = remaining


class LedgerFilled(Message):
    """The ledger worker stopped for ``session_id``: ``remaining`` compactions still have no ledger
    (0: complete; more: it made no progress, or ``error`` says why it stopped)."""

    def __init__(self, session_id: str, remaining: int, error: str | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.remaining = remaining
        self.error = error
