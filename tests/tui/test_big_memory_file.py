"""Issue 13 #4: a memory file far over its limit (200,000 entries) keeps the dashboard usable:
the table holds a bounded number of rows, the scan is bounded, and the screen says so."""

from __future__ import annotations

import pytest

from memdeck.core.memory.entries import SCAN_BUDGET_CHARS
from memdeck.core.memory.reader import read_memory
from memdeck.tui.app import make_app
from memdeck.tui.views.capacity import MAX_ENTRY_ROWS
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

N = 200_000


def _huge(home) -> None:
    home.memory_file("memory").write_text("\n§\n".join(f"note {i}: the build cache lives in /tmp/c{i}" for i in range(N)),
                                          encoding="utf-8")


def test_reading_a_huge_file_scans_only_its_budget(hermes_home) -> None:
    _huge(hermes_home)
    st = read_memory(hermes_home, None, "memory")
    assert len(st.entries) == N and st.unscanned > 0
    scanned = [e for e in st.entries if e.scanned]
    assert sum(e.chars for e in scanned) <= SCAN_BUDGET_CHARS and scanned == list(st.entries[: len(scanned)])
    assert st.to_dict()["unscanned"] == st.unscanned


async def test_capacity_lists_a_bounded_number_of_rows_and_says_so(hermes_home) -> None:
    _huge(hermes_home)
    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_panel_id == "capacity")
        await settle(pilot, app)
        assert app.query_one("#capacity-table").row_count == MAX_ENTRY_ROWS
        bar = app.query_one("#usage-memory").content.plain
        assert f"the first {MAX_ENTRY_ROWS:,} of {N:,} entries are listed" in bar and "not threat-scanned" in bar
        assert app.query_one("#usage-memory").size.height == 2  # the warning line is on screen, not cut off
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running)
