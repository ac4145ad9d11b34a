"""The head start: the dashboard's first refresh, begun before Textual loads (issue 9: a later
launch of a big home showed the full history 0.8-1.2 s after launch, ~0.65 s of it Python and
Textual starting before the first refresh began)."""

from __future__ import annotations

import sys

import pytest

from memdeck.core.config import load_config
from memdeck.core.demo import DEMO_NOW
from memdeck.tui import head_start as head_start_module
from memdeck.tui.app import make_app
from memdeck.tui.head_start import HeadStart
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.anyio


def _finished(hs: HeadStart) -> None:
    assert hs._done.wait(60), "the head start never finished"


async def test_the_app_shows_what_the_head_start_built(demo_home) -> None:
    config = load_config(demo_home)
    hs = HeadStart(demo_home, config, clock=lambda: DEMO_NOW)
    _finished(hs)
    built = hs._result.snapshot
    assert built is not None and not built.partial and built.sessions
    app = make_app(demo_home, config=config, watch=False, now=DEMO_NOW, head_start=hs)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
        # the one more look (sources unchanged) keeps the very same snapshot: nothing rebuilt
        assert app.snapshot is built
        assert app.refresh_runs == 2 and app._db is not None
    assert hs.take() is None  # handed over once


async def test_a_changed_source_before_the_watcher_ran_is_seen(demo_home) -> None:
    from memdeck.core.memory.store import MemoryStore

    config = load_config(demo_home)
    hs = HeadStart(demo_home, config, clock=lambda: DEMO_NOW)
    _finished(hs)
    MemoryStore(demo_home, config).add("memory", "Added after the head start looked.")
    app = make_app(demo_home, config=config, watch=False, now=DEMO_NOW, head_start=hs)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 2 and app.idle)
        assert app.refresh_runs == 2  # the head start's, then one more look that found the change
        assert any("Added after the head start" in e.text for e in app.snapshot.memory["memory"].entries)


async def test_a_long_first_read_is_left_to_the_app(demo_home, monkeypatch) -> None:
    """Holding the GIL for seconds, a long first read would delay the memory-only first paint:
    the head start stops at its first progress report and the app reads it after that paint."""
    monkeypatch.setattr(head_start_module, "LONG_READ_ROWS", 1)
    hs = HeadStart(demo_home, load_config(demo_home), clock=lambda: DEMO_NOW)
    _finished(hs)
    assert hs._result is not None and hs._result.snapshot is None and hs._result.db is None
    assert hs.first is not None and hs.first.partial
    app = make_app(demo_home, watch=False, now=DEMO_NOW, head_start=hs)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
        assert not app.snapshot.partial and app.snapshot.sessions and not app.snapshot.errors


async def test_a_failed_head_start_leaves_the_first_refresh_to_the_app(demo_home, monkeypatch) -> None:
    from memdeck.core.overview.parts import Evaluator

    def broken(*a, **k):
        raise OSError("the disk went away")
    monkeypatch.setattr(Evaluator, "first_paint", broken)
    hs = HeadStart(demo_home, load_config(demo_home), clock=lambda: DEMO_NOW)
    _finished(hs)
    monkeypatch.undo()
    assert hs.first is None and hs._result is None
    app = make_app(demo_home, watch=False, now=DEMO_NOW, head_start=hs)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
        assert not app.snapshot.partial and app.snapshot.sessions and not app.snapshot.errors


def test_the_gil_switch_interval_is_short_only_while_the_head_start_runs(demo_home, monkeypatch) -> None:
    """Each SQLite step gives the GIL up; beside Textual starting, taking it back waited up to
    CPython's 5 ms interval each time (the 1M head start ended at 1.2 s instead of 0.6-0.8 s)."""
    import threading

    from memdeck.core.overview.parts import Evaluator

    go = threading.Event()
    real = Evaluator.first_paint

    def held(*a, **k):
        go.wait(60)
        return real(*a, **k)
    monkeypatch.setattr(Evaluator, "first_paint", held)
    # a head start of an earlier test's app may still be ending in this worker: wait for it
    assert head_start_module.SWITCH_INTERVAL.wait_idle(60)
    before = sys.getswitchinterval()
    assert before > head_start_module.LAUNCH_SWITCH_INTERVAL_S
    hs = HeadStart(demo_home, load_config(demo_home), clock=lambda: DEMO_NOW)
    try:
        assert sys.getswitchinterval() == pytest.approx(head_start_module.LAUNCH_SWITCH_INTERVAL_S)
    finally:
        go.set()
        _finished(hs)
    assert sys.getswitchinterval() == pytest.approx(before) and hs.take() is not None


