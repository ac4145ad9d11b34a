"""The Recall panel's worker: newest-first pages then Hermes' ranking; a superseded query posts nothing."""

from __future__ import annotations

import threading

import pytest

import memdeck.core.overview.recall_preview as recall_preview_mod
from memdeck.core.config import load_config
from memdeck.core.demo import DEMO_NOW
from memdeck.core.overview.recall_preview import RecallPreview, run_recall
from memdeck.core.overview.snapshot import open_statedb
from memdeck.tui.app import make_app
from memdeck.tui.messages import RecallReady
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.anyio


async def test_pages_then_the_hermes_ranked_result(demo_home) -> None:
    seen: list[RecallReady] = []
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40), message_hook=lambda m: isinstance(m, RecallReady) and seen.append(m)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial)
        app.run_recall("the")
        await wait_for(pilot, lambda: any(m.final for m in seen))
        assert [m.final for m in seen][-1] is True and sum(m.final for m in seen) == 1
        partial = [m for m in seen if not m.final]
        assert partial, "the first page comes before Hermes' ranking"
        assert all(m.result.partial and m.query == "the" for m in partial)
        expected, err = run_recall(open_statedb(demo_home), "the", demo_home, load_config(demo_home),
                                   current_session_id=getattr(app.snapshot.live_session, "id", None))
        assert err is None and not seen[-1].result.partial
        assert [h.as_dict() for h in seen[-1].result.hits] == [h.as_dict() for h in expected.hits]
        ids = [h.match_message_id for h in partial[-1].result.hits if h.source != "cron"]
        assert ids == sorted(ids, reverse=True)  # newest first


async def test_a_superseded_query_posts_no_recall_ready(demo_home, monkeypatch) -> None:
    entered, release, old_done = threading.Event(), threading.Event(), threading.Event()
    real = recall_preview_mod.stream_recall

    def fake(db, query, **kw):
        if query != "old query":
            yield from real(db, query, **kw)
            return
        try:
            entered.set()
            release.wait(60)  # held until the newer query was requested
            yield RecallPreview(query, (), "", None, True), None
            yield RecallPreview(query, (), "", None, False), None
        finally:
            old_done.set()  # the worker dropped the stream

    monkeypatch.setattr(recall_preview_mod, "stream_recall", fake)
    seen: list[RecallReady] = []
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40), message_hook=lambda m: isinstance(m, RecallReady) and seen.append(m)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial)
        app.run_recall("old query")
        await wait_for(pilot, entered.is_set)
        app.run_recall("pathlib")
        release.set()
        await wait_for(pilot, lambda: any(m.final and m.query == "pathlib" for m in seen))
        await wait_for(pilot, old_done.is_set)
        await pilot.pause()
        assert [m.query for m in seen if m.query == "old query"] == []
        assert app.query_one("#panel-recall").query_text == "pathlib"


async def test_results_come_as_you_type_without_enter(demo_home) -> None:
    """Typing is enough: once typing pauses, the box's text runs (a newer text supersedes it);
    only the typed text's answer is shown."""
    seen: list[RecallReady] = []
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40), message_hook=lambda m: isinstance(m, RecallReady) and seen.append(m)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial)
        await pilot.press("5")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "recall-query")
        await pilot.press(*"the")
        await wait_for(pilot, lambda: any(m.final and m.query == "the" for m in seen))
        final = next(m for m in seen if m.final and m.query == "the")
        assert final.result.hits  # the demo's other sessions say "the"
        assert app.query_one("#panel-recall").query_text == "the"
        shown = str(app.query_one("#recall-results").render())
        assert "type a query" not in shown and "searching" not in shown
        assert all(m.query and "the".startswith(m.query) for m in seen)  # typed prefixes only


async def test_enter_runs_the_query_at_once_and_cancels_the_pending_one(demo_home, monkeypatch) -> None:
    from memdeck.tui.messages import RecallRequested
    from memdeck.tui.widgets.panels import recall as recall_panel

    monkeypatch.setattr(recall_panel, "TYPING_PAUSE_SECONDS", 60.0)  # Enter comes first, however slow the machine

    requested: dict[int, str] = {}  # the hook sees a message at each widget it bubbles through
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    hook = lambda m: isinstance(m, RecallRequested) and requested.setdefault(id(m), m.query)  # noqa: E731
    async with app.run_test(size=(140, 40), message_hook=hook) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial)
        await pilot.press("5")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "recall-query")
        panel = app.query_one("#panel-recall")
        app.query_one("#recall-query").value = "pathlib"  # one change: its pause starts now
        await wait_for(pilot, lambda: panel._typing_timer is not None)
        pending = panel._typing_timer
        await pilot.press("enter")
        await wait_for(pilot, lambda: panel.query_text == "pathlib" and app.idle)
        assert pending._task is None  # stopped (a timer that fired keeps its finished task)
        assert list(requested.values()) == ["pathlib"]
