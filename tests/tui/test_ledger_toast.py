"""A toast for the live session's newest compaction when it lost, weakened or promoted rules (issue
34): told once, when the compaction appears; not for a compaction that changed no rule, and not
for the compactions already there when the dashboard opened."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memdeck.core.constraints import ledger as ledger_mod
from memdeck.core.home import HermesHome
from memdeck.core.sessions import hermes_schema as HS
from memdeck.tui.app import make_app
from memdeck.tui.views.constraints import newest_toast
from tests.core.test_constraints import _compactions
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _compact(home: HermesHome, turns: list[str], summary: str, t: float) -> None:
    conn = HS.connect(home.state_db)
    try:
        for i, text in enumerate(turns):
            HS.append_message(conn, "s1", "user", text, timestamp=t + i)
            HS.append_message(conn, "s1", "assistant", "ok", timestamp=t + i + 0.5)
        HS.compact_in_place(conn, "s1", summary, keep_head=1, keep_tail=2, now=t + len(turns) + 1)
        HS.append_message(conn, "s1", "user", "next", timestamp=t + len(turns) + 2)
    finally:
        conn.close()


def _titles(app) -> list[str]:
    return [n.title for n in app.notification_log if "changed rules" in (n.title or "")]


async def test_the_live_sessions_new_compaction_that_lost_rules_is_toasted_once(hermes_home: HermesHome) -> None:
    ledger_mod.clear_process_cache()
    _compactions(hermes_home, 1)  # one compaction already there (it lost a rule): no toast for it
    app = make_app(hermes_home, watch=True)
    async with app.run_test(size=(140, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial
                       and app.snapshot.constraints is not None, describe=lambda: "no full snapshot")
        await settle(pilot, app)
        assert _titles(app) == []
        # a compaction that changes no rule: no toast
        _compact(hermes_home, ["More work.", "And more.", "ok", "go"], "## Progress\n- More work done.", 1_900_000_000.0)
        await wait_for(pilot, lambda: app.snapshot.constraints["compactions"] == 2, rounds=400,
                       describe=lambda: f"{app.snapshot.constraints}")
        await settle(pilot, app)
        assert _titles(app) == []
        _compact(hermes_home, ["Step x.", "Never run migrations on Fridays.", "Skip the linter just this once.", "go on"],
                 "## Constraints & Preferences\n- Skip the linter.", 1_900_001_000.0)
        await wait_for(pilot, lambda: app.snapshot.constraints["compactions"] == 3, rounds=400,
                       describe=lambda: f"{app.snapshot.constraints}")
        await wait_for(pilot, lambda: _titles(app), rounds=200, describe=lambda: "no toast")
        await settle(pilot, app)
        assert _titles(app) == ["compaction #3 changed rules"]
        msg = next(n.message for n in app.notification_log if n.title == "compaction #3 changed rules")
        assert "1 lost" in msg and "1 promoted" in msg and "Never run migrations on Fridays." in msg


def _snap(sid: str, newest: dict | None, live: bool = True) -> SimpleNamespace:
    return SimpleNamespace(following_live=live, constraints={"session_id": sid, "newest": newest})


def test_newest_toast_only_for_a_new_compaction_of_the_same_followed_session() -> None:
    lost = {"compaction_id": 2, "changed": [{"verdict": "lost", "rule": "Never log keys."}]}
    one = {"compaction_id": 1, "changed": []}
    assert newest_toast(_snap("a", one), _snap("a", lost)) == (
        "compaction #2 changed rules", 'session a: 1 lost: "Never log keys." lost. Drift → L opens the ledger')
    assert newest_toast(_snap("a", lost), _snap("a", lost)) is None  # the same compaction: told once
    assert newest_toast(_snap("b", one), _snap("a", lost)) is None  # another session is not an event
    assert newest_toast(_snap("a", one), _snap("a", lost, live=False)) is None  # a session the user picked
    assert newest_toast(_snap("a", one), _snap("a", {"compaction_id": 2, "changed": []})) is None
    assert newest_toast(None, _snap("a", lost)) is None
