"""Reading one local home's figures again and again, paying only for what changed.

A :class:`LocalReader` keeps, between two reads, the home's last
:class:`~memdeck.core.overview.snapshot.DeckSnapshot`, its read-only state.db connection and its
memdeck.db connection. Each read takes the home's ``SourceStamps`` (a few ``stat`` calls, the
pending and MemLock listings, ``PRAGMA data_version``) and rebuilds the snapshot with
``build_snapshot(previous=...)``, which re-reads only the parts whose stamps changed and returns
the previous snapshot itself when none did; the change-history figures are counted again only
when the snapshot's history changed. This is the dashboard's own refresh path (``tui/app.py``),
so a scrape of ``memdeck metrics`` or a refresh of the fleet screen costs what a dashboard
refresh costs.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..config import Config, load_config
from ..home import HOME_MARKERS, HermesHome
from ..history.changes import HistorySummary, history_summary
from .figures import HomeFigures, figures_from_snapshot
from .stale_sessions import count_stale_sessions, stale_sessions_from_view


class NotAHome(Exception):
    """The path is not a Hermes home (missing, or none of config.yaml, memories/, state.db)."""


class LocalReader:
    """The figures of one local home, re-read incrementally (module docstring).

    Thread-safe: reads of one reader are serialised by a lock (two scrapes at once wait for
    each other). Call :meth:`close` when done (it closes both database connections).

    Attributes:
        home: the home. snapshot: the last snapshot (None before the first read).
        builds: how many reads found a changed source and rebuilt something (tests, benchmarks).
    """

    def __init__(self, home: HermesHome) -> None:
        self.home = home
        self.snapshot: Any = None
        self.builds = 0
        self._config: Config | None = None
        self._config_stamp: Any = object()
        self._db: Any = None
        self._deck: Any = None
        self._history: HistorySummary | None = None
        self._history_of: Any = None
        self._figures: HomeFigures | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise :class:`NotAHome` (with the reason) unless the path is a Hermes home; nothing is created."""
        path = self.home.path
        if not path.is_dir():
            raise NotAHome(f"no Hermes home at {path}" if not path.exists() else f"{path} is not a directory")
        if not any((path / m).exists() for m in HOME_MARKERS):
            raise NotAHome(f"{path} is not a Hermes home (no config.yaml, memories/ or state.db)")

    def read(self, now: float | None = None) -> HomeFigures:
        """The home's figures now. Never raises but :class:`NotAHome`: a source that fails is a
        line of :attr:`HomeFigures.problems`, as it is a banner on the dashboard."""
        from ..deck.db import DeckDB
        from ..overview.snapshot import build_snapshot, open_statedb, take_stamps

        with self._lock:
            self.check()
            if self._db is None:
                try:
                    self._db = open_statedb(self.home)
                except Exception:  # noqa: BLE001 - build_snapshot shows a database that cannot be opened
                    self._db = None
            stamps = take_stamps(self.home, self._db)
            if stamps.config != self._config_stamp or self._config is None:
                self._config, self._config_stamp = load_config(self.home), stamps.config
            if self._deck is None:
                self._deck = DeckDB(self.home)
            previous = self.snapshot
            with self._deck.bound():
                snap = build_snapshot(self.home, self._config, self._db, previous=previous,
                                      now=time.time() if now is None else now, stamps=stamps)
                if snap is previous and self._figures is not None:
                    return self._figures
                self.builds += 1
                if self._history is None or snap.history is not self._history_of:
                    try:
                        self._history = history_summary(self.home)
                    except Exception:  # noqa: BLE001 - the change figures are then unknown, said on the row
                        self._history = None
                    self._history_of = snap.history
            self.snapshot = snap
            ok = snap.db_status is not None and snap.db_status.ok  # else unknown, said by count_stale_sessions
            stale = stale_sessions_from_view(getattr(snap, "agent_view", None)) if ok else None
            if stale is None:
                stale = count_stale_sessions(self.home, self._config, self._db)
            self._figures = figures_from_snapshot(snap, self._history, stale_sessions=stale)
            return self._figures

    def close(self) -> None:
        """Close the state.db and memdeck.db connections (the next read opens them again)."""
        with self._lock:
            for conn in (self._db, self._deck):
                try:
                    if conn is not None:
                        conn.close()
                except Exception:  # noqa: BLE001
                    pass
            self._db = self._deck = None
