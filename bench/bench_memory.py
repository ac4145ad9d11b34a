"""Benchmark of the memory core: write latency (idle and 8-way contention), lock hold time, scan speed.

Usage: python bench/bench_memory.py [--quick]

Prints a markdown table. Numbers are wall-clock on this machine; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memdeck.core.config import Config
from memdeck.core.home import HermesHome
from memdeck.core.memory import store as memory_mod
from memdeck.core.memory.store import MemoryStore
from memdeck.core.memory.threats import scan

BIG = Config(memory_char_limit=10_000_000, user_char_limit=10_000_000)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


_holds: list[float] = []


def _instrument() -> None:
    real = memory_mod.file_lock

    @contextlib.contextmanager
    def timed(path, timeout=10.0):
        with real(path, timeout) as waited:
            t0 = time.perf_counter()
            try:
                yield waited
            finally:
                _holds.append(time.perf_counter() - t0)

    memory_mod.file_lock = timed


def _ops(home: Path, tag: str, n: int, out: mp.Queue | None = None) -> tuple[list[float], list[float], list[float]]:
    _instrument()
    _holds.clear()
    s = MemoryStore(HermesHome(home), BIG, lock_timeout=120)
    adds, repl = [], []
    for k in range(n):
        t = time.perf_counter()
        s.add("memory", f"[{tag}-{k}] a memory entry of ordinary length, about one line of text")
        adds.append(time.perf_counter() - t)
        t = time.perf_counter()
        s.replace("memory", f"[{tag}-{k}]", f"[{tag}-{k}] replaced text of a similar length, one line")
        repl.append(time.perf_counter() - t)
    res = (adds, repl, list(_holds))
    if out is not None:
        out.put(res)
    return res


def bench_writes(n: int, procs: int) -> list[tuple[str, str]]:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        (home / "memories").mkdir()
        adds, repl, holds = _ops(home, "solo", n)
    rows.append(("add latency, no contention (p50 / p99)", f"{pct(adds, 50)*1e3:.2f} / {pct(adds, 99)*1e3:.2f} ms"))
    rows.append(("replace latency, no contention (p50 / p99)", f"{pct(repl, 50)*1e3:.2f} / {pct(repl, 99)*1e3:.2f} ms"))
    rows.append(("lock hold time, no contention (p50 / p99)", f"{pct(holds, 50)*1e3:.2f} / {pct(holds, 99)*1e3:.2f} ms"))
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        (home / "memories").mkdir()
        q = ctx.Queue()
        ps = [ctx.Process(target=_ops, args=(home, f"p{i}", n, q)) for i in range(procs)]
        t0 = time.perf_counter()
        for p in ps:
            p.start()
        results = [q.get() for _ in ps]
        for p in ps:
            p.join()
        wall = time.perf_counter() - t0
    adds = [x for r in results for x in r[0]]
    repl = [x for r in results for x in r[1]]
    holds = [x for r in results for x in r[2]]
    rows.append((f"add latency, {procs}-way contention (p50 / p99)", f"{pct(adds, 50)*1e3:.2f} / {pct(adds, 99)*1e3:.2f} ms"))
    rows.append((f"replace latency, {procs}-way contention (p50 / p99)", f"{pct(repl, 50)*1e3:.2f} / {pct(repl, 99)*1e3:.2f} ms"))
    rows.append((f"lock hold time, {procs}-way contention (p50 / p99)", f"{pct(holds, 50)*1e3:.2f} / {pct(holds, 99)*1e3:.2f} ms"))
    rows.append((f"throughput, {procs}-way contention", f"{2 * n * procs / wall:.0f} writes/s"))
    return rows


WORDS = [
    "user", "prefers", "concise", "answers", "project", "uses", "pytest", "deploy", "on", "fridays", "the", "api", "token",
    "rotates", "monthly", "lives", "in", "leeds", "speaks", "french", "and", "english", "likes", "tea", "cat", "sat", "on",
    "the", "mat", "connect", "to", "vpn", "edit", "readme",
]


def corpus(n_entries: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n_entries):
        out.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60))).capitalize() + ".")
    return out


ADVERSARIAL = ["cat ", "send x ", "update ", "<!--system ", "translate into and ", "curl ", "ignore all "]


def bench_scan(quick: bool) -> list[tuple[str, str]]:
    from tools.threat_patterns import _COMPILED, scan_for_threats  # hermes-agent 0.19.0

    rows = []
    entries = corpus(2000 if quick else 8000)
    mb = sum(len(e.encode()) for e in entries) / 1e6
    t = time.perf_counter()
    for e in entries:
        scan(e)
    ours = time.perf_counter() - t
    t = time.perf_counter()
    for e in entries:
        scan_for_threats(e, "strict")
    hermes = time.perf_counter() - t
    rows.append((f"scan per entry ({len(entries)} entries, {mb:.2f} MB): memdeck", f"{mb/ours:.2f} MB/s"))
    rows.append(("scan per entry, same corpus: Hermes scan_for_threats", f"{mb/hermes:.2f} MB/s (ratio memdeck/Hermes {hermes/ours:.2f})"))
    big = "\n".join(entries)
    t = time.perf_counter()
    scan(big)
    whole = time.perf_counter() - t
    rows.append((f"scan one {len(big)/1e6:.1f} MB text: memdeck", f"{len(big.encode())/1e6/whole:.2f} MB/s"))
    size = 64_000 if quick else 256_000
    worst_ours = worst_h = 0.0
    for shape in ADVERSARIAL:
        text = shape * (size // len(shape))
        t = time.perf_counter()
        scan(text)
        worst_ours = max(worst_ours, time.perf_counter() - t)
        t = time.perf_counter()
        for rx, _pid in _COMPILED["strict"]:  # Hermes' regexes on the whole text (no 64K cut)
            rx.search(text)
        worst_h = max(worst_h, time.perf_counter() - t)
    rows.append((f"worst adversarial {size//1000} KB near-miss text: memdeck", f"{worst_ours:.3f} s"))
    rows.append(("same, Hermes' regexes without the 64K cut", f"{worst_h:.3f} s ({worst_h/worst_ours:.0f}x slower)"))
    text = ADVERSARIAL[0] * (1_000_000 // 4)
    t = time.perf_counter()
    scan(text)
    rows.append(("1 MB adversarial text ('cat cat ...'): memdeck", f"{time.perf_counter() - t:.2f} s"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n = 30 if a.quick else 150
    rows = [("cores", str(os.cpu_count())), ("writes per process", f"{n} add + {n} replace")]
    rows += bench_writes(n, 8)
    rows += bench_scan(a.quick)
    print("| measure | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()
