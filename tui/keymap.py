"""Every key of the dashboard, in one list: the footer, the help screen ``?`` and the command
palette are all generated from it, and every binding has an ``id`` so a user keymap
(``App.set_keymap({"memdeck.pin": "ctrl+k"})``) can rebind it (Posting's rule).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

PANELS: tuple[tuple[str, str], ...] = (
    ("integrity", "Integrity"),
    ("anchors", "Anchors"),
    ("drift", "Drift log"),
    ("capacity", "Capacity"),
    ("recall", "Recall"),
    ("review", "Review"),
    ("history", "History"),
    ("context", "Context"),
)
PANEL_IDS = tuple(p for p, _ in PANELS)

#: The tab titles below 100 columns (the eight full ones with badges do not fit 80).
SHORT_TITLES = {"integrity": "Integ", "anchors": "Anchor", "drift": "Drift", "capacity": "Cap",
                "recall": "Recall", "review": "Review", "history": "Hist", "context": "Ctx"}

_PANEL_GROUP = Binding.Group("panel", compact=True)


@dataclass(frozen=True)
class KeyHelp:
    """One row of the keys table: key as shown, action id, what it does, where it applies."""

    key: str
    binding_id: str
    action: str
    what: str
    where: str


#: (key, action, footer label, id, help text, where it applies)
_SPEC: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("p", "pin", "Pin", "memdeck.pin", "pin the selected entry as an anchor, or new text (modal: priority, probes, scope)", "anywhere"),
    ("u", "unpin", "Unpin", "memdeck.unpin", "unpin the selected anchor (asks first)", "Anchors"),
    ("a", "archive", "Archive", "memdeck.archive", "archive the selected entry or anchor (asks first)", "Capacity, Anchors, Review"),
    ("R", "restore", "Restore", "memdeck.restore", "restore an archived entry or anchor (picker)", "anywhere"),
    ("e", "edit", "Edit", "memdeck.edit", 
     "edit the selected entry or anchor (live char budget and threat scan); a pending write: edit it, then approve",
     "Capacity, Anchors, Review"),
    ("n", "new_entry", "New", "memdeck.new", "add a new entry to MEMORY.md or USER.md", "anywhere"),
    ("m", "move", "Move", "memdeck.move", "move the selected entry to the other target", "Capacity, Review"),
    ("A", "approve", "Approve", "memdeck.approve", "approve the selected pending write", "Review"),
    ("C", "approve_clean", "All clean", "memdeck.approve_clean", "approve every clean pending write, each on its own (asks first)",
     "Review"),
    ("X", "reject", "Reject", "memdeck.reject", "reject the selected pending write (asks first)", "Review"),
    ("S", "reject_stale", "All stale", "memdeck.reject_stale", "reject every stale pending write, each journaled (asks first)", "Review"),
    ("z", "undo", "Undo", "memdeck.undo", "undo the last memdeck write (asks first)", "anywhere"),
    ("r", "revert", "Revert", "memdeck.revert", "revert the selected change, whoever made it (asks first)", "History"),
    ("slash", "filter", "Filter", "memdeck.filter", "filter the rows of this panel; in Recall, type a query", "every panel but Integrity"),
    ("s", "pick_session", "Session", "memdeck.session", "pin the session shown by Integrity, Anchors and Drift log (default: the live one)",
     "anywhere"),
    ("f", "follow_live", "Follow", "memdeck.follow", "follow the live session again (after s pinned one)", "anywhere"),
    ("P", "pick_profile", "Profile", "memdeck.profile", "switch to another Hermes profile", "anywhere"),
    ("o", "toggle_overview", "Overview", "memdeck.overview", "the overview: integrity, both stores, the review queue, the "
     "frozen memory, the next compaction and the last changes on one screen (fits 80x24); 1-8 open a panel, o comes back",
     "anywhere"),
    ("space", "toggle_pause", "Pause", "memdeck.pause", "pause / resume live refresh", "anywhere"),
    ("g", "toggle_usage_chart", "Chart", "memdeck.usage_chart",
     "show / hide the usage of MEMORY.md and USER.md over time (shown when the terminal has 36 rows or more)", "Capacity"),
    ("t", "toggle_theme", "Theme", "memdeck.theme", "toggle dark / light theme (saved in the settings file)", "anywhere"),
    ("T", "pick_theme", "Themes", "memdeck.themes", "choose any of Textual's themes (picker; saved in the settings file)",
     "anywhere"),
    ("tab", "next_panel", "Next", "memdeck.next_panel", "next panel", "anywhere"),
    ("shift+tab", "prev_panel", "Prev", "memdeck.prev_panel", "previous panel", "anywhere"),
    ("question_mark", "help", "Help", "memdeck.help", "this help: every key and the terms the panels use", "anywhere"),
    ("N", "notifications", "Notices", "memdeck.notifications", "the last 100 notifications (toasts), newest first", "anywhere"),
    ("H", "hygiene", "Hygiene", "memdeck.hygiene",
     "memory hygiene: duplicates, contradictions, stale and wasteful entries with their evidence, ranked by chars per turn; "
     "apply a proposal (asks first; z undoes it)", "anywhere"),
    ("L", "constraints", "Ledger", "memdeck.constraints",
     "the constraint ledger of the selected compaction (else the newest): what it did to every rule the user gave "
     "(kept, weakened, lost, promoted, orphan) with the evidence; p pins a lost or weakened rule", "Drift log"),
    ("b", "rebuild", "Rebuild", "memdeck.rebuild",
     "rebuild the selected open session's system prompt (else the followed one's) by Hermes at its next turn: the "
     "dialog states the cache cost first; z undoes it until delivered", "Context"),
    ("ctrl+p", "command_palette", "Palette", "memdeck.palette", "command palette (every action that applies on the panel shown)",
     "anywhere"),
    ("q", "quit", "Quit", "memdeck.quit", "quit (ctrl+q also quits)", "anywhere"),
)

#: action -> where it applies (the keys table's ``where``)
_WHERE = {a: w for _k, a, _l, _b, _h, w in _SPEC}

#: The actions that write (each ends in ``MemdeckApp.run_write``): a read-only dashboard
#: (``memdeck --read-only``, ``memdeck serve --read-only``) refuses them with a toast, hides them
#: from the footer and the palette. tests/tui/test_read_only.py checks this against actions.py.
WRITE_ACTIONS = frozenset({
    "pin", "unpin", "archive", "restore", "edit", "new_entry", "move", "approve", "reject", "undo", "revert",
    "approve_clean", "reject_stale", "rebuild",
})

#: The footer shows bindings in order and is cut at the terminal's width: the pause state first,
#: so "PAUSED" is always visible, then help, so every other key can be found, then quit, so a
#: newcomer sees how to leave (issue 22 #13: at 100 columns it was cut off).
_FOOTER_FIRST = {"toggle_pause": 0, "help": 1, "quit": 2}

#: The footer shows what fits its width, in this order (:func:`footer_rank`): in a text box how to
#: leave it (``esc``; the box takes the letter keys); the pause state
#: (so "PAUSED" is always seen), help and the palette (which list every key), quit, the overview;
#: then the keys of the panel shown (bound on it), every other key, then the panel jumps (the tab
#: bar shows their numbers).
FOOTER_PRIORITY = ("leave", "toggle_pause", "help", "quit", "command_palette", "toggle_overview")


def footer_rank(action: str, *, grouped: bool = False, panel: str | None = None) -> int:
    """The footer's priority of a binding's ``action`` (lower comes first; Textual's action
    string, ``app.`` prefix and arguments allowed): :data:`FOOTER_PRIORITY`, then the panels'
    own keys (:data:`PANEL_ACTIONS`) and the keys that apply on ``panel`` alone (Approve on
    Review), then those that apply on a few panels, ``panel`` among them (Archive), then the
    rest, then a group of keys (the panel jumps)."""
    name = action.removeprefix("app.").split("(", 1)[0]
    if name in FOOTER_PRIORITY:
        return FOOTER_PRIORITY.index(name)
    if name in PANEL_ACTIONS:
        return len(FOOTER_PRIORITY)
    if panel is not None and not grouped:
        where = _WHERE.get(name)
        if where is not None and not where.startswith("anywhere"):
            applies = where_panels(where)
            if panel in applies:  # a key of this panel alone first (Approve), then of a few (Archive)
                return len(FOOTER_PRIORITY) + (0 if len(applies) == 1 else 1)
    return len(FOOTER_PRIORITY) + (3 if grouped else 2)


#: Bindings kept out of the footer (they would push the keys of every panel past its width): the
#: Review panel's bulk keys, named in its detail text, in help (``?``) and in the palette.
_NOT_IN_FOOTER = frozenset({"prev_panel", "approve_clean", "reject_stale", "hygiene", "pick_theme"})

#: The bindings a person must always be able to find: quit (``q`` and ``ctrl+q``), the command
#: palette and help. A user keymap may move them to other keys, but no other binding may take
#: their keys (:func:`memdeck.tui.settings.load_settings` refuses it, issue 22 #10).
RESERVED_IDS = ("memdeck.quit", "memdeck.quit_ctrl_q", "memdeck.palette", "memdeck.help")

_DISPLAY = {"slash": "/", "question_mark": "?", "space": "space", "shift+tab": "⇧tab"}


#: Keys bound on the main screen rather than the app: the Screen base class binds tab to
#: focus_next, and the screen is consulted before the app.
SCREEN_ACTIONS = frozenset({"next_panel", "prev_panel"})

#: Keys bound on one panel (action -> panel id): in its footer only while it is shown; the action
#: itself is the app's (the palette runs it from anywhere).
PANEL_ACTIONS = {"toggle_usage_chart": "capacity", "constraints": "drift", "rebuild": "context"}


def panel_bindings(pid: str) -> list[Binding]:
    """The keys of panel ``pid`` (:data:`PANEL_ACTIONS`), running the app's action."""
    return [
        Binding(key, f"app.{action}", label, id=bid, key_display=_DISPLAY.get(key))
        for key, action, label, bid, _h, _w in _SPEC
        if PANEL_ACTIONS.get(action) == pid
    ]


