"""A session's first full constraint ledger fills in the background with its progress on the status
line (issue 34), the way the first semantic history does: a worker of its own, steps of bounded
time, one refresh at the end, never a loop of refreshes; then the Drift tab and its panel show the
counts."""

from __future__ import annotations

import pytest

from memdeck.core.constraints import ledger as ledger_mod
from memdeck.core.deck import db as deckdb
from memdeck.core.home import HermesHome
from memdeck.core.overview import snapshot as snapshot_mod
from memdeck.tui.app import MemdeckApp, make_app
from tests.core.test_constraints import _compactions
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

COMPACTIONS = 12


@pytest.fixture
def ledger_home(hermes_home: HermesHome, monkeypatch: pytest.MonkeyPatch) -> HermesHome:
    """A live session compacted 12 times, each compaction losing one rule; a refresh computes only
    the newest compaction's ledger (budget 0) and the ledger worker one a step."""
    ledger_mod.clear_process_cache()
    _compactions(hermes_home, COMPACTIONS)
    deckdb.connect(hermes_home).close()
    monkeypatch.setattr(snapshot_mod, "LEDGER_BUDGET_S", 0.0)
    monkeypatch.setattr(MemdeckApp, "LEDGER_STEP_S", 0.0, raising=False)
    return hermes_home


async def test_a_first_full_ledger_fills_in_the_background_with_progress_then_the_dashboard_is_idle(
        ledger_home: HermesHome, monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[str] = []
    real = MemdeckApp.on_ledger_fill_progress

    def spy(self: MemdeckApp, message) -> None:
        real(self, message)
        lines.append(str(self.query_one("#statusline").content))

    monkeypatch.setattr(MemdeckApp, "on_ledger_fill_progress", spy)
    app = make_app(ledger_home, watch=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial
                       and app.snapshot.constraints is not None, describe=lambda: "no full snapshot")
        await wait_for(pilot, lambda: app.snapshot.constraints["pending"] == 0 and app.ledger_filling is None,
                       rounds=600, describe=lambda: f"constraints {app.snapshot.constraints}, runs {app.refresh_runs}")
        await settle(pilot, app)
        c = app.snapshot.constraints
        assert c["compactions"] == COMPACTIONS and c["counts"]["lost"] == COMPACTIONS
        assert c["newest"]["compaction_id"] == COMPACTIONS
        runs = app.refresh_runs
        for _ in range(40):  # idle: no refresh, no worker
            await pilot.pause(0.05)
        assert app.refresh_runs == runs
        assert [w.group for w in app.workers if not w.is_finished and w.group in ("refresh", "ledger")] == []
        # the Drift tab counts the lost rules; its panel says them
        await pilot.press("3")
        await settle(pilot, app)
        from textual.widgets import TabbedContent

        label = str(app.query_one("#panels", TabbedContent).get_tab("drift").label)
        assert label.endswith(f" {COMPACTIONS}"), label
        line = str(app.query_one("#drift-ledger").content)
        assert f"{COMPACTIONS} compactions" in line and f"{COMPACTIONS} lost" in line
    assert runs < COMPACTIONS, f"{runs} refreshes for a ledger of {COMPACTIONS} compactions"
    # the worker said how many were left, step by step, on the status line
    assert any(f"constraint ledger: {n} compactions to read" in s for s in lines for n in range(1, COMPACTIONS))
    kept = deckdb.connect(ledger_home)
    try:
        assert kept.execute("SELECT COUNT(*) FROM constraint_ledgers").fetchone()[0] == COMPACTIONS
    finally:
        kept.close()
