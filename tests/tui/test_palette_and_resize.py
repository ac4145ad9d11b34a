"""Light-theme status colours read at 3:1; Capacity keeps its numbers when the terminal shrinks."""

from __future__ import annotations

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import make_app
from memdeck.tui.palette import LIGHT_BACKGROUND, contrast
from tests.tui.conftest import settle

pytestmark = pytest.mark.anyio


async def test_light_theme_status_colours_have_3_to_1_contrast(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("t")
        assert app.theme == "textual-light"
        palette = app.ansi_theme.ansi_colors
        low = {i: round(contrast(tuple(palette[i]), LIGHT_BACKGROUND), 2) for i in range(1, 16) if i not in (7, 15)}
        assert all(ratio >= 3.0 for ratio in low.values()), low


async def test_capacity_bars_keep_their_numbers_after_the_terminal_shrinks(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        bar = app.query_one("#usage-memory")
        assert "/2,200 chars" in bar.content.plain and "█" in bar.content.plain
        await pilot.resize_terminal(60, 24)
        await pilot.pause()
        await pilot.pause()
        line = bar.content.plain.splitlines()[0]
        assert "/2,200 chars" in line and "entries" in line
        assert len(line) <= bar.size.width, (line, bar.size.width)
