"""The Drift log panel: every audit of the shown session, newest first; the selected one
explained below (its compaction cut, the anchors it lost)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...keymap import panel_bindings
from ...views import constraints as ledger_view
from ...views import drift
from ...views.drift import DriftRow
from ..readout import Readout
from .base import Selection, TableDetailPanel

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from memdeck.core.overview.snapshot import DeckSnapshot


class DriftPanel(TableDetailPanel):
    """Every audit (MemLock drift log), newest first; the selected one explained below."""

    DEPENDS = ("session_id", "drift_log", "compactions", "audit", "constraints")
    BINDINGS = panel_bindings("drift")  # L: the constraint ledger of the selected compaction
    RELATIVE_TIMES = True  # "audit at ... (12 min ago)"

    NAME = SOURCE = "drift"
    COLUMNS = [("time", "time"), ("score", "score"), ("lost", "lost"), ("casualties", "casualties")]
    empty_detail = "no audits recorded for this session yet"

    def compose_header(self) -> ComposeResult:
        yield Readout(id="drift-ledger")

    def show_header(self, snap: DeckSnapshot) -> None:
        line = ledger_view.ledger_line(snap)
        box = self.query_one("#drift-ledger", Readout)
        box.display = line is not None
        if line is not None:
            box.show(line)

    def rows_for(self, snap: DeckSnapshot) -> list[DriftRow]:
        return drift.drift_rows(snap, self.now)

    def haystack(self, r: DriftRow) -> Iterable[Any]:
        return (*r.casualties, r.when)

    def detail_for(self, r: DriftRow, snap: DeckSnapshot) -> Any:
        return drift.drift_detail(snap, r, self.now)

    def selection_for(self, r: DriftRow) -> Selection:
        return Selection("event", r.key, obj=r.event)

