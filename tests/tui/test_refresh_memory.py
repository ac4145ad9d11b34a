"""What a refresh leaves behind is bounded (issue 38 #4: RSS grew from 57 to 64 MiB over 20
refreshes of a small home).

Measured with tracemalloc between refreshes of the dashboard, driven headless: after the first
full snapshot and the first refreshes (the caches filled once), each refresh of a live session
keeps only the rows it read (one ``Message`` of the active region per appended message and one
``TurnInjections`` per user turn, at most 200 of them), never a previous snapshot, a panel or a
widget. Rich's ``cached_cell_len`` (an LRU of 4,096 strings, keyed by every word Textual wraps:
the status line's clock gives new ones each refresh) is cleared before each count: it is bounded
by rich and would otherwise hide what memdeck keeps.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections import Counter
from typing import Any

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.core.sessions import hermes_schema
from memdeck.tui.app import make_app
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

WARM = 3
N = 20
# what memdeck may keep per appended user message: its Message row (~0.2 KB) and its turn's
# injections (~0.2 KB) with their strings; a snapshot kept per refresh is ~100 KB and one widget
# several KB, so either breaks this bound many times over
BYTES_PER_REFRESH = 2_500
DATA_TYPES = {"Message", "TurnInjections"}


def _memdeck_objects() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__qualname__ for o in gc.get_objects()
                   if str(getattr(type(o), "__module__", "")).startswith("memdeck."))


def _traced() -> tracemalloc.Snapshot:
    from rich.cells import cached_cell_len

    cached_cell_len.cache_clear()
    gc.collect()
    return tracemalloc.take_snapshot().filter_traces((tracemalloc.Filter(False, tracemalloc.__file__),))


async def test_refreshes_of_a_live_small_home_keep_only_the_rows_they_read(demo_home) -> None:
    clock = [DEMO_NOW]
    app = make_app(demo_home, watch=False, clock=lambda: clock[0])
    started_here = not tracemalloc.is_tracing()
    if started_here:
        tracemalloc.start(1)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await pilot.press("4")  # Capacity: the table and the detail drawn on every refresh
            await wait_for(pilot, lambda: app.current_panel_id == "capacity")
            await settle(pilot, app)

            async def refresh(i: int) -> None:
                conn = hermes_schema.connect(demo_home.state_db)  # Hermes appends a user turn
                try:
                    hermes_schema.append_message(conn, app.snapshot.live_session.id, "user", f"turn {i}: rollout")
                finally:
                    conn.close()
                clock[0] += 1  # the status line's "updated" time changes every refresh
                n = app.refresh_count
                app.request_refresh()
                await wait_for(pilot, lambda: app.refresh_count > n)
                await settle(pilot, app)
                for _ in range(3):  # every repaint asked for is drawn
                    await pilot.pause()

            for i in range(WARM):
                await refresh(i)
            objects0, traced0 = _memdeck_objects(), _traced()
            for i in range(WARM, WARM + N):
                await refresh(i)
            objects1, traced1 = _memdeck_objects(), _traced()
    finally:
        if started_here:
            tracemalloc.stop()

    grown: dict[str, Any] = {k: objects1[k] - objects0[k] for k in objects1 if objects1[k] > objects0[k]}
    # only the rows read from state.db grow, one per appended user turn; no snapshot, panel, widget
    assert set(grown) <= DATA_TYPES, grown
    assert all(v <= N for v in grown.values()), grown
    stats = traced1.compare_to(traced0, "lineno")
    retained = sum(s.size_diff for s in stats)
    top = "\n".join(str(s) for s in stats[:8])
    assert retained <= N * BYTES_PER_REFRESH, f"{retained} bytes kept over {N} refreshes:\n{top}"
