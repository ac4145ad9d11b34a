"""The command palette (issue 26): every entry, run from the palette on every panel of the demo
home, does something visible and shows no error toast (a refusal that says its reason, a warning or
the core's ``refused``, is allowed); no title appears twice; Textual's Quit, Theme and Keys (duplicates of memdeck's Quit,
Theme and Help) and its Screenshot (which fails without ~/Downloads) are not listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Input

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import DeckScreen, make_app
from memdeck.tui.keymap import PANEL_IDS, PANELS, palette_entries, where_panels
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _palette_list(app):
    from textual.command import CommandList

    return app.screen.query_one(CommandList)


async def _open_palette(pilot, app) -> list[str]:
    """Open the palette with ctrl+p and return its titles once every provider has answered."""
    await pilot.press("ctrl+p")
    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
    group = CommandPalette._GATHER_COMMANDS_GROUP
    await wait_for(pilot, lambda: _palette_list(app).option_count > 0
                   and not [w for w in app.workers if w.group == group and not w.is_finished])
    ol = _palette_list(app)
    return [str(ol.get_option_at_index(i).prompt).split("\n", 1)[0] for i in range(ol.option_count)]


def _titles_now(app) -> list[str]:
    ol = _palette_list(app)
    return [str(ol.get_option_at_index(i).prompt).split("\n", 1)[0] for i in range(ol.option_count)]


async def _back_to_panel(pilot, app, pid: str) -> None:
    """Close whatever an entry opened (dialogs, a maximized widget, a filter box) and show ``pid``
    again with the theme and refresh as they were."""
    for _ in range(6):
        if isinstance(app.screen, DeckScreen):
            break
        await pilot.press("escape")
        await pilot.pause()
    assert isinstance(app.screen, DeckScreen), app.screen
    if app.screen.maximized is not None:
        app.screen.minimize()
    if isinstance(app.focused, Input):
        await pilot.press("escape")
    if app.overview_shown:
        app.set_overview(False)
    if app.theme != "textual-dark":
        app.theme = "textual-dark"
    if app.paused:
        app.paused = False
    if app.current_panel_id != pid:
        await pilot.press(str(PANEL_IDS.index(pid) + 1))
    await settle(pilot, app)
    await wait_for(pilot, lambda: app.current_panel_id == pid)
    app.panel(pid).focus_primary()  # what has focus decides Maximize: the same every time
    await pilot.pause()


#: The entries whose effect depends on the panel (its selection, its filter box, what has focus):
#: run on every panel that lists them. The others act the same on every panel: run once, and
#: checked to be listed on every panel (:data:`ALWAYS`).
PANEL_DEPENDENT = frozenset({"Pin", "Unpin", "Archive", "Edit", "New", "Move", "Approve", "Reject", "Revert",
                             "Filter", "Maximize"})
#: Entries that act alike on every panel but wrap at the ends (tab / shift+tab): run on the first
#: and the last panel only (each run costs a palette, a refresh and a settle: ~1 s under load).
AT_THE_ENDS = frozenset({"Next", "Prev"})
ALWAYS = ("Screenshot", "Pin", "Restore", "New", "Undo", "Session", "Follow", "Profile", "Pause", "Theme", "Overview", "Next",
          "Prev", "Help", "Notices", "Quit")


def _state(app) -> tuple:
    return (len(app.screen_stack), type(app.screen).__name__, len(app.notification_log), app.current_panel_id,
            app.theme, app.paused, app.screen.maximized, type(app.focused).__name__, id(app.focused),
            app.query_one("#usage-charts").display, app.overview_shown)


def test_where_names_only_panels_and_every_action_is_somewhere() -> None:
    from memdeck.tui.keymap import keys_table

    for row in keys_table():
        assert where_panels(row.where), row  # raises ValueError on a name that is not a panel
    with pytest.raises(ValueError):
        where_panels("Capacity, Nowhere")
    assert where_panels("every panel but Integrity") == frozenset(PANEL_IDS) - {"integrity"}
    everywhere = {a for pid in PANEL_IDS for _t, _h, a in palette_entries(panel=pid)}
    assert everywhere == {a for _t, _h, a in palette_entries()}


async def test_every_palette_entry_works_from_every_panel(demo_home, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # the screenshot goes to the user's data dir
    monkeypatch.chdir(tmp_path)
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    ran: dict[str, set[str]] = {}
    everywhere: set[str] = set()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        for pid in PANEL_IDS:
            await _back_to_panel(pilot, app, pid)
            titles = await _open_palette(pilot, app)
            await pilot.press("escape")
            assert len(titles) == len(set(titles)), (pid, titles)
            everywhere |= set(titles)
            for title in ALWAYS:
                assert title in titles, (pid, title)
            for left_out in ("Keys", "Minimize"):
                assert left_out not in titles, (pid, left_out)
            assert titles.count("Quit") == titles.count("Theme") == titles.count("Screenshot") == 1
            title_of = dict((a, t) for t, _h, a in palette_entries(panel=pid))
            assert f"Show {dict(PANELS)[pid]}" not in titles
            assert set(title_of.values()) <= set(titles)
            for title in titles:
                if title == "Quit":
                    continue  # last, below
                if title in AT_THE_ENDS and pid not in (PANEL_IDS[0], PANEL_IDS[-1]):
                    continue
                if title not in PANEL_DEPENDENT | AT_THE_ENDS and title in ran:
                    continue  # the same on every panel: run once (listed everywhere, checked above)
                await _back_to_panel(pilot, app, pid)
                before = _state(app)
                seen = len(app.notification_log)
                shown = await _open_palette(pilot, app)
                ol = _palette_list(app)
                assert title in shown, (pid, title, type(app.focused).__name__, shown)
                ol.highlighted = shown.index(title)
                palette = app.screen
                await pilot.press("enter")
                if title == "Themes":  # Textual's theme picker (a palette of themes): choose one
                    await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen is not palette)
                    await pilot.press(*"nord")
                    await wait_for(pilot, lambda: "nord" in _titles_now(app))
                    _palette_list(app).highlighted = _titles_now(app).index("nord")
                    await pilot.press("enter")
                await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))
                await settle(pilot, app)
                await wait_for(pilot, lambda: _state(app) != before
                               or (title == "Filter" and isinstance(app.focused, Input)),
                               describe=lambda: f"{title!r} on {pid} did nothing visible")
                toasts = list(app.notification_log)[seen:]
                # a write the core refused (an overflow, a threat) is a reason, not a failure
                errors = [n for n in toasts if n.severity == "error" and not n.title.endswith(": refused")]
                assert not errors, (pid, title, errors)
                ran.setdefault(title, set()).add(pid)
        await _back_to_panel(pilot, app, "integrity")
        assert "Pin" in ran and "Unpin" in ran and ran["Unpin"] == {"anchors"} and ran["Approve"] == {"review"}
        assert "integrity" not in ran["Filter"] and len(ran["Screenshot"]) == 1 and len(ran["Pin"]) == len(PANEL_IDS)
        assert ran["Next"] == ran["Prev"] == {PANEL_IDS[0], PANEL_IDS[-1]}
        assert set(ran) == set(everywhere) - {"Quit"}, set(everywhere) - set(ran)
        shots = list((tmp_path / "data" / "memdeck" / "screenshots").glob("*.svg"))
        assert shots, "the screenshot entry saved no file in the user's data directory"
        assert not list(tmp_path.glob("*.svg")), "a screenshot landed in the current directory"
        assert any(n.title == "Screenshot" and str(shots[0]) in n.message for n in app.notification_log)
        titles = await _open_palette(pilot, app)
        _palette_list(app).highlighted = titles.index("Quit")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_code in (0, None)


async def test_over_a_dialog_the_palette_lists_only_what_does_not_act_on_a_panel(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: not isinstance(app.screen, DeckScreen))
        titles = await _open_palette(pilot, app)
        assert "Pin" not in titles and "Show Capacity" not in titles and "Filter" not in titles
        assert {"Quit", "Theme", "Notices", "Pause", "Screenshot"} <= set(titles)
        assert len(titles) == len(set(titles))


async def test_read_only_palette_lists_no_write_entry_on_any_panel(demo_home) -> None:
    from memdeck.tui.keymap import WRITE_ACTIONS

    app = make_app(demo_home, watch=False, now=DEMO_NOW, read_only=True)
    write_titles = {t for t, _h, a in palette_entries() if a in WRITE_ACTIONS}
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        for pid in ("capacity", "review", "history"):
            await _back_to_panel(pilot, app, pid)
            titles = await _open_palette(pilot, app)
            await pilot.press("escape")
            assert not write_titles & set(titles), (pid, write_titles & set(titles))
