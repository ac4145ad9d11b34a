"""Benchmark the read-only state.db reader and recall on 10k / 100k / 1M-message databases.

    python bench/bench_statedb.py [--quick] [--out bench/results/sessions.md]

``--quick`` runs 10k and 100k only. Databases are generated with core.hermes_schema (Hermes 0.19
schema, FTS5 + trigram triggers) in one transaction with executemany, 1,000 messages per
session, and every 10th session compacted in place once. Measured per size:

* build: seconds to generate the database (not memdeck's cost; for context);
* first paint: what the dashboard asks of a fresh reader: ``sessions()`` (with every session's
  compaction count), ``live_session()`` and the live session's ``compactions(id)``;
* full scan: ``StateDB.compactions()`` on a fresh reader (every in-place and rotation event);
* sessions: ``StateDB.sessions()`` right after the full scan (its cache reused);
* refresh idle / refresh +1 row: median of ``StateDB.refresh()`` with no change and after one
  appended message (the cost that must stay flat as the database grows);
* recall p50 / p99: ``recall(db, query)`` over 60 single- and two-word queries;
* peak memory: tracemalloc peak during a cold full scan (MiB), and the process max RSS.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.recall import recall
from memdeck.core.sessions.statedb import StateDB

WORDS = [
    "kubernetes", "deploy", "rollout", "grafana", "prometheus", "invoice", "budget", "travel", "paris", "python", "rust",
    "async", "database", "index", "vacuum", "migration", "schema", "anchor", "memory", "drift", "summary", "compaction",
    "session", "profile", "cron", "telegram", "discord", "slack", "weather", "garden", "recipe", "bread", "yeast", "flour",
    "guitar", "chord", "tempo", "marathon", "training", "interval",
]


def build(path: Path, n_messages: int, per_session: int = 1000, seed: int = 7) -> float:
    rnd = random.Random(seed)
    t0 = time.perf_counter()
    conn = hs.create_state_db(path, fts=False)  # FTS indexed in bulk at the end (same index)
    conn.execute("PRAGMA synchronous=OFF")
    n_sessions = max(1, n_messages // per_session)
    base = 1_700_000_000.0
    conn.execute("BEGIN")
    for s in range(n_sessions):
        hs.add_session(conn, f"s{s:05d}", source="cron" if s % 7 == 6 else "cli", title=f"session {s}",
                       started_at=base + s * 10_000)
        if s < n_sessions - 1:
            hs.end_session(conn, f"s{s:05d}", "cli_close", ended_at=base + s * 10_000 + 5_000)
    conn.execute("COMMIT")

    def rows():
        for s in range(n_sessions):
            for i in range(per_session):
                words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(6, 14)))
                yield (f"s{s:05d}", "user" if i % 2 == 0 else "assistant", f"{words} #{i}", base + s * 10_000 + i)

    hs.append_many(conn, rows())
    for s in range(0, n_sessions, 10):
        hs.compact_in_place(conn, f"s{s:05d}", f"summary of session {s}: " + " ".join(rnd.choice(WORDS) for _ in range(30)),
                            keep_head=2, keep_tail=4, now=base + s * 10_000 + 4_000)
    hs.install_fts(conn)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.perf_counter() - t0


def measure(path: Path, n: int, queries: list[str]) -> dict[str, float]:
    from memdeck.core.sessions.compaction import known_prefixes

    known_prefixes()  # one-time import of Hermes' prefixes (when installed) is not part of the scan
    out: dict[str, float] = {}
    first = StateDB(path)
    assert first.status().ok, first.status()
    t = time.perf_counter()  # what the dashboard's first paint asks of a fresh reader
    first.sessions()
    live = first.live_session()
    if live is not None:
        first.compactions(live.id)
    out["first_paint_s"] = time.perf_counter() - t
    first.close()
    db = StateDB(path)
    assert db.status().ok, db.status()
    t = time.perf_counter()
    events = db.compactions()
    out["full_scan_s"] = time.perf_counter() - t
    out["events"] = len(events)
    t = time.perf_counter()
    ss = db.sessions()
    out["sessions_s"] = time.perf_counter() - t
    out["sessions"] = len(ss)
    db.refresh()
    idle = []
    for _ in range(200):
        t = time.perf_counter()
        db.refresh()
        idle.append(time.perf_counter() - t)
    out["refresh_idle_us"] = statistics.median(idle) * 1e6
    w = hs.connect(path)
    live = ss[0].id
    one = []
    for i in range(100):
        hs.append_message(w, live, "user", f"new message {i} about kubernetes", timestamp=time.time())
        t = time.perf_counter()
        d = db.refresh()
        one.append(time.perf_counter() - t)
        assert len(d.new_messages) == 1
    w.close()
    out["refresh_one_us"] = statistics.median(one) * 1e6
    lat = []
    for q in queries:
        t = time.perf_counter()
        recall(db, q)
        lat.append(time.perf_counter() - t)
    lat.sort()
    out["recall_p50_ms"] = lat[len(lat) // 2] * 1e3
    out["recall_p99_ms"] = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3
    db.close()
    cold = StateDB(path)
    tracemalloc.start()
    cold.compactions()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    cold.close()
    out["peak_mib"] = peak / 2**20
    out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10k and 100k only")
    ap.add_argument("--out", default=None, help="write the markdown table here (default bench/results/sessions.md)")
    ap.add_argument("--dir", default=None, help="where to build the databases (default: a temp dir)")
    args = ap.parse_args()
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    rnd = random.Random(11)
    queries = [rnd.choice(WORDS) for _ in range(40)] + [f"{rnd.choice(WORDS)} {rnd.choice(WORDS)}" for _ in range(20)]
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in sizes:
            path = Path(tmp) / f"state_{n}.db"
            build_s = build(path, n)
            m = measure(path, n, queries)
            m["build_s"] = build_s
            m["size_mib"] = path.stat().st_size / 2**20
            rows.append((n, m))
            print(f"{n:>9,} msgs: build {build_s:.1f}s, scan {m['full_scan_s']:.3f}s, refresh idle {m['refresh_idle_us']:.0f}us, "
                  f"+1 row {m['refresh_one_us']:.0f}us, recall p50 {m['recall_p50_ms']:.1f}ms", flush=True)
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.remove(str(path) + suffix)
                except FileNotFoundError:
                    pass
    head = ("| messages | db MiB | build s | sessions | events | first paint s | full compaction scan s | sessions() s "
            "| refresh idle µs | refresh +1 row µs | recall p50 ms | recall p99 ms | scan peak MiB (tracemalloc) | max RSS MiB |")
    lines = [head, "|" + "---|" * 14]
    for n, m in rows:
        lines.append(f"| {n:,} | {m['size_mib']:.0f} | {m['build_s']:.1f} | {m['sessions']:.0f} | {m['events']:.0f} | "
                     f"{m['first_paint_s']:.3f} | {m['full_scan_s']:.3f} | {m['sessions_s']:.3f} | "
                     f"{m['refresh_idle_us']:.0f} | {m['refresh_one_us']:.0f} | "
                     f"{m['recall_p50_ms']:.1f} | {m['recall_p99_ms']:.1f} | {m['peak_mib']:.1f} | {m['maxrss_mib']:.0f} |")
    if len(rows) > 1:
        a, b = rows[0][1], rows[-1][1]
        lines.append("")
        lines.append(f"Ratios largest/smallest ({rows[-1][0]:,} vs {rows[0][0]:,} messages, same run): "
                     f"refresh +1 row {b['refresh_one_us'] / a['refresh_one_us']:.2f}x, refresh idle "
                     f"{b['refresh_idle_us'] / a['refresh_idle_us']:.2f}x, full scan {b['full_scan_s'] / a['full_scan_s']:.1f}x, "
                     f"recall p50 {b['recall_p50_ms'] / a['recall_p50_ms']:.1f}x.")
    table = "\n".join(lines)
    print(table)
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results" / "sessions.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# sessions: state.db reader and recall\n\n"
                   f"`python bench/bench_statedb.py{' --quick' if args.quick else ''}` on this machine "
                   f"({os.cpu_count()} cores). 1,000 messages per session, every 10th session compacted in place once.\n\n"
                   + table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
