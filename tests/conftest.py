"""Fixtures shared by every test area. Area-specific fixtures live in tests/helpers/<area>.py."""

from __future__ import annotations

import importlib.util
import os
import tempfile
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


#: free space /dev/shm must have for the tests' temporary files to go there (a full run writes a few
#: hundred MB; pytest keeps only the failed tests' directories: pyproject's tmp_path_retention_policy)
TMPFS_MIN_FREE = 4 << 30


def _tmpfs_tmpdir() -> str | None:
    """A private directory on /dev/shm for the tests' temporary files, or None to leave TMPDIR.

    memdeck's writes are durable: every file replace and every SQLite commit fsyncs, and the
    suite makes tens of thousands of them in temp homes. On a disk each costs ~1-2 ms of a
    worker waiting while its core idles (one hypothesis test of state.db writes took 34.6 s in
    /tmp, 9.5 s on tmpfs, same checks); on tmpfs an fsync returns at once. Nothing the tests
    check depends on the disk: crash safety is tested by killing the writer (tests/crashpoints.py),
    which a page cache survives, and a full disk by failing the step.

    ``MEMDECK_TEST_TMPDIR`` chooses (empty: leave TMPDIR alone); a TMPDIR already set is kept.
    """
    chosen = os.environ.get("MEMDECK_TEST_TMPDIR")
    if chosen is not None:
        return chosen or None
    if os.environ.get("TMPDIR"):
        return None
    shm = Path("/dev/shm")
    try:
        st = os.statvfs(shm)
        if not shm.is_dir() or not os.access(shm, os.W_OK) or st.f_bavail * st.f_frsize < TMPFS_MIN_FREE:
            return None
        mine = shm / f"memdeck-tests-{os.getuid()}"
        mine.mkdir(mode=0o700, exist_ok=True)
        info = mine.lstat()
        if not mine.is_dir() or mine.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        return str(mine)
    except OSError:
        return None


def pytest_configure(config: pytest.Config) -> None:
    """Temporary files on tmpfs when the machine has one (:func:`_tmpfs_tmpdir`). Runs in the
    xdist controller before it names the workers' base temp dirs; the workers (and every
    process a test starts) inherit TMPDIR."""
    tmp = _tmpfs_tmpdir()
    if tmp:
        os.environ["TMPDIR"] = tmp
        tempfile.tempdir = None  # tempfile reads TMPDIR again on its next call


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
