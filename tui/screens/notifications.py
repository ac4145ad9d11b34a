"""The notifications screen (``N``): the last 100 toasts, newest first, as they were shown."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from ..safe_text import safe_text
from .modal import Dialog

_STYLE = {"error": "bold red", "warning": "bold yellow", "information": "bold"}


def log_renderable(entries: Sequence[tuple[float, str, str, str]]) -> Text:
    """``(epoch s, severity, title, message)`` rows, newest first, every string escaped."""
    t = Text()
    if not entries:
        return Text("no notifications yet", style="dim")
    for when, severity, title, message in reversed(entries):
        t.append(time.strftime("%H:%M:%S ", time.localtime(when)), "dim")
        t.append_text(safe_text(title or severity, single_line=True, style=_STYLE.get(severity, "bold")))
        t.append("\n")
        t.append_text(safe_text(message))
        t.append("\n\n")
    return t


class NotificationsScreen(Dialog[None]):
    """Lists :attr:`memdeck.tui.app.MemdeckApp.notification_log`; escape, q or N closes it."""

    BINDINGS = [Binding("escape,q,N", "close", "Close", id="notifications.close")]

    def __init__(self, entries: Sequence[tuple[float, str, str, str]]) -> None:
        super().__init__()
        self._entries = list(entries)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box", classes="dialog"):
            yield Static(Text(f"notifications (last {len(self._entries)}, newest first)", style="bold"),
                         classes="dialog-title")
            yield Static(log_renderable(self._entries), id="notifications-log")

    def action_close(self) -> None:
        self.dismiss(None)
