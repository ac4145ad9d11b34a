"""The overview layout's widget: :func:`memdeck.tui.views.overview.overview_text` in a
:class:`.readout.Readout` (repainted only when the text changed), and a hint line."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from .readout import Readout


class OverviewPane(Vertical):
    """One screen of everything; ``show_snapshot`` draws a snapshot at the pane's width."""

    DEFAULT_CSS = """
    OverviewPane { height: 1fr; padding: 1 1 0 1; display: none; }
    OverviewPane > #overview-body { height: auto; }
    OverviewPane > #overview-hint { height: 1; margin-top: 1; }
    """

    can_focus = False

    def compose(self) -> ComposeResult:
        from ..views.overview import overview_hint

        yield Readout("", id="overview-body", fits_width=True)
        yield Static(overview_hint(), id="overview-hint")

    def show_snapshot(self, snap: Any, now: float) -> bool:
        """Draw ``snap`` at ``now`` (epoch s); False when the text was already shown."""
        from ..views.overview import overview_text

        width = (self.content_size.width or self.app.size.width - 2) or 78
        return self.query_one("#overview-body", Readout).show(overview_text(snap, now, width, self.panel_keys()))

    def panel_keys(self) -> dict[str, str]:
        """Panel id -> the key that shows it now (``memdeck.panel.<id>``, a user keymap applied)."""
        from ..keymap import PANEL_IDS

        found: dict[str, str] = {}
        for bindings in self.app._bindings.key_to_bindings.values():
            for b in bindings:
                if b.id and b.id.startswith("memdeck.panel.") and b.id[14:] not in found:
                    found[b.id[14:]] = self.app.get_key_display(b)
        keymap = getattr(self.app, "_keymap", {}) or {}
        for pid in PANEL_IDS:
            moved = keymap.get(f"memdeck.panel.{pid}")
            if moved:
                found[pid] = moved.split(",")[0]
        return found
