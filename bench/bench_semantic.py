"""Benchmark MemLock's semantic audit on the real all-MiniLM-L6-v2 (issue 28).

    python bench/bench_semantic.py [--home DIR] [--quick]

Needs the ``semantic`` extra (``pip install torch==2.13.0`` first, then ``pip install -e '.[semantic]'``).
Prints four tables, each measured in one run against its peer:

1. the encoder: ms per 1,000-char window, memdeck's numpy forward pass against
   sentence-transformers (what MemLock runs), one window at a time and in one batch, plus the
   cosine between their vectors and the time to load each;
2. one audit of an 800-message active region (MemLock keeps the newest 256 windows): memdeck cold
   (nothing cached), the same region again in the process, and a later launch (vectors read back
   from memdeck.db), against MemLock's own cost (sentence-transformers encoding the windows and
   the anchor texts);
3. the first semantic history of the 200,000-row home built by ``bench/bighome.py`` (give its
   path with ``--home``; it is built under /work/benchhomes when absent): the dashboard's bounded
   refreshes (2 s of embedding each, newest compactions first) until the history is complete,
   the windows embedded, then a later launch in a fresh process, against the keyword history's
   later launch on the same home;
4. memdeck.db's growth for the cached vectors.

The home's ``memdeck/memdeck.db`` is replaced at the start of part 3 (it is the benchmark's own
home): do not point ``--home`` at a home someone else measures.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

WORDS = [
    "kubernetes", "deploy", "rollout", "grafana", "prometheus", "invoice", "budget", "travel", "paris", "python", "rust",
    "async", "database", "index", "vacuum", "migration", "schema", "memory", "summary", "session", "profile", "cron",
    "telegram", "discord", "slack", "weather", "garden", "recipe", "bread", "yeast", "flour", "guitar", "chord", "tempo",
    "marathon", "training", "interval", "the", "and", "of", "to", "in", "is", "it", "that", "for", "on", "with", "as",
]
ANCHORS = [
    {"id": "a1", "text": "Deploys go through the staging cluster first.", "probes": ["staging"]},
    {"id": "a2", "text": "Invoices are in EUR, never USD.", "probes": ["eur"]},
    {"id": "a3", "text": "Never run migrations on Fridays.", "probes": ["fridays"]},
    {"id": "a4", "text": "Use British English spelling.", "probes": ["british"]},
    {"id": "a5", "text": "Keep answers in bullet points.", "probes": ["bullet"]},
]


def _text(rnd: random.Random, k: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(k))


def _windows_1000(n: int, seed: int = 3) -> list[str]:
    rnd = random.Random(seed)
    out = []
    while len(out) < n:
        t = _text(rnd, 260)
        out.append(t[:1000])
    return out


def _region(n: int = 800, seed: int = 5) -> list[dict]:
    """An active region of ``n`` messages shaped like bench/bighome.py's turns."""
    rnd = random.Random(seed)
    msgs: list[dict] = [{"role": "system", "content": "You are Hermes. " + _text(rnd, 300)}]
    while len(msgs) < n:
        msgs.append({"role": "user", "content": _text(rnd, rnd.randint(5, 30))})
        msgs.append({"role": "assistant", "content": _text(rnd, rnd.randint(20, 120))})
    return msgs[:n]


def _best(fn, repeat: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn``, the best of ``repeat`` runs (CPU: this process, all threads)."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        best = min(best, (time.perf_counter() - t, time.process_time() - c))
    return best


def part_encoder(quick: bool) -> dict:
    import numpy as np
    import torch

    from memdeck.core.anchors.encoder import PINNED_SHA256, MiniLMEncoder, package_model_folder

    folder = package_model_folder()
    t = time.perf_counter()
    ours = MiniLMEncoder(folder, PINNED_SHA256)
    load_ours = time.perf_counter() - t
    t = time.perf_counter()
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(folder), device="cpu")
    load_st = time.perf_counter() - t
    wins = _windows_1000(8 if quick else 20)
    ours.encode(wins[:2]), st.encode(wins[:2])  # warm-up
    n = len(wins)
    rows = []
    o1 = _best(lambda: [ours.encode([w]) for w in wins])
    ob = _best(lambda: ours.encode(wins))
    rows.append(("memdeck numpy forward pass (1 BLAS thread)", load_ours, o1, ob))
    threads = torch.get_num_threads()
    s1 = _best(lambda: [st.encode([w]) for w in wins])
    sb = _best(lambda: st.encode(wins))
    rows.append((f"sentence-transformers, torch CPU ({threads} threads)", load_st, s1, sb))
    torch.set_num_threads(1)
    t1 = _best(lambda: [st.encode([w]) for w in wins])
    tb = _best(lambda: st.encode(wins))
    torch.set_num_threads(threads)
    rows.append(("sentence-transformers, torch CPU (1 thread)", load_st, t1, tb))
    a, b = ours.encode(wins), st.encode(wins)
    cos = float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())
    toks = sum(len(ours.token_ids(w)) for w in wins) / n
    print("\n## 1. the encoder: per 1,000-char window (%.0f tokens on average), CPU ms (wall ms)".replace("%.0f", f"{toks:.0f}"))
    print(f"| route | load | one at a time | one batch of {n} |")
    print("|---|---|---|---|")
    for name, load, one, batch in rows:
        print(f"| {name} | {load:.2f} s | {one[1] / n * 1000:.0f} ({one[0] / n * 1000:.0f}) | "
              f"{batch[1] / n * 1000:.0f} ({batch[0] / n * 1000:.0f}) |")
    print(f"| ratio memdeck / torch 1 thread, CPU | | {o1[1] / t1[1]:.2f}x | {ob[1] / tb[1]:.2f}x |")
    print(f"min cosine memdeck vs sentence-transformers over these windows: {cos:.7f}")
    return {"st": st}


