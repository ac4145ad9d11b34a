"""The Context panel: what the running agent sees. The followed session's frozen memory against the
files, its stored prompt section by section, what the next turn adds, the next compaction, and the
other open sessions with their differences. One key writes: ``b`` queues a rebuild of the selected
open session's system prompt (else the followed one's), by Hermes at its next turn, after a dialog
that states the cache cost first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult

from ...keymap import panel_bindings
from ...views import context
from ...views.context import ContextRow
from ..readout import Readout
from .base import Selection, TableDetailPanel

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot


class ContextPanel(TableDetailPanel):
    """The followed session's view of memory and its prompt, by section (one row each)."""

    DEPENDS = ("agent_view", "taken_at")
    BINDINGS = panel_bindings("context")  # b: rebuild a session's prompt (asks first, states the cost)

    NAME = SOURCE = "context"
    COLUMNS = [("part", "part"), ("chars", "chars"), ("tokens", "~tokens"), ("exact", "exact"), ("where", "where")]
    empty_detail = None

    def compose_header(self) -> ComposeResult:
        yield Readout(id="context-head", classes="usage", fits_width=True)

    def _exact(self) -> Any:
        return getattr(self.app, "exact_counts", None)

    def show_header(self, snap: DeckSnapshot) -> None:
        width = max(20, (self.size.width or 78) - 2)
        self.query_one("#context-head", Readout).show(context.header(snap, self._exact(), width))
        request = getattr(self.app, "request_exact_counts", None)
        view = snap.agent_view
        if callable(request) and view is not None and view.report is not None:
            request(view.report)

    def on_resize(self) -> None:
        """The header is cut to the width: redraw it when the terminal grows or shrinks."""
        if self._snap is not None:
            self.query_one("#context-head", Readout).show(
                context.header(self._snap, self._exact(), max(20, (self.size.width or 78) - 2)))

    def rows_for(self, snap: DeckSnapshot) -> list[ContextRow]:
        return context.context_rows(snap, self._exact())

    def haystack(self, r: ContextRow) -> Iterable[Any]:
        return (r.name, r.kind, *(c.plain for c in r.cells))

    def detail_for(self, r: ContextRow | None, snap: DeckSnapshot) -> Any:
        return context.context_detail(snap, r, self._exact())

    def selection_for(self, r: ContextRow) -> Selection:
        return Selection("context", r.key, session_id=r.name if r.kind == "session" else None, obj=r.obj)
