"""The fleet: one row per home, local or remote, sorted by what needs attention.

:class:`Fleet` reads every home of a list of :class:`~.homes.FleetHome`:

* a local home through its :class:`~.local.LocalReader` (the dashboard's incremental snapshot:
  the fleet screen and ``memdeck metrics``), or through ``status --json`` itself
  (:func:`memdeck.core.overview.status.build_status`, for ``memdeck fleet --json``);
* a remote home through :class:`~.remote.SshClient` (its host's ``memdeck status --json``), the
  homes of one host in turn over one shared connection, the hosts in parallel. A host that does
  not answer gives the row its last data (:mod:`.last_seen`) marked ``stale``, with the error.

A :class:`FleetRow` never holds an exception: a home that cannot be read is a row with
``error`` set (and its last data, if any), never a failed read of the fleet.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .attention import Attention, attention_of, sort_key
from .figures import HomeFigures, figures_from_status
from .homes import FleetHome, FleetSettings, home_labels
from .last_seen import LastSeen, LastSeenStore, status_view
from .local import LocalReader, NotAHome
from .remote import RemoteError, SshClient, group_by_connection

Clock = Callable[[], float]


@dataclass(frozen=True)
class FleetRow:
    """One home as the fleet shows it.

    Attributes:
        home: the :class:`~.homes.FleetHome`. label: its short name on screen.
        figures: its figures (None when memdeck has none: see ``error``).
        view: the part of its ``status --json`` that ``fleet --json`` repeats (None when the row
            was read from a snapshot, or never read).
        fetched_at: when the figures were read (epoch s; None without figures).
        stale: True when ``figures`` are the last data of a home that could not be read now.
        error: why the home could not be read now, or None.
        attention: what needs attention (:mod:`.attention`).
    """

    home: FleetHome
    label: str
    figures: HomeFigures | None
    fetched_at: float | None
    stale: bool = False
    error: str | None = None
    view: Mapping[str, Any] | None = None
    attention: Attention = field(default_factory=Attention)

    def to_json(self) -> dict[str, Any]:
        """One object of ``memdeck fleet --json`` (docs/FLEET.md): ``status --json``'s names for
        the same figures (``home``, ``profile``, ``memory.<target>.chars/.limit/.pct``,
        ``pending``, ``integrity``, ``memlock_location``, ``session_store``) from :attr:`view`,
        then ``address``, ``remote``, ``stale``, ``error``, ``fetched_at``, ``attention`` and
        ``figures`` (:meth:`HomeFigures.to_dict`)."""
        out: dict[str, Any] = {"home": self.home.path, "profile": self.home.profile}
        if self.view is not None:
            out.update({k: v for k, v in self.view.items() if k not in ("home", "profile")})
            out["home"], out["profile"] = self.view.get("home", self.home.path), self.view.get("profile", self.home.profile)
        out.update({
            "address": self.home.address, "remote": self.home.remote, "stale": self.stale, "error": self.error,
            "fetched_at": self.fetched_at, "attention": self.attention.to_dict(),
            "figures": self.figures.to_dict() if self.figures is not None else None,
        })
        return out


class Fleet:
    """The homes of a fleet and what it takes to read them again (readers, SSH, last data).

    Args:
        homes: the homes, in discovery order (:func:`.homes.fleet_homes`).
        settings: the ``fleet`` settings (ssh command, timeouts, remote interval).
        last_seen: where remote rows' last data is kept (None: in memory only).
        clock: epoch seconds (tests fix it).

    Thread-safe: :meth:`read` calls are serialised. Call :meth:`close` when done.
    """

    def __init__(self, homes: Sequence[FleetHome], settings: FleetSettings | None = None, *,
                 last_seen: LastSeenStore | None = None, clock: Clock = time.time) -> None:
        self.homes = list(homes)
        self.settings = settings or FleetSettings()
        self.labels = home_labels(self.homes)
        self.clock = clock
        self.ssh = SshClient(self.settings)
        self._last_seen_store = last_seen
        self._readers: dict[str, LocalReader] = {}
        self._remote: dict[str, tuple[LastSeen | None, str | None, float]] = {}  # address -> (last, error, tried_at)
        self._rows: dict[str, FleetRow] = {}
        self._lock = threading.Lock()
        self._remote_lock = threading.Lock()

    # ── local ───────────────────────────────────────────────────────────

    def reader(self, home: FleetHome) -> LocalReader:
        r = self._readers.get(home.address)
        if r is None:
            r = self._readers[home.address] = LocalReader(home.local_home())
        return r

    def _local_row(self, home: FleetHome, *, via_status: bool, now: float) -> FleetRow:
        label = self.labels.get(home.address, home.address)
        try:
            if via_status:
                from ..overview.status import build_status

                r = LocalReader(home.local_home())
                r.check()
                status = build_status(home.local_home())
                figures = figures_from_status(status)
                return self._row(home, label, figures, now, view=status_view(status))
            return self._row(home, label, self.reader(home).read(now), now)
        except NotAHome as exc:
            return self._row(home, label, None, None, error=str(exc))
        except Exception as exc:  # noqa: BLE001 - one home never breaks the fleet
            return self._row(home, label, None, None, error=f"{type(exc).__name__}: {exc}")

    # ── remote ──────────────────────────────────────────────────────────

    def _last(self, address: str) -> LastSeen | None:
        with self._remote_lock:
            got = self._remote.get(address)
        if got is not None and got[0] is not None:
            return got[0]
        if self._last_seen_store is not None:
            return self._last_seen_store.load(address)
        return None

    def _read_remote_group(self, group: list[FleetHome]) -> None:
        for home in group:
            last = self._last(home.address)
            tried = self.clock()
            try:
                got = self.ssh.read_status(home, now=tried)
            except RemoteError as exc:
                with self._remote_lock:
                    self._remote[home.address] = (last, str(exc), tried)
                continue
            figures = figures_from_status(got.status, home=home.path, profile=home.profile)
            seen = LastSeen(got.fetched_at, figures, status_view(got.status))
            with self._remote_lock:
                self._remote[home.address] = (seen, None, tried)
            if self._last_seen_store is not None:
                self._last_seen_store.save(home.address, seen)

    def refresh_remote(self, homes: Iterable[FleetHome] | None = None) -> int:
        """Read remote homes now (default: every one): the homes of one host in turn over its
        shared connection, the hosts in parallel (at most 8 at once). Blocks until each has
        answered or failed (bounded by ``fleet.timeout`` per home). Does not take the lock of
        :meth:`read`: local reads go on meanwhile. Returns how many homes were tried."""
        todo = [h for h in (self.homes if homes is None else homes) if h.remote]
        groups = group_by_connection(todo)
        if not groups:
            return 0
        with ThreadPoolExecutor(max_workers=min(8, len(groups)), thread_name_prefix="memdeck-ssh") as pool:
            for f in [pool.submit(self._read_remote_group, g) for g in groups]:
                f.result()
        return len(todo)

    def _remote_row(self, home: FleetHome) -> FleetRow:
        label = self.labels.get(home.address, home.address)
        with self._remote_lock:
            got = self._remote.get(home.address)
        last, error, _tried = got if got is not None else (self._last(home.address), "not read yet", 0.0)
        if last is None:
            return self._row(home, label, None, None, error=error)
        return self._row(home, label, last.figures, last.fetched_at, stale=error is not None, error=error,
                         view=last.view)

    def remote_due(self, now: float) -> list[FleetHome]:
        """The remote homes whose last read is older than ``remote_interval`` (or never read)."""
        with self._remote_lock:
            tried = {a: t for a, (_l, _e, t) in self._remote.items()}
        return [h for h in self.homes if h.remote and now - tried.get(h.address, float("-inf")) >= self.settings.remote_interval]

    # ── the fleet ───────────────────────────────────────────────────────

    def _row(self, home: FleetHome, label: str, figures: HomeFigures | None, fetched_at: float | None, *,
             stale: bool = False, error: str | None = None, view: Mapping[str, Any] | None = None) -> FleetRow:
        now = self.clock()
        return FleetRow(home, label, figures, fetched_at, stale, error, view,
                        attention_of(figures, now=now, stale=stale, error=error))

    def read(self, *, via_status: bool = False, local: Iterable[str] | None = None,
             remote: Iterable[str] | bool | None = True) -> list[FleetRow]:
        """Read the fleet and return its rows, sorted by what needs attention (:mod:`.attention`).

        Args:
            via_status: read local homes through ``status --json`` (``memdeck fleet --json``)
                instead of the incremental snapshot.
            local: the addresses of the local homes to read again (None: all); the others keep
                their last row (a snapshot reader returns at once when nothing changed anyway).
            remote: True: read every remote home now (:meth:`refresh_remote`); False: none
                (their last data is shown); None: those whose ``remote_interval`` has passed;
                an iterable: those addresses.
        """
        if remote is True:
            self.refresh_remote()
        elif remote is None:
            self.refresh_remote(self.remote_due(self.clock()))
        elif remote is not False:
            names = set(remote)
            self.refresh_remote([h for h in self.homes if h.address in names])
        with self._lock:
            now = self.clock()
            wanted_local = None if local is None else set(local)
            rows: list[FleetRow] = []
            for home in self.homes:
                if home.remote:
                    rows.append(self._remote_row(home))
                elif wanted_local is not None and home.address not in wanted_local and home.address in self._rows:
                    rows.append(self._rows[home.address])
                else:
                    rows.append(self._local_row(home, via_status=via_status, now=now))
            self._rows = {r.home.address: r for r in rows}
            return sort_rows(rows)

    def close(self) -> None:
        """Close every local reader's connections and every SSH master connection."""
        with self._lock:
            for r in self._readers.values():
                r.close()
            self._readers.clear()
        self.ssh.close()


def sort_rows(rows: Iterable[FleetRow]) -> list[FleetRow]:
    """``rows`` in attention order (:func:`.attention.sort_key`)."""
    return sorted(rows, key=lambda r: sort_key(r.attention, r.figures, r.label))
