"""What a person sees at 80x24: the status line keeps the time and shortens the path, the
footer starts with pause and help, the narrow layout class applies, and the Integrity panel
says when its score is not MemLock's (no compaction yet)."""

from __future__ import annotations

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import make_app
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

LONG = "/home/someone/with/a/rather/long/path/to/the/hermes/home/directory/.hermes"


async def test_status_line_keeps_the_time_and_shortens_the_path(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW, home_label=LONG)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        line = app.query_one("#statusline").content.plain
        assert "updated " in line and len(line) <= 80, line
        assert line.rstrip().endswith("/.hermes") and "…" in line, line
        assert app.screen.has_class("-narrow")
    app = make_app(demo_home, watch=False, now=DEMO_NOW, home_label=LONG)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, app)
        assert LONG in app.query_one("#statusline").content.plain
        assert not app.screen.has_class("-narrow")


def test_footer_starts_with_pause_then_help() -> None:
    from memdeck.tui.keymap import app_bindings

    shown = [b.action for b in app_bindings() if b.show]
    assert shown[:2] == ["toggle_pause", "help"]


async def test_a_session_without_an_audit_says_no_audit_yet_and_who_waits(demo_home) -> None:
    """MemLock has no score before its first audit; neither does the panel (issue 8 #4)."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        facts = app.query_one("#integrity-facts").content.plain
        assert "the score is what an audit would give now" not in facts  # the live one has compactions
        for sid in [s.id for s in app.snapshot.sessions if s.id != app.snapshot.session_id]:
            app.session_id = sid
            app.request_refresh(force=True)
            await wait_for(pilot, lambda sid=sid: app.snapshot.session_id == sid)
            await settle(pilot, app)
            audit = app.snapshot.audit
            if (not app.snapshot.compactions and audit is not None and audit.anchors
                    and app.snapshot.session_anchors.integrity_score is None):
                break
        else:
            pytest.fail("the demo home has no session with anchors and without a compaction")
        facts = app.query_one("#integrity-facts").content.plain
        assert app.query_one("#score").value == "--"
        assert "below the floor" not in facts
        waiting = [r.anchor.id for r in app.snapshot.audit.anchors if r.state == "pinned"]
        assert waiting and "no audit yet · waiting: " + waiting[0] in facts, facts


async def test_reminder_block_is_shown_whole_with_its_overflow_line(demo_home) -> None:
    """Every line of the block fits its height-auto widget (a Group was measured a line short)."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        block = app.snapshot.reminder_block
        assert "additional instruction(s) not shown" in block  # the demo overflows max_reminder_chars
        widget = app.query_one("#integrity-reminder")
        assert widget.size.height == 1 + len(block.splitlines())
        rendered = "".join(str(s.text) for s in widget.render_lines(widget.region.reset_offset))
        assert "additional instruction(s) not shown" in rendered


async def test_a_stale_focus_of_the_old_panel_does_not_switch_back(demo_home) -> None:
    """Switching panels focuses the new panel after the next refresh; when keys come faster,
    that focus lands on a panel that is no longer shown. Textual's TabbedContent would then
    switch back to it (TabPane.Focused); memdeck's must not."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await app.action_show_panel("anchors")
        await pilot.pause()
        app.query_one("#anchors-table").focus()  # the pending focus of the switch just made
        await app.action_prev_panel()  # the next key arrives before that focus is processed
        for _ in range(10):
            await pilot.pause(0.02)
        assert app.current_panel_id == "integrity"
