"""The footer is composed again only when the keys it shows changed.

Textual's Footer recomposes (28 keys here, each styled with its component classes) on every
``bindings_updated`` signal, and the screen sends one on every focus change: at launch that was
five recomposes and half of all style applications, for the same keys each time.
"""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import make_app
from memdeck.tui.widgets.footer import DeckFooter
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _keys(app) -> list[FooterKey]:
    return list(app.screen.query_one(DeckFooter).query(FooterKey))


def _texts(app) -> list[tuple[str, str]]:
    return [(k.key_display, k.description) for k in _keys(app)]


def _expected(app) -> list[tuple[str, str]]:
    """Every active binding with ``show`` (grouped ones without a label), in the footer's order
    (``keymap.footer_rank``), as many as fit its width (issue 39 #13: none is cut)."""
    from memdeck.tui.keymap import footer_rank

    seen: dict[str, tuple[int, int, str, str, bool]] = {}
    panel = None if app.overview_shown else app.current_panel_id
    for i, (_ns, b, _enabled, _tip) in enumerate(app.screen.active_bindings.values()):
        if b.show and b.action not in seen:
            grouped = b.group is not None
            seen[b.action] = (footer_rank(b.action, grouped=grouped, panel=panel), i, app.get_key_display(b),
                              "" if grouped else b.description, grouped)
    room = app.screen.query_one(DeckFooter).size.width
    out, group_room = [], None
    for _rank, _i, key, label, grouped in sorted(seen.values()):
        if grouped:  # the panel jumps go together, after everything else
            group_room = (group_room or 0) + len(key) + 1
            out.append((key, label))
            continue
        width = len(key) + 2 + len(label)
        if width <= room:
            out.append((key, label))
            room -= width
    if group_room is not None and group_room + len("panel") + 2 > room:
        out = [k for k in out if k[1] != ""]
    return out


async def test_focus_changes_keep_the_composed_keys(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await wait_for(pilot, lambda: len(_keys(app)) > 10, describe=lambda: _texts(app))
        before = _keys(app)
        texts = _texts(app)
        assert ("?", "Help") in texts and ("q", "Quit") in texts
        # each moves the focus; the keys shown stay the same (the panels' own keys come first,
        # issue 39 #13, so a panel with keys of its own composes the footer again)
        for key in ("2", "3", "6", "7", "tab", "shift+tab", "1"):
            await pilot.press(key)
            await settle(pilot, app)
            assert _texts(app) == _expected(app)
        assert app.current_panel_id == "integrity"
        assert _texts(app) == texts
        before = _keys(app)
        for _ in range(3):  # focus away and back on the same panel: nothing composed
            app.screen.set_focus(None)
            await settle(pilot, app)
            app.panel().focus_primary()
            await settle(pilot, app)
            assert _texts(app) == _expected(app)
        assert _keys(app) == before  # the very same widgets: not composed again
        assert _texts(app) == texts
        assert ("g", "Chart") not in texts
        await pilot.press("4")
        await settle(pilot, app)
        assert ("g", "Chart") in _texts(app) and _texts(app) == _expected(app)  # Capacity's own key


async def test_changed_keys_are_composed(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await wait_for(pilot, lambda: ("space", "Pause") in _texts(app), describe=lambda: _texts(app))
        await pilot.press("space")
        await wait_for(pilot, lambda: ("space", "PAUSED · resume") in _texts(app), describe=lambda: _texts(app))
        assert _texts(app) == _expected(app)
        shown = _texts(app)
        await pilot.press("5")  # the query box takes the focus, and with it the letter keys
        await wait_for(pilot, lambda: _texts(app) != shown, describe=lambda: _texts(app))
        assert _texts(app) == _expected(app) and ("q", "Quit") not in _texts(app)
        await pilot.press("escape")  # out of the box: the letter keys again, Recall's own first
        await wait_for(pilot, lambda: ("q", "Quit") in _texts(app) and _texts(app) == _expected(app),
                       describe=lambda: _texts(app))
        assert _texts(app)[5] == ("/", "Filter") and set(_texts(app)) - {("/", "Filter")} <= set(shown)
        app.set_keymap({"memdeck.help": "f1"})
        await wait_for(pilot, lambda: ("f1", "Help") in _texts(app), describe=lambda: _texts(app))
        assert ("?", "Help") not in _texts(app)


@pytest.mark.parametrize("panel", ["1", "2", "4", "6", "7"])
async def test_quit_is_visible_in_the_footer_at_100_columns(demo_home, panel: str) -> None:
    """Issue 22 #13: at 100 columns the footer was cut before "q Quit"; a newcomer did not see how to leave."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot, app)
        await pilot.press(panel)
        await settle(pilot, app)
        await wait_for(pilot, lambda: ("q", "Quit") in _texts(app), describe=lambda: _texts(app))
        (quit_key,) = [k for k in _keys(app) if (k.key_display, k.description) == ("q", "Quit")]
        assert quit_key.region.width > 0 and quit_key.region.right <= 100, quit_key.region


async def test_a_text_box_says_how_to_leave_it_and_how_to_quit(demo_home) -> None:
    """On Recall the query box has focus and every printable key types into it (q too): the
    footer says esc leaves the box and ctrl+q quits, and both do."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot, app)
        await pilot.press("5")
        await wait_for(pilot, lambda: type(app.focused).__name__ == "SteadyInput")
        await wait_for(pilot, lambda: ("esc", "Leave box") in _texts(app), describe=lambda: _texts(app))
        assert _texts(app)[:2] == [("esc", "Leave box"), ("^q", "Quit")]
        await pilot.press("q")
        assert app.query_one("#recall-query").value == "q" and not app._exit  # q types
        await pilot.press("escape")
        await wait_for(pilot, lambda: ("q", "Quit") in _texts(app), describe=lambda: _texts(app))
        await pilot.press("5")
        await wait_for(pilot, lambda: app.current_panel_id == "recall")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app._exit)
