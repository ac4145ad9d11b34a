"""One reader of a Hermes home: the set-up around every snapshot, written once.

A :class:`HomeReader` owns what a refresh needs between two reads: the home's read-only
state.db connection (:func:`core.overview.snapshot.open_statedb`), memdeck.db's held connection
(:class:`core.deck.db.DeckDB`, bound around each read), the sources' stamps
(:func:`core.overview.snapshot.take_stamps`) and the last snapshot. The dashboard's refresh
(``tui/app.py``), the head start (``tui/head_start.py``) and the fleet's and metrics' local read
(``core/fleet/local.py``) all read through it, so each pays only for what changed since its own
last read. Which parts are read again is decided by the parts table (:mod:`core.overview.parts`).

Not thread-safe by itself: one thread reads at a time (the dashboard schedules the next refresh
after the last one ended; :class:`core.fleet.local.LocalReader` serialises its reads).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..home import HermesHome

if TYPE_CHECKING:
    from ..deck.db import DeckDB
    from ..sessions.statedb import StateDB
    from .snapshot import DeckSnapshot

#: ``progress(done_rows, total_rows)``: called by the state.db reader during a long read; it may
#: raise to stop the read (the read then shows a banner).
Progress = Callable[[int, int], None]


class HomeReader:
    """Read ``home`` (with ``config``) again and again, paying only for what changed.

    Attributes:
        home: the :class:`core.home.HermesHome`.
        config: the :class:`core.config.Config` the snapshots are read with; assign a new one
            (a reloaded config.yaml) and the next read reads every part that depends on it.
        snapshot: the last snapshot read (None before the first).
        db: the held :class:`core.sessions.statedb.StateDB` (None before the first full read,
            without a state.db, or after :meth:`close`).
        deck: the held :class:`core.deck.db.DeckDB` (None before the first full read).
        reads: how many full reads ran (including those that found every source unchanged).
        progress: the state.db reader's progress callback (set on the connection when opened).
    """

    def __init__(self, home: HermesHome, config: Config, *, clock: Callable[[], float] = time.time,
                 progress: Progress | None = None) -> None:
        self.home = home
        self.config = config
        self.clock = clock
        self.snapshot: DeckSnapshot | None = None
        self.db: StateDB | None = None
        self.deck: DeckDB | None = None
        self.reads = 0
        self._progress = progress
        self._engine: Any = None

    @property
    def progress(self) -> Progress | None:
        """The state.db progress callback (None: no reports)."""
        return self._progress

    @progress.setter
    def progress(self, fn: Progress | None) -> None:
        self._progress = fn
        if self.db is not None:
            self.db.progress = fn

    def first_paint(self, now: float | None = None) -> DeckSnapshot:
        """The memory-only first snapshot of a launch (``partial=True``): memory files, prompt
        blocks, pending writes, their findings, the provider and the review queue, read in
        milliseconds whatever the size of state.db. Opens no database. Never raises (a failed
        source is a banner). The next :meth:`read` reuses what it read."""
        snap = self._parts().first_paint(self.home, self.config, now=self.clock() if now is None else now)
        self.snapshot = snap
        return snap

    def open(self) -> None:
        """Open state.db (when the home has one) and memdeck.db's held connection, if not open.

        Raises whatever :class:`core.sessions.statedb.StateDB` raises for a database that exists
        but cannot be opened (:meth:`read` shows it as a banner instead).
        """
        from ..deck.db import DeckDB
        from .snapshot import open_statedb

        if self.db is None:
            self.db = open_statedb(self.home)
            if self.db is not None:
                self.db.progress = self._progress
        if self.deck is None:
            self.deck = DeckDB(self.home)

    def read(self, session_id: str | None = None, *, want: Collection[str] | None = None,
             context_report: bool = True, history_budget_s: float | None = None,
             ledger_budget_s: float | None = None, now: float | None = None) -> DeckSnapshot:
        """Read the home now and return the snapshot. Never raises: a source that fails is a
        banner (``DeckSnapshot.errors``) under the panels that show it.

        Args:
            session_id: the session to show (None: follow the live session).
            want: the :class:`core.overview.snapshot.DeckSnapshot` fields the caller shows (None:
                every field); the parts that fill them and their inputs are read, a field left out
                keeps what it held when last read.
            context_report: build the followed session's Context report
                (``agent_view.report``: the dashboard asks for it while the Context panel shows).
            history_budget_s: seconds this read may spend auditing compactions of a first
                semantic history (None: ``snapshot.SEMANTIC_BUDGET_S``; 0 audits none, while the
                dashboard's history worker fills it). An audit left ``pending`` is read again
                on the next read whatever the sources (the parts' ``unfinished`` input).
            ledger_budget_s: seconds this read may spend computing constraint ledgers not kept yet
                (None: ``snapshot.LEDGER_BUDGET_S``; 0 computes only the newest compaction's,
                while the dashboard's ledger worker fills the rest).
            now: epoch seconds stamped as ``taken_at`` (default: the reader's clock).

        Returns:
            the snapshot; the very last one (``is``) when no source changed since it was read.
        """
        if self.db is None or self.deck is None:
            try:
                self.open()
            except Exception:  # noqa: BLE001 - the parts show a database that cannot be opened
                self.db = None
        from ..deck.db import DeckDB

        if self.deck is None:
            self.deck = DeckDB(self.home)
        self.reads += 1
        with self.deck.bound():  # one memdeck.db connection for the reader's life, not one per read
            snap = self._parts().read(self.home, self.config, self.db, previous=self.snapshot,
                                      session_id=session_id, want=want, context_report=context_report,
                                      history_budget_s=history_budget_s, ledger_budget_s=ledger_budget_s,
                                      now=self.clock() if now is None else now)
        self.snapshot = snap
        return snap

    def failed(self, part: str) -> bool:
        """True when the part named ``part`` (:data:`core.overview.parts.PARTS`) gave a banner in
        the last read, or holds no value read (not asked for, or not read for want of state.db);
        :meth:`failure` words it."""
        return bool(self._parts().failed(part))

    def failure(self, part: str) -> str | None:
        """Why the part named ``part`` failed in the last read, as ``"Type: message"`` (the whole
        message; the banner keeps its first line), or None when it did not fail or was not read:
        what ``status --json`` words a section error with, without asking the source again."""
        failure: str | None = self._parts().failure(part)
        return failure

    def _parts(self) -> Any:
        if self._engine is None:
            from .parts import Evaluator

            self._engine = Evaluator()
        return self._engine

    def close(self) -> None:
        """Close the state.db and memdeck.db connections (a later :meth:`read` opens them again)."""
        for conn in (self.db, self.deck):
            if conn is not None:
                with contextlib.suppress(Exception):  # closing must not fail the caller
                    conn.close()
        self.db = self.deck = None

