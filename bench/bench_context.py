"""What the Context panel costs (issue 24): ``memdeck context --json``, and the dashboard's refresh
with and without the agent view, on a big home.

    python bench/bench_context.py --home /work/benchhomes/context-core/perf9-1000000 [--runs 20]

The home must have an open session with a stored prompt (``bench/bighome_core.py`` homes: the
demo's live session with 1M rows appended). Nothing is written to the home. Printed (median and
p95 of ``--runs`` in-process runs, after one warm-up):

* ``context --json``: the whole command (``memdeck.core.cli.main``, output to /dev/null: the
  parser, config.yaml, the history's stat, then the handler), the handler alone (state.db open,
  the open sessions' prompt stamps, the prompt read and parsed, the Hermes version, the audit for
  the reminder block, the report, the JSON), and ``build_report`` alone on an open reader;
* an unchanged refresh of a :class:`~memdeck.core.overview.reader.HomeReader` (every stamp
  equal: the last snapshot is returned);
* with ``--live SCRATCH``: the home is copied to SCRATCH and, before each refresh, one message is
  appended to the live session the way Hermes writes it (``core/sessions/hermes_schema.py``), so
  the refresh re-reads what a live home changes (state.db's new rows, the audit, the agent view);
  refreshes rotate between the view reused (before issue 24), rebuilt without the followed
  session's report (the Context panel not shown) and with it (shown); medians and ratios printed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _ms(samples: list[float]) -> str:
    s = sorted(samples)
    p95 = s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]
    return f"{statistics.median(s) * 1000:.1f} / {p95 * 1000:.1f} ms"


def _time(fn, runs: int) -> list[float]:
    fn()  # warm-up
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--live", type=Path, default=None, metavar="SCRATCH",
                    help="copy the home here and append a message before each refresh")
    args = ap.parse_args()

    from memdeck.core.cli import main as cli_main
    from memdeck.core.config import load_config
    from memdeck.core.context.prompts import PromptCache
    from memdeck.core.context.report import build_report, disk_entries
    from memdeck.core.home import HermesHome
    from memdeck.core.overview.snapshot import open_statedb
    from memdeck.core.sessions.profile import detect_profile

    home = HermesHome(args.home)
    config = load_config(home)
    print(f"home {home.path}  load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    def command() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(["--home", str(home.path), "context", "--json"])
        assert rc == 0

    cmd = _time(command, args.runs)
    from memdeck.core.cli import context_cmds
    from memdeck.core.cli.common import CliContext

    ns = argparse.Namespace(session=None, json=True, exact=None)
    ctx = CliContext(home=home, config=config)

    def handler() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            assert context_cmds._context(ns, ctx) == 0

    hnd = _time(handler, args.runs)
    db = open_statedb(home)
    version = detect_profile(home).version
    stamp = max(db.prompt_stamps(), key=lambda s: (s.activity, s.session_id))
    cache = PromptCache()
    disk = disk_entries(home)
    rep_t = _time(lambda: build_report(db, home, config, stamp, cache=cache, disk=disk, version=version), args.runs)
    rows = stamp.last_active and db.message_count()
    print(f"live session {stamp.session_id}: prompt {stamp.prompt_chars:,} chars, state.db {rows:,} rows")
    print(f"context --json (whole command)       {_ms(cmd)}")
    print(f"context --json (its handler: state.db, prompt, report, audit, JSON)  {_ms(hnd)}")
    print(f"build_report alone                   {_ms(rep_t)}")

    # an unchanged refresh: every stamp equal, the last snapshot itself is returned
    from memdeck.core.overview.reader import HomeReader

    reader = HomeReader(home, config)
    first = reader.read()
    assert first.agent_view is not None and first.agent_view.report is not None, first.errors
    same = _time(lambda: reader.read(), args.runs)
    print(f"refresh with every source unchanged                          {_ms(same)}")
    reader.close()
    db.close()
    if args.live is not None:
        live_refreshes(home.path, args.live, stamp.session_id, args.runs)
    return 0


def live_refreshes(src: Path, scratch: Path, sid: str, runs: int) -> None:
    """Refreshes after a real append to state.db (a copy of the home), view rebuilt vs reused."""
    import shutil
    import sqlite3

    from memdeck.core.config import load_config
    from memdeck.core.home import HermesHome
    from memdeck.core.overview import agent_view as av
    from memdeck.core.overview.reader import HomeReader
    from memdeck.core.sessions import hermes_schema as hs

    if scratch.exists():
        shutil.rmtree(scratch)
    t = time.perf_counter()
    shutil.copytree(src, scratch, symlinks=True, ignore=shutil.ignore_patterns("memdeck"))
    print(f"copied the home to {scratch} in {time.perf_counter() - t:.0f} s")
    home = HermesHome(scratch)
    config = load_config(home)
    reader = HomeReader(home, config)
    snap = reader.read()  # the first (long) read
    reads0 = snap.agent_view.cache.reads
    writer = sqlite3.connect(home.state_db, isolation_level=None, timeout=30)
    real = av.build_agent_view
    modes = ("before", "hidden", "shown")
    times: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    clock = time.time()
    for i in range(3 * runs + 3):
        mode = modes[i % 3]
        clock += 1.0
        hs.append_message(writer, sid, "user" if i % 2 else "assistant", f"bench turn {i}: deploy the service",
                          timestamp=clock)
        if mode == "before":  # before issue 24: no agent view to rebuild
            av.build_agent_view = lambda *a, previous=None, **k: previous  # type: ignore[assignment]
        try:
            t, c = time.perf_counter(), time.process_time()
            snap = reader.read(context_report=mode == "shown")
            dt, dc = time.perf_counter() - t, time.process_time() - c
        finally:
            av.build_agent_view = real  # type: ignore[assignment]
        if i >= 3:  # the first of each kind warms up
            times[mode].append(dt)
            cpu[mode].append(dc)
    writer.close()
    reader.close()
    base_w, base_c = statistics.median(times["before"]), statistics.median(cpu["before"])
    print("live refresh after one appended message (wall | CPU of this process, median / p95; ratio to before):")
    for m, what in (("before", "before issue 24 (no agent view)"), ("hidden", "now, Context panel not shown"),
                    ("shown", "now, Context panel shown")):
        print(f"  {what:34} {_ms(times[m])} | {_ms(cpu[m])}   "
              f"{statistics.median(times[m]) / base_w:.2f} | {statistics.median(cpu[m]) / base_c:.2f}")
    print(f"prompts read over {3 * runs + 3} live refreshes: {snap.agent_view.cache.reads - reads0}")

if __name__ == "__main__":
    sys.exit(main())
