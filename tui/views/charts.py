"""The charts' data: what the Integrity and Capacity charts draw, as plain values.

Pure functions (no Textual): a panel turns its snapshot into a :class:`ChartSpec` (the series,
the rules such as the alert floor or the char limit, the y scale, the words shown when there
is nothing to draw); :class:`memdeck.tui.widgets.chart.DeckChart` fits it to its width
(:func:`envelope`, :func:`time_ticks`) and hands it to plotext. Colours are ANSI names, which
Textual maps through the theme's ANSI palette (memdeck's light palette on the light theme).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memdeck.core.history.usage import UsageSeries
    from memdeck.core.overview.snapshot import DeckSnapshot


@dataclass(frozen=True)
class Line:
    """One series: ``points`` are ``(epoch s, value)``, oldest first, as the data has them (the
    widget thins them to its width). ``step``: a value holds until the next point (usage), else
    the points are joined (the score at each compaction). The parts of the line under ``below``
    (the alert floor) or over ``above`` (the char limit) are drawn in ``alarm_color``
    (:func:`beyond`)."""

    name: str
    points: tuple[tuple[float, float], ...]
    color: str
    step: bool = False
    below: float | None = None
    above: float | None = None
    alarm_color: str = "red"


@dataclass(frozen=True)
class Rule:
    """A horizontal line across the chart at ``y`` (the alert floor, a char limit)."""

    y: float
    color: str
    label: str


@dataclass(frozen=True)
class ChartSpec:
    """What one chart draws. ``empty``: the words shown instead when no line has a point."""

    title: str
    lines: tuple[Line, ...] = ()
    rules: tuple[Rule, ...] = ()
    y_min: float = 0.0
    y_max: float = 100.0
    y_ticks: tuple[float, ...] = ()
    y_labels: tuple[str, ...] = ()
    empty: str = ""

    @property
    def has_data(self) -> bool:
        return any(line.points for line in self.lines)


def envelope(points: Sequence[tuple[float, float]], buckets: int) -> list[tuple[float, float]]:
    """``points`` thinned to at most ``2 * buckets + 2``: the time range is cut into ``buckets``
    equal slices, and each slice keeps its lowest and its highest point, in time order (so a
    drop below the floor is never averaged away), plus the first and the last point.

    Args:
        points: ``(epoch s, value)`` oldest first. buckets: >= 1, about the chart's columns.
    """
    pts = list(points)
    if len(pts) <= 2 * buckets + 2:
        return pts
    t0, t1 = pts[0][0], pts[-1][0]
    span = (t1 - t0) or 1.0
    out: list[tuple[float, float]] = [pts[0]]
    slices: dict[int, list[tuple[float, float]]] = {}
    for p in pts[1:-1]:
        slices.setdefault(min(buckets - 1, int((p[0] - t0) / span * buckets)), []).append(p)
    for k in sorted(slices):
        group = slices[k]
        lo = min(group, key=lambda p: p[1])
        hi = max(group, key=lambda p: p[1])
        out.extend(sorted({lo, hi}, key=lambda p: p[0]))
    out.append(pts[-1])
    return out


def steps(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """A step line: each value holds until the next point's time, then the line rises or falls."""
    out: list[tuple[float, float]] = []
    for i, p in enumerate(points):
        if i:
            out.append((p[0], points[i - 1][1]))
        out.append(p)
    return out


def beyond(points: Sequence[tuple[float, float]], y: float, *, below: bool,
           inclusive: bool = False) -> list[list[tuple[float, float]]]:
    """The runs of the polyline through ``points`` that lie under ``y`` (``below``) or over it
    (on it too with ``inclusive``), each cut where the line crosses ``y`` (the crossing
    interpolated), oldest first: what is drawn red under the alert floor or over the char limit,
    and (the other side, inclusive) what is drawn in the line's colour."""
    def out(v: float) -> bool:
        if inclusive:
            return v <= y if below else v >= y
        return v < y if below else v > y

    runs: list[list[tuple[float, float]]] = []
    cur: list[tuple[float, float]] = []
    for i, p in enumerate(points):
        if i:
            q = points[i - 1]
            if out(q[1]) != out(p[1]) and p[1] != q[1]:
                cross = (q[0] + (p[0] - q[0]) * (y - q[1]) / (p[1] - q[1]), y)
                if out(q[1]):
                    cur.append(cross)
                    runs.append(cur)
                    cur = []
                else:
                    cur = [cross]
        if out(p[1]):
            cur.append(p)
    if cur:
        runs.append(cur)
    return runs


def dots(runs: Sequence[Sequence[tuple[float, float]]], dx: float, dy: float) -> list[tuple[float, float]]:
    """The polylines ``runs`` as points ``dx`` apart in time and ``dy`` apart in value at most
    (one braille dot each way), in one list: plotext draws one series of thousands of dots in the
    time it takes to draw three separate lines, and a long session has a hundred runs under the
    floor. A run of one point stays one point."""
    import math

    out: list[tuple[float, float]] = []
    for run in runs:
        if len(run) == 1:
            out.append(run[0])
        for a, b in itertools.pairwise(run):
            k = max(1, math.ceil(max(abs(b[0] - a[0]) / (dx or 1.0), abs(b[1] - a[1]) / (dy or 1.0))))
            out.extend((a[0] + (b[0] - a[0]) * i / k, a[1] + (b[1] - a[1]) * i / k) for i in range(k + 1))
    return out


