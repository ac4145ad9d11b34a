"""Dashboard benchmarks: external write -> updated screen, first paint, idle CPU, peak RSS.

    python bench/bench_tui.py [--quick] [--out bench/results/tui.md]

Each scenario runs the real app (``tui.app.make_app``) headless (``App.run_test``) in its own
child process, so peak RSS and CPU time belong to that scenario alone:

* **write -> screen**: a second long-lived process replaces ``MEMORY.md`` the way Hermes does
  (sidecar ``flock``, temp file in the same directory, fsync, ``os.replace``) and reports the
  time right after the rename; the app records when it applies the first snapshot that
  contains the new entry (watchfiles wake-up + debounce + snapshot build + panel update).
  p50/p95 over N writes, spaced 300 ms apart.
* **first paint**: from the child's start (before Textual is imported) and from ``make_app``
  to the first snapshot applied, on the demo home and on a home with 1,000,000 extra messages
  (``--quick``: 100,000).
* **idle CPU**: process CPU time (all threads) over 60 s of idle with the watchers running
  (``--quick``: 10 s), as a percentage of one core.
* **peak RSS**: ``ru_maxrss`` of each child.

Timings are wall-clock on this machine; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T_START = time.time()
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DELIM = "\n§\n"

WRITER = r"""
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from memdeck.core.fsio import atomic_write_text, file_lock
path = Path(sys.argv[1])
for line in sys.stdin:
    text = line.rstrip("\n").replace("\\n", "\n")
    with file_lock(path):
        atomic_write_text(path, text)
    print(repr(time.time()), flush=True)
