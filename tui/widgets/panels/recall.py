"""The Recall panel: a query box; the results grouped by session lineage; the next reminder
block; the <memory-context> fence preview. A query is posted up as :class:`RecallRequested`;
the app answers with :meth:`RecallPanel.show_recall`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Static

from ...failsafe import toast_on_error
from ...messages import RecallRequested
from ...views import common, recall
from ..readout import Readout
from .base import Panel, SteadyInput, focus_now

if TYPE_CHECKING:
    from memdeck.core.overview.recall_preview import RecallPreview
    from memdeck.core.overview.snapshot import DeckSnapshot


TYPING_PAUSE_SECONDS = 0.2
"""A query runs once typing pauses this long (Enter runs it at once); a newer one supersedes it."""


class RecallPanel(Panel):
    """A query box; results grouped by session; the next reminder block; the fence preview.

    The query runs as you type (after a :data:`TYPING_PAUSE_SECONDS` pause) and on Enter."""

    query_text: str = ""
    _typing_timer: Any = None
    _snap: DeckSnapshot | None = None
    _result: RecallPreview | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_banner()
        yield SteadyInput(placeholder="recall: type a query (results as you type)", id="recall-query")
        with VerticalScroll(id="recall-results-box"):
            yield Static(recall.empty_recall(bool(getattr(self.app, "demo", False))), id="recall-results")
        with Horizontal(id="recall-previews"):
            with VerticalScroll(classes="preview"):
                yield Readout(id="recall-reminder")
            with VerticalScroll(classes="preview"):
                yield Readout(id="recall-fence")

    def primary(self) -> Any:
        # while the panel says "type a query", typing must land in the query box
        if not self.query_text.strip():
            return self.query_one("#recall-query", Input)
        return self.query_one("#recall-results-box")

    def open_filter(self) -> None:
        focus_now(self.query_one("#recall-query", Input))

    def clear_filter(self) -> None:
        focus_now(self.query_one("#recall-results-box"))  # escape leaves the query box

    def show_snapshot(self, snap: DeckSnapshot) -> None:
        self.show_banner(snap.error_for("recall"))
        self._snap = snap
        self.query_one("#recall-reminder", Readout).show(common.reminder_preview(snap, title="reminder block MemLock would inject next"))
        self._show_fence()

    def _show_fence(self) -> None:
        self.query_one("#recall-fence", Readout).show(recall.fence_preview(self._result))

    @on(Input.Changed, "#recall-query")
    def _typed(self, event: Input.Changed) -> None:
        self._stop_typing_timer()
        if event.value != self.query_text:
            self._typing_timer = self.set_timer(TYPING_PAUSE_SECONDS, lambda: self._run_query(event.value))

    @on(Input.Submitted, "#recall-query")
    def _submitted(self, event: Input.Submitted) -> None:
        self._stop_typing_timer()
        self._run_query(event.value)

    def _stop_typing_timer(self) -> None:
        if self._typing_timer is not None:
            self._typing_timer.stop()
            self._typing_timer = None

    @toast_on_error
    def _run_query(self, query: str) -> None:
        self._typing_timer = None
        self.query_text = query
        self.query_one("#recall-results", Static).update(Text("searching…", style="dim"))
        self.post_message(RecallRequested(query))

    @toast_on_error
    def show_recall(self, query: str, result: RecallPreview | None, error: str | None) -> None:
        """Show the answer to ``query`` (ignored when the box holds a newer query): the hits,
        the fence they make, and ``error`` as the banner."""
        if query != self.query_text:
            return
        self._result = result
        self.show_banner(error)
        demo = bool(getattr(self.app, "demo", False))
        self.query_one("#recall-results", Static).update(recall.recall_results(result, query, self.now, demo=demo))
        self._show_fence()

