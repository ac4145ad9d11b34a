"""The interop venv cache is the machine's, never a test's fake HOME (each test gets its own
HOME from tests/conftest.py; a venv asked for inside a test was built again in it, once per test)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.interop.matrix import venvs


def test_the_cache_is_not_under_the_tests_fake_home(monkeypatch) -> None:
    monkeypatch.delenv("MEMDECK_INTEROP_CACHE", raising=False)
    fake_home = Path(os.environ["HOME"])
    assert venvs.cache_root() == venvs._DEFAULT_CACHE
    assert fake_home not in venvs.cache_root().parents


def test_the_cache_variable_still_wins(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMDECK_INTEROP_CACHE", str(tmp_path / "c"))
    assert venvs.cache_root() == tmp_path / "c"