"""


# ── child scenarios ────────────────────────────────────────────────────────


def _percentile(values: list[float], pct: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * pct / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


async def _first_snapshot(pilot, app, limit_s: float = 600.0) -> None:
    deadline = time.monotonic() + limit_s
    while app.refresh_count < 1:
        if time.monotonic() > deadline:
            raise RuntimeError("no snapshot within the time limit")
        await pilot.pause(0.005)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


async def child_first_paint(home_path: str) -> dict:
    from memdeck.core.home import HermesHome
    from memdeck.tui.app import make_app

    t_app = time.time()
    app = make_app(HermesHome(Path(home_path)), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _first_snapshot(pilot, app)
        t_done = time.time()
    return {"from_process_start_s": t_done - T_START, "from_make_app_s": t_done - t_app, "peak_rss_mb": _rss_mb()}


async def child_latency(home_path: str, n: int) -> dict:
    from memdeck.core.home import HermesHome
    from memdeck.tui.app import make_app

    home = HermesHome(Path(home_path))
    path = home.memory_file("memory")
    entries = path.read_text(encoding="utf-8").split(DELIM)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(ROOT)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    app = make_app(home, watch=True)
    seen: dict[str, float] = {}
    original_apply = app.apply_snapshot

    def apply_and_stamp(snap):
        original_apply(snap)
        now = time.time()
        text = (getattr(snap, "prompt_blocks", "") or "") + repr(getattr(snap, "memory", ""))
        for marker in pending_markers:
            if marker not in seen and marker in text:
                seen[marker] = now

    pending_markers: list[str] = []
    app.apply_snapshot = apply_and_stamp  # type: ignore[method-assign]
    latencies: list[float] = []
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await _first_snapshot(pilot, app)
            await pilot.pause(1.0)  # let the watchers arm
            for i in range(n):
                marker = f"bench marker {i:04d} written by another process"
                pending_markers.append(marker)
                new = DELIM.join(entries[:-1] + [marker])
                writer.stdin.write(new.replace("\n", "\\n") + "\n")
                writer.stdin.flush()
                t_write = float(writer.stdout.readline())
                deadline = time.monotonic() + 10.0
                while marker not in seen and time.monotonic() < deadline:
                    await pilot.pause(0.002)
                if marker in seen:
                    latencies.append(seen[marker] - t_write)
                await pilot.pause(0.3)
    finally:
        writer.stdin.close()
        writer.wait(timeout=10)
    return {"n": n, "seen": len(latencies), "p50_ms": 1000 * _percentile(latencies, 50) if latencies else None,
            "p95_ms": 1000 * _percentile(latencies, 95) if latencies else None,
            "max_ms": 1000 * max(latencies) if latencies else None, "peak_rss_mb": _rss_mb()}


async def child_idle(home_path: str, seconds: float) -> dict:
    import asyncio

    from memdeck.core.home import HermesHome
    from memdeck.tui.app import make_app

    app = make_app(HermesHome(Path(home_path)), watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await _first_snapshot(pilot, app)
        await pilot.pause(1.0)
        cpu0, wall0 = time.process_time(), time.monotonic()
        refreshes0 = app.refresh_count
        await asyncio.sleep(seconds)
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
        refreshes = app.refresh_count - refreshes0
    return {"seconds": wall, "cpu_s": cpu, "cpu_pct": 100.0 * cpu / wall, "refreshes": refreshes, "peak_rss_mb": _rss_mb()}


def run_child(argv: list[str]) -> int:
    import asyncio

    kind, home = argv[0], argv[1]
    if kind == "first-paint":
        out = asyncio.run(child_first_paint(home))
    elif kind == "latency":
        out = asyncio.run(child_latency(home, int(argv[2])))
    elif kind == "idle":
        out = asyncio.run(child_idle(home, float(argv[2])))
    elif kind == "prefixes":
        t = time.perf_counter()
        from memdeck.core.sessions.compaction import known_prefixes

        known_prefixes()
        out = {"s": time.perf_counter() - t}
    else:
        raise SystemExit(f"unknown child scenario {kind!r}")
    print("RESULT " + json.dumps(out))
    return 0


# ── parent ─────────────────────────────────────────────────────────────────


def spawn(*args: str) -> dict:
    env = dict(os.environ, TEXTUAL_ANIMATIONS="none", TZ="UTC")
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env,
                          timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"child {args[0]} failed (exit {proc.returncode}): {proc.stderr[-1500:]}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        return run_child(argv[1:])
    parser = argparse.ArgumentParser(description="memdeck dashboard benchmarks")
    parser.add_argument("--quick", action="store_true", help="fewer samples, 10 s idle, 100k-message big home")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)

    from memdeck.core.demo import DEMO_NOW, build_big_home, build_demo_home

    n_writes = 10 if args.quick else 40
    idle_s = 10.0 if args.quick else 60.0
    big_n = 100_000 if args.quick else 1_000_000
    paint_runs = 2 if args.quick else 3
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="memdeck-bench-tui-") as tmp:
        demo = build_demo_home(Path(tmp) / "demo", now=DEMO_NOW)
        t = time.perf_counter()
        big = build_big_home(Path(tmp) / "big", messages=big_n, now=DEMO_NOW)
        build_s = time.perf_counter() - t
        db_mb = big.state_db.stat().st_size / 1e6

        fp_demo = [spawn("first-paint", str(demo.path)) for _ in range(paint_runs)]
        fp_big = [spawn("first-paint", str(big.path)) for _ in range(paint_runs)]
        lat = spawn("latency", str(Path(tmp) / "demo"), str(n_writes))
        idle = spawn("idle", str(Path(tmp) / "demo"), str(idle_s))
        prefixes = spawn("prefixes", str(demo.path))

    def med(runs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    big_label = f"{big_n:,}-message home"
    rows += [
        ("external write -> updated screen, p50", f"{lat['p50_ms']:.0f} ms ({lat['seen']}/{lat['n']} writes seen)"),
        ("external write -> updated screen, p95", f"{lat['p95_ms']:.0f} ms (max {lat['max_ms']:.0f} ms)"),
        ("first paint, demo home (process start -> first snapshot)", f"{med(fp_demo, 'from_process_start_s'):.2f} s"),
        ("first paint, demo home (make_app -> first snapshot)", f"{med(fp_demo, 'from_make_app_s'):.2f} s"),
        (f"first paint, {big_label} (process start -> first snapshot)", f"{med(fp_big, 'from_process_start_s'):.2f} s"),
        (f"first paint, {big_label} (make_app -> first snapshot)", f"{med(fp_big, 'from_make_app_s'):.2f} s"),
        ("  of which: core.compaction.known_prefixes() (only reads Hermes' prefixes when already loaded)",
         f"{prefixes['s']:.2f} s"),
        (f"idle CPU over {idle['seconds']:.0f} s, watchers on", f"{idle['cpu_pct']:.2f} % of one core "
                                                               f"({idle['cpu_s']:.2f} s CPU, {idle['refreshes']} refreshes)"),
        ("peak RSS, demo home (first paint)", f"{med(fp_demo, 'peak_rss_mb'):.0f} MB"),
        (f"peak RSS, {big_label} (first paint)", f"{med(fp_big, 'peak_rss_mb'):.0f} MB"),
        ("peak RSS, write-latency run (watchers on)", f"{lat['peak_rss_mb']:.0f} MB"),
        (f"(setup) build the {big_label}", f"{build_s:.1f} s, state.db {db_mb:.0f} MB"),
    ]
    width = max(len(k) for k, _ in rows)
    table = [f"| {'measure'.ljust(width)} | value |", f"|{'-' * (width + 2)}|-------|"]
    table += [f"| {k.ljust(width)} | {v} |" for k, v in rows]
    header = (f"# bench_tui ({'quick' if args.quick else 'full'} run)\n\n"
              f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
              f"headless `App.run_test(size=(120, 40))`, first-paint figures are medians of {paint_runs} runs.\n\n")
    text = header + "\n".join(table) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
