"""The Constraints screen (``L`` in the Drift log, issue 34): the ledger of the selected compaction
of the shown session with its counts per verdict in the title and each item's evidence; ``p`` on
a lost or weakened rule opens the pin dialog with the user's own words."""

from __future__ import annotations

import pytest
from textual.widgets import TextArea

from memdeck.core.home import HermesHome
from memdeck.core.sessions import hermes_schema as HS
from memdeck.tui.app import make_app
from memdeck.tui.keymap import palette_entries
from memdeck.tui.screens.constraints import ConstraintsScreen
from memdeck.tui.screens.editors import PinScreen
from memdeck.tui.widgets.table import DeckTable
from tests.core.test_constraints import SUMMARY, TURNS, _session
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


async def _open(pilot, app) -> ConstraintsScreen:
    await wait_for(pilot, lambda: app.refresh_count >= 1)
    await settle(pilot, app)
    await pilot.press("3")
    await settle(pilot, app)
    await pilot.press("L")
    await wait_for(pilot, lambda: isinstance(app.screen, ConstraintsScreen) and app.screen.ledger is not None,
                   rounds=1200, describe=lambda: str(app.screen))
    return app.screen


def _select(screen: ConstraintsScreen, verdict: str) -> dict:
    items = screen.comp["items"]
    row = [i["verdict"] for i in items].index(verdict)
    screen.query_one("#constraints-table").move_cursor(row=row)
    return items[row]


async def test_the_ledger_shows_counts_and_evidence_and_p_pins_the_lost_rule(hermes_home: HermesHome) -> None:
    _session(hermes_home, TURNS, SUMMARY)
    app = make_app(hermes_home, watch=False, session_id="s1")
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        assert screen.ledger["method"] == "keyword"  # the keyword method unless asked for
        title = screen.query_one("#constraints-title").content.plain
        assert "compaction #1" in title
        for n_verdict in ("1 kept", "1 weakened", "1 lost", "1 promoted", "1 orphan"):
            assert n_verdict in title, title
        table = screen.query_one("#constraints-table")
        assert table.row_count == len(screen.comp["items"]) == 5
        item = _select(screen, "lost")
        await pilot.pause()
        detail = screen.query_one("#constraints-detail").content.plain
        assert "Never log API keys." in detail and f"from user turn {item['source_turn_id']}" in detail
        assert "evidence:" in detail and "p pins" in detail
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PinScreen) and app.screen.is_mounted)
        assert app.screen.query_one("#pin-text", TextArea).text == "Never log API keys."
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, ConstraintsScreen))


async def test_p_pins_a_weakened_rule_in_the_users_words_not_the_summarys(hermes_home: HermesHome) -> None:
    _session(hermes_home, TURNS, SUMMARY)
    app = make_app(hermes_home, watch=False, session_id="s1")
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        item = _select(screen, "weakened")
        assert item["summary_line"] == "Force-pushing to main was discussed."
        await pilot.pause()
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PinScreen) and app.screen.is_mounted)
        assert app.screen.query_one("#pin-text", TextArea).text == "Never force-push to main."


async def test_p_on_a_kept_rule_opens_nothing_and_read_only_refuses(hermes_home: HermesHome) -> None:
    _session(hermes_home, TURNS, SUMMARY)
    app = make_app(hermes_home, watch=False, session_id="s1", read_only=True)
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        _select(screen, "kept")
        await pilot.pause()
        await pilot.press("p")
        await settle(pilot, app)
        assert isinstance(app.screen, ConstraintsScreen)
        _select(screen, "lost")
        await pilot.pause()
        await pilot.press("p")
        await settle(pilot, app)
        assert isinstance(app.screen, ConstraintsScreen)  # read-only: no pin dialog
        assert any("read-only" in str(n.message).lower() or "refused" in str(n.title or "").lower()
                   for n in app.notification_log)


