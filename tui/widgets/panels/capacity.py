"""The Capacity panel: MEMORY.md / USER.md usage bars, each file's usage over time (two charts,
``g`` shows or hides them), the entries with sizes and threat flags, the next session's frozen
prompt block."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.containers import Horizontal

from memdeck.core.home import TARGETS

from ...keymap import panel_bindings
from ...views import capacity, charts
from ...views.capacity import EntryRow
from ..chart import DeckChart
from ..readout import Readout
from .base import Selection, TableDetailPanel

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class CapacityPanel(TableDetailPanel):
    """MEMORY.md / USER.md usage bars, their usage over time, the entries with sizes and threat
    flags, the next session's frozen prompt block.

    The charts show by default when the terminal has :attr:`CHART_ROWS` rows or more; ``g``
    (:meth:`toggle_charts`) shows or hides them whatever its size. Hidden, they are neither
    given data nor drawn. A store switched off (``memory.memory_enabled: false``) says so."""

    DEPENDS = ("memory", "findings", "prompt_blocks", "archived", "usage_history", "provider")
    BINDINGS = panel_bindings("capacity")
    #: the terminal height from which the usage charts show without ``g``
    CHART_ROWS = 36
    #: the person's choice (``g``); None: by the terminal's height
    charts_wanted: bool | None = None

    NAME = SOURCE = "capacity"
    COLUMNS = [("target", "target"), ("n", "#"), ("id", "id"), ("chars", "chars"), ("flags", "flags"), ("entry", "entry")]
    # an external memory write changes an entry's length, often the widest one, and the prompt
    # block's wrapped height by a line: neither lays out the screen again (issue 38 #2)
    STEADY_COLUMNS = frozenset(key for key, _ in COLUMNS)
    STEADY_DETAIL = True
    empty_detail = None  # the prompt block is shown even without a selected entry

    def compose_header(self) -> ComposeResult:
        yield Readout(id="usage-memory", classes="usage", fits_width=True)
        yield Readout(id="usage-user", classes="usage", fits_width=True)
        with Horizontal(id="usage-charts"):
            for target in TARGETS:
                yield DeckChart(id=f"usage-chart-{target}")

    @property
    def charts_shown(self) -> bool:
        """Whether the usage charts are on screen: the person's choice (``g``), else whether the
        terminal has :attr:`CHART_ROWS` rows."""
        if self.charts_wanted is not None:
            return self.charts_wanted
        return self.app.size.height >= self.CHART_ROWS

    def toggle_charts(self) -> None:
        """``g``: show the usage charts if they are hidden, else hide them."""
        self.charts_wanted = not self.charts_shown
        if self._snap is not None:
            self.show_header(self._snap)
        else:
            self.query_one("#usage-charts").display = self.charts_shown
            self.set_class(self.charts_shown, "-charts")

    def show_header(self, snap: DeckSnapshot) -> None:
        width = max(20, (self.size.width or 78) - 2)
        for target in TARGETS:
            self.query_one(f"#usage-{target}", Readout).show(capacity.usage_bar(snap, target, width))
        shown = self.charts_shown
        self.query_one("#usage-charts").display = shown
        self.set_class(shown, "-charts")  # the detail pane gives the charts room (app.tcss)
        if shown:  # hidden: no data given, nothing drawn
            for target, spec in charts.usage_charts(snap).items():
                self.query_one(f"#usage-chart-{target}", DeckChart).show(spec)

    def on_resize(self) -> None:
        """The bars are drawn to the width, the charts shown by the height: redraw them when the
        terminal grows or shrinks."""
        if self._snap is not None:
            self.show_header(self._snap)

    def rows_for(self, snap: DeckSnapshot) -> list[EntryRow]:
        return capacity.entry_rows(snap)

    def haystack(self, r: EntryRow) -> Iterable[Any]:
        return (r.text, r.target)

    def detail_for(self, r: EntryRow | None, snap: DeckSnapshot) -> Any:
        return capacity.capacity_detail(snap, r)

    def selection_for(self, r: EntryRow) -> Selection:
        return Selection("entry", r.key, target=r.target, text=r.text, obj=r.entry)

