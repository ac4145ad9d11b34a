"""The Context panel (issue 24): what the running agent sees, in the dashboard and around it."""

from __future__ import annotations

import os

import pytest

from memdeck.core.config import load_config
from memdeck.core.demo import DEMO_NOW
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.tui.app import make_app
from memdeck.tui.screens.confirm import ConfirmScreen
from memdeck.tui.screens.editors import EntryEditScreen, PinScreen
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _hermes_write(home, entries: list[str]) -> None:
    """Rewrite MEMORY.md the way Hermes does (a temp file in memories/, then os.replace)."""
    path = home.memory_file("memory")
    tmp = path.parent / ".mem_ctx0001.tmp"
    tmp.write_text(serialize_entries(entries), encoding="utf-8")
    os.replace(tmp, path)


async def test_the_panel_shows_the_frozen_memory_the_sections_and_the_next_turn(demo_home) -> None:
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        await pilot.press("8")
        await settle(pilot, app)
        panel = app.panel("context")
        kinds = [(r.kind, r.name) for r in panel.rows]
        assert kinds[0] == ("diff", "diff")
        assert ("section", "memory") in kinds and ("section", "user") in kinds and ("section", "session") in kinds
        assert ("unattributed", "unattributed") in kinds and ("turn", "tool_schemas") in kinds
        detail = app.query_one("#context-detail").content.plain
        assert "added" in detail and "linkhop rate limiting" in detail and "/new" in detail
        n = app.snapshot.agent_view.followed_diff.differences  # the demo's live session froze older memory
        differ = "1 entry differs" if n == 1 else f"{n} entries differ"
        head = app.query_one("#context-head").content.plain
        assert n >= 1 and differ in head and "next compaction: ~" in head and "of 150,000 tokens" in head
        assert "exact: o200k_base" in head  # the worker counted the prompt with the shipped vocabulary
        status = app.query_one("#statusline").content.plain
        assert differ in status and "frozen" in status
        assert app._badges_shown.get("context") == n
        # Capacity's badge is not Context's again (issue 39 #12): it counts hygiene findings, none here
        assert "capacity" not in app._badges_shown and not sum(app.snapshot.hygiene_counts.values())
        assert "frozen memory" in str(app.query_one("#panels").get_tab("context").tooltip)
        # navigable by section: the USER block row shows its text
        row = next(r for r in panel.rows if r.name == "user")
        app.query_one("#context-table").select_key(row.key)
        await pilot.pause()
        assert "USER PROFILE (who the user is)" in app.query_one("#context-detail").content.plain


async def test_a_change_the_session_does_not_see_is_marked_in_history_and_the_write_toast_says_so(demo_home) -> None:
    app = make_app(demo_home, watch=True)
    async with app.run_test(size=(140, 42), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        before = app.snapshot.agent_view.followed_diff.differences
        entries = parse_entries(demo_home.memory_file("memory").read_text(encoding="utf-8"))
        old = entries[1]
        _hermes_write(demo_home, [e if e != old else old + " Logs go to Loki." for e in entries])
        await wait_for(pilot, lambda: any(c.op == "replaced" for c in app.snapshot.history)
                       and app.snapshot.agent_view is not None and app.snapshot.agent_view.followed_diff.differences == before + 1)
        await pilot.press("7")
        await settle(pilot, app)
        row = next(r for r in app.panel("history").rows if r.change.op == "replaced")
        assert "not yet seen" in row.cells[4].plain
        app.query_one("#history-table").select_key(row.key)
        await pilot.pause()
        detail = app.query_one("#history-detail").content.plain
        assert "not yet seen by session 20260723_150454_0a097c" in detail and "/new" in detail
        # a write from the dashboard: its toast names the running session and the command
        await pilot.press("4")
        await settle(pilot, app)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EntryEditScreen))
        whatif = app.screen.query_one("#editor-whatif").content.plain
        assert "next session's MEMORY.md block" in whatif and "% of the limit" in whatif
        await pilot.press("end", "!", "ctrl+s")
        await settle(pilot, app)
        notes = [n.message for n in app.notification_log if n.title == "edit"]
        assert notes and "will not see this until a new session: type /new" in notes[-1]


