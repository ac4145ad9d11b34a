"""Fixtures for the dashboard tests: a demo home in tmp_path, apps with fixed clocks, waiting
for workers (never sleeping)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from memdeck.core.demo import DEMO_NOW, build_demo_home
from memdeck.core.home import HermesHome


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clock text in the panels is local time: pin the zone so snapshots are stable."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_home(tmp_path_factory.mktemp("demo-template") / "demo", seed=7, now=DEMO_NOW).path


@pytest.fixture
def demo_home(_demo_template: Path, tmp_path: Path) -> HermesHome:
    """A fresh copy of the seed-7 demo home (built once per session, copied per test)."""
    dst = tmp_path / "demo"
    shutil.copytree(_demo_template, dst, symlinks=True)
    return HermesHome(dst)


WRITE_GROUPS = ("write", "refresh", "recall", "exact")


async def settle(pilot, app, rounds: int = 50) -> None:
    """Wait until no write/refresh/recall worker runs and no refresh is queued."""
    for _ in range(rounds):
        await pilot.pause()
        busy = [w for w in app.workers if w.group in WRITE_GROUPS and not w.is_finished]
        for w in busy:
            await w.wait()
        await pilot.pause()
        if not busy and app.idle:
            return
    raise AssertionError("the app did not settle")


async def wait_for(pilot, predicate, rounds: int = 400, describe=None) -> None:
    """Pump the app until ``predicate()`` holds (bounded by rounds of 50 ms pauses, not timed)."""
    for _ in range(rounds):
        if predicate():
            return
        await pilot.pause(0.05)
    assert predicate(), f"condition never became true ({describe() if describe else ''})"


@pytest.fixture
def anyio_backend() -> str:
    """Pilot tests run on asyncio through anyio's pytest plugin (no extra dependency)."""
    return "asyncio"
