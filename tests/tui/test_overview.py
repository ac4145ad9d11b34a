"""Issue 39 #13: the overview layout (o, --layout overview, the settings file's layout) shows on
one screen at 80x24 and 100x30 integrity with its trend, both stores' usage, pending and flagged
counts with the oldest age, the frozen-memory difference count, the next compaction and the last
three changes, each a key away from its panel; every key hint is reachable at 80x24 (the footer
shows what fits by priority, none cut; the tab bar shows all eight panels)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Tab
from textual.widgets._footer import FooterKey

from memdeck.core.cli import build_parser
from memdeck.core.demo import DEMO_NOW
from memdeck.core.overview.alerts import oldest_pending_age
from memdeck.core.text import age_words
from memdeck.tui.app import make_app
from memdeck.tui.keymap import PANEL_IDS, PANELS
from memdeck.tui.views.context import differing_count
from memdeck.tui.views.integrity import current_score
from memdeck.tui.widgets.footer import DeckFooter
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _body(app) -> str:
    return app.query_one("#overview-body").render().plain


@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24", "100x30"])
async def test_the_overview_shows_everything_on_one_screen(demo_home, size) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW, layout="overview")
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await wait_for(pilot, lambda: app.overview_shown and "next compaction: " in _body(app)
                       and "unknown" not in _body(app).split("next compaction: ")[1][:10],
                       describe=lambda: _body(app))
        snap = app.snapshot
        assert not app.query_one("#panels").display and app.query_one("#overview").display
        lines = _body(app).splitlines()
        body = "\n".join(lines)
        score = current_score(snap)
        assert f"{score}/100" in lines[0] and "floor" in lines[0]
        assert len(snap.integrity_history) >= 2 and ("▼" in lines[0] or "▲" in lines[0] or "=" in lines[0])
        for target, name in (("memory", "MEMORY.md"), ("user", "USER.md")):
            state = snap.memory[target]
            line = next(ln for ln in lines if name in ln and "chars" in ln)
            assert f"{state.chars:,}/{state.limit:,}" in line and f"{state.pct}%" in line
        age = oldest_pending_age(snap, DEMO_NOW)
        assert f"{len(snap.pending)} pending" in body and f"oldest unreviewed {age_words(age[0])}" in body
        assert "1 flagged" in body or " flagged" in body
        n = differing_count(snap)
        assert n and f"frozen memory: {n} entries differ" in body
        nc, _why = snap.agent_view.report.next_compaction()
        assert f"of {nc['threshold_tokens']:,} tokens" in body
        assert len(snap.history) >= 3 and "last 3 changes" in body
        assert sum(1 for ln in lines if ln.lstrip().startswith("·")) == 3
        # each block starts with the key of its panel, and everything fits the screen
        for pid, title in PANELS:
            if title in ("Integrity", "Capacity", "Review", "Context", "History"):
                assert f" {PANEL_IDS.index(pid) + 1}  {title}" in body, title
        pane = app.query_one("#overview-body")
        assert pane.region.bottom <= size[1] - 1 and pane.region.right <= size[0]
        assert all(len(ln) <= pane.region.width for ln in lines)


async def test_o_toggles_and_each_key_opens_its_panel(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert not app.overview_shown
        await pilot.press("o")
        await wait_for(pilot, lambda: app.overview_shown and "Integrity" in _body(app))
        assert app.selection() is None  # no key acts on a row nobody sees
        await pilot.press("4")
        await wait_for(pilot, lambda: not app.overview_shown and app.current_panel_id == "capacity")
        assert app.query_one("#panels").display and not app.query_one("#overview").display
        await settle(pilot, app)
        assert app.panel("capacity").selected() is not None  # drawn, the cursor on a row
        await pilot.press("o")
        await wait_for(pilot, lambda: app.overview_shown)
        await pilot.press("o")
        await wait_for(pilot, lambda: not app.overview_shown and app.current_panel_id == "capacity")


async def test_layout_from_the_command_line_and_the_settings_file(demo_home, tmp_path: Path) -> None:
    args = build_parser().parse_args(["--layout", "overview"])
    assert args.layout == "overview"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--layout", "sideways"])
    path = tmp_path / "config.toml"
    path.write_text('layout = "overview"\n', encoding="utf-8")
    app = make_app(demo_home, watch=False, now=DEMO_NOW, user_settings=True, settings_file=path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.overview_shown and app.settings.layout == "overview" and not app.settings.warnings
    # --layout wins over the file
    app = make_app(demo_home, watch=False, now=DEMO_NOW, user_settings=True, settings_file=path, layout="panels")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert not app.overview_shown
    path.write_text('layout = "wide"\n', encoding="utf-8")
    app = make_app(demo_home, watch=False, now=DEMO_NOW, user_settings=True, settings_file=path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert not app.overview_shown and any("layout 'wide'" in w for w in app.settings.warnings)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("overview", [False, True], ids=["panels", "overview"])
async def test_no_key_hint_or_tab_is_cut(demo_home, size, overview: bool) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW, layout="overview" if overview else None)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        footer = app.screen.query_one(DeckFooter)
        await wait_for(pilot, lambda: len(list(footer.query(FooterKey))) > 5)
        keys = list(footer.query(FooterKey))
        shown = [(k.key_display, k.description) for k in keys]
        for k in keys:  # whole, inside the screen
            assert k.region.width > 0 and k.region.right <= size[0], (k.key_display, k.region)
        assert shown[:5] == [("space", "Pause"), ("?", "Help"), ("q", "Quit"), ("^p", "Palette"), ("o", "Overview")]
        if not overview:
            tabs = list(app.query(Tab))
            assert len(tabs) == len(PANELS)
            for tab in tabs:
                assert tab.region.width > 0 and tab.region.right <= size[0], (str(tab.label), tab.region)
