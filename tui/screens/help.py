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


#: The field's terms as the panels use them (DESIGN.md "Words we use"), for the help screen.
TERMS: tuple[tuple[str, str], ...] = (
    ("entry", "one item of MEMORY.md or USER.md; the files are entries joined by a line holding only §"),
    ("char limit, usage", "each file's budget in characters (2,200 and 1,375 by default) and how much of it the "
                          "entries use, delimiters included, as Hermes counts it"),
    ("anchor", "a standing instruction pinned with MemLock so it survives compaction"),
    ("probe", "a keyword of an anchor; the keyword audit finds an anchor alive when enough of its probes "
              "appear in the active region (drift_threshold, 50 % by default)"),
    ("compaction, summary", "Hermes replaces the older part of a long session with a summary; what was only there "
                            "is no longer obeyed"),
    ("active region", "what the model still sees after the last compaction: the system prompt and the messages "
                      "after the summary"),
    ("drifted", "an anchor the last audit did not find in the active region"),
    ("rehydrated", "a drifted anchor whose reminder MemLock injected again; it stays drifted until the next "
                   "audit finds it alive"),
    ("integrity score", "percent of a session's anchors found alive by the last audit (0-100); no score before "
                        "the first audit"),
    ("reminder block", "the lines MemLock adds to the next user message to restate drifted anchors"),
    ("pending write", "a memory change Hermes staged for review (write_approval); approve (A) applies it, "
                      "reject (X) discards it"),
    ("archive, restore", "memdeck moves an entry or anchor out into its own store and can put it back"),
    ("recall", "what Hermes' session_search would find in earlier sessions for a query"),
)


def terms_renderable() -> Table:
    table = Table(box=None, show_header=False, expand=True, pad_edge=False)
    table.add_column("term", no_wrap=True, style="bold")
    table.add_column("meaning", ratio=4)
    for term, meaning in TERMS:
        table.add_row(Text(term), Text(meaning))
    return table


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
            yield Static(Text("terms", style="bold"), classes="dialog-title")
            yield Static(terms_renderable(), id="help-terms")
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
