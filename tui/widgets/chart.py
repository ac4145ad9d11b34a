"""A time chart drawn by plotext through textual-plotext (Textualize's widget for Textual).

:class:`DeckChart` draws one :class:`memdeck.tui.views.charts.ChartSpec`: its lines on a real time
axis (local-time ticks), its rules (the alert floor, a char limit), its y ticks. It is drawn again
only when it is given a different spec, is resized, or the theme changes (``t``: the chart built
last is painted again in the new theme, plotext does not run); hidden (another panel, the chart
toggled off) it is never drawn: Textual renders only what is on screen. A line
of thousands of points is thinned to the chart's width first (:func:`views.charts.envelope`: each
column keeps its lowest and highest point), so a 1,237-compaction session draws as fast as a
short one and a drop below the floor stays visible.

The plotext theme is ``clear``: no colours of its own, so the chart takes the panel's background
and text colour from the Textual theme, and its ANSI-named line colours go through the theme's
ANSI palette (memdeck's light palette on the light theme, :mod:`memdeck.tui.palette`).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual_plotext import PlotextPlot

from ..views.charts import ChartSpec, beyond, dots, envelope, steps, time_ticks

#: Columns the y tick labels and the frame take from the plot's width (the rest is the time axis).
Y_AXIS_COLUMNS = 8
#: The fewest rows a chart is drawn in (title, frame, three rows of data, the time axis); fewer: words.
MIN_ROWS = 7
#: Rows around the plot area: the title, the frame's two lines, the time axis.
PLOT_CHROME_ROWS = 4


class DeckChart(PlotextPlot):
    """One chart. :meth:`show` gives it a spec; :attr:`plotted` is what the last draw handed
    plotext, line by line (``(name, ((epoch s, value), ...))``, thinned and stepped): the values
    the tests assert on."""

    DEFAULT_CSS = """
    DeckChart {
        width: 1fr;
        height: 1fr;
        min-height: 6;
    }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.theme = "clear"  # no colours of plotext's own: the Textual theme's (see the module doc)
        self._spec: ChartSpec | None = None
        #: (line index, columns) -> the line thinned to that width, for this spec (a theme change
        #: or a resize back to a width seen draws without thinning 100,000 points again)
        self._thinned: dict[tuple[int, int], list[tuple[float, float]]] = {}
        #: the last chart built, for its size: drawn again as it is after a theme change (its
        #: colours are ANSI names, which Textual maps through the new theme when it paints)
        self._built: tuple[tuple[int, int], Text] | None = None
        #: what the last draw gave plotext, per line: ``(name, points)``; ``()`` when it drew words
        self.plotted: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()
        #: the runs drawn in the alarm colour (under the floor, over the limit): ``(name, points)``
        self.alarms: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()
        #: the points drawn as markers (a line's real measurements, ``Line.marks``): ``(name, points)``
        self.marked: tuple[tuple[str, tuple[tuple[float, float], ...]], ...] = ()
        #: how many times Textual asked for the chart (a repaint: new data, a resize, a theme change)
        self.draws = 0
        #: how many times plotext built it (new data or a new size; a theme change reuses the last)
        self.builds = 0

    def on_mount(self) -> None:
        # textual-plotext redraws on a theme change only for its "auto" theme; the ANSI colours of
        # "clear" are mapped through the new theme's palette when the chart is drawn again
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh())

    @property
    def spec(self) -> ChartSpec | None:
        return self._spec

    def show(self, spec: ChartSpec) -> bool:
        """Draw ``spec`` (at the next repaint, and only while the chart is on screen); nothing
        happens when it equals the spec shown. Returns whether it changed."""
        if spec == self._spec:
            return False
        self._spec = spec
        self._thinned.clear()
        self._built = None
        self.refresh()
        return True

    def render(self) -> Any:
        """The chart for the current size: plotext's text, or the spec's words when there is no
        point to draw (never an exception: a chart that cannot be drawn says so)."""
        self.draws += 1
        spec = self._spec
        width, height = self.size.width, self.size.height
        if spec is None or not spec.has_data or width < Y_AXIS_COLUMNS + 12 or height < MIN_ROWS:
            self.plotted = self.alarms = self.marked = ()
        if spec is None:
            return Text("")
        if not spec.has_data:
            return Text.assemble((spec.title + "\n", "dim"), (spec.empty, "dim italic"))
        if width < Y_AXIS_COLUMNS + 12 or height < MIN_ROWS:
            return Text(f"{spec.title}: a taller or wider terminal shows the chart", style="dim")
        if self._built is not None and self._built[0] == (width, height):
            return self._built[1]
        try:
            text = self._draw(spec, width, height)
        except Exception as exc:  # noqa: BLE001 - plotext on odd data: words, never a traceback
            self.plotted = self.alarms = self.marked = ()
            return Text(f"{spec.title}: the chart could not be drawn ({type(exc).__name__}: {exc})", style="dim")
        self._built = ((width, height), text)
        return text

    def _draw(self, spec: ChartSpec, width: int, height: int) -> Text:
        self.builds += 1
        plt = self.plt
        plt.clear_figure()
        plt.theme("clear")
        plt.plotsize(width, height)
        plt._set_size(width, height)  # textual-plotext does the same (its issue #5)
        columns = max(2, width - Y_AXIS_COLUMNS)
        times = [t for line in spec.lines for t, _v in line.points]
        x0, x1 = min(times), max(times)
        if x1 - x0 < 60:  # one point in time: an hour around it
            x0, x1 = x0 - 1800, x1 + 1800
        for rule in spec.rules:  # under the data
            plt.hline(rule.y, rule.color)
        plotted: list[tuple[str, tuple[tuple[float, float], ...]]] = []
        alarms: list[tuple[str, tuple[tuple[float, float], ...]]] = []
        marked: list[tuple[str, tuple[tuple[float, float], ...]]] = []
        for index, line in enumerate(spec.lines):
            if not line.points:
                continue
            key = (index, columns)
            if key not in self._thinned:
                self._thinned[key] = envelope(line.points, columns)
            real = list(self._thinned[key])
            pts = list(real)
            if line.step:
                pts = steps(pts)
                if pts[-1][0] < x1 and not line.marks:  # the last value holds to the end of the axis (a
                    # line of measurements ends at its last one: nothing is drawn past it)
                    pts.append((x1, pts[-1][1]))
            plotted.append((line.name, tuple(pts)))
            # the line in its colour, and its parts under the floor / over the limit in the alarm
            # colour: each one series of braille dots (a braille cell takes one colour, so the two
            # must not overlap; and plotext draws one series of dots faster than many lines)
            normal, alarm = [pts], []
            for y, below in ((line.below, True), (line.above, False)):
                if y is not None:
                    alarm = beyond(pts, y, below=below)
                    normal = beyond(pts, y, below=not below, inclusive=True)
            dx = (x1 - x0) / (2 * columns)
            dy = (spec.y_max - spec.y_min) / (4 * max(1, height - PLOT_CHROME_ROWS))
            for runs, color in ((normal, line.color), (alarm, line.alarm_color)):
                self._dots(dots(runs, dx, dy), color)
            alarms.extend((line.name, tuple(run)) for run in alarm)
            if line.marks:  # each measurement a marker of its own, over the line, in its colour
                for wanted in (False, True):
                    mine = [p for p in real if self._alarmed(line, p[1]) is wanted]
                    if mine:
                        self.plt.scatter([p[0] for p in mine], [p[1] for p in mine],
                                         color=line.alarm_color if wanted else line.color, marker="●")
                marked.append((line.name, tuple(real)))
        plt.ylim(spec.y_min, spec.y_max)
        if spec.y_ticks:
            plt.yticks(list(spec.y_ticks), list(spec.y_labels) or None)
        plt.xlim(x0, x1)
        pos, labels = time_ticks(x0, x1, columns)
        plt.xticks(pos, labels)
        plt.title(spec.title)
        self.plotted, self.alarms, self.marked = tuple(plotted), tuple(alarms), tuple(marked)
        return Text.from_ansi(plt.build(), no_wrap=True)

    @staticmethod
    def _alarmed(line: Any, v: float) -> bool:
        """Whether a value is in the alarm colour (under ``below`` or over ``above``)."""
        return (line.below is not None and v < line.below) or (line.above is not None and v > line.above)

    def _dots(self, pts: list[tuple[float, float]], color: str) -> None:
        """``pts`` as braille dots (a lone point: one larger dot, so it is seen)."""
        if pts:
            self.plt.scatter([p[0] for p in pts], [p[1] for p in pts], color=color,
                             marker="braille" if len(pts) > 1 else "•")
