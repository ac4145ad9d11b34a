"""Keys typed ahead into a dialog never crash the dashboard (issue 40 #3: ``s Enter Enter`` and
``P Enter Enter`` in one input batch raised ``ScreenStackError``; a served tab died the same way).

Every ``ModalScreen`` of ``memdeck.tui.screens`` is found by walking the package, so a dialog
added later fails here until it has a way to open it in :data:`OPENERS`. Each is opened and closed
by keys sent in one batch (the driver's messages back to back, as a terminal delivers a paste or a
fast typist: Pilot's ``press`` waits for the app to be idle between keys, which hides the race);
the dialog must have opened once, the app must still run with the dashboard alone on the stack.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from textual import events
from textual.screen import ModalScreen

import memdeck.tui.screens as screens_pkg
from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import make_app
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def modal_screens() -> set[type]:
    """Every ``ModalScreen`` subclass defined in ``memdeck.tui.screens``."""
    found: set[type] = set()
    for info in pkgutil.iter_modules(screens_pkg.__path__, screens_pkg.__name__ + "."):
        mod = importlib.import_module(info.name)
        for _name, obj in inspect.getmembers(mod, inspect.isclass):
            if issubclass(obj, ModalScreen) and obj.__module__.startswith(screens_pkg.__name__):
                found.add(obj)
    return found


#: class name -> (keys pressed first, the key that opens it from there); the closing keys follow
#: the opener in the same batch
OPENERS: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "PickerScreen": [((), "s"), ((), "P")],
    "ConfirmScreen": [((), "z"), (("4",), "a")],
    "HelpScreen": [((), "question_mark")],
    "NotificationsScreen": [((), "N")],
    "EntryEditScreen": [(("4",), "e"), ((), "n")],
    "PinScreen": [((), "p")],
    "AnchorEditScreen": [(("2",), "e")],
    "HygieneScreen": [((), "H")],
    "ConstraintsScreen": [(("3",), "L")],
    "RebuildScreen": [(("8",), "b")],
}

#: bases never opened themselves (each subclass is)
BASES = {"FormScreen", "Dialog"}

#: what is typed ahead after the opener: every way each dialog closes, twice
CLOSERS: dict[str, list[tuple[str, ...]]] = {
    "PickerScreen": [("enter", "enter"), ("escape", "escape"), ("enter", "enter", "enter")],
    "ConfirmScreen": [("enter", "enter"), ("n", "n"), ("escape", "escape"), ("y", "y")],
    "HelpScreen": [("escape", "escape"), ("question_mark", "question_mark")],
    "NotificationsScreen": [("escape", "escape"), ("N", "N")],
    "EntryEditScreen": [("escape", "escape"), ("ctrl+s", "escape", "escape")],
    "PinScreen": [("escape", "escape"), ("ctrl+s", "escape", "escape")],
    "AnchorEditScreen": [("escape", "escape"), ("ctrl+s", "escape", "escape")],
    "HygieneScreen": [("escape", "escape"), ("H", "H")],
    "ConstraintsScreen": [("escape", "escape"), ("L", "L")],
    "RebuildScreen": [("escape", "escape"), ("n", "n"), ("y", "y")],
}


def test_every_dialog_has_a_way_to_open_it() -> None:
    names = {c.__name__ for c in modal_screens()}
    assert {"PickerScreen", "ConfirmScreen"} <= names
    assert names - BASES == set(OPENERS) == set(CLOSERS), "add the new dialog to OPENERS and CLOSERS"


def _type_ahead(app, keys: tuple[str, ...]) -> None:
    """Send ``keys`` to the app as one input batch: no wait between them."""
    for key in keys:
        char = {"enter": "\r", "escape": "\x1b", "question_mark": "?"}.get(key, key if len(key) == 1 else None)
        event = events.Key(key, char)
        event.set_sender(app)
        app._driver.send_message(event)


async def _close_what_stayed_open(pilot, app) -> None:
    """Escape whatever dialog the typed-ahead keys left open (a refused save, keys that were
    typed before the dialog was shown and so were not for it)."""
    for _ in range(5):
        if len(app.screen_stack) == 1 or not app.is_running:
            return
        await pilot.press("escape")
        await settle(pilot, app)


@pytest.mark.parametrize("name", sorted(OPENERS))
async def test_keys_typed_ahead_into_a_dialog_never_crash(demo_home, name: str) -> None:
    """Each way to close each dialog, typed twice in one batch: with the opener (the keys reach
    the app before the dialog is shown) and into the dialog once shown (both reach its widgets:
    the second close dismissed the dashboard itself on the old code)."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    pushed: list[str] = []
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        real_push = app.push_screen

        def recording_push(screen, *a, **kw):
            pushed.append(type(screen).__name__)
            return real_push(screen, *a, **kw)

        app.push_screen = recording_push  # type: ignore[method-assign]
        await settle(pilot, app)
        for before, opener in OPENERS[name]:
            for closers in CLOSERS[name]:
                for with_opener in (True, False):
                    if before:
                        await pilot.press(*before)
                        await settle(pilot, app)
                    count = pushed.count(name)
                    if with_opener:
                        _type_ahead(app, (opener, *closers))
                    else:
                        await pilot.press(opener)
                        await wait_for(pilot, lambda: type(app.screen).__name__ == name and app.screen.is_mounted)
                        await settle(pilot, app)
                        _type_ahead(app, closers)
                    await settle(pilot, app)
                    assert app.is_running, (name, opener, closers)
                    await _close_what_stayed_open(pilot, app)
                    what = (name, opener, closers, with_opener)
                    assert app.is_running, what
                    assert pushed.count(name) == count + 1, (what, pushed[-3:])
                    assert len(app.screen_stack) == 1, (what, app.screen_stack)
