"""The person's settings file: keymap by binding id, theme, default profile; bad input warns."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdeck.tui.app import MemdeckApp, make_app
from memdeck.tui.keymap import PANELS
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


# ── issue 22 #6: a hostile settings file is bounded like config.yaml ─────────


def _bomb(leaves_pow: int) -> str:
    """A YAML alias bomb under ``theme``: 10**leaves_pow values once expanded (a few hundred bytes)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, leaves_pow):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    lines.append(f"theme: *a{leaves_pow - 1}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_by_the_config_bound(tmp_path: Path) -> None:
    """10**6 values: the old reader put repr(theme) in a warning (9**10 of them grew to 5.9 GB)."""
    env = _write(tmp_path, _bomb(6), name="config.yaml")
    s = load_settings(all_binding_ids(MemdeckApp), ["textual-dark"], env)
    assert s.theme is None and s.keymap == {} and len(s.warnings) == 1
    assert "expands to more than 100,000 values" in s.warnings[0] and len(s.warnings[0]) < 300


def test_a_large_file_is_refused_before_it_is_parsed(tmp_path: Path, monkeypatch) -> None:
    from memdeck.core import config as config_mod
    from memdeck.tui import settings as settings_mod

    def never(*_a, **_k) -> None:
        raise AssertionError("a settings file over the bound was parsed")

    monkeypatch.setattr(config_mod, "yaml_safe_load", never)
    monkeypatch.setattr(settings_mod.tomllib, "loads", never)
    for name in ("config.yaml", "config.toml"):
        env = _write(tmp_path / name, 'theme = "textual-light"\n' + "#" * settings_mod.MAX_SETTINGS_BYTES, name=name)
        s = load_settings(all_binding_ids(MemdeckApp), ["textual-light"], env)
        assert s.theme is None and len(s.warnings) == 1 and "over memdeck's 65,536-byte bound" in s.warnings[0], s.warnings


@pytest.mark.parametrize(("name", "text"), [
    ("config.toml", "theme = " + "[" * 5000 + "]" * 5000 + "\n"),
    ("config.yaml", "theme: " + "[" * 5000 + "]" * 5000 + "\n"),
    ("config.toml", "x = 1\n" + "[" + ".".join(f"k{i}" for i in range(300)) + "]\n"),
])
def test_a_file_nested_too_deep_is_one_warning_never_an_exception(tmp_path: Path, name: str, text: str) -> None:
    env = _write(tmp_path, text, name=name)
    s = load_settings(all_binding_ids(MemdeckApp), ["textual-dark"], env)
    assert s.theme is None and len(s.warnings) == 1 and "nest" in s.warnings[0] and "using the defaults" in s.warnings[0]


async def test_the_dashboard_opens_with_defaults_and_says_why_on_a_bad_file(demo_home, tmp_path: Path, monkeypatch) -> None:
    from memdeck.tui.screens.help import HelpScreen

    monkeypatch.setenv("XDG_CONFIG_HOME", _write(tmp_path, _bomb(6), name="config.yaml")["XDG_CONFIG_HOME"])
    app = make_app(demo_home, watch=False, user_settings=True)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        assert app.refresh_count >= 1 and app.theme == "textual-dark"  # painted, with the defaults
        assert any("alias bomb" in n.message and n.severity == "warning" for n in app.notification_log)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = str(app.screen.query_one("#help-settings").content)
        assert "1 problem(s)" in text and "alias bomb" in text and "config.yaml" in text


# ── issue 22 #10: a keymap never takes quit, the palette or help ─────────────


def _keymap(tmp_path: Path, body: str) -> object:
    from memdeck.tui.keymap import main_screen_keys

    env = _write(tmp_path, "[keymap]\n" + body)
    return load_settings(all_binding_ids(MemdeckApp), None, env, default_keys=main_screen_keys())


def test_a_reserved_key_is_refused_with_a_warning(tmp_path: Path) -> None:
    s = _keymap(tmp_path, '"memdeck.pin" = "ctrl+p"\n"memdeck.archive" = "q, x"\n"memdeck.edit" = "?"\n"memdeck.undo" = "ctrl+q"\n')
    assert s.keymap == {"memdeck.archive": "x"}
    text = "\n".join(s.warnings)
    for needle in ("'ctrl+p' is the key of memdeck.palette", "'q' is the key of memdeck.quit",
                   "'?' is the key of memdeck.help", "'ctrl+q' is the key of memdeck.quit_ctrl_q"):
        assert needle in text, text


def test_a_key_textual_cannot_bind_is_named_not_bound_silently(tmp_path: Path) -> None:
    s = _keymap(tmp_path, '"memdeck.pin" = "ctrl+, f2"\n"memdeck.edit" = "\\u001b[31m"\n"memdeck.move" = "' + "x" * 500 + '"\n')
    assert s.keymap == {"memdeck.pin": "f2"}
    text = "\n".join(s.warnings)
    assert "'ctrl+' is not a key name Textual knows" in text and "'\\x1b[31m' is not a key name" in text
    assert "'" + "x" * 40 + "…' is not a key name" in text and "x" * 41 not in text


def test_moving_quit_itself_is_allowed_and_frees_its_key(tmp_path: Path) -> None:
    s = _keymap(tmp_path, '"memdeck.quit" = "ctrl+w"\n"memdeck.pin" = "q"\n')
    assert s.keymap == {"memdeck.quit": "ctrl+w", "memdeck.pin": "q"}
    assert not [w for w in s.warnings if "quit" in w], s.warnings


def test_taking_another_actions_key_names_the_action_that_lost_it(tmp_path: Path) -> None:
    s = _keymap(tmp_path, '"memdeck.pin" = "u"\n"memdeck.edit" = "ctrl+k"\n"memdeck.move" = "ctrl+k"\n')
    assert s.keymap == {"memdeck.pin": "u", "memdeck.edit": "ctrl+k"}
    text = "\n".join(s.warnings)
    assert "'u' was the key of memdeck.unpin, which now has no key (ctrl+p still runs it)" in text
    assert "'ctrl+k' is already given to memdeck.edit" in text


def _readme_settings_example() -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Settings", 1)[1]
    return section.split("```toml\n", 1)[1].split("```", 1)[0]


async def test_the_readme_example_keeps_quit_and_the_palette(demo_home, tmp_path: Path, monkeypatch) -> None:
    """The README's own example bound memdeck.pin to ctrl+p and so took the palette away."""
    example = _readme_settings_example()
    assert "[keymap]" in example
    monkeypatch.setenv("XDG_CONFIG_HOME", _write(tmp_path, example)["XDG_CONFIG_HOME"])
    app = make_app(demo_home, watch=False, user_settings=True)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        assert app.settings.warnings == () and app.settings.keymap  # the example is all usable
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette")
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "DeckScreen")
        await pilot.press("q")
        await wait_for(pilot, lambda: app._exit)  # q still quits


