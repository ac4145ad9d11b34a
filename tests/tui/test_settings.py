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


@pytest.fixture(autouse=True)
def _no_person_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The platform's config directory (platformdirs reads the process environment) is an empty
    one, never the real user's; no MEMDECK_CONFIG. A test's ``env`` then names the place to read."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-settings-here"))
    monkeypatch.delenv("MEMDECK_CONFIG", raising=False)


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


# ── issue 26: where the file is (platformdirs), --config, MEMDECK_CONFIG ───────


def test_the_default_place_is_platformdirs_and_on_linux_the_old_xdg_place(tmp_path: Path, monkeypatch) -> None:
    import platformdirs

    from memdeck.tui.settings import legacy_dir, native_dir, settings_paths

    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert native_dir() == Path(platformdirs.user_config_dir("memdeck", appauthor=False, roaming=True))
    paths, source = settings_paths()
    assert source == "default"
    if isinstance(platformdirs.PlatformDirs(), platformdirs.unix.Unix):  # Linux, the BSDs: the same place as before
        assert native_dir() == legacy_dir() == xdg / "memdeck"
        assert paths == [xdg / "memdeck" / "config.toml", xdg / "memdeck" / "config.yaml"]
        monkeypatch.delenv("XDG_CONFIG_HOME")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        assert native_dir() == legacy_dir() == tmp_path / "home" / ".config" / "memdeck"


def test_a_file_in_the_old_place_is_still_read_where_the_native_place_differs(tmp_path: Path, monkeypatch) -> None:
    """macOS and Windows (and a relative XDG_CONFIG_HOME, which platformdirs ignores): memdeck
    before platformdirs read ~/.config/memdeck there; that file still works, after the native one."""
    from memdeck.tui import settings as settings_mod

    native = tmp_path / "Library" / "Application Support" / "memdeck"
    monkeypatch.setattr(settings_mod, "native_dir", lambda: native)
    env = _write(tmp_path, 'theme = "textual-light"\n')
    s = load_settings(None, None, env)
    assert s.path == tmp_path / "xdg" / "memdeck" / "config.toml" and s.theme == "textual-light"
    assert s.candidates[:2] == (native / "config.toml", native / "config.yaml") and s.source == "default"
    native.mkdir(parents=True)
    (native / "config.yaml").write_text("theme: textual-dark\n", encoding="utf-8")
    s = load_settings(None, None, env)
    assert s.path == native / "config.yaml" and s.theme == "textual-dark"  # the native place first


def test_config_wins_over_memdeck_config_which_wins_over_the_default(tmp_path: Path) -> None:
    env = _write(tmp_path, 'theme = "default-place"\n')
    by_env = tmp_path / "env.yaml"
    by_env.write_text("theme: by-env\n", encoding="utf-8")
    by_flag = tmp_path / "flag.toml"
    by_flag.write_text('theme = "by-flag"\n', encoding="utf-8")
    s = load_settings(None, None, env)
    assert (s.theme, s.source) == ("default-place", "default")
    s = load_settings(None, None, {**env, "MEMDECK_CONFIG": str(by_env)})
    assert (s.theme, s.source, s.path, s.origin) == ("by-env", "MEMDECK_CONFIG", by_env, "from MEMDECK_CONFIG")
    s = load_settings(None, None, {**env, "MEMDECK_CONFIG": str(by_env)}, explicit=by_flag)
    assert (s.theme, s.source, s.path, s.origin) == ("by-flag", "--config", by_flag, "from --config")


def test_memdeck_config_naming_no_file_is_a_warning_and_the_defaults(tmp_path: Path) -> None:
    env = {**_write(tmp_path, 'theme = "textual-light"\n'), "MEMDECK_CONFIG": str(tmp_path / "gone.toml")}
    s = load_settings(None, ["textual-light"], env)
    assert s.path is None and s.theme is None and s.candidates == (tmp_path / "gone.toml",)
    assert len(s.warnings) == 1 and "gone.toml (from MEMDECK_CONFIG) does not exist" in s.warnings[0]


def test_config_naming_no_file_exits_2_with_the_reason(tmp_path: Path, capsys) -> None:
    from memdeck.tui.launch import main

    assert main(["--demo", "--config", str(tmp_path / "nope.toml")]) == 2
    err = capsys.readouterr().err
    assert "--config" in err and "nope.toml: no such file" in err and "Traceback" not in err
    assert main(["--config", str(tmp_path), "serve", "--check"]) == 2
    assert "not a file" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["--config", "MEMDECK_CONFIG", "default", "none"])
def test_memdeck_help_says_which_settings_file_is_in_use(tmp_path: Path, monkeypatch, capsys, how: str) -> None:
    from memdeck.tui.launch import main

    f = tmp_path / "my settings.toml"
    f.write_text('theme = "textual-light"\n', encoding="utf-8")
    argv = ["--help"]
    if how == "--config":
        argv = ["--config", str(f), "--help"]
    elif how == "MEMDECK_CONFIG":
        monkeypatch.setenv("MEMDECK_CONFIG", str(f))
    elif how == "default":
        f = Path(_write(tmp_path, "")["XDG_CONFIG_HOME"]) / "memdeck" / "config.toml"
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 0
    out = capsys.readouterr().out
    if how == "none":
        assert "The dashboard has no settings file, the defaults apply. It looks for:\n" in out
        assert f"\n  {tmp_path}/no-settings-here/memdeck/config.toml\n" in out
    else:
        where = "the default place" if how == "default" else f"from {how}"
        assert f"The dashboard's settings file ({where}):\n  {f}\n" in out, out


