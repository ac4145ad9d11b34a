"""Each CLI command imports only what it needs (issue 23: every command imported all of
``memdeck.core.cli``'s command modules and the whole change history before doing anything)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memdeck.core import cli
from memdeck.core.demo import build_demo_home
from memdeck.core.text import hidden_pattern, marker_for, visible


def test_the_command_table_is_what_the_modules_register() -> None:
    registered: dict[str, tuple[str, str]] = {}
    for name in cli.COMMAND_MODULE_NAMES:
        p = argparse.ArgumentParser()
        sub = p.add_subparsers(dest="command")
        cli.command_module(name).register(sub)
        for a in sub._choices_actions:  # noqa: SLF001 - argparse keeps the help lines here
            registered[a.dest] = (name, a.help)
    assert registered == cli.COMMANDS
    assert list(registered) == list(cli.COMMANDS)  # --help lists them in the modules' order


@pytest.mark.parametrize(("argv", "name"), [
    ([], None), (["--home", "/h", "recall", "x"], "recall"), (["--home=/h", "status"], "status"),
    (["--hom", "/h", "sessions"], "sessions"), (["--profile", "work", "--json"], None), (["--demo"], None),
    (["--seed", "3", "history"], "history"), (["--", "status"], None), (["bogus"], "bogus"),
])
def test_the_command_word_is_found_past_the_global_options(argv: list[str], name: str | None) -> None:
    assert cli.command_name(argv) == name


_PROBE = r'''
import io, json, sys, contextlib
from memdeck.core.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        rc = main(json.loads(sys.argv[1]), dashboard=lambda args: 0)
    except SystemExit as exc:  # --help
        rc = exc.code
print(json.dumps({"rc": rc, "modules": sorted(m for m in sys.modules if m.startswith("memdeck.core"))}))
'''


def _modules(argv: list[str]) -> tuple[int, set[str]]:
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(argv)], capture_output=True, text=True, timeout=120)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["rc"], set(out["modules"])


def test_a_command_imports_only_its_own_module(tmp_path: Path) -> None:
    home = build_demo_home(tmp_path / "home")
    rc, mods = _modules(["--home", str(home.path), "recall", "deploy", "--json"])
    assert rc == 0
    commands = {m for m in mods if m.startswith("memdeck.core.cli.") and m.endswith("_cmds")}
    assert commands == {"memdeck.core.cli.session_cmds"}
    assert "memdeck.core.history.reverting" not in mods  # observing needs no revert


@pytest.mark.parametrize("argv", [["--help"], []])
def test_help_and_the_dashboard_path_import_no_command_module(argv: list[str]) -> None:
    rc, mods = _modules(argv)
    assert rc == 0
    assert not {m for m in mods if m.endswith("_cmds")}
    assert "memdeck.core.history" not in mods


def test_the_help_still_lists_every_command(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert f"    {name} " in text or f"    {name}\n" in text


def test_ascii_text_is_escaped_as_by_the_whole_unicode_pattern() -> None:
    """The ASCII shortcut of ``visible`` hides exactly what the full pattern would."""
    full = hidden_pattern("", False)
    for cp in range(128):
        ch = chr(cp)
        expected = full.sub(lambda m: marker_for(m.group()) or m.group(), ch)
        assert visible(ch, single_line=False) == expected, cp
    assert visible("a\x1b]52;c;x\x07b\r\n", single_line=False) == "a⟨ESC⟩]52;c;x⟨BEL⟩b⟨CR⟩\n"


def test_the_json_escape_pattern_is_marker_for_s_rule() -> None:
    """``_needs_escape`` is built from Unicode categories in bulk: it must hide exactly the BMP
    characters from DEL up that ``marker_for`` hides."""
    from memdeck.core.text import _needs_escape

    pattern = _needs_escape()
    for cp in range(0x7F, 0x10000):
        ch = chr(cp)
        assert (pattern.fullmatch(ch) is not None) == (marker_for(ch) is not None), hex(cp)
    assert pattern.fullmatch("\U0001F600") is not None  # above the BMP: judged one by one


def test_non_ascii_text_is_escaped_as_by_the_whole_unicode_pattern() -> None:
    """``visible`` and ``json_safe`` look at each distinct character: the same result as the
    whole-Unicode pattern they used to build."""
    import json

    from memdeck.core.text import _json_escape_char, _needs_escape, json_safe

    samples = ["é \u202e bidi \u200b zero \x85 nel \u2028 ls § → 東京 \U0001F600 \U000E0041 \ud800 \x1b[31m \x7f",
               "plain ascii \x07", "ünïcödé only", "\u00ad soft hyphen \ufeff bom \ue000 private"]
    full = hidden_pattern("", False)
    for text in samples:
        assert visible(text, single_line=False) == full.sub(lambda m: marker_for(m.group()) or m.group(), text)
        dumped = json.dumps({"t": text}, ensure_ascii=False)
        expected = dumped if dumped.isascii() and "\x7f" not in dumped else \
            _needs_escape().sub(lambda m: _json_escape_char(m.group()), dumped)
        assert json_safe(dumped) == expected
        assert json.loads(json_safe(dumped)) == {"t": text}
