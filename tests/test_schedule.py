"""The order xdist's workers get the test files in (tests/helpers/schedule.py, issue 39 item 15):
every test kept, each file whole and in its own order, the costliest first, the files that need an
interop venv after a head start."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import schedule

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Item:
    nodeid: str


def _items(spec: dict[str, int]) -> list[Item]:
    return [Item(f"{f}::test_{i}") for f, n in spec.items() for i in range(n)]


def _files(items: list[Item]) -> list[str]:
    out: list[str] = []
    for it in items:
        f = schedule.file_of(it.nodeid)
        if not out or out[-1] != f:
            out.append(f)
    return out


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedule, "FILE_COST", {"tests/interop/test_slow.py": 300.0, "tests/core/test_big.py": 100.0})
    monkeypatch.setattr(schedule, "PER_TEST", {"interop": 2.0, "tui": 1.0, "core": 0.5})


def test_files_stay_whole_and_in_order_and_the_costliest_come_first(table: None) -> None:
    items = _items({"tests/core/test_a.py": 3, "tests/core/test_big.py": 2, "tests/tui/test_t.py": 10,
                    "tests/interop/test_slow.py": 1, "tests/test_docs.py": 2})
    before = list(items)
    schedule.costliest_first(items)
    assert sorted(i.nodeid for i in items) == sorted(i.nodeid for i in before)  # nothing lost, nothing twice
    files = _files(items)
    assert len(files) == len(set(files))  # every file in one piece (xdist's loadfile unit)
    for f in files:  # each file's own order kept
        assert [i.nodeid for i in items if i.nodeid.startswith(f + "::")] == \
            [i.nodeid for i in before if i.nodeid.startswith(f + "::")]
    # measured 300 and 100, then 10 tui tests at 1.0, then 3 and 2 cheap ones (ties: collection order)
    assert files == ["tests/interop/test_slow.py", "tests/core/test_big.py", "tests/tui/test_t.py",
                     "tests/core/test_a.py", "tests/test_docs.py"]


def test_files_that_need_a_venv_start_after_the_head_start(table: None) -> None:
    spec = {f"tests/core/test_{c}.py": 20 for c in "abcdefghij"}  # ten files of 10 s each
    spec["tests/interop/test_slow.py"] = 1
    items = _items(spec)
    schedule.costliest_first(items, needs_venv={"tests/interop/test_slow.py"})
    files = _files(items)
    # 40 % of the other files' 100 s first (four files), then the venv file, then the rest
    assert files.index("tests/interop/test_slow.py") == 4
    assert files[:4] == [f"tests/core/test_{c}.py" for c in "abcd"]
    items = _items({"tests/interop/test_slow.py": 1})
    schedule.costliest_first(items, needs_venv={"tests/interop/test_slow.py"})
    assert _files(items) == ["tests/interop/test_slow.py"]  # nothing else: it runs at once


def test_xdist_keeps_the_order_the_workers_collected() -> None:
    """The sort is useless if xdist re-sorts the files by test count (its default)."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = meta["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "--no-loadscope-reorder" in addopts and addopts[addopts.index("--dist") + 1] == "loadfile"


def test_every_measured_file_exists() -> None:
    """A renamed or deleted file would silently lose its place in the order."""
    missing = [f for f in schedule.FILE_COST if not (ROOT / f).is_file()]
    assert not missing, missing
