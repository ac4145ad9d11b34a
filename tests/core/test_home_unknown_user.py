"""``--home '~nosuchuser/x'`` (or the same in ``HERMES_HOME``) ended every command in pathlib's
``RuntimeError`` traceback (issue 40 #5): now one line says there is no home there and the
command exits 4, as for a missing directory (README "Exit codes")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdeck.core.cli.common import EXIT_NO_HOME
from memdeck.core.home import UnknownUserHome, expand_home_path
from tests.helpers.commands import PLACEHOLDERS, SAMPLES, command_paths, fill

_NOBODY = "~memdeck-no-such-user-40x5/hermes"


def test_an_unknown_user_is_a_missing_home() -> None:
    with pytest.raises(UnknownUserHome, match="no Hermes home at ~memdeck-no-such-user-40x5/hermes"):
        expand_home_path(_NOBODY)


@pytest.mark.parametrize("how", ["--home", "HERMES_HOME"])
def test_every_command_says_so_in_one_line_and_exits_4(tmp_path: Path, capsys, monkeypatch, how: str) -> None:
    from memdeck.tui.launch import main as console_main

    assert set(SAMPLES) == set(command_paths())
    values = dict(PLACEHOLDERS, textfile_dir=str(tmp_path / "textfile"))
    if how == "HERMES_HOME":
        monkeypatch.setenv("HERMES_HOME", _NOBODY)
        base: list[str] = []
    else:
        monkeypatch.delenv("HERMES_HOME", raising=False)
        base = ["--home", _NOBODY]
    for command, argvs in SAMPLES.items():
        for argv in argvs:
            code = console_main([*base, *fill(argv, values)])
            out, err = capsys.readouterr()
            assert "Traceback" not in err and "RuntimeError" not in err, (argv, err)
            if command == "completion":  # reads no home
                assert code == 0, argv
                continue
            assert code == EXIT_NO_HOME, (argv, code, err)
            lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("usage:")]
            assert len(lines) == 1 and "no Hermes home at ~memdeck-no-such-user-40x5" in lines[0], (argv, err)
            if "--json" in argv and command not in ("fleet",):
                assert json.loads(out)["code"] == "no_home", argv
