"""Snapshot tests (pytest-textual-snapshot) of every panel at 80x24 and 120x40, and one in the
light theme. Watchers off, clock fixed at the demo's "now", cursor blink off, UTC.

Regenerate after a deliberate UI change: ``pytest tests/tui/test_snapshots.py --snapshot-update``
then look at the SVGs under ``tests/tui/__snapshots__``.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input, TextArea

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import make_app
from memdeck.tui.keymap import PANEL_IDS
from tests.tui.conftest import settle


def _still(app) -> None:
    for w in app.query(Input):
        w.cursor_blink = False
    for w in app.query(TextArea):
        w.cursor_blink = False


def _run_before(*keys: str, theme: str | None = None):
    async def run_before(pilot) -> None:
        app = pilot.app
        await settle(pilot, app)
        if theme:
            app.theme = theme
        _still(app)
        for k in keys:
            await pilot.press(k)
            await settle(pilot, app)
        _still(app)

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("panel", PANEL_IDS)
def test_panel(snap_compare, demo_home, panel: str, size: tuple[int, int]) -> None:
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW, home_label="~/.cache/memdeck/demo-7")
    key = str(PANEL_IDS.index(panel) + 1)
    assert snap_compare(app, terminal_size=size, run_before=_run_before(key))


@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24", "100x30"])
def test_overview(snap_compare, demo_home, size: tuple[int, int]) -> None:
    """Issue 39 #13: the overview layout (o) beside an agent: everything on one screen."""
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW, home_label="~/.cache/memdeck/demo-7")
    assert snap_compare(app, terminal_size=size, run_before=_run_before("o"))


def test_light_theme_capacity(snap_compare, demo_home) -> None:
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW, home_label="~/.cache/memdeck/demo-7")
    assert snap_compare(app, terminal_size=(120, 40), run_before=_run_before("4", theme="textual-light"))


def test_light_theme_integrity_chart(snap_compare, demo_home) -> None:
    """The score chart in the light theme: its line and the floor in the light ANSI palette."""
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW, home_label="~/.cache/memdeck/demo-7")
    assert snap_compare(app, terminal_size=(120, 40), run_before=_run_before("1", theme="textual-light"))


def test_usage_charts_shown_with_g_on_a_short_terminal(snap_compare, demo_home) -> None:
    """Under 36 rows the usage charts are hidden until g."""
    app = make_app(demo_home, watch=False, demo=True, now=DEMO_NOW, home_label="~/.cache/memdeck/demo-7")
    assert snap_compare(app, terminal_size=(100, 32), run_before=_run_before("4", "g"))
