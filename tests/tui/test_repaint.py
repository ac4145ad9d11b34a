"""A refresh repaints only what changed (issue 8: CPU beside a live Hermes).

Setting a tab label or updating a Static lays out the whole screen again; on a live home that
happened on every appended message. These tests pin what a refresh may touch.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import TabbedContent

from memdeck.core.demo import DEMO_NOW
from memdeck.core.sessions import hermes_schema
from memdeck.tui.app import make_app
from memdeck.tui.keymap import PANEL_IDS, PANELS
from memdeck.tui.widgets.readout import Readout
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


async def test_a_refresh_with_the_same_badge_counts_sets_no_tab_label(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        tabs = app.query_one("#panels", TabbedContent)
        before = {pid: tabs.get_tab(pid).label for pid in PANEL_IDS}
        titles = {pid: f"{i} {title}" for i, (pid, title) in enumerate(PANELS, 1)}
        assert any(str(before[pid]) != titles[pid] for pid in PANEL_IDS)  # some badge is shown
        conn = hermes_schema.connect(demo_home.state_db)  # Hermes appends a message: counts unchanged
        try:
            hermes_schema.append_message(conn, app.snapshot.live_session.id, "user", "one more turn")
        finally:
            conn.close()
        n = app.refresh_count
        app.request_refresh()
        await wait_for(pilot, lambda: app.refresh_count > n)
        await settle(pilot, app)
        after = {pid: tabs.get_tab(pid).label for pid in PANEL_IDS}
        assert all(after[pid] is before[pid] for pid in PANEL_IDS)


class _OneReadout(App):
    def compose(self) -> ComposeResult:
        yield Readout(id="r")
        yield Readout(id="bar", fits_width=True)


def _count_layouts(widget, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    seen: list[bool] = []
    real = widget.refresh

    def refresh(*regions, **kw):
        seen.append(bool(kw.get("layout")))
        return real(*regions, **kw)

    monkeypatch.setattr(widget, "refresh", refresh)
    return seen


async def test_a_readout_repaints_only_a_change_and_lays_out_only_a_new_height(monkeypatch) -> None:
    app = _OneReadout()
    async with app.run_test(size=(40, 10)) as pilot:
        r = app.query_one("#r", Readout)
        assert r.show(Text("one line", style="bold"))
        await pilot.pause()
        layouts = _count_layouts(r, monkeypatch)
        assert not r.show(Text("one line", style="bold"))  # equal text and style: nothing at all
        assert layouts == []
        assert r.show(Text("one line", style="italic"))  # a new style repaints, same height
        assert r.show(Text("two words"))
        assert layouts == [False, False]
        assert r.show(Text("x " * 30))  # wraps to two lines at 40 columns: a layout pass
        assert layouts[-1] is True
        await pilot.pause()
        assert r.size.height == 2


async def test_a_bar_drawn_to_the_width_lays_out_only_when_its_lines_change(monkeypatch) -> None:
    app = _OneReadout()
    async with app.run_test(size=(40, 10)) as pilot:
        bar = app.query_one("#bar", Readout)
        bar.show(Text("MEMORY.md 10%"))
        await pilot.pause()
        layouts = _count_layouts(bar, monkeypatch)
        bar.show(Text("MEMORY.md 11%"))
        bar.show(Text("MEMORY.md 999%\n  ⚠ far over its char limit"))
        assert layouts == [False, True]
        await pilot.pause()
        assert bar.size.height == 2


async def test_refreshes_share_one_memdeck_db_connection(demo_home, monkeypatch) -> None:
    from memdeck.core.deck import db as deckdb

    opens: list[str] = []
    real = deckdb.connect

    def connect(home, **kw):
        opens.append(str(home))
        return real(home, **kw)

    monkeypatch.setattr(deckdb, "connect", connect)
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        memory = demo_home.memory_file("memory")
        for i in range(3):  # another writer changes MEMORY.md: each refresh observes and records it
            tmp = memory.with_name(f".mem_{i:08x}.tmp")
            tmp.write_text(memory.read_text(encoding="utf-8") + f"\n§\nnew fact {i}", encoding="utf-8")
            tmp.replace(memory)
            n = app.refresh_count
            app.request_refresh()
            await wait_for(pilot, lambda: app.refresh_count > n)
            await settle(pilot, app)
        assert len(app.snapshot.history) >= 3 and app.snapshot.history[0].op == "added"
    assert len(opens) == 1


# ── issue 38 #2: what one refresh costs, counted in layout passes and widget refreshes ──


def _count_refreshes(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Count the screen's layout passes and every widget refresh (by widget id) from now on."""
    from textual.screen import Screen
    from textual.widget import Widget

    seen: dict[str, Any] = {"layout_passes": 0, "refreshes": Counter(), "layout_refreshes": Counter()}
    real_layout, real_refresh = Screen._refresh_layout, Widget.refresh

    def refresh_layout(self, *args, **kwargs):
        seen["layout_passes"] += 1
        return real_layout(self, *args, **kwargs)

    def refresh(self, *regions, **kwargs):
        name = self.id or type(self).__name__
        seen["refreshes"][name] += 1
        if kwargs.get("layout"):
            seen["layout_refreshes"][name] += 1
        return real_refresh(self, *regions, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", refresh_layout)
    monkeypatch.setattr(Widget, "refresh", refresh)
    return seen


async def _refresh_once(pilot, app) -> None:
    n = app.refresh_count
    app.request_refresh()
    await wait_for(pilot, lambda: app.refresh_count > n)
    await settle(pilot, app)
    for _ in range(3):  # let every refresh asked for be drawn
        await pilot.pause()


async def test_an_appended_message_repaints_the_status_line_only(demo_home, monkeypatch) -> None:
    """Only the message count changed: no layout pass, the Capacity table and its detail are not
    drawn again, nothing but the status line's clock is repainted."""
    clock = [DEMO_NOW]
    app = make_app(demo_home, watch=False, clock=lambda: clock[0])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_panel_id == "capacity")
        await settle(pilot, app)
        table = app.query_one("#capacity-table")
        drawn = []
        real_render_line = type(table).render_line
        monkeypatch.setattr(type(table), "render_line", lambda self, y: (drawn.append(y), real_render_line(self, y))[1])
        seen = _count_refreshes(monkeypatch)
        conn = hermes_schema.connect(demo_home.state_db)
        try:
            hermes_schema.append_message(conn, app.snapshot.live_session.id, "user", "one more turn")
        finally:
            conn.close()
        clock[0] += 1
        await _refresh_once(pilot, app)
        assert seen["layout_passes"] == 0, seen
        assert set(seen["refreshes"]) <= {"statusline"}, seen["refreshes"]
        assert not drawn  # the Capacity table drew no line


