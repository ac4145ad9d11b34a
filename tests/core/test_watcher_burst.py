"""The watcher reports an atomic replace at once and gathers a write in place into one report
(issue 8: external write -> screen; the burst timer used to delay every change by 12 ms)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from memdeck.core import watcher
from memdeck.core.home import HermesHome

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform != "linux", reason="inotify is Linux only")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _next_report(home: HermesHome, change, pauses: list[float]) -> frozenset[str]:
    """Start the watcher, make ``change`` once it is armed, return its first report."""
    ready = asyncio.Event()
    gen = watcher.watch_home(home, on_ready=ready.set)
    first = asyncio.ensure_future(gen.__anext__())
    await asyncio.wait_for(ready.wait(), 10)
    change()
    try:
        return await asyncio.wait_for(first, 10)
    finally:
        await gen.aclose()


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    seen: list[float] = []
    real = asyncio.sleep

    async def pause(seconds: float) -> None:
        seen.append(seconds)
        await real(seconds)

    monkeypatch.setattr(watcher, "_pause", pause)
    return seen


async def test_an_atomic_replace_is_reported_without_the_burst_timer(hermes_home: HermesHome, pauses) -> None:
    target = hermes_home.memory_file("memory")

    def replace() -> None:  # Hermes' way: a temp file renamed over MEMORY.md
        tmp = target.with_name(".mem_0a1b2c3d.tmp")
        tmp.write_text("fact one\n§\nfact two", encoding="utf-8")
        os.replace(tmp, target)

    kinds = await _next_report(hermes_home, replace, pauses)
    assert kinds == frozenset({"memory"})
    assert pauses == []


async def test_a_write_in_place_waits_for_its_burst_once(hermes_home: HermesHome, pauses) -> None:
    wal = hermes_home.path / "state.db-wal"
    wal.write_bytes(b"")

    def commit() -> None:  # a SQLite commit: frames appended to -wal in place
        with open(wal, "ab") as f:
            for _ in range(3):
                f.write(b"\0" * 4096)
                f.flush()

    kinds = await _next_report(hermes_home, commit, pauses)
    assert kinds == frozenset({"statedb"})
    assert pauses == [watcher.BURST_S]


async def test_noise_wakes_no_timer(hermes_home: HermesHome, pauses) -> None:
    target = hermes_home.memory_file("memory")

    def noise_then_replace() -> None:
        target.with_name("MEMORY.md.lock").write_text("")  # a lock sidecar: never a source
        tmp = target.with_name(".mem_0a1b2c3d.tmp")
        tmp.write_text("fact", encoding="utf-8")
        os.replace(tmp, target)

    kinds = await _next_report(hermes_home, noise_then_replace, pauses)
    assert kinds == frozenset({"memory"})
    assert pauses == []  # the lock file's events started no burst timer
