"""What every panel shares: the :class:`Panel` base (banner, row filter, redraw only when its
snapshot fields changed), :class:`TableDetailPanel` (a filterable table with a detail pane),
the error :class:`Banner` and the :class:`Selection` a key applies to.

A panel never reads or writes a file: it gets a snapshot in :meth:`Panel.show_snapshot`,
shows a banner when its sources failed, and reports what is selected (:meth:`Panel.selected`)
so the app's actions know what a key applies to. Every piece of data text goes through
:func:`tui.safe_text.safe_text`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import DataTable, Input, Static

from ...failsafe import toast_on_error
from ...messages import RowActionsRequested
from ...safe_text import safe_text
from ..readout import Readout
from ..table import DeckTable

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class SteadyInput(Input):
    """An ``Input`` whose cursor does not blink, and whose footer says how to leave it.

    Textual's blinking cursor is a 0.5 s timer that wakes the app twice a second for as long as
    the box has focus: a dashboard left on its Recall panel would never be idle. The panels'
    query and filter boxes use this one.

    While a box has focus, every printable key types into it, so the footer hides ``q Quit`` and
    the other one-letter keys: it shows ``esc`` (leave the box; a filter box is cleared) and
    ``ctrl+q`` (quit) instead, so a newcomer on Recall is never stuck (issue 22 #13)."""

    BINDINGS = [
        Binding("escape", "leave", "Leave box", id="memdeck.leave_box"),
        Binding("ctrl+q", "app.quit", "Quit", id="memdeck.quit_in_box", priority=True),
    ]

    cursor_blink = reactive(False, init=False)

    def action_leave(self) -> None:
        """Leave the box: the panel around it clears its filter or focuses its results."""
        for node in self.ancestors:
            if isinstance(node, Panel):
                node.clear_filter()
                return


@dataclass(frozen=True)
class Selection:
    """What a key applies to.

    Attributes:
        kind: ``"entry"`` (a memory entry), ``"anchor"``, ``"pending"`` (a pending write),
            ``"archived"`` (an archive row), ``"event"`` (a drift-log event).
        key: the row key.
        target: ``"memory"``/``"user"`` for entries and pending writes.
        text: the entry / anchor text.
        anchor_id, session_id, pending_id: ids when they apply.
        obj: the core object behind the row.
    """

    kind: str
    key: str
    target: str | None = None
    text: str | None = None
    anchor_id: str | None = None
    session_id: str | None = None
    pending_id: str | None = None
    obj: Any = None


class Banner(Static):
    """A one-line red banner saying which source of this panel failed (hidden when fine)."""

    DEFAULT_CSS = "Banner { display: none; }"

    def set(self, text: str | None) -> None:
        if text:
            self.update(safe_text("⚠ " + text, single_line=True))
            self.display = True
        else:
            self.display = False


def focus_now(widget: Any) -> None:
    """Focus ``widget`` before the next key is handled.

    ``Widget.focus()`` defers the change with ``call_later``, so keys already queued behind
    ``/`` (a fast typist, a paste) would still go to the table and fire its bindings; setting
    the screen's focus directly does not wait.
    """
    try:
        widget.screen.set_focus(widget)
    except Exception:  # noqa: BLE001 - no screen yet: the deferred focus
        widget.focus()


class Panel(Vertical):
    """Base of the panels.

    ``DEPENDS`` names the :class:`DeckSnapshot` fields a panel draws; when none of them changed
    since it was last drawn the app does not draw it again (a live home refreshes every few
    seconds; most refreshes touch one or two panels). Empty: always drawn.
    """

    can_focus = False
    filter_text: str = ""
    DEPENDS: tuple[str, ...] = ()
    #: True when the panel shows times relative to the clock ("12 min ago"): while it is shown,
    #: the app calls :meth:`retime` once a minute (``MemdeckApp.RETIME_S``), and never while it is hidden
    RELATIVE_TIMES: bool = False
    _drawn: tuple[Any, ...] | None = None

    def retime(self, snap: DeckSnapshot) -> None:
        """Draw ``snap`` again for the clock's new time: only the cells and lines whose words
        changed are repainted (:class:`DeckTable` updates cells in place, :class:`Readout` skips
        unchanged text), the cursor and the scroll stay."""
        self.show_snapshot(snap)

    def drawn_from(self, snap: DeckSnapshot) -> tuple[Any, ...] | None:
        """What this panel draws from ``snap`` (compared with ``==`` to skip a redraw)."""
        if not self.DEPENDS:
            return None
        return (snap.config, snap.errors, getattr(snap, "notices", None), snap.partial,
                *(getattr(snap, f, None) for f in self.DEPENDS))

    def needs_drawing(self, snap: DeckSnapshot) -> bool:
        """False when ``snap`` holds the same data for this panel as the one last drawn."""
        key = self.drawn_from(snap)
        try:
            same = key is not None and self._drawn is not None and key == self._drawn
        except Exception:  # noqa: BLE001 - a value that cannot be compared is drawn
            same = False
        self._drawn = key
        return not same
    BINDINGS = [Binding("escape", "clear_filter", "Clear filter", show=False, id="memdeck.clear_filter")]

    def action_clear_filter(self) -> None:
        self.clear_filter()

    def compose_banner(self) -> ComposeResult:
        yield Banner(id=f"{self.id}-banner", classes="banner")

    def compose_filter(self) -> ComposeResult:
        yield SteadyInput(placeholder="filter rows (esc clears)", id=f"{self.id}-filter", classes="filter")

    def show_banner(self, text: str | None) -> None:
        try:
            self.query_one(Banner).set(text)
        except Exception:  # noqa: BLE001 - not composed (start-up, shutdown): no banner to set
            pass

    def show_snapshot(self, snap: DeckSnapshot) -> None:
        """Draw ``snap`` (each panel its own fields)."""
        raise NotImplementedError

    def selected(self) -> Selection | None:
        return None

    def primary(self) -> Any:
        try:
            return self.query_one(DeckTable)
        except Exception:  # noqa: BLE001 - not composed: no table
            return None

    def focus_primary(self) -> None:
        w = self.primary()
        if w is not None:
            w.focus()

    # filter
    def _filter_box(self) -> Input | None:
        try:
            return self.query_one(f"#{self.id}-filter", Input)
        except Exception:  # noqa: BLE001 - not composed: no filter box
            return None

    def open_filter(self) -> None:
        box = self._filter_box()
        if box is None:
            return
        box.display = True
        focus_now(box)

    @on(Input.Changed, ".filter")
    @toast_on_error
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        snap = getattr(self.app, "snapshot", None)
        if snap is not None:
            self.show_snapshot(snap)

    @on(Input.Submitted, ".filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.focus_primary()

    def clear_filter(self) -> None:
        box = self._filter_box()
        if box is None:
            return
        box.value = ""
        box.display = False
        self.filter_text = ""
        self.focus_primary()

    def matches(self, *texts: Any) -> bool:
        f = self.filter_text.strip().lower()
        if not f:
            return True
        return any(f in str(t).lower() for t in texts if t is not None)

    @property
    def now(self) -> float:
        clock = getattr(self.app, "clock", None)
        return clock() if callable(clock) else time.time()


class TableDetailPanel(Panel):
    """A filterable :class:`DeckTable` of rows with a detail pane for the row under the cursor.

    Subclasses give the table's ``COLUMNS`` and the snapshot ``SOURCE`` whose error shows in the
    banner, and implement :meth:`rows_for` (every row, each with ``key`` and ``cells``),
    :meth:`haystack` (the texts the filter searches), :meth:`detail_for` and
    :meth:`selection_for`. Widget ids derive from ``NAME``: ``{NAME}-table``,
    ``{NAME}-detail``.
    """

    NAME = ""
    SOURCE = ""
    COLUMNS: Sequence[tuple[str, str]] = ()
    #: columns whose width never shrinks while the table is shown (:class:`DeckTable` ``steady``)
    STEADY_COLUMNS: frozenset[str] = frozenset()
    #: a refresh draws the detail in the height it has when it needs no more lines (no layout
    #: pass for a line fewer; :meth:`Readout.show` ``keep_height``); a new row under the cursor
    #: lays out as before
    STEADY_DETAIL = False
    #: shown (dim) in the detail pane when no row is selected; ``None`` asks
    #: :meth:`detail_for` with ``row=None`` instead.
    empty_detail: str | None = ""

    _rows: Sequence[Any] = ()
    _snap: DeckSnapshot | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_banner()
        yield from self.compose_header()
        yield from self.compose_filter()
        yield DeckTable(self.COLUMNS, id=f"{self.NAME}-table", steady=self.STEADY_COLUMNS)
        with VerticalScroll(id=f"{self.NAME}-detail-box", classes="detail"):
            yield Readout(id=f"{self.NAME}-detail")

    def compose_header(self) -> ComposeResult:
        """Widgets between the banner and the filter (none by default)."""
        yield from ()

    def show_header(self, snap: DeckSnapshot) -> None:
        """Update what :meth:`compose_header` made (nothing by default)."""

    def rows_for(self, snap: DeckSnapshot) -> list[Any]:
        raise NotImplementedError

    def haystack(self, row: Any) -> Iterable[Any]:
        raise NotImplementedError

    def detail_for(self, row: Any, snap: DeckSnapshot) -> Any:
        raise NotImplementedError

    def selection_for(self, row: Any) -> Selection | None:
        raise NotImplementedError

    def show_snapshot(self, snap: DeckSnapshot) -> None:
        self.show_banner(snap.error_for(self.SOURCE))
        self._snap = snap
        self.show_header(snap)
        self._rows = [r for r in self.rows_for(snap) if self.matches(*self.haystack(r))]
        self.query_one(DeckTable).sync([(r.key, r.cells) for r in self._rows])
        self._show_detail(keep_height=self.STEADY_DETAIL)

    def _current(self) -> Any:
        key = self.query_one(DeckTable).selected_key
        for r in self._rows:
            if r.key == key:
                return r
        return None

    @toast_on_error
    def _show_detail(self, keep_height: bool = False) -> None:
        snap = self._snap
        if snap is None:
            return
        r = self._current()
        if r is None and self.empty_detail is not None:
            out: Any = Text(self.empty_detail, style="dim")
        else:
            out = self.detail_for(r, snap)
        self.query_one(f"#{self.NAME}-detail", Readout).show(out, keep_height=keep_height)

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    @on(DataTable.RowSelected)
    def _row_chosen(self, event: DataTable.RowSelected) -> None:
        """Enter (or a click) on a row: ask the app for the actions that row allows."""
        event.stop()
        sel = self.selected()
        if sel is not None:
            self.post_message(RowActionsRequested(sel))

    def selected(self) -> Selection | None:
        r = self._current()
        return None if r is None else self.selection_for(r)

    @property
    def rows(self) -> list[Any]:
        """The rows shown now (after the filter), top to bottom."""
        return list(self._rows)


