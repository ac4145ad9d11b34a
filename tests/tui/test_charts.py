"""The charts (issue 26): the integrity score over compactions (a time axis, the alert floor) in
Integrity, each memory file's usage over time in Capacity. Asserted on the series handed to
plotext (``DeckChart.plotted``), on when the chart is drawn (``DeckChart.draws``), and on what
the screen shows when there is nothing to draw."""

from __future__ import annotations

import dataclasses
import random

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.core.history.usage import UsagePoint, UsageSeries
from memdeck.tui.app import make_app
from memdeck.tui.palette import LIGHT_ANSI
from memdeck.tui.views.charts import beyond, envelope, steps, time_ticks
from memdeck.tui.widgets.chart import Y_AXIS_COLUMNS, DeckChart
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _chart(app, cid: str) -> DeckChart:
    return app.query_one(f"#{cid}", DeckChart)


def _long_session(snap, n: int = 1237, seed: int = 26) -> tuple[tuple[float, int], ...]:
    """``n`` audit points ten minutes apart ending at the snapshot's time: scores mostly 60-100,
    with three short drops (one to 3) that a thinned chart must still show."""
    rnd = random.Random(seed)
    t0 = snap.taken_at - n * 600
    scores = [rnd.randint(60, 100) for _ in range(n)]
    for i, low in ((400, 12), (700, 3), (977, 25)):
        if i < n:
            scores[i] = low
    return tuple((t0 + i * 600, s) for i, s in enumerate(scores))