async def test_help_lists_every_binding_id_a_keymap_takes(demo_home, tmp_path: Path, monkeypatch) -> None:
    from memdeck.tui.keymap import keys_table
    from memdeck.tui.screens.help import HelpScreen

    monkeypatch.setenv("XDG_CONFIG_HOME", _write(tmp_path, '[keymap]\n"memdeck.panel.anchors" = "f2"\n')["XDG_CONFIG_HOME"])
    app = make_app(demo_home, watch=False, user_settings=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one("#help-keys").content
        ids = [c.plain for c in table.columns[1].cells]
        assert {"memdeck.pin", "memdeck.quit", "memdeck.palette", "memdeck.panel.anchors"} <= set(ids)
        assert "memdeck.panel.*" not in ids and len(ids) == len(keys_table()) - 1 + len(PANELS)  # one row per panel
        keys = [c.plain for c in table.columns[0].cells]
        assert keys[ids.index("memdeck.panel.anchors")] == "f2 *"  # the key the keymap moved it to
        settings_text = str(app.screen.query_one("#help-settings").content)
        assert "config.toml" in settings_text
        # every id a keymap takes is on the help screen: the table's and the dialogs' / boxes'
        for bid in all_binding_ids(MemdeckApp):
            assert bid in ids or bid in settings_text, bid