def screen_bindings() -> list[Binding]:
    """tab / shift+tab between panels, bound on the main screen (actions run on the app)."""
    return [
        Binding(key, f"app.{action}", label, id=bid, key_display=_DISPLAY.get(key), show=False)
        for key, action, label, bid, _h, _w in _SPEC
        if action in SCREEN_ACTIONS
    ]


def quit_anywhere_binding() -> Binding:
    """``ctrl+q`` quits from anywhere, a text box included (a priority binding, not in the footer)."""
    return Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="memdeck.quit_ctrl_q")


def app_bindings() -> list[Binding]:
    """The dashboard's bindings, each with an ``id``; ``1``-``7`` jump to a panel (:data:`PANELS`)."""
    out: list[Binding] = []
    spec = sorted(_SPEC, key=lambda row: _FOOTER_FIRST.get(row[1], len(_FOOTER_FIRST)))
    for key, action, label, bid, _help, _where in spec:
        if action in SCREEN_ACTIONS or action in PANEL_ACTIONS:
            continue
        out.append(
            Binding(
                key,
                action,
                label,
                id=bid,
                key_display=_DISPLAY.get(key),
                priority=action in {"command_palette"},
                show=action not in _NOT_IN_FOOTER,
            )
        )
    for i, (pid, title) in enumerate(PANELS, 1):
        out.append(
            Binding(str(i), f"show_panel('{pid}')", title, id=f"memdeck.panel.{pid}", group=_PANEL_GROUP)
        )
    return out