async def test_the_integrity_chart_plots_the_score_of_each_compaction_against_the_floor(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        snap = app.snapshot
        chart = _chart(app, "integrity-chart")
        assert len(snap.integrity_history) == 2  # the demo's live session was compacted twice
        await wait_for(pilot, lambda: chart.plotted, describe=lambda: chart.spec)
        (name, points), = chart.plotted
        assert name == "score" and points == tuple((t, float(s)) for t, s in snap.integrity_history)
        floor = snap.config.memlock.alert_floor
        assert [r.y for r in chart.spec.rules] == [floor] and floor in chart.spec.y_ticks
        assert chart.spec.lines[0].below == floor
        assert all(v < floor for _t, v in points) and chart.alarms == (("score", points),)  # all under: all red
        assert (chart.spec.y_min, chart.spec.y_max) == (0.0, 100.0)
        shown = app.export_screenshot()
        assert "alert" in shown and "floor" in shown


async def test_a_1237_compaction_session_is_thinned_to_the_width_keeping_every_drop(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot, app)
        history = _long_session(app.snapshot)
        app.apply_snapshot(dataclasses.replace(app.snapshot, integrity_history=history))
        chart = _chart(app, "integrity-chart")
        await wait_for(pilot, lambda: chart.plotted and len(chart.plotted[0][1]) != 2)
        (_name, points), = chart.plotted
        columns = chart.size.width - Y_AXIS_COLUMNS
        assert len(points) <= 2 * columns + 2 < len(history)
        assert points[0] == (history[0][0], float(history[0][1]))  # the whole time range
        assert points[-1] == (history[-1][0], float(history[-1][1]))
        for t, s in (history[400], history[700], history[977]):  # the drops below the floor
            assert (t, float(s)) in points
        assert min(v for _t, v in points) == 3.0
        assert [t for t, _v in points] == sorted(t for t, _v in points)
        # what is drawn is the data's envelope, not made up: every point is a real audit point
        real = {(t, float(s)) for t, s in history}
        assert set(points) <= real
        red = {p for _name, run in chart.alarms for p in run}
        for t, s in (history[400], history[700], history[977]):  # each drop is drawn red
            assert (t, float(s)) in red
        assert all(v <= app.snapshot.config.memlock.alert_floor for p in red for v in (p[1],))


async def test_the_chart_is_drawn_again_only_when_its_data_changed(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        chart = _chart(app, "integrity-chart")
        await wait_for(pilot, lambda: chart.plotted)
        drawn = chart.draws
        app.apply_snapshot(dataclasses.replace(app.snapshot, taken_at=app.snapshot.taken_at + 5))  # same data
        app.panel("integrity").retime(app.snapshot)  # the once-a-minute redraw of "12 min ago"
        await settle(pilot, app)
        assert chart.draws == drawn
        history = _long_session(app.snapshot, n=50)
        app.apply_snapshot(dataclasses.replace(app.snapshot, integrity_history=history))
        await wait_for(pilot, lambda: chart.draws > drawn)
        assert len(chart.plotted[0][1]) == 50


async def test_a_hidden_chart_is_neither_fed_nor_drawn(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        chart = _chart(app, "integrity-chart")
        await wait_for(pilot, lambda: chart.plotted)
        await pilot.press("4")
        await settle(pilot, app)
        drawn, spec = chart.draws, chart.spec
        history = _long_session(app.snapshot, n=300)
        app.apply_snapshot(dataclasses.replace(app.snapshot, integrity_history=history))
        await settle(pilot, app)
        assert chart.draws == drawn and chart.spec == spec  # Integrity is hidden
        await pilot.press("1")
        newest = (history[-1][0], float(history[-1][1]))
        await wait_for(pilot, lambda: chart.draws > drawn and chart.plotted[0][1][-1] == newest)


async def test_no_compactions_is_said_in_words_never_a_traceback(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        chart = _chart(app, "integrity-chart")
        app.apply_snapshot(dataclasses.replace(app.snapshot, integrity_history=(), audit=None))
        await wait_for(pilot, lambda: not chart.plotted and chart.spec is not None and not chart.spec.has_data)
        await pilot.pause()
        assert "no compactions yet" in app.export_screenshot().replace("&#160;", " ")
        app.apply_snapshot(dataclasses.replace(app.snapshot, integrity_history=((app.snapshot.taken_at, 40),)))
        await wait_for(pilot, lambda: chart.plotted == (("score", ((app.snapshot.taken_at, 40.0),)),))
        assert not [n for n in app.notification_log if n.severity == "error"]
        await pilot.resize_terminal(30, 12)  # too small to draw: words again
        await settle(pilot, app)
        assert "Traceback" not in app.export_screenshot()


async def test_the_chart_follows_the_theme(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        chart = _chart(app, "integrity-chart")
        await wait_for(pilot, lambda: chart.plotted)
        drawn, built = chart.draws, chart.builds
        light_red = "#{:02x}{:02x}{:02x}".format(*LIGHT_ANSI.ansi_colors[1])
        assert light_red not in app.export_screenshot().lower()
        await pilot.press("t")
        await wait_for(pilot, lambda: chart.draws > drawn)
        await pilot.pause()
        assert app.theme == "textual-light"
        assert light_red in app.export_screenshot().lower()  # the floor and the score under it, in the light palette's red
        assert chart.builds == built  # painted again in the new theme; plotext did not run


async def test_the_usage_charts_plot_each_file_s_recorded_usage(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await settle(pilot, app)
        snap = app.snapshot
        for target, name in (("memory", "MEMORY.md"), ("user", "USER.md")):
            chart = _chart(app, f"usage-chart-{target}")
            series = snap.usage_history[target]
            assert series.complete and len(series.points) >= 3  # the demo's history: several writers
            await wait_for(pilot, lambda: chart.plotted)
            (got_name, points), = chart.plotted
            assert got_name == name
            want = steps([(p.time, float(p.chars)) for p in series.points])
            assert list(points[:len(want)]) == want  # a step line through every recorded usage
            assert points[-1][1] == float(snap.memory[target].chars)  # ends at today's usage
            limit = snap.memory[target].limit
            assert [r.y for r in chart.spec.rules] == [limit] and chart.spec.y_max >= limit


async def test_g_hides_and_shows_the_usage_charts_and_hidden_they_cost_nothing(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(100, 32)) as pilot:  # under 36 rows: hidden until g
        await settle(pilot, app)
        await pilot.press("4")
        await settle(pilot, app)
        box = app.query_one("#usage-charts")
        chart = _chart(app, "usage-chart-memory")
        assert not box.display and chart.spec is None and chart.draws == 0
        grown = dataclasses.replace(app.snapshot, usage_history={
            **app.snapshot.usage_history,
            "memory": UsageSeries("memory", (*app.snapshot.usage_history["memory"].points,
                                             UsagePoint(app.snapshot.taken_at + 60, 2100, 22, 99))),
        })
        app.apply_snapshot(grown)
        await settle(pilot, app)
        assert chart.spec is None and chart.draws == 0
        await pilot.press("g")
        await wait_for(pilot, lambda: box.display and chart.plotted)
        assert chart.plotted[0][1][-1][1] == 2100.0  # the newest data, given when shown
        await pilot.press("g")
        await wait_for(pilot, lambda: not box.display)
        drawn = chart.draws
        app.apply_snapshot(dataclasses.replace(grown, taken_at=grown.taken_at + 1, usage_history={}))
        await settle(pilot, app)
        assert chart.draws == drawn and chart.plotted[0][1][-1][1] == 2100.0


async def test_no_history_in_capacity_is_said_in_words(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await settle(pilot, app)
        empty = UsageSeries("memory", (), True, "no change history yet (memdeck.db does not exist)")
        app.apply_snapshot(dataclasses.replace(app.snapshot, usage_history={"memory": empty}))
        chart = _chart(app, "usage-chart-memory")
        await wait_for(pilot, lambda: not chart.plotted and chart.spec is not None and not chart.spec.has_data)
        await pilot.pause()
        shown = app.export_screenshot().replace("&#160;", " ")
        assert "memdeck.db does not exist" in shown and "no change history" in shown


def test_envelope_keeps_each_slice_s_lowest_and_highest_in_time_order() -> None:
    pts = [(float(i), float(v)) for i, v in enumerate([50, 60, 5, 70, 80, 90, 10, 95, 40, 41, 42, 43])]
    got = envelope(pts, 2)
    assert got[0] == pts[0] and got[-1] == pts[-1] and len(got) <= 6
    assert (2.0, 5.0) in got and (6.0, 10.0) in got and (7.0, 95.0) in got
    assert [t for t, _ in got] == sorted(t for t, _ in got)
    assert envelope(pts[:3], 10) == pts[:3]


def test_time_ticks_read_as_clock_times_days_or_months() -> None:
    import time

    t0 = time.mktime((2026, 7, 23, 9, 0, 0, 0, 0, -1))
    assert time_ticks(t0, t0 + 6 * 3600, 33)[1] == ["09:00", "12:00", "15:00"]
    assert time_ticks(t0, t0 + 3 * 86400, 72)[1] == ["23 Jul 09:00", "24 Jul 09:00", "25 Jul 09:00", "26 Jul 09:00"]
    assert time_ticks(t0, t0 + 20 * 86400, 24)[1] == ["23 Jul", "12 Aug"]
    assert time_ticks(t0, t0 + 3.5 * 86400 * 10, 200)[1] == ["23 Jul", "30 Jul", "06 Aug", "13 Aug", "20 Aug", "27 Aug"]
    assert time_ticks(t0, t0 + 400 * 86400, 10)[1] == ["Jul 2026", "Aug 2027"]
    for span in (600, 2 * 86400 + 3600, 3 * 86400, 50 * 86400):
        for columns in (12, 40, 72, 150):
            labels = time_ticks(t0, t0 + span, columns)[1]
            assert len(set(labels)) == len(labels)  # never two ticks alike
            assert len(labels) * (len(labels[0]) + 6) <= max(columns, 2 * (len(labels[0]) + 6))  # room between them


def test_beyond_cuts_the_line_where_it_crosses_the_floor() -> None:
    pts = [(0.0, 80.0), (10.0, 60.0), (20.0, 60.0), (30.0, 90.0), (40.0, 50.0)]
    assert beyond(pts, 70.0, below=True) == [[(5.0, 70.0), (10.0, 60.0), (20.0, 60.0), (20.0 + 10 / 3, 70.0)],
                                             [(35.0, 70.0), (40.0, 50.0)]]
    assert beyond(pts, 85.0, below=False) == [[(20.0 + 10 * 25 / 30, 85.0), (30.0, 90.0), (31.25, 85.0)]]
    assert beyond([(0.0, 90.0), (1.0, 95.0)], 70.0, below=True) == []