async def test_archive_and_pin_dialogs_say_what_the_write_would_do(demo_home) -> None:
    config = load_config(demo_home)
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW, config=config)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await settle(pilot, app)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        texts = " ".join(str(getattr(w, "content", "")) for w in app.screen.query("Static"))
        assert "if you archive it: next session's MEMORY.md block" in texts and "chars (-" in texts
        await pilot.press("n")
        await settle(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PinScreen))
        pin = app.screen.query_one("#pin-budget").content.plain
        assert "frozen memory block: unchanged" in pin and f"{config.memlock.max_reminder_chars}-char budget" in pin
        await pilot.press("escape")
        await settle(pilot, app)


def _enable_plugin(home, mode: str | None = None) -> None:
    """Put memdeck in plugins.enabled (and ``memdeck.live_memory: mode`` when given) in config.yaml."""
    path = home.path / "config.yaml"
    text = path.read_text(encoding="utf-8").replace("    - memlock\n", "    - memlock\n    - memdeck\n", 1)
    if mode is not None:
        text += f"\nmemdeck:\n  live_memory: {mode}\n"
    path.write_text(text, encoding="utf-8")


async def test_each_difference_says_whether_live_memory_delivered_it(demo_home) -> None:
    """Issue 33: per difference of the followed session, the Context panel's detail says what
    ``memdeck context --json`` ``memory.delivery`` says: delivered at turn N (time), waiting for the
    next turn, or not delivered and why. The rows are written through the plugin's own record()."""
    import time

    from memdeck.core.live_memory.changes import entry_hash
    from memdeck.core.live_memory.record import Delivery, record
    from memdeck.tui.views.context import _clock

    _enable_plugin(demo_home)
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        d = app.snapshot.agent_view.followed_diff
        changes = list(d.frozen.changes)
        assert len(changes) >= 2, "the demo's live session differs by two entries or more"
        at = time.time()
        first, second = changes[0], changes[1]
        assert record(demo_home, [
            Delivery(d.session_id, entry_hash(first), first.target, first.change, "delivered", "delta", None, 3,
                     "t-3", at),
            Delivery(d.session_id, entry_hash(second), second.target, second.change, "withheld", "delta",
                     "over budget (memdeck.live_memory_max_chars: 200): waits for /new", 3, "t-3", at)])
    # a new dashboard on the same home: what it shows is what memdeck.db holds
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        await pilot.press("8")
        await settle(pilot, app)
        detail = app.query_one("#context-detail").content.plain
        lines = [ln for ln in detail.splitlines() if ln.strip().startswith("live memory:")]
        assert len(lines) == len(changes), detail
        assert lines[0].strip() == f"live memory: delivered at turn 3 ({_clock(at).plain})"
        assert lines[1].strip() == "live memory: not delivered: over budget (memdeck.live_memory_max_chars: 200): waits for /new"
        assert all(ln.strip() == "live memory: waiting for the next turn" for ln in lines[2:])
        rows = app.snapshot.agent_view.delivery["delivery"]
        assert [r["state"] for r in rows][:2] == ["delivered", "withheld"]


async def test_with_live_memory_off_every_difference_says_why_it_is_not_delivered(demo_home) -> None:
    from memdeck.core.live_memory.delivery import OFF_REASON

    _enable_plugin(demo_home, "off")
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        await pilot.press("8")
        await settle(pilot, app)
        detail = app.query_one("#context-detail").content.plain
        n = app.snapshot.agent_view.followed_diff.differences
        assert detail.count(f"live memory: not delivered: {OFF_REASON}") == n >= 1, detail


@pytest.mark.parametrize("mode", ["delta", "notice", "off"])
async def test_the_write_dialogs_and_toast_say_when_the_running_session_gets_the_write(demo_home, mode: str) -> None:
    """Issue 33: with live memory on, the archive and edit dialogs and the write's toast say the
    running session gets it on its next turn; with it off, that it waits for a new session (/new)."""
    _enable_plugin(demo_home, mode)
    app = make_app(demo_home, watch=False)
    async with app.run_test(size=(140, 42), notifications=True) as pilot:
        await settle(pilot, app)
        sid = app.snapshot.agent_view.followed_diff.session_id
        live = f"the running session {sid} (cli) gets this on its next turn (live memory: {mode})"
        later = f"the running session {sid} (cli) will not see this until a new session: type /new"
        want, never = (later, "next turn") if mode == "off" else (live, "/new")
        await pilot.press("4")
        await settle(pilot, app)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        texts = " ".join(str(getattr(w, "content", "")) for w in app.screen.query("Static"))
        assert want in " ".join(texts.split()) and never not in texts, texts
        await pilot.press("n")
        await settle(pilot, app)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EntryEditScreen))
        whatif = " ".join(app.screen.query_one("#editor-whatif").content.plain.split())
        assert want in whatif and never not in whatif, whatif
        await pilot.press("end", "!", "ctrl+s")
        await settle(pilot, app)
        notes = [n.message for n in app.notification_log if n.title == "edit"]
        assert notes and want in " ".join(notes[-1].split()), notes


