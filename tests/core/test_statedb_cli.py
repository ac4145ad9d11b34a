"""memdeck sessions / recall commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdeck.core.cli import main
from tests.helpers.statedb import build_history


def test_sessions_json_and_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "h"
    home.mkdir()
    build_history(home / "state.db")
    assert main(["--home", str(home), "sessions", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["state_db"]["state"] == "ok" and [s["id"] for s in data["sessions"]] == ["s4", "s2", "s1", "s3"]
    assert main(["--home", str(home), "sessions"]) == 0
    out = capsys.readouterr().out
    assert "* s2" in out and "deploy work" in out


def test_recall_json_and_hostile_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "h"
    home.mkdir()
    build_history(home / "state.db")
    assert main(["--home", str(home), "recall", "kubernetes", "--json", "--limit", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["count"] == 2 and all(">>>" in r["snippet"] for r in data["results"])
    assert main(["--home", str(home), "recall", '"( NOT *:^']) == 0
    assert "no matching sessions" in capsys.readouterr().out


def test_missing_db_is_a_status_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "h" / "memories").mkdir(parents=True)  # a home (it has memories/) without state.db
    assert main(["--home", str(tmp_path / "h"), "sessions"]) == 0
    assert "state.db: missing" in capsys.readouterr().err
    assert main(["--home", str(tmp_path / "h"), "recall", "x", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state_db"]["state"] == "missing"


def test_limits_are_checked_not_sliced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A negative --limit used to slice from the end (every session but the last)."""
    from memdeck.core.sessions.statedb import StateDB

    home = tmp_path / "h"
    home.mkdir()
    build_history(home / "state.db")
    for argv in (["sessions", "--limit", "-1"], ["sessions", "--limit", "0"], ["recall", "x", "--limit", "0"],
                 ["recall", "x", "--limit", "11"], ["sessions", "--limit", "many"]):
        with pytest.raises(SystemExit) as ei:
            main(["--home", str(home), *argv])
        assert ei.value.code == 2
        assert "--limit" in capsys.readouterr().err
    assert main(["--home", str(home), "sessions", "--limit", "2", "--json"]) == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)["sessions"]] == ["s4", "s2"]
    db = StateDB(home / "state.db")
    assert db.sessions(limit=-1) == [] and len(db.sessions(limit=0)) == 0 and len(db.sessions()) == 4
