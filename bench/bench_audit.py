"""Benchmark the anchors area: full session audit over big state.db files, keyword vs semantic.

    python bench/bench_audit.py [--quick]

1. Full audit (``core.audit.audit_session``: current verdicts, lifecycle, integrity history of
   every compaction event) and ``status_section`` of the live demo session inside homes of
   10k / 100k / 1M messages (``core.demo.build_big_home``, FTS triggers off for the bulk rows).
   The cost should depend on the audited session, not on the database size.
2. Per-anchor audit cost, keyword vs semantic, over a 200-message active region, with a fake
   deterministic encoder (hash-seeded 384-dim vectors; sentence-transformers is not used) so
   the numbers measure memdeck's own work: windows, numpy cosine, probes.

Prints a markdown table; ``--quick`` runs the 10k size only and fewer repeats.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_encoder import FakeEncoder

from memdeck.core.anchors.audit import build_windows, keyword_audit, semantic_audit
from memdeck.core.anchors.lifecycle import audit_session
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.demo import build_big_home
from memdeck.core.overview.status import anchors_section
from memdeck.core.sessions.statedb import StateDB


def _time(fn, repeats: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs), max(runs)


def bench_sizes(sizes: list[int], repeats: int) -> list[str]:
    rows = ["| messages in state.db | build (s) | audit_session p50 (ms) | max (ms) | status_section p50 (ms) "
            "| compactions audited | anchors |",
            "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            home = build_big_home(Path(tmp) / "home", messages=n, fts=False)
            build = time.perf_counter() - t0
            cfg = load_config(home)
            store = AnchorStore(home, cfg)
            with StateDB(home.state_db) as db:
                sid = db.live_session().id
                first = audit_session(db, store, sid, cfg)
                p50, mx = _time(lambda: audit_session(db, store, sid, cfg), repeats)
            s50, _ = _time(lambda: anchors_section(home, cfg), repeats)
            rows.append(f"| {n:,} | {build:.1f} | {p50:.1f} | {mx:.1f} | {s50:.1f} | {first.compactions} | {len(first.anchors)} |")
    return rows


def bench_modes(repeats: int) -> list[str]:
    region = [{"role": "user" if i % 2 == 0 else "assistant",
               "content": f"message {i}: " + " ".join(f"word{(i * 7 + j) % 997}" for j in range(60))} for i in range(200)]
    rows = ["| anchors | keyword total (ms) | keyword per anchor (µs) | semantic total (ms) | semantic per anchor (µs) | windows |",
            "|---:|---:|---:|---:|---:|---:|"]
    enc = FakeEncoder()
    windows = len(build_windows(region, 1000))
    for k in (1, 4, 16, 64):
        anchors = [{"id": f"a{i}", "text": f"Standing instruction {i} about word{i * 13} and word{i * 29}",
                    "probes": [f"word{i * 13}", f"word{i * 29}", f"zz{i}"], "priority": 50} for i in range(k)]
        kw, _ = _time(lambda: keyword_audit(anchors, region, 0.5), repeats)
        se, _ = _time(lambda: semantic_audit(anchors, region, encoder=enc), repeats)
        rows.append(f"| {k} | {kw:.2f} | {kw * 1000 / k:.0f} | {se:.2f} | {se * 1000 / k:.0f} | {windows} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10k messages only, fewer repeats")
    args = ap.parse_args(argv)
    sizes = [10_000] if args.quick else [10_000, 100_000, 1_000_000]
    repeats = 3 if args.quick else 7
    out = ["### Full session audit vs database size", ""] + bench_sizes(sizes, repeats)
    out += ["", "### Keyword vs semantic audit (200-message active region, fake 384-dim encoder)", ""] + bench_modes(repeats)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
