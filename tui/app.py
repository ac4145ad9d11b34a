"""The memdeck dashboard: a Textual app over one immutable :class:`core.snapshot.DeckSnapshot`.

Data flows one way (DESIGN.md): watchfiles wakes the app -> a thread worker builds a new
snapshot from the core readers -> the UI thread applies it inside ``batch_update()``. Writes
flow the other way only through the core: key -> action -> thread worker (group ``write``) ->
core operation -> :class:`~tui.messages.WriteDone` -> toast; the watcher then sees the file
change and the next snapshot shows it. Widgets never touch files.

Use :func:`make_app` (the CLI and the tests do).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Static, TabbedContent, TabPane

from memdeck.core.config import Config, load_config
from memdeck.core.deck.db import DeckDB
from memdeck.core.errors import MemdeckError, Refused
from memdeck.core.home import HermesHome
from memdeck.core.overview.reader import HomeReader
from memdeck.core.sessions.read_ahead import MIN_ROWS as READ_AHEAD_MIN_ROWS

from .actions import DeckActions
from .commands import DeckCommands
from .head_start import HeadStart
from .keymap import PANEL_IDS, PANELS, WRITE_ACTIONS, app_bindings, quit_anywhere_binding, screen_bindings
from .messages import (
    BuildProgress,
    ExactCountsReady,
    HistoryFilled,
    HistoryFillProgress,
    LedgerFilled,
    LedgerFillProgress,
    RecallReady,
    RecallRequested,
    RowActionsRequested,
    SnapshotReady,
    SourcesChanged,
    WriteDone,
    WriteOutcome,
)
from .safe_text import safe_plain, safe_text
from .textual_mends import drop_empty_toast_holders, release_removed_widget_styles
from .widgets.footer import DeckFooter
from .widgets.overview import OverviewPane
from .widgets.readout import Readout
from .widgets.toasts import ToastRack, ToastStack

#: Longest a long first history read waits for the memory-only first paint to reach the screen
#: (seconds); normally it waits a few milliseconds, this bounds a screen that never refreshes.
FIRST_PAINT_WAIT_S = 2.0

#: A history read spanning at least this many row ids is a long one (the size at which
#: core.sessions.read_ahead starts reading the file ahead): it waits for the first paint.
LONG_READ_ROWS = READ_AHEAD_MIN_ROWS

Clock = Callable[[], float]


class Notice(NamedTuple):
    """One toast as it was shown (escaped): epoch seconds, severity, title, message."""

    when: float
    severity: str
    title: str
    message: str


class DeckScreen(Screen):
    """The main screen. When it becomes current again (a modal closed), refresh if needed."""

    BINDINGS = screen_bindings()

    def on_screen_resume(self) -> None:
        app = self.app
        if isinstance(app, MemdeckApp):
            app.resume_after_modal()


def screenshot_dir() -> Path:
    """Where the palette's Screenshot saves: ``screenshots/`` in memdeck's user data directory,
    ``platformdirs.user_data_path("memdeck")`` (``$XDG_DATA_HOME/memdeck/screenshots``, by default
    ``~/.local/share/memdeck/screenshots`` on Linux; ``~/Library/Application Support/memdeck/...``
    on macOS; ``%LOCALAPPDATA%\\memdeck\\...`` on Windows)."""
    import platformdirs

    return platformdirs.user_data_path("memdeck", appauthor=False) / "screenshots"


def set_tab_label(tab: Any, label: Text) -> bool:
    """Set a tab's label; True when it took a layout pass. A label as wide as the shown one (a
    badge ``3`` becoming ``4``) is drawn in place: ``Tab.label`` lays out the whole screen and
    moves the underline (``Tabs`` hears ``Tab.Relabelled``), for a tab whose size and place are
    unchanged (issue 38 #2). ``Tab._label`` is Textual 8's (pinned <9; tests/tui/test_repaint.py)."""
    from textual.content import Content

    new = Content.from_text(label)
    if new.cell_length == tab.label.cell_length and tab.size.width:
        tab._label = new
        Static.update(tab, new, layout=False)
        return False
    tab.label = label
    return True


class DeckTabs(TabbedContent):
    """The panels' TabbedContent, switched only by memdeck's actions and by clicking a tab.

    Textual's TabbedContent also switches to a pane when a widget inside it gets focus
    (``TabPane.Focused``). memdeck focuses a panel just after switching to it, so when keys
    come faster than that (``tab`` then ``shift+tab``), the late focus of the old panel would
    switch back to it. Hidden panes are not in the focus chain, so nothing else relies on it.
    """

    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        # Textual calls the handler of every class in the MRO: prevent_default() is what keeps
        # TabbedContent's own handler (which switches the tab) from running after this one.
        event.prevent_default()
        event.stop()


def _quiet_driver_class() -> Any:
    """memdeck's terminal driver (:mod:`.driver`: no wake-ups while idle), or ``None`` (Textual's)."""
    if os.name == "nt":  # pragma: no cover - Textual's WindowsDriver reads the console its own way
        return None
    from .driver import driver_class

    return driver_class()


def panel_class(pid: str) -> type[Any]:
    """The panel widget class of ``pid`` (``keymap.PANEL_IDS``), its module imported now: a
    launch imports only the panel it shows first (each panel's module and views cost the first
    paint import time before)."""
    if pid == "integrity":
        from .widgets.panels.integrity import IntegrityPanel as cls
    elif pid == "anchors":
        from .widgets.panels.anchors import AnchorsPanel as cls
    elif pid == "drift":
        from .widgets.panels.drift import DriftPanel as cls
    elif pid == "capacity":
        from .widgets.panels.capacity import CapacityPanel as cls
    elif pid == "recall":
        from .widgets.panels.recall import RecallPanel as cls
    elif pid == "review":
        from .widgets.panels.review import ReviewPanel as cls
    elif pid == "history":
        from .widgets.panels.history import HistoryPanel as cls
    elif pid == "context":
        from .widgets.panels.context import ContextPanel as cls
    else:
        raise KeyError(pid)
    return cls


class MemdeckApp(DeckActions, App[None]):
    """The dashboard. Build it with :func:`make_app`.

    Attributes:
        home: the Hermes home shown (changes with the profile picker).
        config: its config (re-read when ``config.yaml`` changes).
        snapshot: the last applied :class:`core.snapshot.DeckSnapshot` (``None`` before the first).
        refresh_count: full snapshots applied so far (tests wait on it; the memory-only first
            paint of a launch does not count).
    """

    CSS_PATH = "app.tcss"
    TITLE = "memdeck"
    BINDINGS = [quit_anywhere_binding()] + app_bindings()
    COMMANDS = App.COMMANDS | {DeckCommands}
    ENABLE_COMMAND_PALETTE = True

    #: ``Screen.-narrow`` below 100 columns (app.tcss trims padding and detail panes there)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    paused: reactive[bool] = reactive(False)

    def __init__(
        self,
        home: HermesHome,
        *,
        config: Config | None = None,
        watch: bool = True,
        demo: bool = False,
        clock: Clock | None = None,
        session_id: str | None = None,
        home_label: str | None = None,
        user_settings: bool = False,
        head_start: HeadStart | None = None,
        read_only: bool = False,
        settings_file: Path | None = None,
        layout: str | None = None,
    ) -> None:
        super().__init__(driver_class=_quiet_driver_class())
        #: the layout asked for at launch (``--layout``; None: the settings file's, else panels)
        self.launch_layout = layout
        #: the overview layout is shown (``o``) instead of the panels' tabs
        self.overview_shown = False
        #: the settings file ``--config`` named (None: ``MEMDECK_CONFIG`` or the default places)
        self.settings_file = settings_file
        #: every write action is refused with a toast (``memdeck --read-only``, ``serve --read-only``)
        self.read_only = read_only
        if read_only:
            self._hide_write_keys()
        self._head_start = head_start
        self.use_settings = user_settings
        self.home_label = home_label
        self.home = home
        self.config = config if config is not None else load_config(home)
        self.watch_enabled = watch
        self.demo = demo
        self.clock: Clock = clock or time.time
        self.session_id = session_id
        self.snapshot: Any = None
        self.refresh_count = 0
        #: panels not drawn since the last snapshot (drawn when shown)
        self._stale_panels: set[str] = set()
        #: panels mounted (composed) and being mounted; the others are mounted after the first paint
        self._panels_ready: set[str] = set(self.EAGER_PANELS)
        self._panels_mounting: set[str] = set()
        self._mounting_rest = False  # the panels not shown are being mounted, one after the other
        self._mount_waits: dict[str, Any] = {}  # pid -> its AwaitMount while it is being mounted
        #: the last recall query and its last RecallReady (None before the first): a Recall panel
        #: mounted after them shows them
        self._recall_shown: tuple[str, Any] | None = None
        #: ``(done, total)`` while the first full build reads a long history, else None
        self.build_progress: tuple[int, int] | None = None
        #: the last 100 toasts as ``(epoch s, severity, title, message)``, oldest first (``N`` shows them)
        self.notification_log: deque[Notice] = deque(maxlen=100)
        #: snapshot builds run so far, including those that found every source unchanged
        self.refresh_runs = 0
        #: the refresh's reader of the home (core/overview/reader.py), owning its connections
        self._reader: HomeReader | None = None
        self._recall_lock = threading.Lock()  # a recall worker posts under it; a newer query bumps the generation under it
        self._recall_generation = 0
        self._refreshing = False
        self._dirty = False
        #: the session whose first semantic history the history worker is filling (None: none),
        #: and ``(session, compactions left)`` where the last fill stopped without finishing (a
        #: snapshot with the same count left does not start it again)
        self.history_filling: str | None = None
        self.history_remaining: int | None = None
        self._history_stalled: tuple[str, int] | None = None
        #: the same for the constraint ledger's worker (a session's first full ledger, issue 34)
        self.ledger_filling: str | None = None
        self.ledger_remaining: int | None = None
        self._ledger_stalled: tuple[str, int] | None = None
        #: Set once the memory-only first paint is on screen. A long history read (one that reports
        #: progress) waits for it at its first report, so holding the GIL it does not delay that
        #: paint (1M rows: 0.74 s); a short one (later launches) runs beside the paint.
        self._first_paint_shown = threading.Event()
        #: Set by the refresh worker just before it posts a full snapshot: a memory-only first
        #: snapshot still queued in front of it is not painted.
        self._final_posted = threading.Event()
        self._badges_shown: dict[str, int] | None = None  # the counts on the tabs now
        self._hygiene_shown: dict[str, int] = {}  # the hygiene counts the Capacity tab's tooltip says
        self._last_error_toast: dict[str, str] = {}
        #: the person's settings file as read at start (None: not read, ``user_settings=False``);
        #: the help screen shows its path, its problems and the binding ids a keymap takes
        self.settings: Any = None
        #: the once-a-minute timer of the shown panel's relative times (None while the panel has none)
        self.retime_timer: Any = None
        #: exact token counts of prompts by ``(sha256, tokenizer)`` (the Context panel asks for them)
        self.exact_counts: dict[tuple[str, str], Any] = {}
        self._exact_pending: set[tuple[str, str]] = set()
        #: the tokenizer of the Context panel's exact counts (None: estimates only)
        self.exact_tokenizer: str | None = "o200k_base"
        #: the Context panel is on screen: refreshes build the followed session's report (its rows,
        #: sections and budget); while it is not, they build only the frozen-memory comparisons
        self.context_shown = False
        #: pending ids whose age alert was toasted (a record is told about once)
        self._aged_toasted: set[str] = set()
        #: the one-shot timer of the moment the oldest unreviewed pending write passes its age
        self._age_timer: Any = None
        #: the tabs carry short titles (a narrow terminal); None before the first labels
        self._tabs_narrow: bool | None = None
        #: the theme the settings file holds (None until it was read: nothing is saved before)
        self._theme_saved: str | None = None

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Show a toast, with ``message`` and ``title`` always through :func:`safe_plain`.

        Every toast and notification (``Widget.notify`` and ``Screen.notify`` call this) is
        escaped here, whoever built the string: an anchor id holding OSC 52/OSC 0/CSI, a C1
        control or a bidi override is shown as markers (issue 13 #1). Markup is never
        interpreted (``markup`` is accepted for Textual's signature and ignored). Escaping is
        idempotent, so text that a caller already escaped is shown unchanged. The toast is also
        kept in :attr:`notification_log` (the ``N`` screen).

        On the main screen the toast is drawn in place by :class:`.widgets.toasts.ToastStack`
        (no widget mounted per toast); over a modal screen, by Textual's toasts.
        """
        if self._thread_id and self._thread_id != threading.get_ident():
            # Textual's notify may be called from any thread: hand it to the app's loop without
            # waiting (a thread blocked on a closing app would never return)
            try:
                if self._loop is not None:
                    self._loop.call_soon_threadsafe(
                        lambda: self.notify(message, title=title, severity=severity, timeout=timeout))
            except RuntimeError:  # the loop is closed: the app is gone, and so is its screen
                pass
            return
        message, title = safe_plain(str(message)), safe_plain(str(title or ""), single_line=True)
        timeout = self.NOTIFICATION_TIMEOUT if timeout is None else timeout
        self.notification_log.append(Notice(time.time(), str(severity), title, message))
        stack = self._toast_stack()
        if stack is not None:
            if not self._disable_notifications:
                stack.add(title, message, str(severity), timeout)
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)
        self.call_later(self._tidy_after_notify)

    def _toast_stack(self) -> ToastStack | None:
        """The main screen's in-place toasts, or None while another screen is on top (a modal
        shows Textual's toasts above it) or before the stack is mounted."""
        try:
            screen = self.screen
        except Exception:  # noqa: BLE001 - no screen yet, or the app is closing
            return None
        if not isinstance(screen, DeckScreen):
            return None
        try:
            return screen.query_one("#toasts", ToastStack)
        except Exception:  # noqa: BLE001 - not composed yet
            return None

    def _tidy_after_notify(self) -> None:
        """Mend Textual 8.2's two toast leaks after each notification (:mod:`.textual_mends`)."""
        try:
            drop_empty_toast_holders(self.screen)
        except Exception:  # noqa: BLE001 - no screen (the app is closing): nothing to tidy
            return
        release_removed_widget_styles()

    # ── layout ──────────────────────────────────────────────────────────

    def get_default_screen(self) -> Screen:
        return DeckScreen(id="deck")

    #: The panel shown at launch.
    INITIAL_PANEL = "integrity"
    #: The panels composed before the first paint: the one shown at launch and Capacity, where the
    #: memory usage is (what a launch is opened for: the launch measure is "memory on screen").
    #: The other six are mounted one per frame after the first paint (:meth:`_mount_next_panel`),
    #: or at once when a key shows one before its turn (:meth:`action_show_panel`: mounted, then
    #: shown; that costs ~70 ms of CPU more than composing it at launch, measured on Capacity).
    EAGER_PANELS = ("integrity", "capacity")

    def compose(self) -> ComposeResult:
        yield Readout(self._status_line(), id="statusline", fits_width=True)
        with DeckTabs(initial=self.INITIAL_PANEL, id="panels"):
            for i, (pid, title) in enumerate(PANELS, 1):
                with TabPane(f"{i} {title}", id=pid):
                    if pid in self.EAGER_PANELS:
                        yield panel_class(pid)(id=f"panel-{pid}")
        with ToastRack(id="toast-rack"):
            yield ToastStack(id="toasts")
        yield OverviewPane(id="overview")
        yield DeckFooter(compact=True, show_command_palette=False, read_only=self.read_only)

    # ── panels mounted after the first paint (issue 23: eight panels composed before it) ──

    def _panels_unmounted(self) -> list[str]:
        return [pid for pid in PANEL_IDS if pid not in self._panels_ready and pid not in self._panels_mounting]

    def _mount_panel(self, pid: str) -> None:
        """Mount panel ``pid`` into its (empty) tab pane, importing its module now; once mounted it
        is drawn if it is the one shown (:meth:`_panel_mounted`). Nothing when it is mounted or
        being mounted."""
        if pid in self._panels_ready or pid in self._panels_mounting:
            return
        try:
            pane = self.query_one(f"#panels TabPane#{pid}", TabPane)
        except Exception:  # noqa: BLE001 - shutting down
            return
        try:
            mounting = pane.mount(panel_class(pid)(id=f"panel-{pid}"))
        except Exception:  # noqa: BLE001 - the screen is going away (quit): nothing to show it in
            return
        self._panels_mounting.add(pid)
        self._mount_waits[pid] = mounting
        self.call_next(self._panel_mounted, pid, mounting)

    async def _panel_mounted(self, pid: str, mounting: Any) -> None:
        try:
            await mounting
        except Exception as exc:  # noqa: BLE001 - closing, or a panel that failed to compose: the app goes on
            self.log.error(f"panel {pid} failed to mount: {exc!r}")
            return
        finally:
            self._panels_mounting.discard(pid)
            self._mount_waits.pop(pid, None)
        self._panels_ready.add(pid)
        if not self.is_running or self._exit:  # quitting: nothing more to show
            return
        if self._mounting_rest:
            self.call_after_refresh(self._mount_next_panel)
        if pid == "recall" and self._recall_shown is not None:  # a recall asked for before it was mounted
            query, ready = self._recall_shown
            try:
                panel = self.query_one("#panel-recall")
                panel.query_text = query
                if ready is not None:
                    panel.show_recall(ready.query, ready.result, ready.error)
            except Exception as exc:  # noqa: BLE001 - a panel bug must not kill the app: logged
                self.log.error(f"recall render failed: {exc!r}")
        try:
            shown = self.current_panel_id == pid
        except Exception:  # noqa: BLE001 - the main screen is not up (a test app's other screen, or shutdown)
            return
        if shown:
            if self.snapshot is not None:
                self._stale_panels.discard(pid)
                self._show_panel_snapshot(pid, self.snapshot)
            self._arm_retime(pid)
            self._focus_panel()

    def _mount_next_panel(self) -> None:
        """Mount the first panel not mounted yet; when it is, the next one a frame later, until all
        are (started once the first snapshot is on screen: they cost that paint nothing). Waits
        while a panel is being mounted (one shown by a key comes first)."""
        self._mounting_rest = True
        if self._panels_mounting:
            return  # _panel_mounted calls again
        rest = self._panels_unmounted()
        if rest:
            self._mount_panel(rest[0])

    async def on_event(self, event: events.Event) -> None:
        """Keys typed ahead around a dialog (:mod:`memdeck.tui.screens.modal`, issue 40 #3): a key
        is for the screen on top when it arrived; one that comes back to the app (unhandled, for
        the app's bindings) after another screen went on top is dropped (``? ? ?`` opened a help
        screen over the help screen), and so is every key still queued when a dialog is dismissed
        (``s Enter Enter``: the second Enter is not the dashboard's)."""
        if isinstance(event, events.Key):
            from .screens.modal import dropping_keys

            if not event.is_forwarded:
                if dropping_keys(self):
                    return
                event._memdeck_screen = self.screen  # type: ignore[attr-defined]
            elif getattr(event, "_memdeck_screen", self.screen) is not self.screen:
                return
        await super().on_event(event)

    def on_mount(self) -> None:
        from .palette import LIGHT_ANSI
        from .settings import all_binding_ids, load_settings

        self.ansi_theme_light = LIGHT_ANSI  # status colours at 3:1 or better on the light theme
        self.theme = "textual-dark"
        if self.use_settings:
            from .keymap import main_screen_keys

            settings = load_settings(all_binding_ids(type(self)), self.available_themes,
                                     default_keys=main_screen_keys(), explicit=self.settings_file)
            self.settings = settings
            if settings.keymap:
                self.set_keymap(dict(settings.keymap))
                if self.read_only:
                    self._hide_write_keys()  # a keymap rebuilds the bindings
            if settings.theme:
                self.theme = settings.theme
            self._theme_saved = self.theme  # from now on, a theme chosen is saved
            for w in settings.warnings:
                self.notify(w, title="settings (? shows them again)", severity="warning", timeout=10)
        layout = self.launch_layout or getattr(self.settings, "layout", None) or "panels"
        if layout == "overview":
            self.set_overview(True)
        self.request_refresh()
        if self.watch_enabled:
            self.start_watchers()
        self.call_after_refresh(self._focus_panel)
        self.call_after_refresh(self._arm_retime)

    # ── panels ──────────────────────────────────────────────────────────

    @property
    def current_panel_id(self) -> str:
        return self.query_one("#panels", TabbedContent).active or "integrity"

    def panel(self, pid: str | None = None) -> Any:
        return self.query_one(f"#panel-{pid or self.current_panel_id}")

    def _focus_panel(self) -> None:
        try:
            self.panel().focus_primary()
        except Exception:  # noqa: BLE001 - the panel may not be mounted yet during shutdown
            pass

    # ── the overview layout (o, --layout overview) ───────────────────────

    def set_overview(self, shown: bool) -> None:
        """Show the overview instead of the panels' tabs (or the tabs again). The hidden one is
        out of the layout pass (``display: none``); while the overview shows, every panel is
        stale and the refreshes build the followed session's report (the next compaction)."""
        if shown == self.overview_shown:
            return
        self.overview_shown = shown
        try:
            tabs = self.query_one("#panels", TabbedContent)
            pane = self.query_one("#overview", OverviewPane)
        except Exception:  # noqa: BLE001 - not composed (shutdown)
            return
        with self.batch_update():
            tabs.display = not shown
            pane.display = shown
        if shown:
            self.screen.set_focus(None)
            self._draw_overview()
            if not self.context_shown:
                self.context_shown = True
                self.request_refresh(force=True)
        else:
            pid = self.current_panel_id
            self.context_shown = pid == "context"
            if pid in self._stale_panels and self.snapshot is not None:
                self._stale_panels.discard(pid)
                self._show_panel_snapshot(pid, self.snapshot)
            self.call_after_refresh(self._focus_panel)
        self._arm_retime()
        self.refresh_bindings()

    def _draw_overview(self) -> None:
        snap = self.snapshot
        if snap is None or not self.overview_shown:
            return
        try:
            self.query_one("#overview", OverviewPane).show_snapshot(snap, self.clock())
        except Exception as exc:  # noqa: BLE001 - a view bug must not kill the app
            self.log.error(f"overview failed to render: {exc!r}")

    def action_toggle_overview(self) -> None:
        """``o``: the overview, or the panels again (on the panel shown before)."""
        self.set_overview(not self.overview_shown)

    async def action_show_panel(self, pid: str) -> None:
        if pid in PANEL_IDS:
            self.set_overview(False)
            if pid not in self._panels_ready:  # mounted (hidden) first, then shown: one layout, not two
                self._mount_panel(pid)
                waiting = self._mount_waits.get(pid)
                if waiting is not None:
                    try:
                        await waiting
                    except Exception:  # noqa: BLE001 - closing: nothing to show
                        return
            self.query_one("#panels", TabbedContent).active = pid
            self.call_after_refresh(self._focus_panel)

    async def action_next_panel(self) -> None:
        if self.overview_shown:  # from the overview: the panel shown before it
            await self.action_show_panel(self.current_panel_id)
            return
        i = PANEL_IDS.index(self.current_panel_id)
        await self.action_show_panel(PANEL_IDS[(i + 1) % len(PANEL_IDS)])

    async def action_prev_panel(self) -> None:
        if self.overview_shown:
            await self.action_show_panel(self.current_panel_id)
            return
        i = PANEL_IDS.index(self.current_panel_id)
        await self.action_show_panel(PANEL_IDS[(i - 1) % len(PANEL_IDS)])

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pid = self.current_panel_id
        if pid not in self._panels_ready:  # shown before its turn came: mounted now, drawn once mounted
            self._mount_panel(pid)
        shown = pid == "context" or self.overview_shown
        if shown != self.context_shown:
            self.context_shown = shown
            if shown:  # its report is built only while it is shown: build it now
                self.request_refresh(force=True)
        if pid in self._stale_panels and self.snapshot is not None:
            self._stale_panels.discard(pid)
            self._show_panel_snapshot(pid, self.snapshot)
        elif self.snapshot is not None and self._panel_has_relative_times(pid):
            self._retime()  # its "12 min ago" went stale while it was hidden
        self._arm_retime(pid)
        self.call_after_refresh(self._focus_panel)

    # ── relative times ("12 min ago"): drawn again once a minute, only while such a panel shows ──

    #: seconds between two redraws of the shown panel's relative times
    RETIME_S = 60.0

    def _panel_has_relative_times(self, pid: str) -> bool:
        try:
            return bool(getattr(self.panel(pid), "RELATIVE_TIMES", False))
        except Exception:  # noqa: BLE001 - not mounted (start-up, shutdown)
            return False

    def _arm_retime(self, pid: str | None = None) -> None:
        """Run the once-a-minute timer while the shown panel has relative times (or the overview
        shows: its ages); stop it otherwise, so a panel without them (or a hidden one) costs no
        wake-up at all."""
        wanted = self.overview_shown or self._panel_has_relative_times(pid or self.current_panel_id)
        if wanted and self.retime_timer is None:
            self.retime_timer = self.set_interval(self.RETIME_S, self._retime, name="relative-times")
        elif not wanted and self.retime_timer is not None:
            self.retime_timer.stop()
            self.retime_timer = None

    def _retime(self) -> None:
        """Draw the shown panel's relative times for the clock's new time (cells in place); not
        while refresh is paused or a dialog is open (the screen is meant to hold still then)."""
        snap = self.snapshot
        if snap is None or self._refresh_blocked():
            return
        if self.overview_shown:
            self._draw_overview()
            return
        pid = self.current_panel_id
        if not self._panel_has_relative_times(pid) or pid in self._stale_panels:
            return
        try:
            self.panel(pid).retime(snap)
        except Exception as exc:  # noqa: BLE001 - a panel bug must not kill the app
            self.log.error(f"panel {pid} failed to redraw its times: {exc!r}")

    def _show_panel_snapshot(self, pid: str, snap: Any) -> None:
        """Draw ``snap`` in panel ``pid`` unless it holds nothing new for it; a panel that fails
        shows a banner, the app goes on. A panel not mounted yet is drawn when it is."""
        if pid not in self._panels_ready:
            self._stale_panels.add(pid)
            return
        try:
            panel = self.panel(pid)
            if panel.needs_drawing(snap):
                panel.show_snapshot(snap)
        except Exception as exc:  # noqa: BLE001 - a panel bug must not kill the app
            self.log.error(f"panel {pid} failed to render: {exc!r}")
            try:
                self.panel(pid).show_banner(f"this panel failed to render: {type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001 - the banner is a courtesy; the failure is logged above
                pass

    #: What Enter on a row offers, by selection kind: (action, label) in the order shown.
    ROW_ACTIONS: dict[str, tuple[tuple[str, str], ...]] = {
        "entry": (("edit", "e  edit the entry"), ("pin", "p  pin it as an anchor"), ("archive", "a  archive it"),
                  ("move", "m  move it to the other file")),
        "anchor": (("edit", "e  edit the anchor"), ("unpin", "u  unpin it"), ("archive", "a  archive it")),
        "pending": (("approve", "A  approve the pending write"), ("edit", "e  edit it, then approve"),
                    ("reject", "X  reject it"), ("approve_clean", "C  approve every clean one"),
                    ("reject_stale", "S  reject every stale one")),
        "change": (("revert", "r  revert this change"),),
    }

    def on_row_actions_requested(self, message: RowActionsRequested) -> None:
        """Enter on a row: a picker of the actions that apply to it (runs the chosen key's action)."""
        from .screens.pickers import PickerScreen

        actions = self.ROW_ACTIONS.get(message.selection.kind)
        if not actions:
            return
        options = [(action, Text(label)) for action, label in actions]

        def chosen(action: str | None) -> None:
            if action:
                self.call_later(self.run_action, action)

        self.push_screen(PickerScreen("Actions", options), chosen)

    def action_hygiene(self) -> None:
        from .screens.hygiene import HygieneScreen

        self.push_screen(HygieneScreen())

    def action_constraints(self) -> None:
        """``L`` in the Drift log: the constraint ledger of the selected audit's compaction (else
        the newest) of the shown session."""
        from .screens.constraints import ConstraintsScreen
        from .views.drift import event_compaction

        sid = getattr(self.snapshot, "session_id", None) or self.session_id
        if not sid:
            self.notify("no session to read: no live session (press s to pick one)", severity="warning", markup=False)
            return
        compaction = None
        sel = self.selection() if self.current_panel_id == "drift" else None
        if sel is not None and sel.kind == "event" and self.snapshot is not None:
            comp = event_compaction(self.snapshot, sel.obj)
            compaction = comp.index if comp is not None else None
        self.push_screen(ConstraintsScreen(sid, compaction))

    def action_notifications(self) -> None:
        from .screens.notifications import NotificationsScreen

        self.push_screen(NotificationsScreen(self.notification_log))

    def action_follow_live(self) -> None:
        """Stop showing a pinned session: follow the newest live session again."""
        if self.session_id is None:
            self.notify("already following the live session", markup=False, timeout=3)
            return
        self.session_id = None
        self.notify("following the live session", markup=False, timeout=3)
        self.update_status_line()
        self.request_refresh(force=True)

    def action_help(self) -> None:
        from .screens.help import HelpScreen
        from .settings import all_binding_ids

        self.push_screen(HelpScreen(settings=self.settings, demo_home=self.home.path if self.demo else None,
                                    binding_ids=all_binding_ids(type(self))))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def action_pick_theme(self) -> None:
        """``T`` (and the palette's Themes): Textual's theme picker, every theme it has."""
        self.search_themes()

    def watch_theme(self, theme: str) -> None:
        """Save a theme chosen in the dashboard (``t``, the picker) as the settings file's
        ``theme`` (:func:`memdeck.tui.settings.save_setting`), so the next launch opens with it;
        only with ``user_settings`` and once the settings were read. A file that cannot be
        written: a warning toast, the theme stays for this session."""
        saved = self._theme_saved
        if self.settings is None or saved is None or theme == saved:
            return
        from .settings import save_setting, settings_target

        target = settings_target(self.settings)
        if target is None:
            return
        try:
            save_setting(target, "theme", theme)
        except (OSError, ValueError) as exc:
            self.notify(f"the theme was not saved: {exc}", title="settings", severity="warning", markup=False)
            return
        self._theme_saved = theme

    async def action_toggle_usage_chart(self) -> None:
        """``g`` in Capacity: show or hide the usage charts (from the palette on another panel,
        Capacity is shown with them)."""
        if self.current_panel_id != "capacity":
            await self.action_show_panel("capacity")
            panel = self.panel("capacity")
            if not panel.charts_shown:
                panel.toggle_charts()
            return
        self.panel("capacity").toggle_charts()

    # ── the command palette's system commands ───────────────────────────

    #: Textual's system commands memdeck leaves out of the palette, so that each title appears
    #: once and each works: Quit, Theme and Keys duplicate memdeck's Quit (q), Themes (T: the same
    #: picker, its choice saved in the settings file) and Help (?); Textual's Screenshot saves only
    #: into ~/Downloads (an error where it does not exist) and its toast is markup, which memdeck's
    #: toasts show as text: :meth:`action_save_screenshot` replaces it.
    TEXTUAL_COMMANDS_LEFT_OUT = frozenset({"Quit", "Theme", "Keys", "Screenshot"})

    def get_system_commands(self, screen: Screen) -> Any:
        """Textual's system commands but :data:`TEXTUAL_COMMANDS_LEFT_OUT` (Maximize / Minimize
        stay), then memdeck's Screenshot, except in a browser tab (``memdeck serve`` delivers no
        files). memdeck's own actions come from :class:`.commands.DeckCommands`."""
        for command in super().get_system_commands(screen):
            if command.title not in self.TEXTUAL_COMMANDS_LEFT_OUT:
                yield command
        if not self.is_web:
            yield SystemCommand("Screenshot", f"save an SVG picture of the screen in {screenshot_dir()}",
                                lambda: self.call_after_refresh(self.action_save_screenshot))

    def action_save_screenshot(self) -> None:
        """Save the screen as SVG in memdeck's screenshot folder under the user's data directory
        (:func:`screenshot_dir`, made when missing; never the current directory, issue 39 #12),
        and say where in a toast (or why not)."""
        folder = screenshot_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            saved = self.save_screenshot(path=str(folder))
        except OSError as exc:
            self.notify(f"the screenshot was not saved in {folder}: {exc}", title="Screenshot", severity="error",
                        markup=False)
            return
        self.notify(f"saved the screen to {saved}", title="Screenshot", markup=False, timeout=8)

    # ── read-only ───────────────────────────────────────────────────────

    #: The toast of a write key on a read-only dashboard.
    READ_ONLY_MESSAGE = "this dashboard is read-only (--read-only): nothing was written"

    def _hide_write_keys(self) -> None:
        """Take the write keys out of the footer (they still reach :meth:`run_action`, which
        refuses them with a toast)."""
        for key, bindings in self._bindings.key_to_bindings.items():
            self._bindings.key_to_bindings[key] = [
                dataclasses.replace(b, show=False) if b.action in WRITE_ACTIONS else b for b in bindings
            ]

    def is_write_action(self, action: Any, default_namespace: Any = None) -> bool:
        """Whether ``action`` (an action string or Textual's parsed tuple) is one of the app's
        :data:`tui.keymap.WRITE_ACTIONS`: ``"edit"`` on the app, or ``"app.edit"`` from anywhere."""
        from textual import actions

        try:
            dest, name, _params = action if isinstance(action, tuple) else actions.parse(action)
        except Exception:  # noqa: BLE001 - not an action string: Textual will say so
            return False
        on_app = dest == "app" or (not dest and (default_namespace is None or default_namespace is self))
        return on_app and name in WRITE_ACTIONS

    async def run_action(self, action: Any, default_namespace: Any = None, namespaces: Any = None) -> bool:
        """Textual's ``run_action`` (every key, palette entry and row action goes through it),
        except that a read-only dashboard refuses a write action with a toast."""
        if self.read_only and self.is_write_action(action, default_namespace):
            name = action[1] if isinstance(action, tuple) else str(action).rsplit(".", 1)[-1].split("(", 1)[0]
            self.notify(self.READ_ONLY_MESSAGE, title=f"{name.replace('_', ' ')}: refused", severity="warning",
                        markup=False, timeout=4)
            return True
        return await super().run_action(action, default_namespace, namespaces)

    # ── status line ─────────────────────────────────────────────────────

    def _status_line(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(" memdeck ", "bold reverse")
        t.append(" ")
        t.append_text(safe_text(self.home.profile, single_line=True, style="bold"))
        if self.demo:
            t.append(" · demo", "italic")
        if self.read_only:
            t.append(" · ")
            t.append("read-only", "bold magenta")
        t.append(" · ")
        if self.paused:
            t.append("⏸ PAUSED (space resumes)", "bold yellow reverse")
        elif not self.watch_enabled:
            t.append("static", "dim")
        else:
            t.append("● ", "bold green")
        snap = self.snapshot
        if self.session_id is not None:
            if not self.watch_enabled or self.paused:
                t.append(" · ")
            t.append("pinned to ", "bold yellow")
            t.append_text(safe_text(self.session_id, single_line=True, max_chars=24, style="bold yellow"))
            t.append(" (f: live)", "dim")
        else:
            if not self.watch_enabled or self.paused:
                t.append(" · ", "dim")
            t.append("following live", "bold green" if self.watch_enabled and not self.paused else "dim")
        badge = self._frozen_badge(snap)
        if badge:
            try:
                room = self.query_one("#statusline", Static).size.width or self.size.width or 80
            except Exception:  # noqa: BLE001 - not composed yet: the app's width
                room = self.size.width or 80
            # the badge never pushes out the time or the path's last 8 columns; the full words when
            # the whole path still fits beside them (or nothing shorter would), else "≠5 frozen"
            label = self.home_label if self.home_label is not None else str(self.home.path)
            n = badge.split(": ", 1)[-1].split(" ", 1)[0]
            short = f"≠{n} frozen"
            base = t.cell_len + 3 + len(" · updated 00:00:00") + 3
            options = [(badge, len(label)), (short, len(label)), (badge, 8), (short, 8)]
            badge = next((b for b, path in options if base + len(b) + path <= room), "")
            if badge:
                t.append(" · ")
                t.append(badge, "bold reverse yellow")
        for words, style in self._store_badges(snap):
            if words.startswith("built-in MEMORY + USER"):  # both stores on, and a provider: words that
                # yield to the time and the path (a store switched off is a warning: it stays)
                try:
                    room = self.query_one("#statusline", Static).size.width or self.size.width or 80
                except Exception:  # noqa: BLE001 - not mounted yet: the app's width
                    room = self.size.width or 80
                base = t.cell_len + 3 + len(" · updated 00:00:00") + 3
                label = self.home_label if self.home_label is not None else str(self.home.path)
                short = words.removeprefix("built-in MEMORY + USER; ")
                # the whole path beats these words; a path cut anyway leaves room for the short ones
                options = [(words, len(label)), (short, len(label)), ("", len(label)), (short, 8)]
                words = next((w for w, path in options if base + len(w) + path <= room), "")
                if not words:
                    continue
            t.append(" · ")
            t.append(words, style)
        if self.history_filling is not None and self.history_remaining:
            t.append(f" · semantic history: {self.history_remaining} compactions to audit…", "bold cyan")
        if self.ledger_filling is not None and self.ledger_remaining:
            t.append(f" · constraint ledger: {self.ledger_remaining} compactions to read…", "bold cyan")
        if snap is not None and snap.partial:
            bp = self.build_progress
            pct = f" {100 * bp[0] // max(1, bp[1])} %" if bp else ""
            t.append(f" · reading state.db history{pct}…", "bold cyan")
        elif snap is not None and getattr(snap, "taken_at", None):
            t.append(" · updated ", "dim")
            t.append(time.strftime("%H:%M:%S", time.localtime(snap.taken_at)), "dim")
        # the path last, shortened from the left to what the line has room for
        label = self.home_label if self.home_label is not None else str(self.home.path)
        try:
            width = self.query_one("#statusline", Static).size.width or self.size.width
        except Exception:  # noqa: BLE001 - not composed yet: the app's width
            width = self.size.width
        room = (width or 80) - t.cell_len - 3
        if room >= 8:
            shown = safe_text(label, single_line=True, style="dim")
            if shown.cell_len > room:
                shown = Text("…", style="dim") + shown[len(shown.plain) - room + 1:]
            t.append(" · ")
            t.append_text(shown)
        return t

    def _store_badges(self, snap: Any) -> list[tuple[str, str]]:
        """The status line's words for the memory stores and the review queue: which stores are
        authoritative when it is not the built-in MEMORY + USER alone (``built-in MEMORY off;
        provider: kiokuko``), the provider's quiet turns, and the oldest unreviewed pending write
        past ``alerts.pending_age_hours``."""
        from memdeck.core.overview.alerts import oldest_pending_age, provider_quiet

        out: list[tuple[str, str]] = []
        if snap is None:
            return out
        try:
            prov = getattr(snap, "provider", None)
            if prov is not None and not prov.default:
                out.append((prov.authority(), "bold cyan" if prov.name else "bold yellow"))
            quiet = provider_quiet(snap)
            n = self.alert_settings.provider_quiet_turns
            if quiet is not None and quiet[0] >= n:
                out.append((f"{quiet[1]}: nothing injected for {quiet[0]} turns", "bold reverse yellow"))
            old = oldest_pending_age(snap, self.clock())
            if old is not None and old[0] >= self.alert_settings.pending_age_s:
                from memdeck.core.text import age_words

                out.append((f"⏳ pending {age_words(old[0])}", "bold reverse yellow"))
        except Exception:  # noqa: BLE001 - a badge never breaks the status line
            return out
        return out

    @staticmethod
    def _frozen_badge(snap: Any) -> str | None:
        """``frozen 19 d ago: 5 entries differ`` for the followed session, when it differs."""
        if snap is None or getattr(snap, "agent_view", None) is None:
            return None
        from .views.context import frozen_badge

        try:
            return frozen_badge(snap)
        except Exception:  # noqa: BLE001 - a badge never breaks the status line
            return None

    def on_resize(self) -> None:
        self.update_status_line()  # the path is shortened to the width
        narrow = bool(self.size.width) and self.size.width < self.NARROW_TABS_BELOW
        if narrow != self._tabs_narrow:  # short or full tab titles: every tab again
            self._label_tabs(self._badges_shown or {})

    def update_status_line(self) -> None:
        try:
            self.query_one("#statusline", Readout).show(self._status_line())  # one line: never a layout pass
        except Exception:  # noqa: BLE001 - no status line (start-up, shutdown): nothing to show
            pass

    def watch_paused(self, paused: bool) -> None:
        self.update_status_line()
        self._relabel_pause(paused)
        if not paused:
            self.resume_after_modal()

    def _relabel_pause(self, paused: bool) -> None:
        """The footer says when live refresh is paused (Dolphie): the space key's label changes."""
        import dataclasses

        changed = False
        for key, bindings in self._bindings.key_to_bindings.items():
            new = []
            for b in bindings:
                if b.action == "toggle_pause":
                    b = dataclasses.replace(b, description="PAUSED · resume" if paused else "Pause")
                    changed = True
                new.append(b)
            self._bindings.key_to_bindings[key] = new
        if changed:
            self.refresh_bindings()

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.notify("live refresh paused" if self.paused else "live refresh resumed", markup=False, timeout=2)

    # ── snapshot refresh (Dolphie: the next one starts only after the last finished) ──

    def _refresh_blocked(self) -> bool:
        return self.paused or isinstance(self.screen, ModalScreen)

    @property
    def refresh_pending(self) -> bool:
        """True while a refresh runs or one is queued to run (paused, behind a dialog, or next)."""
        return self._refreshing or self._dirty

    @property
    def idle(self) -> bool:
        """True when no refresh runs and none can start now, no semantic history and no constraint
        ledger is being filled, and every panel is mounted (tests settle on this)."""
        return (not self._refreshing and not (self._dirty and not self._refresh_blocked())
                and self.history_filling is None and self.ledger_filling is None
                and len(self._panels_ready) == len(PANEL_IDS))

    def request_refresh(self, *, force: bool = False) -> None:
        """Build a new snapshot off the UI thread, unless one is running or refresh is paused.

        A request that arrives while blocked is remembered and served once unblocked.
        ``force`` ignores the pause (the user asked for this change, e.g. a session switch).
        """
        if self._refreshing or (self._refresh_blocked() and not force):
            self._dirty = True
            return
        self._dirty = False
        self._refreshing = True
        self._refresh_worker()

    def resume_after_modal(self) -> None:
        self._adopt_textual_toasts()
        if self._dirty and not self._refresh_blocked():
            self.request_refresh()

    def _adopt_textual_toasts(self) -> None:
        """Toasts raised over a modal are Textual's; when the main screen is back, they move to
        its stack for the rest of their time (Textual would draw them again on the main
        screen's own rack, over the stack's spot)."""
        stack = self._toast_stack()
        live = list(self._notifications)
        if stack is None or not live:
            return
        for n in live:
            stack.add(n.title, n.message, n.severity, n.time_left)
        self._notifications.clear()
        self.call_later(self._refresh_notifications)  # Textual's rack lets them go
        self.call_later(self._tidy_after_notify)

    @work(thread=True, exclusive=True, exit_on_error=False, group="refresh")
    def _refresh_worker(self) -> None:
        from memdeck.core.overview.snapshot import SEMANTIC_BUDGET_S

        try:
            head_start, self._head_start = self._head_start, None
            starting = self.snapshot is None
            self._final_posted.clear()
            # a head start that has already finished is taken now (no wait): when its full
            # snapshot will be adopted, the first paint is that snapshot, not memory alone
            head = head_start.take() if head_start is not None and starting and head_start.finished else None
            first = None
            if starting and not (head is not None and self._adoptable(head_start, head)):
                # progressive first paint: memory usage at once, the history when it is read
                first = head_start.first if head_start is not None else None
                if first is None:
                    self._reader = HomeReader(self.home, self.config, clock=self.clock)
                    first = self._reader.first_paint()
                self.post_message(SnapshotReady(first, final=False))
            if head is None and head_start is not None and starting:
                head = head_start.take()
            carried: tuple[Any, ...] = ()  # changes the head start recorded but this read will not
            if head is not None:  # the first refresh, built while Python and Textual started
                if head_start.home != self.home or self._worker_cancelled():
                    head.reader.close()  # another profile now, or closing
                    head = None
            if head is not None:
                if self._reader is not None:
                    self._reader.close()
                self._reader = head.reader
                self._reader.config = self.config
                self._reader.progress = self._progress_reporter()
                if self._adoptable(head_start, head):
                    self.refresh_runs += 1
                    self._dirty = True  # look once more: a source may have changed before the watcher ran
                    self._final_posted.set()
                    self.post_message(SnapshotReady(head.snapshot))
                    return
                carried = head.new_changes
            if self._reader is None:
                self._reader = HomeReader(self.home, self.config, clock=self.clock)
            reader = self._reader
            reader.config = self.config
            reader.progress = self._progress_reporter()
            if self.snapshot is not None:
                reader.snapshot = self.snapshot
            elif first is not None:
                reader.snapshot = first
            self.refresh_runs += 1
            # while the history worker fills a semantic history, a refresh audits none of it
            # (and while the ledger worker fills a first ledger, a refresh computes only the newest)
            snap = reader.read(self.session_id, context_report=self.context_shown,
                               history_budget_s=0.0 if self.history_filling is not None else SEMANTIC_BUDGET_S,
                               ledger_budget_s=0.0 if self.ledger_filling is not None else None)
            if carried:
                snap = dataclasses.replace(snap, new_changes=(*carried, *snap.new_changes))
        except BaseException as exc:  # noqa: BLE001 - the reader never raises; belt and braces
            snap = exc
        if not isinstance(snap, BaseException):  # a failed build paints nothing: keep the first paint
            self._final_posted.set()
        self.post_message(SnapshotReady(snap))

    @property
    def _db(self) -> Any:
        """The refresh's state.db connection (its :class:`HomeReader`'s; None before the first read)."""
        return self._reader.db if self._reader is not None else None

    @property
    def _deck(self) -> Any:
        """The refresh's held memdeck.db connection (its :class:`HomeReader`'s)."""
        return self._reader.deck if self._reader is not None else None

    def _adoptable(self, head_start: HeadStart, head: Any) -> bool:
        """True when the head start's snapshot can be shown as this app's first full one: built
        for this home, with this very config, and no session pinned since."""
        return (head.snapshot is not None and head_start.home == self.home and self.session_id is None
                and head.snapshot.config is self.config)

    @staticmethod
    def _worker_cancelled() -> bool:
        """True inside a cancelled worker (the app is closing)."""
        from textual.worker import get_current_worker

        try:
            return get_current_worker().is_cancelled
        except Exception:  # noqa: BLE001 - not in a worker (a status call from another thread)
            return False

    def _progress_reporter(self) -> Callable[[int, int], None]:
        """``progress(done, total)`` for the state.db reader: posts :class:`BuildProgress` at most
        every 100 ms, and stops the build (by raising) when the worker was cancelled (quit)."""
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if self._worker_cancelled():
                raise RuntimeError("the dashboard is closing")
            if total >= LONG_READ_ROWS and not self._first_paint_shown.is_set():
                # a long read holds the GIL for seconds: it waits for the memory-only first paint;
                # short ones (a later launch reads a few hundred new rows) run beside it
                self._first_paint_shown.wait(FIRST_PAINT_WAIT_S)
            now = time.monotonic()
            if now - last[0] >= 0.1:
                last[0] = now
                self.post_message(BuildProgress(done, total))

        return progress

    def on_build_progress(self, message: BuildProgress) -> None:
        self.build_progress = (message.done, message.total)
        self.update_status_line()

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        if not message.final:
            if self._final_posted.is_set():
                # the full snapshot is already queued behind this one (the head start finished
                # while Textual started): paint once, with everything, not twice
                return
            self.apply_snapshot(message.snapshot)
            self.call_after_refresh(self._first_paint_shown.set)
            self.call_after_refresh(self._mount_next_panel)
            return
        if not self._first_paint_shown.is_set():  # the first paint was the full one
            self.call_after_refresh(self._first_paint_shown.set)
            self.call_after_refresh(self._mount_next_panel)
        self._refreshing = False
        self.build_progress = None
        snap = message.snapshot
        if isinstance(snap, BaseException):
            self.notify(f"refresh failed: {type(snap).__name__}: {snap}", severity="error", markup=False)
        elif snap is not self.snapshot:  # every source unchanged: nothing to repaint
            self.apply_snapshot(snap)
        if not isinstance(snap, BaseException):
            self._fill_history_of(snap)
            self._fill_ledger_of(snap)
        if self._dirty and not self._refresh_blocked():
            self.request_refresh()

    # ── a first semantic history, filled by a worker of its own (never a loop of refreshes) ──

    #: seconds of audits per step of the history worker (it reports progress after each)
    HISTORY_STEP_S = 0.5

    def _fill_history_of(self, snap: Any) -> None:
        """Start the history worker when ``snap``'s audit left compactions of a semantic history
        not audited (a refresh audits the newest for ``SEMANTIC_BUDGET_S``, then none while the
        worker runs): it fills them on its own clock and asks for one refresh when done."""
        audit = getattr(snap, "audit", None)
        sid = getattr(snap, "session_id", None)
        pending = int(getattr(audit, "pending", 0) or 0) if audit is not None else 0
        if not pending or not sid or self.history_filling == sid or self._history_stalled == (sid, pending):
            return
        self.history_filling, self.history_remaining = sid, pending
        self._history_worker(sid)
        self.update_status_line()

    @work(thread=True, exclusive=True, exit_on_error=False, group="history")
    def _history_worker(self, session_id: str) -> None:
        from memdeck.core.anchors.lifecycle import fill_history
        from memdeck.core.anchors.store import AnchorStore

        def opened(db: Any) -> Callable[[Callable[[int, int], None]], int]:
            store = AnchorStore(self.home, self.config, actor="tui")
            return lambda progress: fill_history(db, store, session_id, self.config, budget_s=self.HISTORY_STEP_S,
                                                 progress=progress)

        self._fill_in_steps(session_id, opened, HistoryFillProgress, HistoryFilled)

    def on_history_fill_progress(self, message: HistoryFillProgress) -> None:
        if message.session_id == self.history_filling:
            self.history_remaining = message.remaining
            self.update_status_line()

    def on_history_filled(self, message: HistoryFilled) -> None:
        if message.session_id != self.history_filling:
            return
        self.history_filling, self.history_remaining = None, None
        self._history_stalled = None if message.remaining == 0 else (message.session_id, message.remaining)
        if message.error:
            self.notify(f"semantic history stopped: {message.error}", severity="warning", markup=False)
        self.update_status_line()
        self.request_refresh()  # one refresh takes what was filled (its audit finds every verdict kept)

    # ── a first full constraint ledger, filled by a worker of its own (as the semantic history) ──

    #: seconds of ledgers per step of the ledger worker (it reports progress after each)
    LEDGER_STEP_S = 0.5

    def _fill_ledger_of(self, snap: Any) -> None:
        """Start the ledger worker when ``snap``'s constraint ledger left compactions not computed
        (a refresh computes the newest for ``LEDGER_BUDGET_S``, then only the newest while the worker
        runs): it fills them on its own clock and asks for one refresh when done."""
        c = getattr(snap, "constraints", None)
        sid = c.get("session_id") if c else None
        pending = int(c.get("pending") or 0) if c else 0
        if not pending or not sid or self.ledger_filling == sid or self._ledger_stalled == (sid, pending):
            return
        self.ledger_filling, self.ledger_remaining = sid, pending
        self._ledger_worker(sid)
        self.update_status_line()

    @work(thread=True, exclusive=True, exit_on_error=False, group="ledger")
    def _ledger_worker(self, session_id: str) -> None:
        from memdeck.core.constraints.ledger import fill_ledgers

        def opened(db: Any) -> Callable[[Callable[[int, int], None]], int]:
            return lambda progress: fill_ledgers(db, self.home, session_id, budget_s=self.LEDGER_STEP_S,
                                                 progress=progress)

        self._fill_in_steps(session_id, opened, LedgerFillProgress, LedgerFilled)

    def _fill_in_steps(self, session_id: str, opened: Callable[[Any], Callable[[Callable[[int, int], None]], int]],
                       progress_message: Callable[[str, int], Message],
                       done_message: Callable[[str, int, str | None], Message]) -> None:
        """The body of a background fill worker (the semantic history, the constraint ledger): open
        state.db and memdeck.db, bind memdeck.db, then run ``opened(state_db)``'s step (one bounded
        slice of work, returning how many items remain) until nothing remains or a step makes no
        progress (never spin), posting ``progress_message(session_id, remaining)`` after each step
        and ``done_message(session_id, remaining, error)`` at the end (``remaining`` -1 when no step
        ran; ``error`` ``"Type: message"`` or None). Whatever a step computed is kept by the step
        itself; a cancelled worker (the dashboard closing) stops at the next progress callback."""
        from memdeck.core.overview.snapshot import open_statedb

        remaining, error = -1, None
        db = deck = None
        try:
            db = open_statedb(self.home)
            if db is None:
                raise RuntimeError("state.db is gone")
            deck = DeckDB(self.home)
            step = opened(db)
            last = None

            def progress(done: int, total: int) -> None:
                if self._worker_cancelled():
                    raise RuntimeError("the dashboard is closing")  # what was computed is kept

            with deck.bound():
                while not self._worker_cancelled():
                    remaining = step(progress)
                    self.post_message(progress_message(session_id, remaining))
                    if remaining == 0 or (last is not None and remaining >= last):
                        break  # done, or no progress (results that cannot be kept): stop, never spin
                    last = remaining
        except Exception as exc:  # noqa: BLE001 - a fill never breaks the dashboard; the status line says why
            error = f"{type(exc).__name__}: {exc}"
        finally:
            for conn in (db, deck):
                if conn is not None:
                    try:
                        conn.close()
                    except Exception:  # noqa: BLE001 - closing a read connection cannot lose data
                        pass
        if not self._worker_cancelled():
            self.post_message(done_message(session_id, remaining, error))

    def on_ledger_fill_progress(self, message: LedgerFillProgress) -> None:
        if message.session_id == self.ledger_filling:
            self.ledger_remaining = message.remaining
            self.update_status_line()

    def on_ledger_filled(self, message: LedgerFilled) -> None:
        if message.session_id != self.ledger_filling:
            return
        self.ledger_filling, self.ledger_remaining = None, None
        self._ledger_stalled = None if message.remaining == 0 else (message.session_id, message.remaining)
        if message.error:
            self.notify(f"constraint ledger stopped: {message.error}", severity="warning", markup=False)
        self.update_status_line()
        self.request_refresh()  # one refresh takes what was filled (every ledger found kept)

    def apply_snapshot(self, snap: Any) -> None:
        """Show ``snap`` in every panel at once (one repaint); toast what changed that a person
        should know (:func:`memdeck.core.overview.alerts.alerts_between`); update the badges."""
        from memdeck.core.overview.alerts import alerts_between

        previous = self.snapshot
        self.snapshot = snap
        alerts: list[Any] = []
        told = None
        if previous is not None and previous.home == snap.home:
            from .views.constraints import newest_toast

            alerts = list(alerts_between(previous, snap, self.alert_settings))
            told = newest_toast(previous, snap)
        self._arm_age_timer(snap)
        changes = getattr(snap, "new_changes", ())
        if alerts or changes or told is not None:
            # after the frame that shows the new figures: a toast mounts a widget, a layout pass
            # of the whole screen, which the external write -> screen time waited for (issue 38 #2)
            self.call_after_refresh(self._toast_snapshot, alerts, changes, told)
        if previous is not None and previous.data_version != snap.data_version:
            try:
                q = self.query_one("#panel-recall").query_text
            except Exception:  # noqa: BLE001 - no Recall panel mounted: no query to re-run
                q = ""
            if q.strip():
                self.run_recall(q)
        with self.batch_update():
            # Only the panel on screen is drawn now; the others when they are shown (a live
            # home refreshes every few seconds, and most panels are not looked at).
            current = self.current_panel_id
            if self.overview_shown:  # the overview alone is drawn; every panel when it is shown
                self._stale_panels = set(PANEL_IDS)
                self._draw_overview()
            else:
                self._stale_panels = set(PANEL_IDS) - {current}
                self._show_panel_snapshot(current, snap)
            self.update_status_line()
            self._update_badges(snap)
        # Widgets removed since the last refresh (footer keys, closed dialogs) are released.
        release_removed_widget_styles()
        if not snap.partial:  # the memory-only first paint is not a refresh of the whole home
            self.refresh_count += 1

    @property
    def alert_settings(self) -> Any:
        """The thresholds of the provider and review alerts (the settings file's ``alerts`` table;
        the defaults without one)."""
        from memdeck.core.overview.alerts import AlertSettings

        found = getattr(self.settings, "alerts", None)
        return found if found is not None else AlertSettings()

    def _toast_alert(self, alert: Any) -> None:
        """One alert as a toast (a pending write's age is told once per record)."""
        if alert.kind == "pending_age":
            pid = alert.data.get("id")
            if pid in self._aged_toasted:
                return
            self._aged_toasted.add(pid)
        self.notify(safe_plain(alert.message), title=safe_plain(alert.title, single_line=True),
                    severity=alert.severity, markup=False, timeout=8 if alert.severity == "error" else 6)

    def _arm_age_timer(self, snap: Any) -> None:
        """Wake once, when the oldest unreviewed pending write passes ``alerts.pending_age_hours``
        (its age grows with no file event to refresh on): a toast and the status line's badge."""
        from memdeck.core.overview.alerts import oldest_pending_age

        if self._age_timer is not None:
            self._age_timer.stop()
            self._age_timer = None
        now = self.clock()
        found = oldest_pending_age(snap, now) if snap is not None else None
        if found is None:
            return
        wait = self.alert_settings.pending_age_s - found[0]
        if wait > 0:
            self._age_timer = self.set_timer(wait + 0.5, self._age_due, name="pending-age")

    def _age_due(self) -> None:
        from memdeck.core.overview.alerts import pending_age_alert

        self._age_timer = None
        snap = self.snapshot
        if snap is None:
            return
        alert = pending_age_alert(snap, snap, self.alert_settings, now=self.clock())
        if alert is not None:
            self._toast_alert(alert)
        self.update_status_line()

    def _update_badges(self, snap: Any) -> None:
        """Counts on the tabs: drifted anchors, pending writes and flagged entries, memory hygiene
        findings (Capacity), frozen-memory differences (Context); each tab's tooltip says what
        its count is."""
        from .views.common import badge_counts

        counts = badge_counts(snap)
        if counts == self._badges_shown:
            hygiene = dict(getattr(snap, "hygiene_counts", None) or {})
            if hygiene != self._hygiene_shown and counts.get("capacity"):  # the same count of other kinds
                self._label_tabs(counts, {k: v for k, v in counts.items() if k != "capacity"})
            self._hygiene_shown = hygiene
            return  # a tab label set is a layout pass of the whole screen: only when a count changed
        self._hygiene_shown = dict(getattr(snap, "hygiene_counts", None) or {})
        self._label_tabs(counts, self._badges_shown)
        self._badges_shown = dict(counts)

    #: Below this many columns the tabs carry short titles (``keymap.SHORT_TITLES``): the eight
    #: full ones with their badges take ~95 columns, and a cut tab bar hides the last panels.
    NARROW_TABS_BELOW = 100

    def _label_tabs(self, counts: dict[str, int], shown: dict[str, int] | None = None) -> None:
        """Set the tab labels: ``4 Capacity 3`` (``4 Cap 3`` on a narrow terminal); only the tabs
        whose count changed, unless ``shown`` is None (all)."""
        from .keymap import SHORT_TITLES
        from .views.common import badge_tooltip

        narrow = bool(self.size.width) and self.size.width < self.NARROW_TABS_BELOW
        self._tabs_narrow = narrow
        try:
            tabs = self.query_one("#panels", TabbedContent)
        except Exception:  # noqa: BLE001 - not composed (shutdown)
            return
        for i, (pid, title) in enumerate(PANELS, 1):
            n = counts.get(pid, 0)
            if shown is not None and shown.get(pid, 0) == n:
                continue
            label = Text(f"{i} {SHORT_TITLES[pid] if narrow else title}")
            if n:
                label.append(f" {n}", "bold reverse red" if pid in ("anchors", "integrity") else "bold reverse yellow")
            try:
                tab = tabs.get_tab(pid)
            except Exception:  # noqa: BLE001 - the tab is not mounted (shutdown): nothing is shown to remember
                return
            set_tab_label(tab, label)
            tab.tooltip = badge_tooltip(pid, n, self.snapshot)

    def _toast_snapshot(self, alerts: list[Any], changes: Any, told: tuple[str, str] | None = None) -> None:
        """A refresh's toasts: its alerts, the constraint ledger's newest compaction, the changes."""
        for alert in alerts:
            self._toast_alert(alert)
        if told is not None:
            self.notify(safe_plain(told[1]), title=safe_plain(told[0], single_line=True), severity="warning",
                        markup=False, timeout=8)
        self._toast_changes(changes)

    def _toast_changes(self, changes: Any) -> None:
        """A warning toast for each entry or anchor removed or replaced by a writer other than
        memdeck, in words (:func:`.views.history.toast_text`: the entry or the anchor's text, never
        the JSON the history stores)."""
        from .views.history import toast_text

        for c in changes or ():
            if c.by_memdeck or c.op not in ("removed", "replaced", "anchor_removed", "anchor_changed"):
                continue
            title = "anchor changed" if c.kind == "anchor" else "memory changed"
            self.notify(toast_text(c), title=title, severity="warning", markup=False, timeout=8)

    # ── exact token counts (the Context panel asks; a worker loads the vocabulary once) ──

    def request_exact_counts(self, report: Any) -> None:
        """Count the report's prompt exactly with :attr:`exact_tokenizer` in a worker, once per prompt."""
        prompt = getattr(report, "prompt", None)
        if prompt is None or not self.exact_tokenizer:
            return
        key = (prompt.sha256, self.exact_tokenizer)
        if key in self.exact_counts or key in self._exact_pending:
            return
        self._exact_pending.add(key)
        self._exact_worker(report, key)

    @work(thread=True, exit_on_error=False, group="exact")
    def _exact_worker(self, report: Any, key: tuple[str, str]) -> None:
        from memdeck.core.context.report import exact_counts

        try:
            counts, reason = exact_counts(report, key[1])
        except Exception as exc:  # noqa: BLE001 - never a traceback: the panel says estimates only
            counts, reason = None, f"{type(exc).__name__}: {exc}"
        self.post_message(ExactCountsReady(key, counts, reason))

    def on_exact_counts_ready(self, message: ExactCountsReady) -> None:
        self._exact_pending.discard(message.key)
        if message.counts is None:
            self.exact_tokenizer = None  # unavailable: do not ask again; the header says estimates only
            return
        self.exact_counts[message.key] = message.counts
        if self.snapshot is not None and self.current_panel_id == "context":
            try:
                self.panel("context").show_snapshot(self.snapshot)
            except Exception as exc:  # noqa: BLE001 - a panel bug must not kill the app: logged
                self.log.error(f"context panel failed to render: {exc!r}")
        else:
            self._stale_panels.add("context")

    # ── the watcher (Posting: one exclusive worker that posts messages) ────

    def start_watchers(self) -> None:
        self._watch_worker()

    @work(exclusive=True, group="watcher", exit_on_error=False)
    async def _watch_worker(self) -> None:
        from .watcher import watch_home

        async for kinds in watch_home(self.home):
            self.post_message(SourcesChanged(kinds))

    def on_sources_changed(self, message: SourcesChanged) -> None:
        """A watched file changed: re-read config.yaml if it was one of them, then refresh."""
        if "config" in message.kinds:
            self.config = load_config(self.home)
        self.request_refresh()

    # ── selection helpers ───────────────────────────────────────────────

    def selection(self) -> Any:
        """What the current panel has selected (see ``Panel.selected``), or ``None`` (always
        while the overview shows: no key acts on a row nobody sees)."""
        if self.overview_shown:
            return None
        try:
            return self.panel().selected()
        except Exception:  # noqa: BLE001 - no panel or no selection: None
            return None

    # ── writes: key -> action -> worker -> core -> message -> toast ─────

    def run_write(self, action: str, op: Callable[[], Any], success: Callable[[Any], str] | str) -> None:
        """Run core operation ``op`` in a write worker and toast its outcome.

        ``success`` is the toast text, or a function of ``op``'s result that returns it. A
        read-only dashboard runs nothing: the outcome is a refusal (the keys are refused before
        this, in :meth:`run_action`; this is the last stop).
        """
        if self.read_only:
            self.post_message(WriteDone(action, WriteOutcome(False, self.READ_ONLY_MESSAGE, "read_only")))
            return
        self._write_worker(action, op, success)

    @work(thread=True, exclusive=True, exit_on_error=False, group="write")
    def _write_worker(self, action: str, op: Callable[[], Any], success: Callable[[Any], str] | str) -> None:
        from .actions import refusal_outcome, success_outcome

        try:
            result = op()
            text = success(result) if callable(success) else success
            outcome = success_outcome(result, text)
            target = getattr(result, "target", None) or (result.get("target") if isinstance(result, dict) else None)
            # only a write that changed a memory file is unseen by the running session (a reject
            # drops a staged record: the files are as they were)
            if outcome.ok and outcome.code != "noop" and target in ("memory", "user") \
                    and getattr(result, "changed", False) is True:
                from .views.context import write_note

                note = write_note(self.snapshot, target)
                if note:
                    outcome.detail.append(note)
        except Refused as exc:
            outcome = refusal_outcome(exc)
        except MemdeckError as exc:
            outcome = WriteOutcome(False, safe_plain(str(exc)), "error")
        except Exception as exc:  # noqa: BLE001 - never a traceback in the TUI
            outcome = WriteOutcome(False, safe_plain(f"{type(exc).__name__}: {exc}"), "error")
        self.post_message(WriteDone(action, outcome))

    def on_write_done(self, message: WriteDone) -> None:
        o = message.outcome
        body = o.message if not o.detail else o.message + "\n" + "\n".join(o.detail)
        action = message.action.replace("_", " ")  # "approve clean", never the action's id "approve_clean"
        if o.ok:
            severity = "warning" if o.code == "noop" else "information"
            self.notify(body, title=action, severity=severity, markup=False, timeout=5)
        else:
            title = f"{action}: refused" if o.code not in ("", "error") else f"{action}: failed"
            self.notify(body, title=title, severity="error", markup=False, timeout=8)
        self.request_refresh(force=True)

    # ── recall (its own worker, re-run on each query) ────────────────────

    def run_recall(self, query: str) -> None:
        """Preview recall for ``query`` in a worker; the Recall panel shows the result.

        A newer query supersedes the running one: the generation moves on (under the lock the
        worker posts under, so the old query posts nothing after this), then the old query's
        statement is interrupted inside SQLite."""
        self._recall_shown = (query, None)  # the Recall panel shows it when it is mounted later
        if "recall" in self._panels_ready:
            try:
                self.query_one("#panel-recall").query_text = query
            except Exception:  # noqa: BLE001 - the panel is going away: it is shown the query when mounted
                pass
        else:
            self._mount_panel("recall")
        with self._recall_lock:
            self._recall_generation += 1
            generation = self._recall_generation
        db = getattr(self, "_recall_db", None)
        if db is not None:
            interrupt = getattr(db, "interrupt", None)
            if callable(interrupt):
                interrupt()  # the superseded query stops inside SQLite, not after it finishes
        self._recall_worker(query, generation)

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall")
    def _recall_worker(self, query: str, generation: int = 0) -> None:
        """Recall on its own read-only connection, so a long history build on the refresh
        worker's connection never blocks the Recall panel. Posts one ``RecallReady(final=False)``
        per newest-first page, then the Hermes-ranked result (``final=True``); a superseded
        query (:meth:`run_recall`) posts nothing more."""
        from memdeck.core.overview.recall_preview import stream_recall

        def superseded() -> bool:
            return self._recall_generation != generation

        def post(result: Any, error: str | None, final: bool) -> bool:
            with self._recall_lock:
                if superseded():
                    return False
                self.post_message(RecallReady(query, result, error, final=final))
                return True

        try:
            if getattr(self, "_recall_db", None) is None:
                from memdeck.core.overview.snapshot import open_statedb

                self._recall_db = open_statedb(self.home)
            live = getattr(self.snapshot, "live_session", None)
            for result, error in stream_recall(self._recall_db, query, current_session_id=getattr(live, "id", None),
                                               cancelled=superseded):
                if not post(result, error, not getattr(result, "partial", False)):
                    return
        except Exception as exc:  # noqa: BLE001 - never a traceback in the TUI: the panel shows the error
            post(None, f"{type(exc).__name__}: {exc}", True)

    def on_recall_requested(self, message: RecallRequested) -> None:
        self.run_recall(message.query)

    def on_recall_ready(self, message: RecallReady) -> None:
        self._recall_shown = (message.query, message)
        if "recall" not in self._panels_ready:
            return  # shown when the panel is mounted (_panel_mounted)
        try:
            self.query_one("#panel-recall").show_recall(message.query, message.result, message.error)
        except Exception as exc:  # noqa: BLE001 - a panel bug must not kill the app: logged
            self.log.error(f"recall render failed: {exc!r}")

    # ── profile switching ───────────────────────────────────────────────

    def switch_home(self, home: HermesHome) -> None:
        """Show another profile: new config, new database, watchers re-armed, fresh snapshot."""
        self._close_databases()
        self._recall_db = None
        self._reader = None
        self.home = home
        self.home_label = None
        self.config = load_config(home)
        self.session_id = None
        self.snapshot = None
        if self.watch_enabled:
            self.start_watchers()
        self.update_status_line()
        self.request_refresh(force=True)

    async def action_quit(self) -> None:
        self.workers.cancel_group(self, "watcher")
        self.workers.cancel_group(self, "history")
        self._first_paint_shown.set()
        for db in (self._db, getattr(self, "_recall_db", None)):
            interrupt = getattr(db, "interrupt", None)
            if callable(interrupt):
                interrupt()  # a long query in a worker stops now, so quitting is prompt
        self.exit()

    def on_unmount(self) -> None:
        self._first_paint_shown.set()  # a build waiting for the first paint goes on (and stops at once)
        self._close_databases()

    def _close_databases(self) -> None:
        """Close the read-only state.db connections and the held memdeck.db one (state.db's
        -wal/-shm are Hermes': never removed, see core.sessions.side_files)."""
        for db in (self._db, getattr(self, "_recall_db", None), self._deck):
            close = getattr(db, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001 - closing: a database that will not close must not stop the exit
                    pass


def make_app(
    home: HermesHome | str | os.PathLike[str],
    *,
    config: Config | None = None,
    watch: bool = True,
    demo: bool = False,
    clock: Clock | None = None,
    now: float | None = None,
    session_id: str | None = None,
    home_label: str | None = None,
    user_settings: bool = False,
    head_start: HeadStart | None = None,
    read_only: bool = False,
    settings_file: Path | None = None,
    layout: str | None = None,
) -> MemdeckApp:
    """Build the dashboard for ``home`` (the factory the CLI and the tests use).

    Args:
        home: a :class:`core.home.HermesHome` or a home directory path.
        config: the home's config (default: ``load_config(home)``).
        watch: run the watchfiles workers (tests and snapshots pass False).
        demo: mark the status line as a demo home.
        clock: a function returning epoch seconds (default ``time.time``).
        now: a fixed "now" in epoch seconds (shorthand for ``clock=lambda: now``; for stable
            snapshots).
        session_id: the session shown first (default: the live session).
        home_label: text shown instead of the home's path in the status line (snapshots).
        user_settings: apply the person's settings file (keymap, theme; see
            :mod:`memdeck.tui.settings`); the ``memdeck`` command does, tests opt in.
        head_start: the first refresh, started before Textual was imported
            (:class:`memdeck.tui.head_start.HeadStart`, for the same home and config); the
            first refresh adopts what it built.
        read_only: refuse every write action with a toast, and say so in the footer and the
            status line (``memdeck --read-only``, ``memdeck serve --read-only``).
        settings_file: the settings file to read with ``user_settings`` (``memdeck --config``);
            None: ``MEMDECK_CONFIG``, else the default places (:mod:`memdeck.tui.settings`).
        layout: ``"overview"`` or ``"panels"`` at launch (``memdeck --layout``); None: the
            settings file's ``layout`` (with ``user_settings``), else the panels.
    """
    if not isinstance(home, HermesHome):
        home = HermesHome(Path(home))
    if now is not None and clock is None:
        fixed = float(now)
        clock = lambda: fixed  # noqa: E731
    return MemdeckApp(home, config=config, watch=watch, demo=demo, clock=clock, session_id=session_id,
                      home_label=home_label, user_settings=user_settings, head_start=head_start,
                      read_only=read_only, settings_file=settings_file, layout=layout)
