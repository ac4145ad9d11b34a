"""A yes/no confirmation dialog (Posting's ``ConfirmationModal``): ``ModalScreen[bool]``."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from .modal import Dialog


class ConfirmScreen(Dialog[bool]):
    """Ask before a destructive action. Dismisses with True (confirm) or False (cancel).

    ``body`` must already be safe (a :class:`rich.text.Text` from :func:`tui.safe_text.safe_text`);
    a plain ``str`` is shown literally.
    """

    BINDINGS = [
        Binding("y", "confirm", "Yes", id="confirm.yes"),
        Binding("n,escape", "cancel", "No", id="confirm.no"),
        Binding("left,right", "app.focus_next", show=False),
    ]

    def __init__(self, title: str, body: Text | str, *, confirm_label: str = "Yes") -> None:
        super().__init__()
        self._title = title
        self._body = body if isinstance(body, Text) else Text(body)
        self._confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="dialog"):
            yield Static(Text(self._title, style="bold"), classes="dialog-title")
            yield Static(self._body, id="confirm-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self._confirm_label} (y)", variant="error", id="confirm-yes", compact=True)
                yield Button("Cancel (n)", variant="default", id="confirm-no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
