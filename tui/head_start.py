"""The dashboard's first refresh, started before Textual is imported.

Python and Textual take ~0.6 s of CPU to start (imports, styles, the first layouts); the first
snapshot of a home memdeck has seen before takes 0.1-0.2 s (compaction tracks and verdicts are
kept in memdeck.db). ``memdeck`` starts this thread first, and the app's refresh worker adopts
what it built: the full snapshot and the open state.db and memdeck.db connections.

A long first read (a history of at least ``read_ahead.MIN_ROWS`` row ids that memdeck has never
read) is not done here: holding the GIL for seconds it would delay the memory-only first paint,
so the head start stops at its first progress report and the app's worker reads it as before,
after that paint. No Textual import here (the module runs before Textual is loaded).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memdeck.core.config import Config
from memdeck.core.home import HermesHome
from memdeck.core.sessions.read_ahead import MIN_ROWS as LONG_READ_ROWS

#: The GIL switch interval while the head start runs beside Python and Textual starting up
#: (seconds; CPython's default is 0.005). Every SQLite step releases the GIL, and taking it back
#: from a busy thread waits up to one interval: at 1M rows the head start finished at 1.2 s with
#: the default, 0.6-0.8 s with 1 ms. The previous interval is put back when the last head start
#: running in the process ends (:data:`SWITCH_INTERVAL`).
LAUNCH_SWITCH_INTERVAL_S = 0.001


class _ShortSwitchInterval:
    """The process's GIL switch interval, shortened while any head start runs and put back by
    the last one to end (a second head start while one runs, as when an app quits before its
    thread ends and another starts, must not take the shortened value for the one to restore)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._saved = sys.getswitchinterval()

    def enter(self) -> None:
        with self._cond:
            if self._active == 0:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved, LAUNCH_SWITCH_INTERVAL_S))
            self._active += 1

    def leave(self) -> None:
        with self._cond:
            self._active -= 1
            if self._active == 0:
                sys.setswitchinterval(self._saved)
                self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no head start runs (True), at most ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: self._active == 0, timeout)


#: the one per process (:class:`_ShortSwitchInterval`)
SWITCH_INTERVAL = _ShortSwitchInterval()


class _LongRead(Exception):
    """Raised from the progress callback to leave a long first read to the app."""


@dataclass(frozen=True)
class HeadStartResult:
    """What the head start built: ``reader`` (the :class:`core.overview.reader.HomeReader` holding
    the open state.db and memdeck.db connections), ``snapshot`` (the full one, or None when the
    read was long; the memory-only one is :attr:`HeadStart.first`) and ``new_changes`` (the
    change-history rows its read recorded: a read that does not adopt ``snapshot`` must still
    show them, for the next observation will not find them again)."""

    reader: Any
    snapshot: Any
    new_changes: tuple[Any, ...] = ()

    @property
    def db(self) -> Any:
        """The reader's state.db connection (None without one, or after a long read)."""
        return self.reader.db

    @property
    def deck(self) -> Any:
        """The reader's memdeck.db connection."""
        return self.reader.deck


class HeadStart:
    """Build the first snapshot of ``home`` in a daemon thread, at once.

    ``take()`` waits for it and hands the result over once (None when the build failed: the
    app then builds as if there had been no head start). Never raises.
    """

    def __init__(self, home: HermesHome, config: Config, *, clock: Callable[[], float] = time.time) -> None:
        self.home = home
        self.config = config
        self.clock = clock
        self._result: HeadStartResult | None = None
        #: the memory-only snapshot, once built (the first thing the thread does)
        self.first: Any = None
        self._done = threading.Event()
        try:
            # Imported here, not in the thread: a module being imported by two threads at once
            # makes one wait for the other, and the main thread goes on to import Textual.
            import memdeck.core.deck.db
            import memdeck.core.overview.reader
            import memdeck.core.overview.snapshot
            import memdeck.core.sessions.statedb  # noqa: F401

            SWITCH_INTERVAL.enter()
            try:
                self._thread = threading.Thread(target=self._run, name="memdeck-head-start", daemon=True)
                self._thread.start()
            except BaseException:
                SWITCH_INTERVAL.leave()
                raise
        except BaseException:  # noqa: BLE001 - no head start: the app builds on its own
            self._done.set()

    def _run(self) -> None:
        from memdeck.core.overview.reader import HomeReader

        reader = HomeReader(self.home, self.config, clock=self.clock)
        try:
            self.first = reader.first_paint()
            long_read = False

            def progress(done: int, total: int) -> None:
                nonlocal long_read
                if total >= LONG_READ_ROWS:
                    long_read = True
                    raise _LongRead

            reader.progress = progress
            snap = reader.read(context_report=False)  # the app reads it when Context shows
            changes = snap.new_changes
            if long_read:  # stopped midway: this connection's readers are left to the app's worker
                if reader.db is not None:
                    reader.db.close()
                reader.db, snap = None, None
            reader.progress = None
            self._result = HeadStartResult(reader, snap, changes)
        except BaseException:  # noqa: BLE001 - the app builds on its own; it shows any error
            reader.close()
            self._result = None
        finally:
            SWITCH_INTERVAL.leave()
            self._done.set()

    @property
    def finished(self) -> bool:
        """True once the head start has ended (with a result, or none to give)."""
        return self._done.is_set()

    def take(self) -> HeadStartResult | None:
        """The result once (later calls return None), waiting for the head start to end.

        Whoever takes a result owns its reader (and its connections): adopt it or close it.
        """
        self._done.wait()
        result, self._result = self._result, None
        return result
