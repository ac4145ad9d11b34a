"""``memdeck`` / ``memdeck --demo``: the dashboard launcher (core/cli/dashboard.py)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from memdeck.core.cli import build_parser
from memdeck.core.demo import demo_home_dir
from memdeck.core.demo.story import DEMO_MARKER
from memdeck.tui.launch import main, run_dashboard


class FakeApp:
    def __init__(self, home, boom: Exception | None = None) -> None:
        self.home, self.boom, self.ran, self.return_code = home, boom, False, 0

    def run(self) -> None:
        self.ran = True
        if self.boom is not None:
            raise self.boom


@pytest.fixture
def fake_tui(monkeypatch: pytest.MonkeyPatch):
    """Replace ``tui.app`` by a module whose ``make_app`` records its arguments."""
    calls: list[dict] = []
    mod = types.ModuleType("memdeck.tui.app")

    def make_app(home, *, config=None, watch=True, demo=False, user_settings=False, head_start=None, read_only=False,
                 settings_file=None, layout=None):
        app = FakeApp(home, getattr(mod, "boom", None))
        calls.append({"home": home, "config": config, "watch": watch, "demo": demo, "app": app,
                      "head_start": head_start, "read_only": read_only, "settings_file": settings_file,
                      "layout": layout})
        return app

    mod.make_app = make_app
    monkeypatch.setitem(sys.modules, "memdeck.tui.app", mod)
    return mod, calls


def test_demo_builds_a_fresh_home_in_the_cache_and_opens_it(fake_tui, tmp_path: Path, monkeypatch, capsys) -> None:
    _mod, calls = fake_tui
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["--demo", "--seed", "3"]) == 0
    (call,) = calls
    assert call["demo"] is True and call["watch"] is True and call["app"].ran and call["read_only"] is False
    assert call["home"].path == demo_home_dir(3) and (call["home"].path / DEMO_MARKER).exists()
    assert call["home"].memory_file("memory").exists() and call["config"].memory_char_limit == 2200
    assert "demo home is" in capsys.readouterr().err


def test_config_gives_the_dashboard_its_settings_file_as_an_absolute_path(fake_tui, tmp_path: Path, monkeypatch) -> None:
    _mod, calls = fake_tui
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text("theme: textual-light\n", encoding="utf-8")
    assert main(["--demo", "--config", "mine.yaml"]) == 0
    assert calls[-1]["settings_file"] == tmp_path / "mine.yaml"
    assert main(["--demo"]) == 0 and calls[-1]["settings_file"] is None


def test_demo_says_on_exit_how_to_run_the_command_line_on_its_home(fake_tui, tmp_path: Path, monkeypatch,
                                                                     capsys) -> None:
    """Issue 22 #13: the printed command is one a newcomer can paste, and it works on the demo home."""
    import shlex

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache with space"))
    assert main(["--demo"]) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    (i,) = [n for n, ln in enumerate(lines) if "try the command line on it" in ln]
    argv = shlex.split(lines[i + 1])
    assert argv[:2] == ["memdeck", "--home"] and argv[-1] == "status" and argv[2] == str(demo_home_dir(7))
    assert main(argv[1:]) == 0
    assert "MEMORY.md" in capsys.readouterr().out


def test_real_home_is_resolved_like_the_commands(fake_tui, tmp_path: Path, monkeypatch) -> None:
    _mod, calls = fake_tui
    home = tmp_path / "h"
    (home / "memories").mkdir(parents=True)
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert main([]) == 0
    assert calls[0]["home"].path == home and calls[0]["demo"] is False
    # the first refresh was begun for the same home and config before the dashboard was built
    head_start = calls[0]["head_start"]
    assert head_start is not None and head_start.home.path == home and head_start.config is calls[0]["config"]
    assert head_start._done.wait(30) and head_start.first is not None


@pytest.mark.parametrize("where", ["missing", "not-a-home"])
def test_missing_home_is_one_line_and_exit_4(fake_tui, tmp_path: Path, capsys, where: str) -> None:
    """As every command (issue 22 #11): no home there is exit 4, one line, and no dashboard of zeros."""
    _mod, calls = fake_tui
    if where == "not-a-home":
        (tmp_path / "nope").mkdir()
    assert main(["--home", str(tmp_path / "nope")]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Hermes home at" in err and "--demo" in err
    assert calls == []


def test_unknown_profile_is_a_usage_error(fake_tui, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    assert main(["--profile", "ghost"]) == 2
    assert "ghost" in capsys.readouterr().err


def test_tui_not_importable_is_a_clear_error(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setitem(sys.modules, "memdeck.tui.app", None)  # makes `from memdeck.tui.app import ...` raise ImportError
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    args = build_parser().parse_args(["--demo"])
    assert run_dashboard(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("memdeck: error: the dashboard is not available") and "Traceback" not in err


def test_a_crash_inside_the_app_is_one_line_not_a_traceback(fake_tui, tmp_path: Path, monkeypatch, capsys) -> None:
    mod, _calls = fake_tui
    mod.boom = RuntimeError("terminal went away")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["--demo"]) == 1
    err = capsys.readouterr().err
    assert err == "memdeck: error: the dashboard stopped: RuntimeError: terminal went away\n"


def test_demo_with_a_command_is_refused(capsys) -> None:
    assert main(["--demo", "sessions"]) == 2
    assert "--demo opens the dashboard" in capsys.readouterr().err


def test_read_only_opens_a_read_only_dashboard_and_takes_no_other_command(fake_tui, tmp_path: Path, monkeypatch,
                                                                          capsys) -> None:
    _mod, calls = fake_tui
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["--demo", "--read-only"]) == 0
    assert calls[-1]["read_only"] is True
    assert main(["--read-only", "status"]) == 2
    assert "--read-only is for the dashboard" in capsys.readouterr().err


def test_layout_overview_reaches_the_dashboard_and_takes_no_command(fake_tui, tmp_path: Path, monkeypatch,
                                                                    capsys) -> None:
    """Issue 39 #13: ``memdeck --layout overview`` opens the overview; a command does not take it."""
    _mod, calls = fake_tui
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["--demo", "--layout", "overview"]) == 0
    assert calls[-1]["layout"] == "overview"
    assert main(["--demo"]) == 0 and calls[-1]["layout"] is None  # the settings file's, else panels
    assert main(["--layout", "overview", "status"]) == 2
    assert "--layout is for the dashboard" in capsys.readouterr().err
