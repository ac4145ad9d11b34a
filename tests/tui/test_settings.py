"""The person's settings file: keymap by binding id, theme, default profile; bad input warns."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdeck.tui.app import MemdeckApp, make_app
from memdeck.tui.launch import resolve_dashboard_home
from memdeck.tui.settings import all_binding_ids, load_settings
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _write(tmp_path: Path, text: str, name: str = "config.toml") -> dict[str, str]:
    d = tmp_path / "xdg" / "memdeck"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def test_every_key_has_a_binding_id_a_keymap_can_name() -> None:
    ids = all_binding_ids(MemdeckApp)
    assert {"memdeck.pin", "memdeck.quit", "memdeck.help", "memdeck.follow", "memdeck.notifications"} <= set(ids)


def test_unknown_ids_values_and_keys_are_listed_and_the_rest_is_used(tmp_path: Path) -> None:
    env = _write(tmp_path, 'theme = "no-such-theme"\ndefault_profile = "Bad Name"\ncolour = 1\n'
                           '[keymap]\n"memdeck.pin" = "ctrl+p"\n"memdeck.nope" = "x"\n"memdeck.quit" = 3\n')
    s = load_settings(all_binding_ids(MemdeckApp), ["textual-dark", "textual-light"], env)
    assert s.keymap == {"memdeck.pin": "ctrl+p"} and s.theme is None and s.default_profile is None
    text = "\n".join(s.warnings)
    for needle in ("'colour'", "no-such-theme", "Bad Name", "memdeck.nope", "memdeck.quit"):
        assert needle in text, needle


def test_a_broken_file_is_one_warning_and_the_defaults(tmp_path: Path) -> None:
    env = _write(tmp_path, "theme = [unclosed\n")
    s = load_settings(all_binding_ids(MemdeckApp), ["textual-dark"], env)
    assert s.keymap == {} and s.theme is None and len(s.warnings) == 1 and "not read" in s.warnings[0]
    env = _write(tmp_path / "y", "theme: textual-light\nkeymap:\n  memdeck.help: f1\n", name="config.yaml")
    s = load_settings(all_binding_ids(MemdeckApp), ["textual-light"], env)
    assert s.theme == "textual-light" and s.keymap == {"memdeck.help": "f1"} and not s.warnings


async def test_the_keymap_and_theme_apply_and_warnings_are_toasted(demo_home, tmp_path: Path, monkeypatch) -> None:
    env = _write(tmp_path, 'theme = "textual-light"\n[keymap]\n"memdeck.panel.anchors" = "f2"\n"memdeck.zzz" = "f3"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", env["XDG_CONFIG_HOME"])
    app = make_app(demo_home, watch=False, user_settings=True)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        assert app.theme == "textual-light"
        assert any("memdeck.zzz" in m for _w, _s, _t, m in app.notification_log)
        await pilot.press("f2")
        await wait_for(pilot, lambda: app.current_panel_id == "anchors")


def test_default_profile_opens_before_hermes_active_profile(tmp_path: Path, monkeypatch) -> None:
    import argparse

    root = tmp_path / "user_home" / ".hermes"
    (root / "profiles" / "work" / "memories").mkdir(parents=True)
    (root / "profiles" / "play" / "memories").mkdir(parents=True)
    (root / "active_profile").write_text("play")
    monkeypatch.setenv("HOME", str(tmp_path / "user_home"))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", _write(tmp_path, 'default_profile = "work"\n')["XDG_CONFIG_HOME"])
    args = argparse.Namespace(home=None, profile=None, demo=False, seed=None)
    home, demo = resolve_dashboard_home(args)
    assert home.path == root / "profiles" / "work" and not demo
    home, _ = resolve_dashboard_home(argparse.Namespace(home=None, profile="play", demo=False, seed=None))
    assert home.path == root / "profiles" / "play"  # --profile still wins
