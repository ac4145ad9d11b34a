"""A live cockpit: alerts as toasts, badges on the tabs, the notifications screen, the terms."""

from __future__ import annotations

import json
import time

import pytest

from memdeck.tui.app import make_app
from memdeck.tui.screens.help import HelpScreen
from memdeck.tui.screens.notifications import NotificationsScreen
from memdeck.tui.views.common import badge_counts
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

HOSTILE_ID = "evil\x1b]52;c;Y3VybCBldmlsfHNo\x07id"


async def test_a_new_pending_write_toasts_counts_on_the_tab_and_stays_in_the_log(demo_home) -> None:
    app = make_app(demo_home, watch=True)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        tab = app.query_one("#panels").get_tab("review")
        before = len(app.snapshot.pending)
        badge = badge_counts(app.snapshot).get("review", 0)
        assert tab.label.plain == "6 Review" + (f" {badge}" if badge else "")
        rec = {"id": "cafe0002", "subsystem": "memory", "action": "add", "origin": HOSTILE_ID, "summary": "s",
               "created_at": time.time(), "payload": {"action": "add", "target": "memory", "content": "Use uv"}}
        tmp = demo_home.pending_dir / "cafe0002.json.tmp"
        tmp.write_text(json.dumps(rec), encoding="utf-8")
        tmp.rename(demo_home.pending_dir / "cafe0002.json")  # Hermes stages atomically
        await wait_for(pilot, lambda: any(t == "new pending write" for _w, _s, t, _m in app.notification_log))
        await settle(pilot, app)
        assert len(app.snapshot.pending) == before + 1
        assert tab.label.plain == f"6 Review {badge + 1}"
        # what was toasted is escaped: the hostile origin shows as visible markers, never raw
        (_w, _sev, _t, message), = [e for e in app.notification_log if e[2] == "new pending write"]
        assert "\x1b" not in message and "\x07" not in message and "cafe0002" in message
        await pilot.press("N")
        await wait_for(pilot, lambda: isinstance(app.screen, NotificationsScreen))
        shown = app.screen.query_one("#notifications-log").content.plain
        assert "new pending write" in shown and "cafe0002" in shown and "\x1b" not in shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, NotificationsScreen))


async def test_help_explains_the_terms(demo_home) -> None:
    app = make_app(demo_home, watch=False)
    async with app.run_test(size=(120, 50)) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        terms = app.screen.query_one("#help-terms")
        plain = "".join(str(s.text) for s in terms.render_lines(terms.region.reset_offset))
        for term in ("anchor", "probe", "drifted", "rehydrated", "integrity score", "pending write"):
            assert term in plain, term


async def test_enter_on_a_row_offers_its_actions_and_capacity_shows_entry_ids(demo_home) -> None:
    from memdeck.tui.screens.editors import EntryEditScreen
    from memdeck.tui.screens.pickers import PickerScreen

    app = make_app(demo_home, watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await wait_for(pilot, lambda: app.query_one("#capacity-table").has_focus)
        table = app.query_one("#capacity-table")
        first = app.panel("capacity").rows[0]
        assert first.entry.id in table.cells(first.key)[2].plain  # the id `memdeck memory ...` takes
        table.select_key(first.key)
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        labels = [str(o.prompt) for o in app.screen.query_one("#picker-list").options]
        assert labels[0].startswith("e  edit") and any(lbl.startswith("a  archive") for lbl in labels)
        await pilot.press("enter")  # the first one: edit
        await wait_for(pilot, lambda: isinstance(app.screen, EntryEditScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EntryEditScreen))
