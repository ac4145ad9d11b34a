"""The Integrity panel: the shown session's integrity score (large), its facts, Hermes'
health line, the score sparkline, the anchor-state summary and the next reminder block."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Digits, Static

from ...views import common, integrity
from ..readout import Readout
from .base import Panel

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class IntegrityPanel(Panel):
    """The shown session's integrity score (large), its sparkline, floor and last compaction."""

    DEPENDS = ("session_id", "audit", "compactions", "integrity_history", "db_status", "live_session",
               "session_anchors", "reminder_block", "hermes_profile")
    RELATIVE_TIMES = True  # "compacted ... (12 min ago)"

    can_focus = True

    def compose(self) -> ComposeResult:
        yield from self.compose_banner()
        with Horizontal(id="integrity-top"):
            with Vertical(id="score-box"):
                yield Static(Text("integrity score", style="dim"), id="score-label")
                yield Digits("--", id="score")
            yield Readout(id="integrity-facts")
        yield Readout(id="integrity-health")
        yield Static(Text("score across compactions (0-100, oldest → newest)", style="dim"), id="spark-label")
        yield Readout(id="sparkline")
        yield Readout(id="integrity-anchors")
        yield Readout(id="integrity-reminder")

    def primary(self) -> Any:
        return self

    def show_snapshot(self, snap: DeckSnapshot) -> None:
        self.show_banner(snap.error_for("integrity"))
        score = integrity.current_score(snap)
        floor = int(snap.config.memlock.alert_floor)
        digits = self.query_one("#score", Digits)
        digits.update("--" if score is None else f"{score}")
        low = score is not None and score < floor
        self.set_class(low, "below-floor")
        self.set_class(score is not None and not low, "above-floor")
        self.query_one("#integrity-facts", Readout).show(integrity.integrity_facts(snap, self.now))
        width = max(10, (self.size.width or 60) - 2)
        self.query_one("#sparkline", Readout).show(integrity.sparkline(snap.integrity_history, floor, width))
        self.query_one("#integrity-anchors", Readout).show(integrity.anchor_summary(snap))
        self.query_one("#integrity-reminder", Readout).show(common.reminder_preview(snap))
        self.query_one("#integrity-health", Readout).show(integrity.hermes_health(snap))