async def test_help_screen_names_the_file_and_how_it_was_chosen(demo_home, tmp_path: Path) -> None:
    from memdeck.tui.screens.help import HelpScreen

    f = tmp_path / "elsewhere.toml"
    f.write_text('theme = "textual-light"\n', encoding="utf-8")
    app = make_app(demo_home, watch=False, user_settings=True, settings_file=f)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert app.theme == "textual-light"
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = " ".join(str(app.screen.query_one("#help-settings").content).split())
        assert f"the settings file is {f} (from --config)" in text, text


def test_each_served_tab_gets_the_settings_file_config_named(tmp_path: Path) -> None:
    from memdeck.tui.serve import dashboard_argv

    odd = tmp_path / "a b; $(x) 'q'.toml"
    argv = dashboard_argv(tmp_path, read_only=True, settings_file=odd)
    assert argv[-1] == f"--config={odd}" and "--read-only" in argv
    assert not [a for a in dashboard_argv(tmp_path, read_only=False) if a.startswith("--config")]


# ── issue 26 with issue 27: fleet and metrics read the same settings file ──────


def test_config_is_a_value_option_for_the_lazy_parser() -> None:
    """``memdeck --config FILE status``: FILE is not the command (the parser registers only the
    command's module, so a wrong word there would be "invalid choice")."""
    from memdeck.core.cli import command_name

    assert command_name(["--config", "status.toml", "status"]) == "status"
    assert command_name(["--config=fleet.toml", "metrics"]) == "metrics"
    assert command_name(["--conf", "x.toml", "fleet", "--json"]) == "fleet"


@pytest.mark.parametrize("how", ["--config", "MEMDECK_CONFIG"])
@pytest.mark.parametrize("command", ["fleet", "metrics"])
def test_fleet_and_metrics_read_the_fleet_table_of_the_named_file(demo_home, tmp_path: Path, monkeypatch, capsys,
                                                                   how: str, command: str) -> None:
    """The ``fleet.homes`` of the file ``--config`` (or ``MEMDECK_CONFIG``) names join the fleet;
    the file in the default place (another home there) is not read."""
    import json

    from memdeck.tui.launch import main

    named, default = tmp_path / "named home", tmp_path / "default home"
    f = tmp_path / "odd; $(x) settings.toml"
    f.write_text(f'[fleet]\nhomes = ["{named}"]\n', encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", _write(tmp_path, f'[fleet]\nhomes = ["{default}"]\n')["XDG_CONFIG_HOME"])
    monkeypatch.setenv("HERMES_HOME", str(demo_home.path))
    argv = [command, "--json"] if command == "fleet" else [command]
    if how == "--config":
        argv = ["--config", str(f), *argv]
    else:
        monkeypatch.setenv("MEMDECK_CONFIG", str(f))
    assert main(argv) == 0
    out = capsys.readouterr().out
    if command == "fleet":
        homes = [row["home"] for row in json.loads(out)]
        assert str(named) in homes and str(default) not in homes and str(demo_home.path) in homes
    else:
        assert str(named) in out and str(default) not in out


@pytest.mark.parametrize("command", [["fleet", "--json"], ["metrics"]])
def test_fleet_and_metrics_refuse_a_config_that_names_no_file(demo_home, tmp_path: Path, monkeypatch, capsys,
                                                               command: list[str]) -> None:
    from memdeck.tui.launch import main

    monkeypatch.setenv("HERMES_HOME", str(demo_home.path))
    assert main(["--config", str(tmp_path / "nope.toml"), *command]) == 2
    err = capsys.readouterr().err
    assert "--config" in err and "nope.toml: no such file" in err and "Traceback" not in err


def test_the_fleet_screen_opens_each_local_dashboard_with_the_same_config(tmp_path: Path) -> None:
    """``enter`` on the fleet screen runs a local home's dashboard with ``--config`` as given (one
    argument, no shell); a remote home's keeps the remote host's own settings."""
    from memdeck.core.fleet.homes import FleetSettings, fleet_homes, parse_home_spec
    from memdeck.core.fleet.rows import Fleet
    from memdeck.tui.fleet import FleetApp

    (tmp_path / "h").mkdir()
    remote = parse_home_spec("ssh://ops@box-2/home/ops/.hermes")
    homes = fleet_homes(None, FleetSettings(), explicit=tmp_path / "h") + [remote]
    odd = tmp_path / "a b; $(x) 'q'.toml"
    fleet = Fleet(homes)
    try:
        local = FleetApp(fleet, watch=False, settings_file=odd).dashboard_argv(homes[0])
        assert local[1:] == ["-m", "memdeck.tui", f"--config={odd}", "--home", homes[0].path]
        plain = FleetApp(fleet, watch=False).dashboard_argv(homes[0])
        assert not [a for a in plain if a.startswith("--config")]
        ssh = FleetApp(fleet, watch=False, settings_file=odd).dashboard_argv(remote)
        assert not [a for a in ssh if "--config" in a]
    finally:
        fleet.close()