def part_region(st) -> None:
    from memdeck.core.anchors import encoder as E
    from memdeck.core.anchors.audit import build_windows, run_audit
    from memdeck.core.config import MemlockConfig
    from memdeck.core.deck import db as deckdb

    region = _region(800)
    cfg = MemlockConfig(detection="semantic", embedding_model=str(E.package_model_folder()))
    tmp = Path(tempfile.mkdtemp(prefix="memdeck-bench-sem-"))
    try:
        home = tmp / "home"
        home.mkdir()
        deckdb.connect(home).close()
        E.clear_process_cache()
        enc, _ = E.semantic_encoder(cfg, home)  # loads and verifies (hashes) once
        t, c = time.perf_counter(), time.process_time()
        cold = run_audit(ANCHORS, region, cfg, encoder=enc, home=home)
        t_cold, c_cold = time.perf_counter() - t, time.process_time() - c
        n_cold = enc.computed
        t = time.perf_counter()
        run_audit(ANCHORS, region, cfg, encoder=enc, home=home)
        t_again = time.perf_counter() - t
        E.clear_process_cache()
        t, c = time.perf_counter(), time.process_time()
        enc2, _ = E.semantic_encoder(cfg, home)  # a later launch: load + remembered verification
        later = run_audit(ANCHORS, region, cfg, encoder=enc2, home=home)
        t_later, c_later = time.perf_counter() - t, time.process_time() - c
        assert {k: v.alive for k, v in later.items()} == {k: v.alive for k, v in cold.items()}
        windows = build_windows(region, 1000)
        t, c = time.perf_counter(), time.process_time()
        st.encode(windows)
        st.encode([a["text"] for a in ANCHORS])
        t_st, c_st = time.perf_counter() - t, time.process_time() - c
        size = deckdb.db_path(home).stat().st_size
        print("\n## 2. one audit of an 800-message active region ({len(windows)} windows kept of {len(region)} messages)")
        print("| run | CPU | wall | texts embedded |")
        print("|---|---|---|---|")
        print(f"| MemLock (sentence-transformers, at every audit) | {c_st:.2f} s | {t_st:.2f} s | {len(windows) + len(ANCHORS)} |")
        print(f"| memdeck, cold (nothing cached) | {c_cold:.2f} s | {t_cold:.2f} s | {n_cold} |")
        print(f"| memdeck, the same region again in the process | | {t_again * 1000:.1f} ms | {enc.computed - n_cold} |")
        print(f"| memdeck, a later launch (model load + vectors from memdeck.db) | {c_later:.2f} s | {t_later:.2f} s | {enc2.computed} |")
        print(f"memdeck.db after caching {n_cold} vectors: {size / 1024:.0f} KiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


LATER = r"""
import dataclasses, json, sys, time
t0 = time.perf_counter()
from pathlib import Path
from memdeck.core.anchors.encoder import package_model_folder
from memdeck.core.anchors.lifecycle import audit_session
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.deck.db import DeckDB
from memdeck.core.home import HermesHome
from memdeck.core.sessions.statedb import StateDB
home = HermesHome(Path(sys.argv[1])); sid = sys.argv[2]; mode = sys.argv[3]
cfg = load_config(home)
if mode == "semantic":
    cfg = dataclasses.replace(cfg, memlock=dataclasses.replace(cfg.memlock, detection="semantic",
                                                               embedding_model=str(package_model_folder())))
t1 = time.perf_counter()
with DeckDB(home).bound(), StateDB(home.state_db) as db:
    sa = audit_session(db, AnchorStore(home, cfg), sid, cfg)
t2 = time.perf_counter()
print(json.dumps({"total": t2 - t0, "audit": t2 - t1, "method": sa.method, "pending": sa.pending,
                  "points": len(sa.history), "compactions": sa.compactions}))
"""


def _later(home: Path, sid: str, mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", LATER, str(home), sid, mode], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def part_home(home: Path) -> None:
    from memdeck.core.anchors import encoder as E
    from memdeck.core.anchors import integrity_history as H
    from memdeck.core.anchors.lifecycle import audit_session
    from memdeck.core.anchors.store import AnchorStore
    from memdeck.core.config import load_config
    from memdeck.core.deck import db as deckdb
    from memdeck.core.deck.db import DeckDB
    from memdeck.core.home import HermesHome
    from memdeck.core.overview.snapshot import SEMANTIC_BUDGET_S
    from memdeck.core.sessions.statedb import StateDB

    info = json.loads((home / ".built").read_text())
    sid = info["live_session"]
    h = HermesHome(home)
    for suffix in ("", "-wal", "-shm"):  # the benchmark's own home: start from an empty memdeck.db
        Path(str(deckdb.db_path(h)) + suffix).unlink(missing_ok=True)
    deckdb.connect(h).close()
    kw = _later(home, sid, "keyword")  # fills the keyword caches (tracks, verdicts) as a first launch would
    kw = _later(home, sid, "keyword")  # the keyword peer: a later launch
    cfg = load_config(h)
    cfg = dataclasses.replace(cfg, memlock=dataclasses.replace(cfg.memlock, detection="semantic",
                                                               embedding_model=str(E.package_model_folder())))
    E.clear_process_cache()
    H.clear_process_cache()
    refreshes, first_screen, total = 0, None, 0.0
    pending = None
    deck = DeckDB(h)
    with deck.bound(), StateDB(h.state_db) as db:
        store = AnchorStore(h, cfg)
        while pending != 0:
            t = time.perf_counter()
            sa = audit_session(db, store, sid, cfg, budget_s=SEMANTIC_BUDGET_S)
            dt = time.perf_counter() - t
            refreshes += 1
            total += dt
            if first_screen is None:
                first_screen = (dt, sa.compactions - sa.pending, sa.compactions)
            pending = sa.pending
            if refreshes % 20 == 0:
                print(f"  … {refreshes} refreshes, {sa.compactions - sa.pending}/{sa.compactions} compactions, "
                      f"{total:.0f} s", file=sys.stderr, flush=True)
    deck.close()
    with deckdb.connect(h) as c:
        n_vec = c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        n_ver = c.execute("SELECT COUNT(*) FROM audit_verdicts").fetchone()[0]
    later = _later(home, sid, "semantic")
    size = deckdb.db_path(h).stat().st_size
    print(f"\n## 3. the first semantic history of the {info['rows']:,}-row home ({sa.compactions} compactions "
          f"of the live session)")
    print("| step | wall | detail |")
    print("|---|---|---|")
    print(f"| dashboard: first refresh (budget {SEMANTIC_BUDGET_S:.0f} s of embedding) | {first_screen[0]:.1f} s | "
          f"{first_screen[1]} of {first_screen[2]} compactions on screen, newest first |")
    print(f"| dashboard: refreshes until the history is complete | {total:.0f} s in all | {refreshes} refreshes, "
          f"{n_vec:,} windows embedded once, {n_ver:,} verdict rows |")
    print("| a later launch, semantic (fresh process: imports, weights check and vectors read from memdeck.db, audit; "
          f"the model is not loaded) | {later['total']:.2f} s "
          f"(audit {later['audit']:.2f} s) | {later['points']} history points, pending {later['pending']}, {later['method']} |")
    print(f"| the peer: a later launch, keyword (fresh process) | {kw['total']:.2f} s (audit {kw['audit']:.2f} s) | "
          f"{kw['points']} history points |")
    print(f"| ratio semantic / keyword later launch (audit) | {later['audit'] / max(kw['audit'], 1e-9):.2f}x | |")
    print(f"\n## 4. memdeck.db: {size / 1e6:.1f} MB after {n_vec:,} cached vectors (1,536 B each + key)")


def main() -> int:
    args = sys.argv[1:]
    quick = "--quick" in args
    home = None
    if "--home" in args:
        home = Path(args[args.index("--home") + 1])
    print(f"# bench_semantic ({'quick' if quick else 'full'}); load average {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} cores")
    peers = part_encoder(quick)
    part_region(peers["st"])
    if not quick:
        if home is None:
            import bighome

            home = bighome.build(200_000, root=Path("/work/benchhomes/hermes-200000-g1"), progress=True)
        part_home(home)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
