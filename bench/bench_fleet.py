"""Fleet benchmarks (issue 27): the fleet screen over 20 local profiles, its idle CPU, and a
metrics scrape, each against its peer in the same run.

    python bench/bench_fleet.py [--profiles 20] [--idle 30] [--rounds 20]

* **screen refresh**: the real fleet app (``memdeck.tui.fleet.FleetApp``) headless
  (``App.run_test``) on N profiles (copies of the demo home): from ``request_refresh`` of every
  home to the table updated (``FleetRowsReady`` applied), cold (first read: every snapshot built)
  and warm (nothing changed: every home's stamps taken, nothing read), and after one home's
  MEMORY.md changed. Peer: N ``status --json`` builds in this process (what a fleet view without
  incremental snapshots reads each time).
* **idle CPU**: ``memdeck --home ROOT fleet`` in a pseudo-terminal (the real terminal driver, a
  watcher per profile), CPU time of the process over ``--idle`` seconds after its first paint, as
  a percentage of one core. Peer: ``memdeck --home ROOT`` (the dashboard on one home) measured the
  same way in the same run.
* **scrape**: ``memdeck metrics`` collector, first scrape and a scrape with nothing changed, and
  one after a change, p50 over ``--rounds``. Peer: the N ``status --json`` builds above.

Timings are wall-clock on a shared machine: the load average is printed with the results, and
the ratios within one run are what to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import select
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def build_root(dest: Path, n: int) -> Path:
    from memdeck.core.demo import DEMO_NOW, build_demo_home
    from tests.helpers.fleet import fleet_root

    template = build_demo_home(dest / "template", seed=7, now=DEMO_NOW).path
    return fleet_root(template, dest / "root", n)


def bench_status_peer(root: Path) -> float:
    from memdeck.core.fleet.homes import FleetSettings, fleet_homes
    from memdeck.core.overview.status import build_status

    homes = fleet_homes(None, FleetSettings(), explicit=root)
    t = time.perf_counter()
    for h in homes:
        build_status(h.local_home())
    return time.perf_counter() - t


async def _screen(root: Path, rounds: int) -> dict[str, list[float]]:
    from memdeck.core.fleet.homes import FleetSettings, fleet_homes
    from memdeck.core.fleet.rows import Fleet
    from memdeck.tui.fleet import FleetApp

    fleet = Fleet(fleet_homes(None, FleetSettings(), explicit=root))
    app = FleetApp(fleet, watch=False)
    out: dict[str, list[float]] = {"cold": [], "warm": [], "one changed": []}
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            async def cycle(kind: str, before: int, started: float) -> None:
                while app.refresh_count <= before or not app.idle:
                    await pilot.pause(0.001)
                out[kind].append(time.perf_counter() - started)

            # the app's own first refresh (on mount) is the cold one
            t = time.perf_counter()
            await cycle("cold", 0, t)
            md = root / "profiles" / "p01" / "memories" / "MEMORY.md"
            for i in range(rounds):
                n = app.refresh_count
                t = time.perf_counter()
                app.request_refresh(None)
                await cycle("warm", n, t)
                md.write_text(md.read_text(encoding="utf-8") + f"\n§\nbench entry {i}", encoding="utf-8")
                n = app.refresh_count
                t = time.perf_counter()
                app.request_refresh(None)
                await cycle("one changed", n, t)
    finally:
        fleet.close()
    return out


def _cpu_of(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(argv: list[str], marker: bytes, seconds: float, env: dict[str, str]) -> tuple[float, float]:
    """``(percent of one core while idle, seconds to the first paint)`` of ``argv`` in a pty."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real terminal driver
        os.environ.update(env)
        os.execv(argv[0], argv)
    started = time.monotonic()
    seen = b""
    try:
        while marker not in seen:
            r, _, _ = select.select([fd], [], [], 60)
            if not r:
                raise RuntimeError(f"no first paint within 60 s: {seen[-300:]!r}")
            seen += os.read(fd, 65536)
        painted = time.monotonic() - started
        end = time.monotonic() + 3  # let the first refresh and the watchers settle
        while time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                os.read(fd, 65536)
        c0, t0 = _cpu_of(pid), time.monotonic()
        end = t0 + seconds
        while time.monotonic() < end:  # drain the terminal so the app never blocks on output
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                os.read(fd, 65536)
        c1, t1 = _cpu_of(pid), time.monotonic()
        return 100.0 * (c1 - c0) / (t1 - t0), painted
    finally:
        os.kill(pid, signal.SIGTERM)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        os.close(fd)


