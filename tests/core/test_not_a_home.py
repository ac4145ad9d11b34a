"""A mistyped --home is refused for writes and nothing is created there (issue 8 #8); every
command exits 4 there, reads included (issue 22 #11: ``status`` printed zeros and exited 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdeck.core.cli import main
from memdeck.core.cli.common import EXIT_NO_HOME
from tests.helpers.commands import NO_HOME_EXIT_0, SAMPLES, fill, home_values


@pytest.mark.parametrize("argv", [
    ["memory", "add", "--target", "memory", "a fact"],
    ["pin", "Use metric units", "--session", "s1"],
    ["pin", "Use metric units", "--scope", "global"],
])
@pytest.mark.parametrize("exists", [False, True])
def test_writes_into_a_directory_without_hermes_markers_are_refused(tmp_path: Path, capsys, argv, exists) -> None:
    typo = tmp_path / "hermse"
    if exists:
        typo.mkdir()
        (typo / "notes.txt").write_text("someone's directory")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["--home", str(typo), *argv]) == EXIT_NO_HOME
    err = capsys.readouterr().err
    assert "no Hermes home at" in err and "nothing was read or written" in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("marker", ["config.yaml", "memories", "state.db"])
def test_any_one_marker_makes_a_home(tmp_path: Path, marker: str) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / marker).mkdir() if marker == "memories" else (home / marker).write_bytes(b"")
    assert main(["--home", str(home), "memory", "add", "--target", "memory", "a fact"]) == 0
    assert (home / "memories" / "MEMORY.md").read_text(encoding="utf-8") == "a fact"


@pytest.mark.parametrize("where", ["missing", "empty", "no-hermes-home"])
def test_every_command_says_there_is_no_home_and_exits_4(tmp_path: Path, capsys, monkeypatch, where: str) -> None:
    """``status`` on a missing home, an empty directory, or with no ``~/.hermes`` (no --home, no
    HERMES_HOME) said nothing and exited 0 with zeros; now every command of the parser says so
    and exits 4, and creates nothing (``serve`` through the console script, which serves the
    dashboard; ``fleet`` and ``metrics`` too: they printed a row saying so and exited 0, issue 39 #5)."""
    from memdeck.tui.launch import main as console_main

    typo = tmp_path / "hermse"
    if where == "empty":
        typo.mkdir()
    base = ["--home", str(typo)]
    if where == "no-hermes-home":
        monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
        monkeypatch.delenv("HERMES_HOME", raising=False)
        base = []
    values = home_values(str(typo))  # creates the directory beside the home `metrics --textfile` writes to
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "-textfile" not in str(p))
    for command, argvs in SAMPLES.items():
        for argv in argvs:
            run = console_main if command == "serve" else main
            code = run([*base, *fill(argv, values)])
            captured = capsys.readouterr()
            assert {"completion"} == NO_HOME_EXIT_0  # fleet and metrics too (issue 39 #5: they exited 0)
            if command == "completion":
                assert code == 0 and "memdeck" in captured.out and "no Hermes home" not in captured.err, argv
                continue
            assert code == EXIT_NO_HOME, argv
            assert "error: no Hermes home at" in captured.err, (argv, captured.err)
            if "--json" in argv:
                assert json.loads(captured.out)["code"] == "no_home"
    assert NO_HOME_EXIT_0 | {"serve", "fleet", "metrics"} <= set(SAMPLES)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "-textfile" not in str(p)) == before


def test_the_fleet_without_a_local_home_still_watches_its_settings_homes(tmp_path: Path, capsys, monkeypatch) -> None:
    """fleet and metrics exit 4 where the home they start from is not one (above), except on a
    machine with no ``~/.hermes`` (nothing named) whose settings file lists ``fleet.homes``: the
    fleet is those homes, and a missing local root is no error (issue 39 #5)."""
    from memdeck.core.demo import build_demo_home
    from memdeck.core.fleet.homes import FleetSettings, parse_home_spec

    other = build_demo_home(tmp_path / "elsewhere")
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    settings = FleetSettings(homes=(parse_home_spec(str(other.path)),))
    assert main(["fleet", "--json"], fleet_settings=lambda _c: settings) == 0
    rows = json.loads(capsys.readouterr().out)
    assert str(other.path) in {r["home"] for r in rows}
    assert main(["metrics"], fleet_settings=lambda _c: settings) == 0
    assert main(["--home", str(tmp_path / "typo"), "fleet", "--json"], fleet_settings=lambda _c: settings) == EXIT_NO_HOME