def time_ticks(t0: float, t1: float, columns: int) -> tuple[list[float], list[str]]:
    """Tick positions from ``t0`` to ``t1`` (epoch s) for a time axis ``columns`` wide, and their
    local-time labels: ``14:05`` within a day and a half, ``24 Jul 14:05`` within ten days,
    ``23 Jul`` within four months (at most one tick a day), ``Jul 2026`` beyond (one a month).
    As many ticks as fit with room between the labels (2 to 6), never two alike: labels that
    touch are moved by plotext, and not always the same way."""
    span = max(0.0, t1 - t0)
    most = 6
    if span <= 36 * 3600:
        fmt = "%H:%M"
    elif span <= 10 * 86400:
        fmt = "%d %b %H:%M"
    elif span <= 120 * 86400:
        fmt, most = "%d %b", min(6, int(span // 86400) + 1)
    else:
        fmt, most = "%b %Y", min(6, int(span // (30 * 86400)) + 1)
    width = len(time.strftime(fmt, time.localtime(t0)))
    n = max(2, min(most, columns // (width + 6)))
    pos = [t0 + span * i / (n - 1) for i in range(n)]
    return pos, [time.strftime(fmt, time.localtime(p)) for p in pos]


def _ticks(*values: float) -> tuple[tuple[float, ...], tuple[str, ...]]:
    vals = sorted(set(values))
    return tuple(vals), tuple(f"{v:,.0f}" for v in vals)


def integrity_chart(snap: DeckSnapshot) -> ChartSpec:
    """The shown session's integrity score (0-100) at each audit point (state.db compactions
    merged with MemLock's drift log, :attr:`DeckSnapshot.integrity_history`), the alert floor as
    a red rule, the line red where it is under the floor."""
    floor = float(snap.config.memlock.alert_floor)
    history = [(float(t), float(max(0, min(100, s)))) for t, s in snap.integrity_history]
    if snap.partial:
        empty = "reading state.db and the anchors…"
    elif not snap.session_id:
        empty = "no session: no live session and no MemLock session file"
    else:
        empty = "no compactions yet: the score is drawn after the first compaction's audit"
    y_ticks, y_labels = _ticks(0, floor, 100)
    return ChartSpec(
        title=f"integrity score at each compaction (0-100) · alert floor {floor:g}",
        lines=(Line("score", tuple(history), "cyan", below=floor),),
        rules=(Rule(floor, "red", f"floor {floor:g}"),),
        y_min=0.0, y_max=100.0, y_ticks=y_ticks, y_labels=y_labels, empty=empty,
    )


#: Each memory file's colour in the usage charts.
USAGE_COLORS = {"memory": "cyan", "user": "cyan"}


def usage_chart(snap: DeckSnapshot, target: str) -> ChartSpec:
    """``target``'s usage in chars after each recorded change
    (:attr:`DeckSnapshot.usage_history`, ``core/history/usage.py``) as a step line, against
    today's char limit (a red rule; the line red over it). The y scale reaches the limit or
    the highest usage, and starts a round step below the lowest (0 when that is under a
    quarter of the limit)."""
    from memdeck.core.home import TARGET_FILES

    series: UsageSeries | None = snap.usage_history.get(target)
    state = snap.memory.get(target)
    limit = float(state.limit if state is not None else snap.config.char_limit(target))
    pts = tuple((p.time, float(p.chars)) for p in (series.points if series is not None else ()))
    top = max([limit, *(v for _t, v in pts)])
    low = min([limit, *(v for _t, v in pts)])
    # the scale starts a round step below the lowest usage (0 when that is small): a change of
    # 100 chars in 2,000 is visible, and the limit is always on the chart
    step = _round_step((top - low) / 4 or limit / 4 or 1.0)
    y_min = max(0.0, (low - (top - low) * 0.25) // step * step)
    if y_min < limit / 4:
        y_min = 0.0
    name = TARGET_FILES[target]
    cut = "" if series is None or series.complete else " · recent changes only"
    if snap.partial:
        empty = "reading the change history…"
    elif series is None:
        empty = "no change history"
    else:
        empty = series.note or f"no change of {name} recorded yet"
    y_ticks, y_labels = _ticks(y_min, round((y_min + limit) / 2 / step) * step, limit,
                               *([top] if top > limit * 1.1 else []))
    return ChartSpec(
        title=f"{name} chars · limit {limit:,.0f}{cut}",
        lines=(Line(name, pts, USAGE_COLORS.get(target, "cyan"), step=True, above=limit),),
        rules=(Rule(limit, "red", f"limit {limit:,.0f}"),),
        y_min=y_min, y_max=top + (top - y_min) * 0.05, y_ticks=y_ticks, y_labels=y_labels, empty=empty,
    )


def _round_step(x: float) -> float:
    """The round number (1, 2 or 5 times a power of ten) nearest above ``x`` > 0."""
    import math

    p = 10 ** math.floor(math.log10(x))
    return next(m * p for m in (1, 2, 5, 10) if m * p >= x)


def usage_charts(snap: DeckSnapshot) -> Mapping[str, ChartSpec]:
    """:func:`usage_chart` of MEMORY.md and USER.md, by target."""
    from memdeck.core.home import TARGETS

    return {t: usage_chart(snap, t) for t in TARGETS}
