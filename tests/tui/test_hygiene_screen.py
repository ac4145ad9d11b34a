"""The Hygiene screen (``H``, issue 36): findings ranked by chars saved with their evidence and
the next session's block diff; enter applies a proposal after a confirmation, 1/2 keep a
contradiction's side, and ``z`` undoes the change byte for byte."""

from __future__ import annotations

import pytest

from memdeck.core.home import HermesHome
from memdeck.tui.app import make_app
from memdeck.tui.screens.confirm import ConfirmScreen
from memdeck.tui.screens.hygiene import HygieneScreen
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

MEMORY = ["Project uses uv for Python dependency management",
          "Python dependencies in this project are managed with uv",
          "Deploy target is pi.local",
          "Deploy target moved to pi.lan",
          "Never push on Fridays"]


@pytest.fixture
def seeded(hermes_home: HermesHome) -> HermesHome:
    hermes_home.memory_file("memory").write_text("\n§\n".join(MEMORY), encoding="utf-8")
    hermes_home.memory_file("user").write_text("User prefers concise answers", encoding="utf-8")
    return hermes_home


async def _open(pilot, app) -> HygieneScreen:
    await wait_for(pilot, lambda: app.refresh_count >= 1)
    await settle(pilot, app)
    await pilot.press("H")
    await wait_for(pilot, lambda: isinstance(app.screen, HygieneScreen) and app.screen.report is not None,
                   rounds=1200, describe=lambda: str(app.screen))
    return app.screen


async def test_a_merge_is_shown_with_its_block_diff_applied_after_yes_and_undone_with_z(seeded) -> None:
    before = seeded.memory_file("memory").read_bytes()
    app = make_app(seeded, watch=True)
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        kinds = [f.kind for f in screen.report.findings]
        assert sorted(kinds) == ["contradiction", "duplicate"]
        row = kinds.index("duplicate")
        screen.query_one("#hygiene-table").move_cursor(row=row)
        await pilot.pause()
        detail = screen.query_one("#hygiene-detail").content.plain
        assert "next session's block if applied" in detail and "- [memory]" in detail and "+ [memory]" in detail
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: seeded.memory_file("memory").read_bytes() != before)
        await settle(pilot, app)
        text = seeded.memory_file("memory").read_text(encoding="utf-8")
        assert MEMORY[1] in text and MEMORY[0] not in text  # merged into the longest
        await pilot.press("z")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: seeded.memory_file("memory").read_bytes() == before,
                       describe=lambda: f"{seeded.memory_file('memory').read_bytes()!r} {list(app.notification_log)[-3:]}")


async def test_a_contradiction_applies_only_with_the_side_to_keep(seeded) -> None:
    app = make_app(seeded, watch=True)
    async with app.run_test(size=(140, 45), notifications=True) as pilot:
        screen = await _open(pilot, app)
        row = [f.kind for f in screen.report.findings].index("contradiction")
        screen.query_one("#hygiene-table").move_cursor(row=row)
        await pilot.pause()
        await pilot.press("enter")  # no side chosen: nothing asked, nothing written
        await pilot.pause()
        assert isinstance(app.screen, HygieneScreen)
        await pilot.press("2")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: "pi.local" not in seeded.memory_file("memory").read_text(encoding="utf-8"))
        assert "Deploy target moved to pi.lan" in seeded.memory_file("memory").read_text(encoding="utf-8")
