"""The History panel (issue 12): changes by any writer, a diff, and r to revert one."""

from __future__ import annotations

import os

import pytest

from memdeck.core.config import Config
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.memory.store import MemoryStore
from memdeck.tui.app import make_app
from memdeck.tui.screens.confirm import ConfirmScreen
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _hermes_replace(home, old: str, new: str) -> None:
    """Replace an entry the way Hermes writes: a temp file in memories/, then os.replace."""
    path = home.memory_file("memory")
    entries = [new if e == old else e for e in parse_entries(path.read_text(encoding="utf-8"))]
    tmp = path.parent / ".mem_hist0001.tmp"
    tmp.write_text(serialize_entries(entries), encoding="utf-8")
    os.replace(tmp, path)


async def test_an_external_change_is_listed_with_its_diff_and_r_reverts_it(hermes_home) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "Deploys happen on Fridays after the [bold]standup[/bold].")
    s.add("memory", "User lives in Leeds.")
    app = make_app(hermes_home, watch=True)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        _hermes_replace(hermes_home, "User lives in Leeds.", "User lives in York.")
        await wait_for(pilot, lambda: any(c.op == "replaced" for c in app.snapshot.history))
        await pilot.press("7")
        await wait_for(pilot, lambda: app.current_panel_id == "history")
        rows = app.panel("history").rows
        replaced = next(r for r in rows if r.change.op == "replaced")
        assert replaced.change.actor == "external" and rows[0] is replaced  # newest first
        table = app.query_one("#history-table")
        table.select_key(replaced.key)
        await pilot.pause()
        detail = app.query_one("#history-detail").content.plain
        assert "Leeds" in detail and "York" in detail and f"memdeck revert {replaced.change.change_id}" in detail
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot, app)
        assert "User lives in Leeds." in parse_entries(hermes_home.memory_file("memory").read_text(encoding="utf-8"))
        # reverting it again no longer applies: refused, with the reason, nothing changed
        before = hermes_home.memory_file("memory").read_bytes()
        table.select_key(replaced.key)
        await pilot.pause()
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await settle(pilot, app)
        assert any(n.title == "revert: refused" for n in app.notification_log), list(app.notification_log)
        assert hermes_home.memory_file("memory").read_bytes() == before


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_the_who_column_is_drawn_whole_after_the_filter_changes(demo_home, size) -> None:
    """Issue 39 #8: typing a filter and taking it back left rows drawn in the column widths of
    the filtered table (``background review`` cut to ``background``, ``memdeck tui`` to
    ``memdeck``): DataTable settles widths when idle but kept the rows it drew before."""
    MemoryStore(demo_home, Config(), actor="tui").add("memory", "Tui wrote this entry about Leeds.")
    app = make_app(demo_home.path)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        await pilot.press("7")
        await wait_for(pilot, lambda: app.current_panel_id == "history")
        await settle(pilot, app)
        table = app.query_one("#history-table")
        panel = app.panel("history")
        shown = {r.cells[2].plain for r in panel.rows}
        assert {"memdeck tui", "memdeck cli", "background review"} <= shown
        await pilot.press("slash", "m", "e", "m")
        await wait_for(pilot, lambda: "background review" not in {r.cells[2].plain for r in panel.rows})
        await pilot.pause()
        await pilot.press("backspace")
        await pilot.pause()
        await pilot.press("backspace")
        await settle(pilot, app)
        for _ in range(3):
            await pilot.pause()
        assert {r.cells[2].plain for r in panel.rows} == shown
        # the filter "memdeck" finds memdeck's changes, not "external" ones whose explanation says "not memdeck"
        await pilot.press(*"emdeck")
        await wait_for(pilot, lambda: panel.filter_text == "memdeck")
        await settle(pilot, app)
        assert any(r.cells[2].plain == "memdeck tui" for r in panel.rows)
        others = [r.cells[2].plain for r in panel.rows if not r.cells[2].plain.startswith("memdeck")
                  and "memdeck" not in r.text.lower()]
        assert not others, others
        await pilot.press("escape")
        await settle(pilot, app)
        drawn = [table.render_line(1 + i).text for i in range(min(len(panel.rows), table.size.height - 1))]
        cut = [(r.cells[2].plain, line) for r, line in zip(panel.rows, drawn) if f" {r.cells[2].plain} " not in line]
        assert not cut, cut
