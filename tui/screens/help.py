"""The help screen (``?``): every key with its binding id, generated from :mod:`tui.keymap`; the
terms; the settings file, its problems and what its keymap takes; in the demo, how to run the
command line on the demo home."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from ..keymap import PANELS, keys_table
from ..safe_text import safe_text
from .modal import Dialog

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


def _display(keys: str) -> str:
    names = {"question_mark": "?", "slash": "/", "shift+tab": "⇧tab"}
    return ",".join(names.get(k, k) for k in keys.split(","))


def keys_renderable(keymap: Mapping[str, str] | None = None) -> Table:
    """Every key with its binding id (what the settings file's ``[keymap]`` takes), what it does
    and where; a key the person's keymap moved is shown where it is now."""
    keymap = keymap or {}
    table = Table(box=None, show_header=True, header_style="bold", expand=True, pad_edge=False)
    table.add_column("key", no_wrap=True, style="bold")
    table.add_column("binding id", no_wrap=True, style="cyan")
    table.add_column("does", ratio=3)
    table.add_column("where", style="dim", ratio=1)
    rows: list[tuple[str, str, str, str]] = []
    for row in keys_table():
        if row.binding_id == "memdeck.panel.*":  # one id per panel: that is what a keymap names
            rows += [(str(i), f"memdeck.panel.{pid}", f"jump to {title}", row.where)
                     for i, (pid, title) in enumerate(PANELS, 1)]
        else:
            rows.append((row.key, row.binding_id, row.what, row.where))
    for key_shown, bid, what, where in rows:
        key = Text(_display(keymap[bid]) if bid in keymap else key_shown)
        if bid in keymap:
            key.append(" *", "yellow")
        table.add_row(key, Text(bid), Text(what), Text(where))
    return table


def other_binding_ids(all_ids: Iterable[str]) -> list[str]:
    """The binding ids a keymap takes besides the dashboard's keys table: the dialogs' keys and
    the text boxes' (``confirm.yes``, ``editor.save``, ``memdeck.leave_box`` ...)."""
    shown = {row.binding_id for row in keys_table()} | {f"memdeck.panel.{pid}" for pid, _t in PANELS}
    return sorted(set(all_ids) - shown)


def settings_renderable(settings: Any, other_ids: Sequence[str] = ()) -> Text:
    """Where the settings file is, whether it was read, every problem met in it, and how a
    keymap names a key, with the binding ids beyond the keys table (``other_ids``). ``settings``
    None: the dashboard was started without the settings file."""
    t = Text()
    if settings is None:
        t.append("this dashboard was started without the settings file", style="dim")
        return t
    if settings.path is None and settings.source != "default":
        t.append("no settings file: the defaults apply. ")
        t.append_text(safe_text(str(settings.candidates[0]), single_line=True, style="bold"))
        t.append(f" ({settings.origin}) does not exist.\n")
    elif settings.path is None:
        t.append("no settings file: the defaults apply. memdeck looks for ")
        t.append_text(safe_text(" then ".join(str(p) for p in settings.candidates), single_line=True, style="bold"))
        t.append(" (--config FILE or MEMDECK_CONFIG name another).\n")
    else:
        t.append("the settings file is ")
        t.append_text(safe_text(str(settings.path), single_line=True, style="bold"))
        t.append(f" ({settings.origin}")
        t.append("; keys marked * come from its keymap)\n" if settings.keymap else ")\n")
    if settings.warnings:
        t.append(f"{len(settings.warnings)} problem(s), the rest applies:\n", style="bold yellow")
        for w in settings.warnings:
            t.append("  • ", style="yellow")
            t.append_text(safe_text(w))
            t.append("\n")
    t.append('[keymap] takes the binding ids of the keys table, e.g. "memdeck.pin" = "ctrl+k"; several keys '
             "are comma separated. q, ctrl+q, ctrl+p and ? stay with quit, the palette and help.", style="dim")
    if other_ids:
        t.append("\nin dialogs and text boxes: ", style="dim")
        t.append(", ".join(other_ids), style="cyan")
    return t


def demo_renderable(home: Path) -> Text:
    """How to run the command line on the demo home (issue 22 #13)."""
    t = Text()
    t.append("This is the demo home, rebuilt fresh on every memdeck --demo. Try the command line on it:\n")
    t.append_text(safe_text(f"  memdeck --home {shlex.quote(str(home))} status", single_line=True, style="bold"))
    t.append("\n")
    t.append_text(safe_text(f"  memdeck --home {shlex.quote(str(home))} recall deploy", single_line=True, style="bold"))
    return t


class HelpScreen(Dialog[None]):
    """Lists every binding with its id, the terms, the settings file and its problems; in the
    demo, how to run the command line on the demo home. Any of escape, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help.close")]

    def __init__(self, settings: Any = None, demo_home: Path | None = None, binding_ids: Sequence[str] = ()) -> None:
        """``settings``: the person's :class:`memdeck.tui.settings.UserSettings` (None: not read);
        ``demo_home``: the demo home's path when it is the demo; ``binding_ids``: every id a keymap
        takes (:func:`memdeck.tui.settings.all_binding_ids`)."""
        super().__init__()
        self.settings = settings
        self.demo_home = demo_home
        self.binding_ids = tuple(binding_ids)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box", classes="dialog"):
            if self.demo_home is not None:
                yield Static(Text("demo", style="bold"), classes="dialog-title")
                yield Static(demo_renderable(self.demo_home), id="help-demo")
            others = other_binding_ids(self.binding_ids)
            if self.settings is not None and self.settings.warnings:  # a problem goes first: it is why ? was pressed
                yield Static(Text("settings", style="bold"), classes="dialog-title")
                yield Static(settings_renderable(self.settings, others), id="help-settings")
            yield Static(Text("memdeck keys", style="bold"), classes="dialog-title")
            keymap = self.settings.keymap if self.settings is not None else None
            yield Static(keys_renderable(keymap), id="help-keys")
            yield Static(Text("terms", style="bold"), classes="dialog-title")
            yield Static(terms_renderable(), id="help-terms")
            if self.settings is None or not self.settings.warnings:
                yield Static(Text("settings", style="bold"), classes="dialog-title")
                yield Static(settings_renderable(self.settings, others), id="help-settings")
            yield Static(
                Text(
                    "Mouse: click tabs, rows and buttons. Every write goes through the core "
                    "(lock, reload, scan, atomic write, journal) and ends in a toast. "
                    "Esc / q / ? closes this help; q or ctrl+q on the dashboard quits.",
                    style="dim",
                )
            )

    def action_close(self) -> None:
        self.dismiss(None)
