"""A first semantic history fills on its own clock, and an idle dashboard is idle once it is done
(issue 38 #1: each refresh found every source unchanged and returned the previous snapshot while
the audit still had pending work; the dashboard started the next refresh at once and spun a core
without ever reaching the next slice)."""

from __future__ import annotations

import pytest

from memdeck.core.anchors import encoder as enc_mod
from memdeck.core.anchors import integrity_history as history_mod
from memdeck.core.deck import db as deckdb
from memdeck.core.home import HermesHome
from memdeck.core.overview import snapshot as snapshot_mod
from memdeck.tui.app import MemdeckApp, make_app
from tests.core.test_semantic_status import FakeVerified, _compacted_home
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

COMPACTIONS = 12


@pytest.fixture
def semantic_home(hermes_home: HermesHome, monkeypatch: pytest.MonkeyPatch) -> HermesHome:
    """A home whose live session has 12 compactions, two anchors and ``detection: semantic``, with
    an encoder that stands for memdeck's verified model (its verdicts are kept in memdeck.db);
    a refresh audits none of the history (budget 0) and the history worker one compaction a step."""
    enc_mod.clear_process_cache()
    history_mod.clear_process_cache()
    _compacted_home(hermes_home, n=COMPACTIONS)
    deckdb.connect(hermes_home).close()
    hermes_home.config_path.write_text("memlock:\n  detection: semantic\n", encoding="utf-8")
    encoders: dict[str, enc_mod.CachedEncoder] = {}

    def fake_semantic_encoder(config, home=None, env=None):
        status = enc_mod.DetectionStatus("semantic", "semantic", "test")
        key = str(getattr(home, "path", home))
        if key not in encoders:
            inner = FakeVerified()
            encoders[key] = enc_mod.CachedEncoder(inner, home)
        return encoders[key], status

    monkeypatch.setattr(enc_mod, "semantic_encoder", fake_semantic_encoder)
    monkeypatch.setattr(snapshot_mod, "SEMANTIC_BUDGET_S", 0.0)
    monkeypatch.setattr(MemdeckApp, "HISTORY_STEP_S", 0.0, raising=False)
    return hermes_home


async def test_a_pending_semantic_history_fills_without_writes_and_then_the_dashboard_is_idle(semantic_home) -> None:
    app = make_app(semantic_home, watch=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and app.snapshot.audit is not None
                       and not app.snapshot.partial, describe=lambda: "no full snapshot")
        # nothing on disk changes from here on: the history must still complete
        await wait_for(pilot, lambda: app.snapshot.audit.pending == 0 and app.history_filling is None, rounds=600,
                       describe=lambda: f"pending {app.snapshot.audit.pending}, runs {app.refresh_runs}")
        await settle(pilot, app)
        points = [p for p in app.snapshot.audit.history if p.get("source") != "memlock"]
        assert len(points) == COMPACTIONS and all(p["score"] is not None for p in points)
        runs = app.refresh_runs
        for _ in range(40):  # an idle dashboard: no refresh runs, no worker, however long it is watched
            await pilot.pause(0.05)
        assert app.refresh_runs == runs
        assert [w.group for w in app.workers if not w.is_finished and w.group in ("refresh", "history")] == []
    # the refreshes did not fill the history one slice each: the worker did, and a refresh took its result
    assert runs < COMPACTIONS, f"{runs} refreshes for a history of {COMPACTIONS} compactions"
