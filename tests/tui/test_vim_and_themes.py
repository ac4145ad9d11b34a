"""Issue 39 #14: vim motion in every table and list (j/k, g/G, ctrl+d/ctrl+u) that never takes a
key already meaning something (g in Capacity, a keymap's key), and Textual's themes: the picker
in the palette (T), the choice saved in the settings file and restored at the next launch."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import DeckScreen, make_app
from memdeck.tui.settings import all_binding_ids, load_settings, save_setting
from memdeck.tui.widgets.option_list import DeckOptionList
from memdeck.tui.widgets.table import DeckTable
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _config(tmp_path: Path, text: str = "") -> Path:
    path = tmp_path / "settings" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def _table(pilot, app, pid: str) -> DeckTable:
    from memdeck.tui.keymap import PANEL_IDS

    await pilot.press(str(PANEL_IDS.index(pid) + 1))
    await wait_for(pilot, lambda: app.current_panel_id == pid and isinstance(app.focused, DeckTable))
    await settle(pilot, app)
    table = app.focused
    assert isinstance(table, DeckTable) and table.row_count >= 3, (pid, table)
    return table


async def test_vim_keys_move_the_cursor_in_every_panel_table(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        table = await _table(pilot, app, "history")
        table.move_cursor(row=0)
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("ctrl+d")
        half = table.cursor_row
        assert half == min(table.row_count - 1, max(1, table.vim_page() // 2)) and half > 0
        await pilot.press("ctrl+u")
        assert table.cursor_row == 0


async def test_g_in_capacity_still_toggles_the_charts_and_G_moves(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        table = await _table(pilot, app, "capacity")
        panel = app.panel("capacity")
        shown = panel.charts_shown
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1
        await pilot.press("g")  # the panel's key: the charts, and the cursor stays
        await wait_for(pilot, lambda: panel.charts_shown != shown)
        assert table.cursor_row == table.row_count - 1


async def test_a_keymap_key_wins_over_the_motion_and_a_moved_motion_follows(demo_home, tmp_path: Path) -> None:
    path = _config(tmp_path, '[keymap]\n"memdeck.follow" = "j"\n"memdeck.vim.down" = "ctrl+n"\n')
    assert {"memdeck.vim.down", "memdeck.vim.top"} <= set(all_binding_ids(type(make_app(demo_home, watch=False))))
    app = make_app(demo_home, watch=False, now=DEMO_NOW, user_settings=True, settings_file=path)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        table = await _table(pilot, app, "history")
        table.move_cursor(row=0)
        seen = len(app.notification_log)
        await pilot.press("j")  # follow's key now: its toast, no motion
        await wait_for(pilot, lambda: len(app.notification_log) > seen)
        assert "live session" in app.notification_log[-1].message and table.cursor_row == 0
        await pilot.press("ctrl+n")
        assert table.cursor_row == 1


async def test_vim_keys_move_in_a_picker(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("s")  # the session picker
        await wait_for(pilot, lambda: not isinstance(app.screen, DeckScreen))
        await wait_for(pilot, lambda: isinstance(app.focused, DeckOptionList))
        ol = app.focused
        assert ol.option_count >= 2
        ol.highlighted = 0
        await pilot.press("j")
        assert ol.highlighted == 1
        await pilot.press("G")
        assert ol.highlighted == ol.option_count - 1
        await pilot.press("g")
        assert ol.highlighted == 0
        await pilot.press("k")
        assert ol.highlighted == 0


async def test_a_theme_picked_in_the_palette_is_saved_and_restored(demo_home, tmp_path: Path) -> None:
    path = _config(tmp_path, '# mine\n[keymap]\n"memdeck.pin" = "ctrl+k"\n')
    app = make_app(demo_home, watch=False, now=DEMO_NOW, user_settings=True, settings_file=path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert app.theme == "textual-dark"
        await pilot.press("T")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"gruvbox")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "gruvbox")
        await wait_for(pilot, lambda: isinstance(app.screen, DeckScreen))
    text = path.read_text(encoding="utf-8")
    assert 'theme = "gruvbox"' in text and "# mine" in text
    assert '"memdeck.pin" = "ctrl+k"' in text
    settings = load_settings(explicit=path)
    assert settings.theme == "gruvbox" and settings.keymap == {"memdeck.pin": "ctrl+k"} and not settings.warnings
    again = make_app(demo_home, watch=False, now=DEMO_NOW, user_settings=True, settings_file=path)
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(pilot, again)
        assert again.theme == "gruvbox"
        await pilot.press("t")  # dark / light is saved too
        await wait_for(pilot, lambda: again.theme == "textual-dark")
    assert load_settings(explicit=path).theme == "textual-dark"


async def test_no_theme_is_written_without_user_settings_or_into_an_unread_file(demo_home, tmp_path: Path) -> None:
    bad = _config(tmp_path, "theme = [unclosed\n")
    app = make_app(demo_home, watch=False, now=DEMO_NOW, user_settings=True, settings_file=bad)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("t")
        await wait_for(pilot, lambda: app.theme == "textual-light")
    assert bad.read_text(encoding="utf-8") == "theme = [unclosed\n"


def test_save_setting_replaces_the_top_level_line_only(tmp_path: Path) -> None:
    toml = _config(tmp_path, 'theme = "nord"  # old\n[fleet]\ntheme = "kept"\n')
    save_setting(toml, "theme", "dracula")
    assert toml.read_text(encoding="utf-8") == 'theme = "dracula"\n[fleet]\ntheme = "kept"\n'
    save_setting(toml, "layout", "overview")
    assert toml.read_text(encoding="utf-8").startswith('layout = "overview"\ntheme = "dracula"\n')
    yaml = tmp_path / "new" / "config.yaml"
    save_setting(yaml, "theme", "monokai")
    save_setting(yaml, "theme", "nord")
    assert yaml.read_text(encoding="utf-8") == 'theme: "nord"\n'
    assert load_settings(explicit=yaml).theme == "nord"
