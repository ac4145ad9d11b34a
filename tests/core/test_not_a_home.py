"""A mistyped --home is refused for writes and nothing is created there (issue 8 #8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdeck.core.cli import main


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
    assert main(["--home", str(typo), *argv]) == 1
    err = capsys.readouterr().err
    assert "is not a Hermes home" in err and "Nothing was written" in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("marker", ["config.yaml", "memories", "state.db"])
def test_any_one_marker_makes_a_home(tmp_path: Path, marker: str) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / marker).mkdir() if marker == "memories" else (home / marker).write_bytes(b"")
    assert main(["--home", str(home), "memory", "add", "--target", "memory", "a fact"]) == 0
    assert (home / "memories" / "MEMORY.md").read_text(encoding="utf-8") == "a fact"
