"""Issue 9 core benchmarks on a long-lived home (one live session compacted every ~800 rows).

    python bench/bench_bighome_core.py [200000 [1000000]]
    python bench/bench_bighome_core.py --hermes 1000000      # the home written by Hermes' own code

Homes come from bench/bighome_core.py (built once, cached), or with ``--hermes`` from
bench/bighome.py (Hermes 0.19's ``SessionDB`` wrote every row; copied to a temp dir for the run,
as the watch step appends to it). Each measurement runs in a fresh
process (``python -c``), like a launch. Printed as a Markdown table:

* memory usage ready: seconds from process start to both memory files read (what the
  dashboard's first, memory-only paint needs);
* full snapshot, first / later launch: a ``HomeReader`` read with every panel's data (history
  reconstructed, every compaction audited), without then with a memdeck.db holding the verdicts;
* status --json: wall time of the console script;
* peak RSS (VmHWM) and RSS growth over 100 refreshes, each after an appended message written
  by another process (so every refresh sees a changed state.db);
* disk bytes written by the reader while watching those 100 refreshes (/proc/PID/io);
* recall p95 over 5 runs per query kind: the one-shot ``recall`` (Hermes' ranking, what the CLI
  and the final Recall panel show) and the first page of ``iter_recall`` (newest first, what
  the Recall panel shows as you type);
* side files left in the home after the reader exits.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bighome_core import build

READER = r'''
import json, os, sys, time
t_start = time.perf_counter()
from pathlib import Path
from memdeck.core.home import HermesHome
from memdeck.core.config import load_config
from memdeck.core.memory.reader import read_memory
home = HermesHome(Path(sys.argv[1]))
cfg = load_config(home)
mem = [read_memory(home, cfg, t) for t in ("memory", "user")]
t_mem = time.perf_counter() - t_start
from memdeck.core.overview.reader import HomeReader
reader = HomeReader(home, cfg)  # as the dashboard: one state.db and one memdeck.db connection for all reads
snap = reader.read()
db = reader.db
t_full = time.perf_counter() - t_start
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024
def wbytes():
    for line in open("/proc/self/io"):
        if line.startswith("write_bytes"):
            return int(line.split()[1])
out = {"t_mem": t_mem, "t_full": t_full, "events": len(snap.compactions), "history": len(snap.drift_log),
       "errors": dict(snap.errors)}
mode = sys.argv[2]
if mode == "watch":
    rss0, w0 = status("VmRSS"), wbytes()
    print("ready", flush=True)
    times = []
    for i in range(100):
        sys.stdin.readline()
        t = time.perf_counter()
        snap = reader.read()
        times.append(time.perf_counter() - t)
        print("done", flush=True)
    times.sort()
    out.update(rss_growth=status("VmRSS") - rss0, hwm=status("VmHWM"), written=wbytes() - w0,
               refresh_p50=times[50], refresh_max=times[-1])
elif mode == "recall":
    from memdeck.core.sessions.recall import iter_recall, recall
    queries = {"rare identifier": sys.argv[3] if len(sys.argv) > 3 else "ZX0099700Q", "common word": "kubernetes",
               "phrase": '"grafana prometheus"', "CJK": "データベース移行", "prefix": "kubern*", "no hit": "xylophonequasar"}
    res, first = {}, {}
    for kind, q in queries.items():
        ts, fs = [], []
        for _ in range(5):
            t = time.perf_counter(); hits = recall(db, q); ts.append(time.perf_counter() - t)
            t = time.perf_counter(); page = next(iter_recall(db, q), []); fs.append(time.perf_counter() - t)
        ts.sort(); fs.sort()
        res[kind] = (ts[-1], len(hits))
        first[kind] = (fs[-1], len(page))
    out["recall"] = res
    out["first_page"] = first
reader.close()
print(json.dumps(out), flush=True)
'''


def reader(home: Path, mode: str = "once", feed: Path | None = None, sid: str | None = None, rare: str = "") -> dict:
    if mode != "watch":
        p = subprocess.run([sys.executable, "-c", READER, str(home), mode, *([rare] if rare else [])],
                           capture_output=True, text=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1])
    proc = subprocess.Popen([sys.executable, "-c", READER, str(home), mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    w = sqlite3.connect(str(feed), isolation_level=None)
    for i in range(100):
        w.execute("INSERT INTO messages (session_id, role, content, timestamp, active, compacted) VALUES (?, 'user', ?, ?, 1, 0)",
                  (sid, f"watching {i}", time.time()))
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "done"
    w.close()
    out = json.loads(proc.stdout.readline())
    proc.wait()
    return out


def drop_page_cache() -> bool:
    """Empty the kernel's page cache (needs root); False where this process may not."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def run(n: int, hermes: bool = False) -> dict:
    rare = ""
    if hermes:  # the home Hermes' own SessionDB wrote (bench/bighome.py), copied: the watch appends
        import shutil
        import tempfile

        import bighome

        from memdeck.core.home import HermesHome

        src = bighome.build(n, progress=True)
        home = Path(tempfile.mkdtemp(prefix="memdeck-bighome-core-")) / "home"
        shutil.copytree(src, home)
        home_obj = HermesHome(home)
        ro = sqlite3.connect(f"file:{home / 'state.db'}?immutable=1", uri=True)
        rare = ro.execute("SELECT content FROM messages WHERE content LIKE 'rare identifier ZX%' ORDER BY id "
                          "LIMIT 1 OFFSET ?", (n // 2000,)).fetchone()[0].split()[2]
        ro.close()
    else:
        home_obj = build(n)
        home = home_obj.state_db.parent
    deck = home / "memdeck" / "memdeck.db"
    if deck.exists():
        deck.unlink()
    for side in ("-wal", "-shm"):
        Path(str(deck) + side).unlink(missing_ok=True)
    from memdeck.core.sessions.side_files import tidy_side_files
    tidy_side_files(home_obj.state_db)  # left by an earlier writer, if nobody is connected
    quiet = sorted(p.name for p in home.iterdir())
    # first launch with the page cache emptied (the first launch after a boot), where the
    # bench may empty it (root: /proc/sys/vm/drop_caches), then with state.db cached
    first_cold = reader(home) if drop_page_cache() else None
    for side in ("", "-wal", "-shm"):
        Path(str(deck) + side).unlink(missing_ok=True)
    first = reader(home)
    # later launch: memdeck has a memdeck.db in this home (it writes one on its first change)
    from memdeck.core.deck import db as deckdb
    deckdb.connect(home_obj).close()
    reader(home)  # computes and stores the verdicts
    later = reader(home)
    t = time.perf_counter()
    subprocess.run(["memdeck", "status", "--json"], env=dict(os.environ, HERMES_HOME=str(home)),
                   capture_output=True, check=True)
    t_status = time.perf_counter() - t
    # side files memdeck created on a quiet home (the watch below has a writer of its own)
    side_files = [x for x in sorted(p.name for p in home.iterdir()) if x.startswith("state.db-") and x not in quiet]
    sid = sqlite3.connect(str(home_obj.state_db)).execute(
        "SELECT id FROM sessions WHERE ended_at IS NULL ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    watch = reader(home, "watch", home_obj.state_db, sid)
    rec = reader(home, "recall", rare=rare)
    if hermes:
        import shutil

        shutil.rmtree(home.parent, ignore_errors=True)
    return {"n": n, "first_cold": first_cold, "first": first, "later": later, "status": t_status, "watch": watch, "recall": rec["recall"],
            "first_page": rec["first_page"], "side_files": side_files}


def main() -> None:
    hermes = "--hermes" in sys.argv[1:]
    sizes = [int(a) for a in sys.argv[1:] if a != "--hermes"] or [200_000]
    results = [run(n, hermes) for n in sizes]
    cols = [f"{r['n']:,} rows ({r['first']['events']} compactions)" for r in results]
    print("| measure | " + " | ".join(cols) + " | target |")
    print("|---|" + "---|" * len(cols) + "---|")

    def row(name: str, f, target: str) -> None:
        print(f"| {name} | " + " | ".join(f(r) for r in results) + f" | {target} |")

    row("memory usage ready (process start -> both files read)", lambda r: f"{r['first']['t_mem']:.2f} s", "<= 0.7 s")
    row("full history, first launch (no memdeck.db), page cache emptied",
        lambda r: f"{r['first_cold']['t_full']:.2f} s" if r["first_cold"] else "(needs root)", "<= 3 s")
    row("full history, first launch (no memdeck.db), state.db cached", lambda r: f"{r['first']['t_full']:.2f} s", "<= 3 s")
    row("full history, later launch (verdicts in memdeck.db)", lambda r: f"{r['later']['t_full']:.2f} s", "<= 0.7 s")
    row("status --json", lambda r: f"{r['status']:.2f} s", "<= 1 s")
    row("peak RSS (VmHWM)", lambda r: f"{r['watch']['hwm']:.0f} MiB", "<= 80 MiB")
    row("RSS growth over 100 refreshes", lambda r: f"{r['watch']['rss_growth']:+.1f} MiB", "0")
    row("refresh after an appended message, median / max",
        lambda r: f"{r['watch']['refresh_p50'] * 1000:.0f} / {r['watch']['refresh_max'] * 1000:.0f} ms", "")
    row("disk bytes written while watching (100 refreshes)", lambda r: f"{r['watch']['written']:,}", "0")
    for kind in ("rare identifier", "common word", "phrase", "CJK", "prefix", "no hit"):
        row(f"recall p95: {kind}", lambda r, k=kind: f"{r['recall'][k][0] * 1000:.0f} ms ({r['recall'][k][1]} hits)", "<= 200 ms")
    for kind in ("rare identifier", "common word", "phrase", "CJK", "prefix", "no hit"):
        row(f"recall first page (newest first) p95: {kind}",
            lambda r, k=kind: f"{r['first_page'][k][0] * 1000:.0f} ms ({r['first_page'][k][1]} hits)", "<= 200 ms")
    row("state.db side files left by 3 readers and status --json on a quiet home", lambda r: ", ".join(r["side_files"]) or "none", "none")


if __name__ == "__main__":
    main()
