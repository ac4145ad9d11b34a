"""The help screen (``?``): every key, generated from :mod:`tui.keymap`."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keymap import keys_table


def keys_renderable() -> Table:
    table = Table(box=None, show_header=True, header_style="bold", expand=True, pad_edge=False)
    table.add_column("key", no_wrap=True, style="bold")
    table.add_column("does", ratio=3)
    table.add_column("where", style="dim", ratio=1)
    for row in keys_table():
        table.add_row(Text(row.key), Text(row.what), Text(row.where))
    return table


class HelpScreen(ModalScreen[None]):
    """Lists every binding; any of escape, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box", classes="dialog"):
            yield Static(Text("memdeck keys", style="bold"), classes="dialog-title")
            yield Static(keys_renderable(), id="help-keys")
            yield Static(
                Text(
                    "Mouse: click tabs, rows and buttons. Every write goes through the core "
                    "(lock, reload, scan, atomic write, journal) and ends in a toast. "
                    "Esc / q / ? closes this help.",
                    style="dim",
                )
            )

    def action_close(self) -> None:
        self.dismiss(None)
