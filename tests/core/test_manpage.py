"""docs/memdeck.1 is generated from the parser (docs/make_manpage.py, argparse-manpage) and is
current: a command or option added without regenerating it fails here."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.commands import command_paths

ROOT = Path(__file__).resolve().parents[2]


def _make_manpage():
    spec = importlib.util.spec_from_file_location("make_manpage", ROOT / "docs" / "make_manpage.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_shipped_man_page_is_current_with_the_parser() -> None:
    shipped = (ROOT / "docs" / "memdeck.1").read_text(encoding="utf-8")
    assert shipped == _make_manpage().render(), "docs/memdeck.1 is stale: run python docs/make_manpage.py"


def test_the_man_page_documents_every_command() -> None:
    page = (ROOT / "docs" / "memdeck.1").read_text(encoding="utf-8")
    for path in command_paths():
        assert f"'memdeck {path}'" in page, path
    assert r"\-\-allowed\-host" in page and ".SH EXIT STATUS" in page and ".SH SHELL COMPLETION" in page


def test_the_man_page_renders_without_warnings(tmp_path: Path) -> None:
    man = shutil.which("man")
    if man is None:
        pytest.skip("man is not installed: the page's text is checked by the tests above")
    r = subprocess.run([man, "--warnings", "-l", str(ROOT / "docs" / "memdeck.1")], capture_output=True, text=True,
                       timeout=120, env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    assert r.returncode == 0, r.stderr
    assert "memdeck serve" in r.stdout and r.stderr.strip() == "", r.stderr


def test_no_literal_percent_escape_and_watch_documents_its_alerts_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39 items 6 and 12: ``watch --help`` and the man page printed argparse's ``%%``
    escape; ``watch`` reads the settings file's ``[alerts]`` table, whose keys and defaults were
    documented nowhere. The defaults said are :class:`AlertSettings`' own."""
    from memdeck.core import cli
    from memdeck.core.overview.alerts import AlertSettings

    page = (ROOT / "docs" / "memdeck.1").read_text(encoding="utf-8")
    assert "%%" not in page and "90% usage" in page
    with pytest.raises(SystemExit):
        cli.main(["watch", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "%%" not in help_text and "[alerts]" in help_text
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    d = AlertSettings()
    for key in ("provider_quiet_turns", "provider_budget_pct", "pending_age_hours"):
        default = f"{getattr(d, key):g}"
        assert f"{key} = {default}" in help_text, key
        assert f"| `{key}` | `{default}` |" in readme, key
