"""A refused settings file (over 64 KiB, an alias bomb, too deep) made ``fleet`` and ``metrics``
drop its ``fleet.homes`` without a word (issue 40 #7): they now say on stderr that the file was
not read, as the dashboard does (tests/tui/test_settings.py has its toast)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdeck.core.demo import build_demo_home
from memdeck.tui.launch import main as console_main
from memdeck.tui.settings import MAX_SETTINGS_BYTES
from tests.tui.test_settings import _bomb


def _fleet_table(extra: Path) -> str:
    return f"fleet:\n  homes:\n    - {extra}\n"


@pytest.mark.parametrize("kind", ["large", "bomb", "deep"])
@pytest.mark.parametrize("argv", [["fleet", "--json"], ["fleet"], ["metrics"]])
def test_fleet_and_metrics_say_the_settings_file_was_not_read(tmp_path: Path, capsys, kind: str,
                                                              argv: list[str]) -> None:
    home = build_demo_home(tmp_path / "home")
    extra = build_demo_home(tmp_path / "extra")
    text = {"large": _fleet_table(extra.path) + "#" * MAX_SETTINGS_BYTES + "\n",
            "bomb": _fleet_table(extra.path) + _bomb(6),
            "deep": _fleet_table(extra.path) + "theme: " + "[" * 5000 + "]" * 5000 + "\n"}[kind]
    cfg = tmp_path / "settings.yaml"
    cfg.write_text(text, encoding="utf-8")
    assert console_main(["--config", str(cfg), "--home", str(home.path), *argv]) == 0
    err = capsys.readouterr().err
    warned = [ln for ln in err.splitlines() if ln.startswith("memdeck: warning:") and str(cfg) in ln]
    assert len(warned) == 1 and "not read" in warned[0] and "using the defaults" in warned[0], err


def test_a_file_that_is_read_says_nothing(tmp_path: Path, capsys) -> None:
    home = build_demo_home(tmp_path / "home")
    cfg = tmp_path / "settings.yaml"
    cfg.write_text(_fleet_table(build_demo_home(tmp_path / "extra").path), encoding="utf-8")
    assert console_main(["--config", str(cfg), "--home", str(home.path), "metrics"]) == 0
    assert "warning" not in capsys.readouterr().err
