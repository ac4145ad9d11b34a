"""The Integrity chart's draw time against the number of compactions (issue 26).

    python bench/bench_charts.py [--runs 20]

Runs the real app (``tui.app.make_app``) headless on the demo home at 160x48 and gives the
Integrity panel snapshots whose integrity history has 2 (the demo), 1,237 (the long gateway
session of issue 26), 10,000 and 100,000 audit points, ten minutes apart, scores 60-100 with a few
drops. For each, the time of one draw of the chart (``DeckChart.render``: thinning to the width,
plotext's build, the text) is measured ``--runs`` times: the first draw of new data thins the
points (``first``), the later ones (a resize back to a width seen) reuse them (p50, max); a theme
change costs none of this (the chart built last is painted again). Printed with the ratio to the
2-point chart of the same run, and the number of points handed to plotext.
Wall-clock on this machine: compare the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memdeck.core.demo import DEMO_NOW, build_demo_home  # noqa: E402

SIZES = (2, 1_237, 10_000, 100_000)


def _history(n: int, end: float) -> tuple[tuple[float, int], ...]:
    rnd = random.Random(n)
    scores = [rnd.randint(60, 100) for _ in range(n)]
    for i in range(0, n, max(1, n // 7)):
        scores[i] = rnd.randint(0, 40)
    return tuple((end - (n - i) * 600, s) for i, s in enumerate(scores))


async def measure(runs: int) -> list[tuple[int, float, float, float, int]]:
    from memdeck.tui.app import make_app
    from memdeck.tui.widgets.chart import DeckChart

    home = build_demo_home(Path(tempfile.mkdtemp()) / "demo", now=DEMO_NOW)
    app = make_app(home, watch=False, now=DEMO_NOW)
    out = []
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(200):
            await pilot.pause()
            if app.refresh_count >= 1 and not [w for w in app.workers if not w.is_finished]:
                break
        chart = app.query_one("#integrity-chart", DeckChart)
        base = app.snapshot
        for n in SIZES:
            history = base.integrity_history if n == 2 else _history(n, base.taken_at)
            app.apply_snapshot(dataclasses.replace(base, integrity_history=history, taken_at=base.taken_at + n))
            await pilot.pause()
            times = []
            for _ in range(runs):
                chart._built = None  # each draw builds (as a resize does); a theme change would not
                t = time.perf_counter()
                chart.render()
                times.append((time.perf_counter() - t) * 1000)
            out.append((n, times[0], statistics.median(times[1:]), max(times[1:]), len(chart.plotted[0][1])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    rows = asyncio.run(measure(max(2, args.runs)))
    base = rows[0][2] or 1e-9
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.runs} draws each, 160x48")
    print("| audit points | first draw (ms) | later draws p50 (ms) | max (ms) | p50 / 2-point chart | points given to plotext |")
    print("|---|---|---|---|---|---|")
    for n, first, p50, mx, plotted in rows:
        print(f"| {n:,} | {first:.1f} | {p50:.1f} | {mx:.1f} | {p50 / base:.2f} | {plotted:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