async def test_changes_the_head_start_recorded_are_toasted_when_its_snapshot_is_dropped(demo_home, monkeypatch) -> None:
    """The head start's build records what other writers changed while memdeck was closed; when
    the app builds again (here: a long read), the next observation finds nothing new, so the
    head start's changes must still reach the screen."""
    from memdeck.core.memory.entries import parse_entries, serialize_entries
    from memdeck.core.memory.store import MemoryStore

    config = load_config(demo_home)
    from memdeck.core.history.observation import observe

    MemoryStore(demo_home, config).add("memory", "A rule another writer will remove.")
    observe(demo_home)  # memdeck saw the file with the rule (an earlier run of the dashboard)
    path = demo_home.memory_file("memory")
    path.write_text(serialize_entries([e for e in parse_entries(path.read_text()) if "another writer" not in e]))
    monkeypatch.setattr(head_start_module, "LONG_READ_ROWS", 1)
    hs = HeadStart(demo_home, config, clock=lambda: DEMO_NOW)
    _finished(hs)
    assert any("another writer" in str(c) for c in hs._result.new_changes), hs._result.new_changes
    app = make_app(demo_home, config=config, watch=False, now=DEMO_NOW, head_start=hs)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
        await wait_for(pilot, lambda: any("removed in MEMORY.md" in n.message for n in app.notification_log))


async def test_a_head_start_for_another_home_is_closed_not_adopted(demo_home, tmp_path) -> None:
    import shutil

    from memdeck.core.home import HermesHome

    other = HermesHome(tmp_path / "other")
    shutil.copytree(demo_home.path, other.path)
    hs = HeadStart(other, load_config(other), clock=lambda: DEMO_NOW)
    _finished(hs)
    db = hs._result.db
    app = make_app(demo_home, watch=False, now=DEMO_NOW, head_start=hs)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
        assert app._db is not db and app.snapshot.home == demo_home
        assert db._conn is None  # closed


def _record_applied(app) -> list:
    applied: list = []
    real = app.apply_snapshot

    def recording(snap):
        applied.append(snap)
        return real(snap)
    app.apply_snapshot = recording
    return applied


async def test_a_finished_head_start_paints_once_with_everything(demo_home) -> None:
    """At a later launch the head start is often done before Textual has drawn anything: the
    memory-only first paint would only be drawn to be replaced (a second full paint, ~0.25 s of
    the main thread at 1M), so the first paint is the full snapshot."""
    config = load_config(demo_home)
    hs = HeadStart(demo_home, config, clock=lambda: DEMO_NOW)
    _finished(hs)
    app = make_app(demo_home, config=config, watch=False, now=DEMO_NOW, head_start=hs)
    applied = _record_applied(app)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle and app._first_paint_shown.is_set())
        assert applied and not any(s.partial for s in applied)


async def test_a_memory_only_snapshot_queued_in_front_of_a_full_one_is_not_painted(demo_home) -> None:
    from memdeck.core.overview.reader import HomeReader
    from memdeck.tui.messages import SnapshotReady

    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
        full = app.snapshot
        applied = _record_applied(app)
        first = HomeReader(demo_home, app.config).first_paint(now=DEMO_NOW)
        app._final_posted.set()  # what the worker does just before posting the full snapshot
        app.on_snapshot_ready(SnapshotReady(first, final=False))
        assert applied == []
        app._final_posted.clear()  # a memory-only snapshot with no full one behind it is painted
        app.on_snapshot_ready(SnapshotReady(first, final=False))
        assert applied == [first]
        app.on_snapshot_ready(SnapshotReady(full))
        assert applied == [first, full]


async def test_a_failed_build_keeps_the_memory_only_first_paint(demo_home, monkeypatch) -> None:
    """A build that fails posts no full snapshot: the memory usage painted first must stay."""
    from memdeck.core.overview.parts import Evaluator

    def broken(*a, **k):
        raise OSError("state.db went away")
    monkeypatch.setattr(Evaluator, "read", broken)
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.idle and any("state.db went away" in n.message for n in app.notification_log))
        assert app.snapshot is not None and app.snapshot.partial  # memory usage is on screen
        assert not app._final_posted.is_set()  # so no memory-only snapshot is ever skipped for it


def test_overlapping_head_starts_put_back_the_interval_from_before_the_first(demo_home, monkeypatch) -> None:
    """A second head start while the first still runs must not take the shortened interval for
    the one to restore: the process would keep 1 ms switches for good."""
    import threading

    from memdeck.core.overview.parts import Evaluator

    go = threading.Event()
    real = Evaluator.first_paint

    def held(*a, **k):
        go.wait(60)
        return real(*a, **k)
    monkeypatch.setattr(Evaluator, "first_paint", held)
    assert head_start_module.SWITCH_INTERVAL.wait_idle(60)
    before = sys.getswitchinterval()
    first = HeadStart(demo_home, load_config(demo_home), clock=lambda: DEMO_NOW)
    second = HeadStart(demo_home, load_config(demo_home), clock=lambda: DEMO_NOW)
    try:
        assert sys.getswitchinterval() == pytest.approx(head_start_module.LAUNCH_SWITCH_INTERVAL_S)
    finally:
        go.set()
        _finished(first)
        _finished(second)
    assert sys.getswitchinterval() == pytest.approx(before)
