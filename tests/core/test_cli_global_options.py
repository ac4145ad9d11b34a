"""Every global option also works after the command, as users type it (issue 39 #3: ``memdeck
serve --demo`` was "unrecognized arguments"; only ``memdeck --demo serve`` worked)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from memdeck.core import cli
from memdeck.core.cli.common import EXIT_USAGE
from memdeck.core.demo import build_demo_home
from tests.helpers.commands import PLACEHOLDERS, SAMPLES, command_paths, fill

#: every global option of ``memdeck --help`` that takes effect on a run (not --help/--version)
_GLOBALS = {"--home": "/some/home", "--profile": "work", "--demo": None, "--seed": "3", "--read-only": None,
            "--config": "/some/settings.toml"}
#: global options of the dashboard alone: they take no command, before or after it (``--layout``)
_DASHBOARD_ONLY = {"--layout"}


def _global_flags() -> set[str]:
    parser = cli.build_parser(None)
    return {a.option_strings[0] for a in parser._actions
            if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))}


def test_the_list_is_every_global_option() -> None:
    assert _global_flags() == set(_GLOBALS) | _DASHBOARD_ONLY


def _parse(argv: list[str]) -> argparse.Namespace:
    return cli._parser(cli.command_name(argv)).parse_args(argv)


@pytest.mark.parametrize("path", command_paths())
@pytest.mark.parametrize("flag", sorted(_GLOBALS))
def test_a_global_option_after_the_command_is_the_same_as_before_it(path: str, flag: str) -> None:
    values = dict(PLACEHOLDERS, textfile_dir="/tmp/textfile")
    sample = fill(SAMPLES[path][0], values)
    value = _GLOBALS[flag]
    opt = [flag] if value is None else [flag, value]
    before, after = _parse([*opt, *sample]), _parse([*sample, *opt])
    dest = flag.lstrip("-").replace("-", "_")
    if path.startswith("plugin ") and flag == "--home":  # plugin's own --home names the plugin's home
        assert after.plugin_home == value
        return
    assert getattr(after, dest) == getattr(before, dest) != getattr(_parse(sample), dest), (path, flag)
    assert {k: v for k, v in vars(after).items() if k != "root_parser"} == \
        {k: v for k, v in vars(before).items() if k != "root_parser"}


def test_commands_run_with_the_options_after_them(tmp_path: Path, capsys) -> None:
    from memdeck.tui.launch import main as console_main

    home = build_demo_home(tmp_path / "home")
    assert cli.main(["status", "--json", "--home", str(home.path)]) == 0
    assert str(home.path) in capsys.readouterr().out
    assert console_main(["serve", "--demo", "--port", "0", "--check"]) == 0
    assert "demo-" in capsys.readouterr().err  # "would serve <the demo home>"
    assert console_main(["serve", "--port", "0", "--check", "--home", str(home.path), "--read-only"]) == 0
    err = capsys.readouterr().err
    assert str(home.path) in err and "(read-only)" in err


@pytest.mark.parametrize("argv", [
    ["--home", "/h", "status", "--profile", "p"], ["status", "--home", "/h", "--demo"],
    ["--profile", "p", "serve", "--demo", "--check"],
])
def test_home_profile_and_demo_still_exclude_each_other_wherever_they_stand(argv: list[str], capsys) -> None:
    assert cli.main(argv, serve=lambda _a: 0) == EXIT_USAGE
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_demo_still_goes_with_the_dashboard_only(capsys) -> None:
    assert cli.main(["status", "--demo"]) == EXIT_USAGE
    assert "--demo opens the dashboard" in capsys.readouterr().err