def bench_scrape(root: Path, rounds: int) -> dict[str, float]:
    from prometheus_client.exposition import generate_latest

    from memdeck.core.fleet.exposition import registry_for
    from memdeck.core.fleet.homes import FleetSettings, fleet_homes
    from memdeck.core.fleet.rows import Fleet

    fleet = Fleet(fleet_homes(None, FleetSettings(), explicit=root))
    reg = registry_for(fleet)
    try:
        t = time.perf_counter()
        generate_latest(reg)
        first = time.perf_counter() - t
        warm, changed = [], []
        pending = root / "profiles" / "p02" / "pending" / "memory"
        for i in range(rounds):
            t = time.perf_counter()
            generate_latest(reg)
            warm.append(time.perf_counter() - t)
            (pending / f"bench{i}.json").write_text('{"id": "bench%d", "action": "add", "target": "memory", '  # noqa: UP031
                                                    '"content": "x", "created_at": 1}' % i, encoding="utf-8")
            t = time.perf_counter()
            generate_latest(reg)
            changed.append(time.perf_counter() - t)
    finally:
        fleet.close()
    return {"first": first, "warm": statistics.median(warm), "one changed": statistics.median(changed)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiles", type=int, default=20)
    ap.add_argument("--idle", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    os.environ["TZ"] = "UTC"
    tmp = Path(tempfile.mkdtemp(prefix="memdeck-bench-fleet-"))
    env = {"XDG_CONFIG_HOME": str(tmp / "cfg"), "XDG_CACHE_HOME": str(tmp / "cache"), "TERM": "xterm-256color",
           "COLUMNS": "160", "LINES": "40"}
    os.environ.update({k: v for k, v in env.items() if k.startswith("XDG")})
    try:
        root = build_root(tmp, args.profiles)
        load0 = os.getloadavg()
        peer = [bench_status_peer(root) for _ in range(3)]
        first_launch = asyncio.run(_screen(root, 1))  # creates each profile's memdeck.db
        screen = asyncio.run(_screen(root, args.rounds))  # a later launch: cold snapshots, databases there
        scrape = bench_scrape(root, args.rounds)
        memdeck = str(Path(sys.executable).with_name("memdeck"))
        fleet_idle, fleet_paint = idle_cpu([memdeck, "--home", str(root), "fleet"], b"homes", args.idle, env)
        dash_idle, dash_paint = idle_cpu([memdeck, "--home", str(root)], b"memdeck", args.idle, env)
        load1 = os.getloadavg()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = args.profiles
    p50 = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    status_ms = statistics.median(peer) * 1000
    print(f"load average before/after: {load0[0]:.1f} / {load1[0]:.1f} (cores: {os.cpu_count()}); {n} profiles")
    print("| what | memdeck fleet | peer | ratio |")
    print("|---|---|---|---|")
    print(f"| screen refresh, very first launch (each profile's memdeck.db created, history baseline) | "
          f"{p50(first_launch['cold']):.0f} ms | {n} × status --json: {status_ms:.0f} ms | "
          f"{p50(first_launch['cold']) / status_ms:.2f} |")
    print(f"| screen refresh, cold (a later launch: every snapshot built) | {p50(screen['cold']):.0f} ms | "
          f"{status_ms:.0f} ms | {p50(screen['cold']) / status_ms:.2f} |")
    print(f"| screen refresh, nothing changed (p50 of {args.rounds}) | {p50(screen['warm']):.1f} ms | "
          f"{status_ms:.0f} ms | {p50(screen['warm']) / status_ms:.3f} |")
    print(f"| screen refresh, one home's MEMORY.md changed (p50) | {p50(screen['one changed']):.1f} ms | "
          f"{status_ms:.0f} ms | {p50(screen['one changed']) / status_ms:.3f} |")
    print(f"| metrics scrape, first | {scrape['first'] * 1000:.0f} ms | {status_ms:.0f} ms | {scrape['first'] * 1000 / status_ms:.2f} |")
    print(f"| metrics scrape, nothing changed (p50) | {scrape['warm'] * 1000:.1f} ms | {status_ms:.0f} ms | "
          f"{scrape['warm'] * 1000 / status_ms:.3f} |")
    print(f"| metrics scrape, one pending write added (p50) | {scrape['one changed'] * 1000:.1f} ms | {status_ms:.0f} ms | "
          f"{scrape['one changed'] * 1000 / status_ms:.3f} |")
    tick = 100.0 / os.sysconf("SC_CLK_TCK") / args.idle  # one clock tick over the window, in % of a core
    ratio = f"{fleet_idle / dash_idle:.2f}" if dash_idle else "— (both below one tick)" if not fleet_idle else "—"
    print(f"| idle CPU over {args.idle:.0f} s (% of one core; one clock tick = {tick:.3f} %) | {fleet_idle:.3f} % "
          f"({n} watchers) | dashboard on one home: {dash_idle:.3f} % | {ratio} |")
    print(f"| first paint in a pty | {fleet_paint:.2f} s | dashboard: {dash_paint:.2f} s | {fleet_paint / dash_paint:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