async def test_the_drift_logs_selected_row_chooses_the_compaction(hermes_home: HermesHome) -> None:
    """Two compactions: the newest by default; the older one's audit row selected gives its own."""
    _session(hermes_home, TURNS, SUMMARY)
    conn = HS.connect(hermes_home.state_db)
    for i, t in enumerate(["Always answer in English.", "ok", "more", "ok"]):
        HS.append_message(conn, "s1", "user" if i % 2 == 0 else "assistant", t, timestamp=1_800_000_300.0 + i)
    HS.compact_in_place(conn, "s1", "## Constraints & Preferences\n- Answer in English, always.", keep_head=1,
                        keep_tail=2, now=1_800_000_400.0)
    conn.close()
    app = make_app(hermes_home, watch=False, session_id="s1")
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        assert screen.comp["compaction_id"] == 2
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConstraintsScreen))
        panel = app.panel("drift")
        rows = panel.rows
        older = [n for n, r in enumerate(rows) if r.event.get("event_index") == 1]
        assert older, [r.event for r in rows]
        panel.query_one(DeckTable).move_cursor(row=older[0])
        await settle(pilot, app)
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, ConstraintsScreen) and app.screen.ledger is not None)
        assert app.screen.comp["compaction_id"] == 1


def test_the_key_is_the_drift_logs_and_the_palette_lists_it_there() -> None:
    from memdeck.tui.keymap import keys_table, panel_bindings

    assert [b.key for b in panel_bindings("drift") if b.action == "app.constraints"] == ["L"]
    assert any(row.action == "constraints" and row.where == "Drift log" for row in keys_table())
    assert "constraints" in {a for _t, _h, a in palette_entries(panel="drift")}
    assert "constraints" not in {a for _t, _h, a in palette_entries(panel="capacity")}


async def test_m_asks_for_the_semantic_method_only_then(hermes_home: HermesHome) -> None:
    """Keyword by default; ``m`` recomputes by meaning when the semantic extra is installed, and
    says it is not otherwise (the ledger stays keyword)."""
    from memdeck.core.anchors.encoder import package_model_folder

    _session(hermes_home, TURNS, SUMMARY)
    app = make_app(hermes_home, watch=False, session_id="s1")
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        first = screen.ledger
        assert first["method"] == "keyword"
        await pilot.press("m")
        await wait_for(pilot, lambda: screen.ledger is not first, rounds=2400, describe=lambda: str(screen.ledger))
        want = "semantic" if package_model_folder() is not None else "keyword"
        assert screen.ledger["method"] == want
        assert want in screen.query_one("#constraints-title").content.plain
        assert {i["method"] for i in screen.comp["items"]} == {want}


async def test_c_on_a_promoted_line_queues_the_correction_once_and_undo_cancels_it(hermes_home: HermesHome) -> None:
    """Issue 34 #3: the one-time correction (the real plugin sends it: tests/interop/test_agent_requests_hermes.py)."""
    from memdeck.core.requests.queue import correction_line, list_requests
    from memdeck.tui.screens.confirm import ConfirmScreen

    _session(hermes_home, TURNS, SUMMARY)
    app = make_app(hermes_home, watch=False, session_id="s1")
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        _select(screen, "kept")
        await pilot.pause()
        await pilot.press("c")  # not a promoted line: nothing opens
        await wait_for(pilot, lambda: any("promoted" in n.message for n in app.notification_log))
        assert isinstance(app.screen, ConstraintsScreen)
        item = _select(screen, "promoted")
        await pilot.pause()
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted)
        line = correction_line(item["rule"])
        assert line in app.screen.query_one("#confirm-body").content.plain  # the exact line, before anything is queued
        assert list_requests(hermes_home) == []
        await pilot.press("y")
        await wait_for(pilot, lambda: list_requests(hermes_home) != [], describe=lambda: str(app.notification_log[-1:]))
        [req] = list_requests(hermes_home)
        assert (req.session_id, req.kind, req.text, req.state) == ("s1", "correction", line, "queued")
        assert "Skip the linter just this once." in line
        await wait_for(pilot, lambda: any("correction queued" in n.message for n in app.notification_log))
    from memdeck.core.config import load_config
    from memdeck.core.undo import undo

    assert undo(hermes_home, load_config(hermes_home))["cancelled"] == [req.request_id]
    assert list_requests(hermes_home)[0].state == "cancelled"
