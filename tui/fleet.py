"""The fleet screen: every home at once, one row each, sorted by what needs attention (issue 27).

``memdeck fleet`` on a terminal. Data flows as on the dashboard: the watcher of each local home
(:func:`memdeck.core.watcher.watch_home`, inotify: nothing wakes while nothing changes) posts
:class:`~.messages.FleetHomeChanged`; a thread worker reads only the homes that changed
(:meth:`memdeck.core.fleet.rows.Fleet.read`: each home's incremental snapshot) and posts
:class:`~.messages.FleetRowsReady`; the table is updated in place (:class:`~.widgets.table.DeckTable`,
the cursor stays on its home). Remote homes are read by another thread every
``fleet.remote_interval`` seconds (:class:`~.messages.FleetRemoteRead`); a host that does not
answer keeps its last data, shown stale with the error. The next refresh starts only after the
last one finished (Dolphie's rule); ages on screen are redrawn once a minute without reading.

``enter`` opens the full dashboard of the selected home with the fleet app suspended
(``App.suspend()``): ``memdeck --home PATH`` for a local home, ``ssh -t host memdeck --home PATH``
(over the shared connection) for a remote one. Where the terminal cannot be handed over
(``SuspendNotSupported``), a toast gives the command to run.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SuspendNotSupported, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer

from memdeck.core.fleet.columns import COLUMNS
from memdeck.core.fleet.homes import FleetHome
from memdeck.core.fleet.rows import Fleet, FleetRow

from .messages import FleetHomeChanged, FleetRemoteRead, FleetRowsReady
from .safe_text import safe_plain
from .views.fleet import fleet_detail, fleet_summary, fleet_table_rows
from .widgets.readout import Readout
from .widgets.table import DeckTable

Clock = Callable[[], float]
Runner = Callable[[Sequence[str]], int]

#: How often the ages on screen ("12 min ago") are redrawn, in seconds (no file is read).
AGE_REDRAW_S = 60.0


def _run(argv: Sequence[str]) -> int:
    return subprocess.run(list(argv), check=False).returncode


class FleetApp(App[None]):
    """The fleet screen (module docstring).

    Args:
        fleet: the homes (:class:`memdeck.core.fleet.rows.Fleet`); the caller closes it.
        watch: run a watcher per local home and the remote reader (tests pass False and ask
            for refreshes themselves).
        clock: epoch seconds (snapshots fix it).
        runner: runs a dashboard command with the terminal handed over (default ``subprocess.run``).
        settings_file: the settings file ``--config`` named (absolute), given to each local home's
            dashboard; None: it finds its own (``MEMDECK_CONFIG`` is inherited).

    Attributes:
        rows: the rows shown, in order. refresh_count: fleet reads applied (tests wait on it).
    """

    TITLE = "memdeck fleet"
    DEFAULT_CSS = """
    #fleet-status { height: 1; background: $panel; }
    #fleet-table { height: 1fr; }
    #fleet-detail { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    """
    BINDINGS = [
        Binding("enter", "open_home", "Open", id="fleet.open"),
        Binding("r", "refresh_all", "Refresh", id="fleet.refresh"),
        Binding("q", "quit", "Quit", id="fleet.quit"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="fleet.quit_ctrl_q"),
    ]

    def __init__(self, fleet: Fleet, *, watch: bool = True, clock: Clock | None = None,
                 runner: Runner | None = None, settings_file: str | os.PathLike[str] | None = None) -> None:
        from .driver import driver_class

        super().__init__(driver_class=driver_class())
        self.fleet = fleet
        self.watch_enabled = watch
        self.clock: Clock = clock or time.time
        self.runner: Runner = runner or _run
        self.settings_file = None if settings_file is None else os.fspath(settings_file)
        self.rows: list[FleetRow] = []
        self.refresh_count = 0
        self._refreshing = False
        self._dirty: set[str] | None = set()  # None: every local home
        self._stop = threading.Event()
        self._updated_at: float | None = None
        #: the local homes whose watcher is armed (a change after it is seen)
        self.watching: set[str] = set()

    #: Textual's palette entries left out here: its Screenshot saves only into ~/Downloads (an
    #: error toast where that does not exist; the dashboard has its own, :class:`.app.MemdeckApp`).
    TEXTUAL_COMMANDS_LEFT_OUT = frozenset({"Screenshot"})

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's system commands (Quit, Theme, Keys, Maximize ...; the fleet screen has no
        other palette entries, so none is listed twice) but :data:`TEXTUAL_COMMANDS_LEFT_OUT`."""
        for command in super().get_system_commands(screen):
            if command.title not in self.TEXTUAL_COMMANDS_LEFT_OUT:
                yield command

    # ── layout ──────────────────────────────────────────────────────────

    def compose(self) -> ComposeResult:
        yield Readout(self._status_line(), id="fleet-status", fits_width=True)
        yield DeckTable(COLUMNS, id="fleet-table")
        yield Readout("", id="fleet-detail")
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        self.query_one(DeckTable).focus()
        self.request_refresh(None)
        if self.watch_enabled:
            for home in self.fleet.homes:
                if not home.remote:
                    self._watch_home(home)
            if any(h.remote for h in self.fleet.homes):
                self._remote_worker()
            self.set_interval(AGE_REDRAW_S, self._redraw)

    def _status_line(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" memdeck fleet ", "bold reverse")
        t.append(" ")
        t.append(fleet_summary(self.rows) if self.rows else f"reading {len(self.fleet.homes)} homes…")
        if self._updated_at is not None:
            t.append(" · updated ", "dim")
            t.append(time.strftime("%H:%M:%S", time.localtime(self._updated_at)), "dim")
        remote = sum(1 for h in self.fleet.homes if h.remote)
        if remote:
            t.append(f" · {remote} remote, read every {self.fleet.settings.remote_interval:g} s", "dim")
        t.append(" · enter opens a home", "dim")
        return t

    # ── refresh (one at a time; what changed meanwhile is read next) ───

    @property
    def idle(self) -> bool:
        """True when no fleet read runs or waits (tests settle on this)."""
        return not self._refreshing and self._dirty == set()

    def request_refresh(self, addresses: set[str] | None) -> None:
        """Read the local homes ``addresses`` again (None: all) off the UI thread; one read at a time."""
        if addresses is None or self._dirty is None:
            self._dirty = None
        else:
            self._dirty |= addresses
        if self._refreshing:
            return
        wanted, self._dirty = self._dirty, set()
        self._refreshing = True
        self._refresh_worker(wanted)

    @work(thread=True, exclusive=True, exit_on_error=False, group="fleet-refresh")
    def _refresh_worker(self, local: set[str] | None) -> None:
        try:
            rows: Any = self.fleet.read(local=local, remote=False)
        except BaseException as exc:  # noqa: BLE001 - Fleet.read never raises; belt and braces
            rows = exc
        self.post_message(FleetRowsReady(rows, local))

    def on_fleet_rows_ready(self, message: FleetRowsReady) -> None:
        self._refreshing = False
        if isinstance(message.rows, BaseException):
            self.notify(f"the fleet could not be read: {type(message.rows).__name__}: {message.rows}",
                        title="fleet", severity="error")
        else:
            self.rows = list(message.rows)
            self._updated_at = self.clock()
            self.refresh_count += 1
            self._redraw()
        if self._dirty is None or self._dirty:
            self.request_refresh(set() if self._dirty is not None else None)

    def _redraw(self) -> None:
        table = self.query_one(DeckTable)
        with self.batch_update():
            table.sync(fleet_table_rows(self.rows, self.clock()))
            self.query_one("#fleet-status", Readout).show(self._status_line())
            self._show_detail()

    def _show_detail(self) -> None:
        row = self.selected_row()
        self.query_one("#fleet-detail", Readout).show(
            fleet_detail(row, self.clock()) if row is not None else Text("no home", style="dim"))

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def action_refresh_all(self) -> None:
        """``r``: read every local home now, and every remote home in the background."""
        self.request_refresh(None)
        if any(h.remote for h in self.fleet.homes):
            self._remote_once()

    # ── watchers ────────────────────────────────────────────────────────

    @work(group="fleet-watch", exit_on_error=False)
    async def _watch_home(self, home: FleetHome) -> None:
        from memdeck.core.watcher import watch_home

        async for kinds in watch_home(home.local_home(), on_ready=lambda: self.watching.add(home.address)):
            self.post_message(FleetHomeChanged(home.address, kinds))

    def on_fleet_home_changed(self, message: FleetHomeChanged) -> None:
        self.request_refresh({message.address})

    # ── remote homes ────────────────────────────────────────────────────

    @work(thread=True, exclusive=True, exit_on_error=False, group="fleet-remote")
    def _remote_worker(self) -> None:
        interval = self.fleet.settings.remote_interval
        while not self._stop.is_set():
            n = self.fleet.refresh_remote(self.fleet.remote_due(self.clock()))
            if n and not self._stop.is_set():
                self.post_message(FleetRemoteRead(n))
            self._stop.wait(interval)

    @work(thread=True, exit_on_error=False, group="fleet-remote-once")
    def _remote_once(self) -> None:
        n = self.fleet.refresh_remote()
        if not self._stop.is_set():
            self.post_message(FleetRemoteRead(n))

    def on_fleet_remote_read(self, message: FleetRemoteRead) -> None:
        self.request_refresh(set())  # remote rows are rebuilt from their new data; no local home is read

    # ── enter: the full dashboard of one home ──────────────────────────

    def selected_row(self) -> FleetRow | None:
        key = self.query_one(DeckTable).selected_key
        return next((r for r in self.rows if r.home.address == key), None)

    def dashboard_argv(self, home: FleetHome) -> list[str]:
        """The command that opens ``home``'s dashboard: ``memdeck --home PATH`` (this Python,
        ``-m memdeck.tui``, with ``--config FILE`` when this screen was given one) or ``ssh -t host
        memdeck --home PATH`` (the remote host's own settings)."""
        if home.remote:
            return self.fleet.ssh.dashboard_argv(home)
        config = [f"--config={self.settings_file}"] if self.settings_file is not None else []
        return [sys.executable, "-m", "memdeck.tui", *config, "--home", home.path]

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_home()

    def action_open_home(self) -> None:
        """Open the selected home's dashboard, handing the terminal over (module docstring)."""
        row = self.selected_row()
        if row is None:
            return
        argv = self.dashboard_argv(row.home)
        try:
            with self.suspend():
                code = self.runner(argv)
        except SuspendNotSupported:
            self.notify(f"this terminal cannot be handed over; run: {safe_plain(shlex.join(argv))}",
                        title="open a home", severity="warning", timeout=15)
            return
        except OSError as exc:
            self.notify(f"could not run {safe_plain(argv[0])}: {exc.strerror or exc}", title="open a home",
                        severity="error")
            return
        if code not in (0, None):
            self.notify(f"{safe_plain(row.label)}: the dashboard exited with status {code}", title="open a home",
                        severity="warning")
        self.request_refresh(None if not row.home.remote else set())

    async def action_quit(self) -> None:
        self._stop.set()
        self.workers.cancel_group(self, "fleet-watch")
        self.exit()

    def on_unmount(self) -> None:
        self._stop.set()


def run_fleet(args: Any, ctx: Any) -> int:
    """``memdeck fleet`` on a terminal: the fleet screen on the fleet the arguments select
    (:func:`memdeck.core.cli.fleet_cmds.load_fleet`); returns the exit code (1 when the screen
    stopped on an error, with the reason on stderr)."""
    from memdeck.core.cli.fleet_cmds import load_fleet

    from .settings import config_path

    settings_file = config_path(getattr(args, "config", None))  # a missing file: UsageError, exit 2
    fleet = load_fleet(args, ctx)
    try:
        app = FleetApp(fleet, settings_file=settings_file)
        app.run()
        return int(getattr(app, "return_code", 0) or 0)
    except Exception as exc:  # noqa: BLE001 - never a traceback
        print(f"memdeck: error: the fleet screen stopped: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        fleet.close()