def main_screen_keys() -> dict[str, tuple[str, ...]]:
    """Binding id -> its default keys (Textual's key names: ``question_mark``, ``ctrl+p``) for
    every binding of the dashboard's main screen: the app's (:func:`app_bindings`, ``ctrl+q``),
    the screen's (:func:`screen_bindings`) and the panels' (:func:`panel_bindings`). What a user
    keymap is checked against."""
    out: dict[str, list[str]] = {}
    panels = [b for pid in set(PANEL_ACTIONS.values()) for b in panel_bindings(pid)]
    for b in Binding.make_bindings([quit_anywhere_binding(), *app_bindings(), *screen_bindings(), *panels]):
        if b.id:
            out.setdefault(b.id, []).append(b.key)
    return {bid: tuple(keys) for bid, keys in out.items()}


def keys_table() -> list[KeyHelp]:
    """Rows for the help screen and the README keys table."""
    rows = [KeyHelp(_DISPLAY.get(k, k), bid, a, h, w) for k, a, _l, bid, h, w in _SPEC]
    rows.insert(
        -3,
        KeyHelp(f"1-{len(PANELS)}", "memdeck.panel.*", "show_panel", "jump to " + ", ".join(t for _p, t in PANELS), "anywhere"),
    )
    return rows


#: The actions the command palette offers over a dialog (help, a picker, the notices): the others
#: act on the panel under it, which the dialog hides, so they are left out there.
OVER_DIALOG_ACTIONS = frozenset({"quit", "toggle_theme", "toggle_pause", "notifications"})


def where_panels(where: str) -> frozenset[str]:
    """The panel ids a ``where`` text of the keys table names: ``anywhere…`` is every panel,
    ``every panel but A, B`` all but those, else panel titles separated by commas.

    Raises:
        ValueError: a name that is not a panel title (:data:`PANELS`).
    """
    by_title = {title: pid for pid, title in PANELS}
    if where.startswith("anywhere"):
        return frozenset(PANEL_IDS)
    but = where.startswith("every panel but ")
    names = [n.strip() for n in where.removeprefix("every panel but ").split(",") if n.strip()]
    unknown = [n for n in names if n not in by_title]
    if unknown:
        raise ValueError(f"not a panel: {', '.join(unknown)} (in {where!r})")
    named = frozenset(by_title[n] for n in names)
    return frozenset(PANEL_IDS) - named if but else named


def palette_entries(*, read_only: bool = False, panel: str | None = None,
                    over_dialog: bool = False) -> list[tuple[str, str, str]]:
    """``(title, help, action)`` for every action, for the command palette provider.

    Args:
        read_only: leave out :data:`WRITE_ACTIONS`.
        panel: the panel shown (a :data:`PANEL_IDS` id): only the actions that apply there (the
            keys table's ``where``, :func:`where_panels`), and no jump to the panel itself.
            None: every action.
        over_dialog: the palette was opened over a dialog: only :data:`OVER_DIALOG_ACTIONS`.
    """
    out = [(label, h, a) for _k, a, label, _b, h, w in _SPEC
           if a not in {"command_palette"} and not (read_only and a in WRITE_ACTIONS)
           and (panel is None or panel in where_panels(w)) and (not over_dialog or a in OVER_DIALOG_ACTIONS)]
    if not over_dialog:
        out += [(f"Show {title}", f"jump to the {title} panel", f"show_panel('{pid}')") for pid, title in PANELS
                if pid != panel]
    return out
