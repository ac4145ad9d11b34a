"""The rebuild dialog (``b`` in the Context panel, issue 33 #2): the cost first, then the question.

The cost is the session's stored prompt in tokens by Hermes' own estimator
(:func:`memdeck.core.requests.rebuild.rebuild_cost`, read in a worker: the UI never waits on
state.db): what the provider writes to its prompt cache again, once. ``y`` queues the request only
once the cost is shown; a refusal (an ended or unknown session, state.db unreadable) is shown
instead and ``y`` does nothing.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Static

from ..safe_text import safe_text
from .modal import Dialog


class CostReady(Message):
    """The worker read the cost (a :class:`memdeck.core.requests.rebuild.RebuildCost`) or a refusal."""

    def __init__(self, cost: Any, error: str | None = None) -> None:
        super().__init__()
        self.cost = cost
        self.error = error


class RebuildScreen(Dialog[Any]):
    """Dismisses with the :class:`~memdeck.core.requests.rebuild.RebuildCost` to queue, or None."""

    BINDINGS = [
        Binding("y", "confirm", "Rebuild", id="rebuild.yes"),
        Binding("n,escape", "cancel", "No", id="rebuild.no"),
        Binding("left,right", "app.focus_next", show=False),
    ]

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id
        self.cost: Any = None

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="dialog"):
            yield Static(Text("Rebuild the system prompt", style="bold"), classes="dialog-title")
            body = Text("reading the prompt's size in session ")
            body.append_text(safe_text(self.session_id, single_line=True, style="bold"))
            body.append("…", "dim")
            yield Static(body, id="rebuild-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Rebuild (y)", variant="error", id="rebuild-yes", compact=True, disabled=True)
                yield Button("Cancel (n)", variant="default", id="rebuild-no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#rebuild-no", Button).focus()
        self._read_cost()

    @work(thread=True, exclusive=True, exit_on_error=False, group="rebuild-cost")
    def _read_cost(self) -> None:
        from memdeck.core.requests.rebuild import rebuild_cost

        app: Any = self.app
        try:
            self.post_message(CostReady(rebuild_cost(app.home, self.session_id)))
        except Exception as exc:  # noqa: BLE001 - a refusal or an unreadable state.db: shown, never a crash
            self.post_message(CostReady(None, str(getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}")))

    def on_cost_ready(self, message: CostReady) -> None:
        body = self.query_one("#rebuild-body", Static)
        if message.cost is None:
            body.update(safe_text(f"cannot rebuild: {message.error}", style="red"))
            return
        self.cost = message.cost
        text = safe_text(message.cost.sentence(), style="bold")
        text.append("\n\nmemdeck's plugin asks Hermes to rebuild it at the session's next turn (Hermes' own "
                    "invalidation; memdeck never writes state.db); the turns after that one send the rebuilt "
                    "prompt. z undoes the request until it is delivered.", "dim")
        body.update(text)
        self.query_one("#rebuild-yes", Button).disabled = False

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "rebuild-yes":
            self.action_confirm()
        else:
            self.dismiss(None)

    def action_confirm(self) -> None:
        if self.cost is not None:  # never before the cost was shown
            self.dismiss(self.cost)

    def action_cancel(self) -> None:
        self.dismiss(None)
