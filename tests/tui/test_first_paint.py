"""Progressive first paint: memory usage before the history; progress while a long history is
read; quit during a long build exits promptly (issue 9)."""

from __future__ import annotations

import threading

import pytest
from textual.message import Message

from memdeck.core.demo import DEMO_NOW
from memdeck.core.sessions.statedb import StateDB
from memdeck.tui.app import make_app
from memdeck.tui.messages import BuildProgress, SnapshotReady
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.anyio


async def test_memory_usage_is_painted_before_the_history_is_read(demo_home, monkeypatch) -> None:
    release = threading.Event()
    real = StateDB.sessions

    def slow_sessions(self, *a, **k):  # the history build waits until the test lets it go
        self.progress and self.progress(1, 4)  # as the streaming reader reports
        release.wait(60)
        return real(self, *a, **k)

    monkeypatch.setattr(StateDB, "sessions", slow_sessions)
    seen: list[Message] = []
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40), message_hook=seen.append) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None)
        snap = app.snapshot
        assert snap.partial and snap.memory["memory"].chars > 0 and not snap.sessions
        await pilot.press("4")  # keys work while the history is read
        await wait_for(pilot, lambda: app.current_panel_id == "capacity")
        assert "/2,200 chars" in app.query_one("#usage-memory").content.plain
        await wait_for(pilot, lambda: any(isinstance(m, BuildProgress) for m in seen))
        assert "reading state.db history" in app.query_one("#statusline").content.plain
        release.set()
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial)
        ready = [m for m in seen if isinstance(m, SnapshotReady)]
        assert [m.final for m in ready][:2] == [False, True]
        assert app.snapshot.sessions and "reading state.db" not in app.query_one("#statusline").content.plain


async def test_quit_during_a_long_history_build_exits(demo_home, monkeypatch) -> None:
    started = threading.Event()
    stop = threading.Event()
    real = StateDB.sessions

    def endless(self, *a, **k):  # a build that reports progress until it is told to stop
        started.set()
        while not stop.is_set():
            if self.progress:
                self.progress(1, 10**6)
            stop.wait(0.01)
        return real(self, *a, **k)

    monkeypatch.setattr(StateDB, "sessions", endless)
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: started.is_set() and app.snapshot is not None)
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running)
    finally:
        stop.set()
    assert app.return_code in (0, None)


async def test_a_launch_reads_each_memory_file_once(demo_home, monkeypatch) -> None:
    """The full build after the first paint reuses the memory files it read (a 50 MB file was
    parsed twice before the dashboard showed it; issue 13 #4)."""
    from memdeck.core.memory import reader
    from tests.tui.conftest import settle

    reads: list[str] = []
    real = reader.read_memory

    def counting(home, config, target, *a, **k):
        reads.append(target)
        return real(home, config, target, *a, **k)

    monkeypatch.setattr(reader, "read_memory", counting)
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert app.snapshot is not None and not app.snapshot.partial and app.snapshot.sessions
        assert sorted(reads) == ["memory", "user"]
        assert app.snapshot.memory["memory"].entries  # and the full snapshot has them


async def test_a_long_history_read_waits_for_the_first_paint(demo_home, monkeypatch) -> None:
    """The first read of a big history holds the GIL for seconds; run beside the memory-only
    paint it delayed that paint (1M rows: 0.74 s to memory usage on screen). Such a read reports
    progress over many ids, and at its first report it waits until the first paint is on screen."""
    recorded = threading.Event()
    after_first_report: list[object] = []
    real = StateDB.sessions
    app = make_app(demo_home, watch=False, now=DEMO_NOW)

    def long_read(self, *a, **k):
        if self.progress and not after_first_report:
            self.progress(1, 10**6)  # a long read's first report (a million ids to read)
            after_first_report.append(app.snapshot)  # what is on screen when it goes on
            recorded.set()
        return real(self, *a, **k)

    real_apply = type(app).apply_snapshot

    def held_paint(self, snap):
        # The first paint is held until the read went on past its report (what a read that does
        # not wait does) or for 1 s (a read that waits for the paint cannot go on first).
        if snap.partial:
            recorded.wait(1.0)
        return real_apply(self, snap)

    monkeypatch.setattr(StateDB, "sessions", long_read)
    monkeypatch.setattr(type(app), "apply_snapshot", held_paint)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial)
    first = after_first_report[0] if after_first_report else None
    assert first is not None and first.partial and first.memory["memory"].chars > 0


async def test_a_short_history_read_does_not_wait_for_the_first_paint(demo_home, monkeypatch) -> None:
    """A later launch reads the history from memdeck.db and the few rows after it in a fraction of
    a second (a short read reports progress once, at its end): it runs beside the first paint
    instead of after it (1M rows: full history on screen 0.9 -> 0.7 s)."""
    from memdeck.core.overview.parts import Evaluator

    seen_at_start: list[object] = []
    build_started = threading.Event()
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    real = Evaluator.read

    def spying(*a, **k):
        db = a[3]  # (self, home, config, db)
        if db is not None and db.progress is not None:
            db.progress(500, 500)  # a short read's one report
        if not build_started.is_set():
            seen_at_start.append(app.snapshot)  # None while the first paint is held
            build_started.set()
        return real(*a, **k)

    real_apply = type(app).apply_snapshot

    def held_paint(self, snap):
        if snap.partial:  # held until the full build started, or 1 s
            build_started.wait(1.0)
        return real_apply(self, snap)

    monkeypatch.setattr(Evaluator, "read", spying)
    monkeypatch.setattr(type(app), "apply_snapshot", held_paint)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial)
    assert seen_at_start == [None]
