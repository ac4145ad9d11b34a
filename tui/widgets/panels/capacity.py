"""The Capacity panel: MEMORY.md / USER.md usage bars, the entries with sizes and threat
flags, the next session's frozen prompt block."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult

from ...views import capacity
from ...views.capacity import EntryRow
from ..readout import Readout
from .base import Selection, TableDetailPanel

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class CapacityPanel(TableDetailPanel):
    """MEMORY.md / USER.md usage bars, the entries with sizes and threat flags, the next
    session's frozen prompt block."""

    DEPENDS = ("memory", "findings", "prompt_blocks", "archived", "provider")

    NAME = SOURCE = "capacity"
    COLUMNS = [("target", "target"), ("n", "#"), ("id", "id"), ("chars", "chars"), ("flags", "flags"), ("entry", "entry")]
    empty_detail = None  # the prompt block is shown even without a selected entry

    def compose_header(self) -> ComposeResult:
        yield Readout(id="usage-memory", classes="usage", fits_width=True)
        yield Readout(id="usage-user", classes="usage", fits_width=True)

    def show_header(self, snap: DeckSnapshot) -> None:
        width = max(20, (self.size.width or 78) - 2)
        for target in ("memory", "user"):
            self.query_one(f"#usage-{target}", Readout).show(capacity.usage_bar(snap, target, width))

    def on_resize(self) -> None:
        """The bars are drawn to the width: redraw them when the terminal grows or shrinks."""
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

