"""Only the panel shown at launch and Capacity (memory usage) are composed before the first paint
(issue 23, gap 3: eight panels were composed, and their modules imported, before anything was on
screen); the others are mounted after it, one per frame, or at once when a key shows one first.
Behaviour, not timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import MemdeckApp, make_app
from memdeck.tui.keymap import PANEL_IDS
from memdeck.tui.widgets.panels.base import Panel
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _mounted(app: MemdeckApp) -> list[str]:
    return sorted(str(p.id) for p in app.query(Panel))


async def test_the_first_paint_holds_only_the_initial_panel_and_then_every_panel_is_mounted(demo_home,
                                                                                          monkeypatch) -> None:
    at_first_apply: list[list[str]] = []
    real = MemdeckApp.apply_snapshot

    def recording(self, snap):
        if not at_first_apply:
            at_first_apply.append(_mounted(self))
        return real(self, snap)

    monkeypatch.setattr(MemdeckApp, "apply_snapshot", recording)
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert at_first_apply == [sorted(f"panel-{pid}" for pid in MemdeckApp.EAGER_PANELS)]
        assert set(MemdeckApp.EAGER_PANELS) == {"integrity", "capacity"}
        assert _mounted(app) == sorted(f"panel-{pid}" for pid in PANEL_IDS)
        # each panel mounted later shows the snapshot when it is shown
        for key, pid in (("4", "capacity"), ("7", "history"), ("6", "review")):
            await pilot.press(key)
            await settle(pilot, app)
            assert app.current_panel_id == pid
            assert app.panel(pid).drawn_from(app.snapshot) is not None


async def test_a_panel_shown_before_its_turn_is_mounted_and_drawn_at_once(demo_home) -> None:
    """A key typed as the dashboard starts shows its panel, drawn from the snapshot: ``4``
    (Capacity, composed at launch: the launch bench's key) and ``7`` (History, mounted then)."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await wait_for(pilot, lambda: app.snapshot is not None and app.current_panel_id == "capacity"
                       and bool(app.panel("capacity").rows))
        assert {r.target for r in app.panel("capacity").rows} == {"memory", "user"}
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("7")
        await wait_for(pilot, lambda: app.snapshot is not None and not app.snapshot.partial
                       and app.current_panel_id == "history" and "history" in app._panels_ready
                       and app.panel("history").drawn_from(app.snapshot) is not None)
        await settle(pilot, app)
        assert len(_mounted(app)) == len(PANEL_IDS)


_PROBE = r'''
import json, sys
import memdeck.tui.app  # the dashboard's module, as `memdeck` imports it before the first paint
print(json.dumps(sorted(m for m in sys.modules if m.startswith("memdeck.tui.widgets.panels."))))
'''


def test_the_app_module_imports_no_panel_module() -> None:
    """The panels' modules are imported by ``panel_class`` when each is composed or mounted."""
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []
