"""The read-only dashboard (``memdeck --read-only``; what ``memdeck serve --read-only`` runs in
every tab): every write action is refused with a toast, whatever reaches it (key, palette, row
action, a direct ``run_write``); the footer starts with READ-ONLY and hides the write keys; the
palette lists none of them; nothing on disk changes."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.tui import actions as deck_actions
from memdeck.tui.app import make_app
from memdeck.tui.keymap import PANEL_ACTIONS, WRITE_ACTIONS, app_bindings, palette_entries, panel_bindings
from memdeck.tui.screens.confirm import ConfirmScreen
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _writers_in_actions() -> set[str]:
    """The ``action_*`` functions of tui/actions.py whose body calls ``run_write`` (directly or in
    a closure): the dashboard's write actions, read from the source."""
    tree = ast.parse(inspect.getsource(deck_actions))
    out = set()
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("action_"):
            calls = {n.func.attr for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
            if "run_write" in calls:
                out.add(fn.name[len("action_"):])
    return out


def test_write_actions_are_every_action_that_writes() -> None:
    assert _writers_in_actions() == WRITE_ACTIONS
    keyed = {b.action for b in app_bindings()} | {b.action.removeprefix("app.") for pid in set(PANEL_ACTIONS.values())
                                                  for b in panel_bindings(pid)}
    assert keyed >= WRITE_ACTIONS  # each has a key (the app's, or its panel's: b in Context)


def test_the_palette_lists_no_write_action_when_read_only() -> None:
    everything = {a for _t, _h, a in palette_entries()}
    read_only = {a for _t, _h, a in palette_entries(read_only=True)}
    assert everything >= WRITE_ACTIONS and not (WRITE_ACTIONS & read_only)
    assert everything - WRITE_ACTIONS == read_only


def _home_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] != "memdeck" and not p.name.startswith("state.db")}


#: (panel key, key, action) for every write key, from the panel where it acts.
KEYS = (("4", "p", "pin"), ("4", "a", "archive"), ("4", "e", "edit"), ("4", "m", "move"), ("4", "n", "new_entry"),
        ("4", "R", "restore"), ("4", "z", "undo"), ("2", "u", "unpin"), ("6", "A", "approve"), ("6", "X", "reject"),
        ("6", "C", "approve_clean"), ("6", "S", "reject_stale"), ("7", "r", "revert"),
        ("8", "b", "rebuild"))


async def test_every_write_key_is_refused_with_a_toast_and_nothing_changes(demo_home) -> None:
    assert {a for _p, _k, a in KEYS} == WRITE_ACTIONS
    before = _home_bytes(demo_home.path)
    app = make_app(demo_home, watch=False, now=DEMO_NOW, read_only=True)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await settle(pilot, app)
        for panel, key, action in KEYS:
            await pilot.press(panel)
            await pilot.pause()
            n = len(app.notification_log)
            await pilot.press(key)
            await wait_for(pilot, lambda n=n: len(app.notification_log) > n, describe=lambda: key)
            notice = app.notification_log[-1]
            assert notice.title == f"{action.replace('_', ' ')}: refused" and "read-only" in notice.message
            assert app.screen is app.screen_stack[0]  # no dialog opened
        # the palette and a row's Enter menu reach the same refusal
        n = len(app.notification_log)
        await app.run_action("app.approve")
        assert app.notification_log[-1].title == "approve: refused" and len(app.notification_log) == n + 1
        # the last stop: a write that reaches run_write runs nothing
        ran = []
        app.run_write("edit", lambda: ran.append(1), "done")
        await settle(pilot, app)
        assert ran == [] and "read-only" in app.notification_log[-1].message
    assert _home_bytes(demo_home.path) == before


async def test_a_read_write_dashboard_still_opens_its_dialogs(demo_home) -> None:
    """The control: the same keys reach the actions when the dashboard is not read-only."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await settle(pilot, app)
        await pilot.press("4", "a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await settle(pilot, app)
        assert not any("refused" in n.title for n in app.notification_log)


async def test_the_footer_says_read_only_and_shows_no_write_key(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW, read_only=True)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, app)
        footer = app.query_one("DeckFooter")
        labels = [str(w.render()) for w in footer.query("FooterLabel")]
        assert "READ-ONLY" in labels
        shown = {w.action for w in footer.query("FooterKey")}
        assert shown and not (shown & WRITE_ACTIONS)
        assert "read-only" in app.query_one("#statusline").content.plain
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, app)
        footer = app.query_one("DeckFooter")
        assert "READ-ONLY" not in [str(w.render()) for w in footer.query("FooterLabel")]
        assert WRITE_ACTIONS & {w.action for w in footer.query("FooterKey")}