async def test_a_new_badge_count_of_the_same_width_takes_no_layout_pass(demo_home, monkeypatch) -> None:
    """A pending write is staged while Integrity shows: the Review tab's badge goes from 4 to 5
    (as wide as before): the label is drawn in place, no layout pass of the screen (Tab.label
    laid out everything, ~20 ms on a 120x40 screen)."""
    from memdeck.core.demo.changes import pending_record

    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        tabs = app.query_one("#panels", TabbedContent)
        before = app._badges_shown["review"]
        assert before < 9
        seen = _count_refreshes(monkeypatch)
        rec = pending_record("be000001", "add", "memory", "the build cache lives on the NAS", None,
                             "background_review", DEMO_NOW - 60)
        (demo_home.pending_dir / "be000001.json").write_text(json.dumps(rec), encoding="utf-8")
        await _refresh_once(pilot, app)
        assert app._badges_shown["review"] == before + 1
        assert str(tabs.get_tab("review").label).endswith(f" {before + 1}")
        assert seen["layout_passes"] == 0 and not seen["layout_refreshes"], seen
        assert seen["refreshes"]["--content-tab-review"] == 1


async def test_an_external_memory_write_that_shortens_the_widest_entry_takes_no_layout_pass(demo_home, monkeypatch) -> None:
    """Capacity shows; another writer replaces the widest entry of MEMORY.md with shorter and
    longer texts (as Hermes' memory tool does), each no wider than the widest it replaced: the
    entry column keeps its width and the prompt block in the detail keeps its height, so no
    write lays out the screen (two layout passes per write before: the column's width and the
    detail's wrapped height); the new sizes are on screen."""
    clock = [DEMO_NOW]
    memory = demo_home.memory_file("memory")
    base = memory.read_text(encoding="utf-8")
    marker = "Deploy note: the rollout of the kubernetes staging cluster waits for the grafana alert rules review "

    def write(text: str) -> None:
        tmp = memory.with_name(".mem_steady.tmp")
        tmp.write_text(base + "\n§\n" + text, encoding="utf-8")
        tmp.replace(memory)

    write(marker + "x" * 90)  # the widest entry of the home, before the dashboard starts
    app = make_app(demo_home, watch=False, clock=lambda: clock[0])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_panel_id == "capacity")
        await settle(pilot, app)
        table = app.query_one("#capacity-table")
        seen = _count_refreshes(monkeypatch)
        passes = []
        for n in (1, 60, 25, 89, 40, 7):
            before = seen["layout_passes"]
            write(marker + "x" * n)
            clock[0] += 1
            await _refresh_once(pilot, app)
            passes.append(seen["layout_passes"] - before)
            shown = [str(c) for c in table.get_row(str(table.row_count - 1 - _user_rows(app)))]
            assert shown[3] == f"{len(marker) + n:,}", shown
        assert passes == [0] * 6, passes


def _user_rows(app) -> int:
    return len(app.snapshot.memory["user"].entries)


async def test_a_memory_changed_toast_comes_after_the_frame_that_shows_the_new_figures(demo_home, monkeypatch) -> None:
    """Another writer replaces an entry: the refresh that shows it mounts no toast (a toast is a
    new widget, a layout pass of the whole screen that the new figures waited for: issue 38 #2);
    the "memory changed" toast comes once that frame is drawn."""
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        memory = demo_home.memory_file("memory")
        text = memory.read_text(encoding="utf-8")
        first = text.split("\n§\n")[0]
        tmp = memory.with_name(".mem_toast.tmp")
        tmp.write_text(text.replace(first, first + " (edited by Hermes)", 1), encoding="utf-8")
        tmp.replace(memory)
        at_apply: list[int] = []
        real = app.apply_snapshot

        def apply(snap):
            real(snap)
            at_apply.append(len(app.notification_log))

        monkeypatch.setattr(app, "apply_snapshot", apply)
        before = len(app.notification_log)
        await _refresh_once(pilot, app)
        assert at_apply == [before]  # nothing toasted while the new figures are put on screen
        await wait_for(pilot, lambda: len(app.notification_log) > before)
        assert any(n.title == "memory changed" for n in app.notification_log)