async def test_b_states_the_rebuild_cost_first_then_queues_it(demo_home) -> None:
    """Issue 33 #2: the dialog shows the prompt's tokens before y can queue; the request is journaled."""
    from memdeck.core.deck import journal
    from memdeck.core.requests.queue import list_requests
    from memdeck.core.requests.rebuild import rebuild_cost
    from memdeck.tui.screens.requests import RebuildScreen

    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await settle(pilot, app)
        await pilot.press("8")
        await settle(pilot, app)
        sid = app.snapshot.agent_view.followed
        assert sid
        await pilot.press("b")
        await wait_for(pilot, lambda: isinstance(app.screen, RebuildScreen) and app.screen.cost is not None,
                       describe=lambda: str(app.screen))
        cost = rebuild_cost(demo_home, sid)
        body = app.screen.query_one("#rebuild-body").content.plain
        assert body.startswith(cost.sentence()) and f"{cost.prompt_tokens:,} tokens" in body
        assert list_requests(demo_home) == []  # nothing before y
        await pilot.press("y")
        await wait_for(pilot, lambda: list_requests(demo_home) != [])
        [req] = list_requests(demo_home)
        assert (req.session_id, req.kind, req.state, req.actor) == (sid, "rebuild", "queued", "tui")
        assert req.detail["prompt_tokens"] == cost.prompt_tokens
        assert journal.entries(demo_home, kind="request")[0].op == "rebuild"


async def test_the_cost_turn_by_turn_and_what_each_write_dialog_says_it_costs(demo_home) -> None:
    """issue 37: the turns the plugin recorded, the breaks and why; the archive, edit and pin dialogs
    state the write's cost in prompt cache before writing."""
    from memdeck.core.deck import usage

    sid = None
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        sid = app.snapshot.agent_view.followed_diff.session_id
        for n, (read, write, msgs, after) in enumerate(((0, 9000, 2, 0), (9010, 400, 4, 60), (5000, 3900, 3, 120)), 1):
            row = usage.from_hook({"session_id": sid, "turn_id": f"t{n}", "api_call_count": 1, "message_count": msgs,
                                   "ended_at": DEMO_NOW - 600 + after,
                                   "usage": {"input_tokens": 30, "output_tokens": 200, "cache_read_tokens": read,
                                             "cache_write_tokens": write}})
            assert row is not None and usage.record(demo_home, row)
        app.request_refresh()
        await settle(pilot, app)
        await pilot.press("8")
        await settle(pilot, app)
        panel = app.panel("context")
        turns = [r for r in panel.rows if r.kind == "cost_turn"]
        assert [r.cells[-1].plain for r in turns] == ["✗ new session", "hit 95%", "✗ compaction"]
        assert "read 9,010 · write 400 · in 30 · out 200" in turns[1].cells[0].plain
        tiers = {r.name: r.cells[-1].plain for r in panel.rows if r.kind == "section"}
        assert tiers["memory"] == "volatile" and tiers["identity"] == "stable"
        app.query_one("#context-table").select_key(turns[2].key)
        await pilot.pause()
        detail = app.query_one("#context-detail").content.plain
        assert "broke the cache: compaction" in detail and "3 messages, the one before 4" in detail
        await pilot.press("4")
        await settle(pilot, app)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        texts = " ".join(str(getattr(w, "content", "")) for w in app.screen.query("Static"))
        assert "cost: invalidates the volatile tier from the next session" in texts
        assert "tokens again once" in texts and "batching edits costs the same as one" in texts
        await pilot.press("n")
        await settle(pilot, app)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EntryEditScreen))
        await pilot.pause()
        edit = app.screen.query_one("#editor-whatif").content.plain
        assert "cost: invalidates the volatile tier" in edit and "tokens again once" in edit
        await pilot.press("escape")
        await settle(pilot, app)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PinScreen))
        await pilot.pause()
        assert "invalidates no cached tier" in app.screen.query_one("#pin-budget").content.plain
        await pilot.press("escape")
        await settle(pilot, app)
