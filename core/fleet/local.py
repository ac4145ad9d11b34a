"""Reading one local home's figures again and again, paying only for what changed.

A :class:`LocalReader` reads the home through its own
:class:`~memdeck.core.overview.reader.HomeReader` (which holds the last snapshot, the read-only
state.db connection and the memdeck.db connection, and re-reads only the parts whose inputs
changed, returning the previous snapshot itself when none did, and then the figures are the
last ones). The figures are the ``status --json`` of that snapshot
(:func:`memdeck.core.overview.status.status_of`, without the sections no figure shows) mapped by
the one mapping :func:`~.figures.figures_from_status`, as a remote home's are. This is the
dashboard's own refresh path (``tui/app.py``), so a scrape of ``memdeck metrics`` or a refresh of
the fleet screen costs what a dashboard refresh costs, plus the change history's counts when a
source changed.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from ..config import load_config
from ..home import HOME_MARKERS, HermesHome
from ..overview.reader import HomeReader
from ..overview.status import status_of
from .figures import HomeFigures, figures_from_status


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
        self.builds = 0
        self._reader: HomeReader | None = None
        self._config_stamp: Any = object()
        self._figures: HomeFigures | None = None
        self._lock = threading.Lock()

    @property
    def snapshot(self) -> Any:
        """The last snapshot (None before the first read)."""
        return self._reader.snapshot if self._reader is not None else None

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
        from ..overview.snapshot import _stat

        with self._lock:
            self.check()
            config_stamp = _stat(self.home.config_path)
            if self._reader is None:
                self._reader = HomeReader(self.home, load_config(self.home))
                self._config_stamp = config_stamp
            elif config_stamp != self._config_stamp:
                self._reader.config, self._config_stamp = load_config(self.home), config_stamp
            reader = self._reader
            previous = reader.snapshot
            snap = reader.read(now=time.time() if now is None else now)
            if snap is previous and self._figures is not None:
                return self._figures
            self.builds += 1
            with reader.deck.bound() if reader.deck is not None else contextlib.nullcontext():
                status = status_of(reader, extras=False)
            self._figures = figures_from_status(status)
            return self._figures

    def close(self) -> None:
        """Close the state.db and memdeck.db connections (the next read opens them again)."""
        with self._lock:
            if self._reader is not None:
                self._reader.close()
