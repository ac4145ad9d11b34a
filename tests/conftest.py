"""Fixtures shared by every test area. Area-specific fixtures live in tests/helpers/<area>.py."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from memdeck.core.home import HermesHome



def _installed(module: str) -> bool:
    """True when ``module`` can be imported (a missing parent package counts as absent)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


HERMES_AVAILABLE = _installed("tools.memory_tool") and _installed("hermes_state")

requires_hermes = pytest.mark.skipif(not HERMES_AVAILABLE, reason="hermes-agent==0.19.0 is not installed (pip install -e '.[interop]')")


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HermesHome:
    """An empty Hermes home in a temp dir, exported as HERMES_HOME for code that reads the env."""
    home = tmp_path / "hermes_home"
    (home / "memories").mkdir(parents=True)
    monkeypatch.setenv("HERMES_HOME", str(home))
    return HermesHome(home)


@pytest.fixture(autouse=True)
def _no_user_home_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let a test touch the real ~/.hermes: point HOME at a temp dir."""
    fake_home = tmp_path / "user_home"
    fake_home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(fake_home))
    if "HERMES_HOME" in os.environ:
        monkeypatch.delenv("HERMES_HOME")
