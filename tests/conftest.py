"""Fixtures shared by every test area. Area-specific fixtures live in tests/helpers/<area>.py."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from memdeck.core.home import HermesHome
from tests.helpers.schedule import costliest_first


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


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start building the interop venvs the collected tests will ask for (see
    tests/interop/matrix/prebuild.py): on a fresh machine their pip installs then overlap the
    core tests instead of adding minutes after them. Only modules that call ``hermes_python``
    (or ``tests/interop/matrix/run.py`` ``hermes_or_skip``) count; such a module's ``SPEC`` when it
    has one, else every version of the matrix.

    Under xdist, the files are also put in the order its workers get them: the costliest first,
    those that need a venv after a head start (tests/helpers/schedule.py)."""
    needs_venv: set[str] = set()
    specs: list[str] = []
    seen: set[object] = set()
    for item in items:
        module = getattr(item, "module", None)
        if module is None or module in seen or not (hasattr(module, "hermes_python") or hasattr(module, "hermes_or_skip")):
            continue
        seen.add(module)
        needs_venv.add(item.nodeid.split("::", 1)[0])
        if isinstance(getattr(module, "SPEC", None), str):
            specs.append(module.SPEC)
        else:
            from tests.interop.matrix.venvs import SPECS

            specs.extend(SPECS.values())
    if hasattr(config, "workerinput"):  # an xdist worker: hand out the costliest files first
        costliest_first(items, needs_venv)
    if config.option.collectonly:
        return
    if specs:
        from tests.interop.matrix import prebuild

        prebuild.start(specs)
