"""Precision and recall of memdeck's constraint ledger per class (kept, weakened, lost, promoted)
on the hand-labelled rule / summary-line pairs, keyword and semantic (issue 34), reported for each
set separately:

* ``tuned``: tests/fixtures/constraints/pairs.yaml, the set the keyword rule was tuned on;
* ``held-out``: tests/fixtures/constraints/heldout.yaml, written after that tuning and never used
  for it (its figures are the honest estimate).

    python bench/bench_constraints.py [--keyword] [--set tuned|held-out]
    python bench/bench_constraints.py --home HOME [--session SID] [--semantic N]

``--home``: the cost of the ledger on a real home (e.g. ``python bench/bighome.py 200000``): each
compaction of the live session computed from state.db (keyword; the newest ``N`` semantic too, 5 by
default), in ms (median, p95, max), the whole first ledger, and a read of the kept ledger.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

from memdeck.core.constraints.classify import classify  # noqa: E402
from memdeck.core.constraints.markers import found, imperative_start  # noqa: E402
from memdeck.core.constraints.rules import Rule, scope_of  # noqa: E402
from memdeck.core.constraints.summary import SummaryLine  # noqa: E402


def verdict(case: dict, cosine=None) -> str:
    rule = Rule(case["rule"], 1, scope_of(case["rule"]), tuple(found("binding", case["rule"])) or ("(imperative)",))
    lines = []
    if case.get("line"):
        t = case["line"]
        lines.append(SummaryLine(t, case.get("section", "Constraints & Preferences"),
                                 bool(found("binding", t)) or imperative_start(t)))
    items = [i for i in classify([rule], lines, cosine=cosine) if i.rule is not None]
    return items[0].verdict if items else "dropped"


SETS = {"tuned": "tests/fixtures/constraints/pairs.yaml", "held-out": "tests/fixtures/constraints/heldout.yaml"}


def report(name: str, cases: list[dict], cosine, method: str) -> None:
    pred = [verdict(c, cosine) for c in cases]
    print(f"\n### {name} set ({SETS[name]}): method {method}, {len(cases)} labelled pairs, "
          f"{len({c['lang'] for c in cases})} languages")
    print("| class | precision | recall | tp | fp | n |")
    print("|---|---|---|---|---|---|")
    for cls in ("kept", "weakened", "lost", "promoted"):
        tp = sum(1 for c, p in zip(cases, pred) if p == cls and c["label"] == cls)
        fp = sum(1 for c, p in zip(cases, pred) if p == cls and c["label"] != cls)
        n = sum(1 for c in cases if c["label"] == cls)
        print(f"| {cls} | {tp / max(1, tp + fp):.2f} | {tp / max(1, n):.2f} | {tp} | {fp} | {n} |")
    for c, p in zip(cases, pred):
        if p != c["label"]:
            print(f"  miss ({c['lang']}): {c['label']} -> {p}: {c['rule']!r} / {c.get('line')!r}")


def timing(home_path: str, session: str | None, semantic_n: int) -> int:
    import statistics

    from memdeck.core.constraints import ledger as L
    from memdeck.core.home import HermesHome
    from memdeck.core.sessions.statedb import StateDB

    home = HermesHome(Path(home_path))
    with StateDB(home.state_db) as db:
        t0 = time.perf_counter()
        sid = session or (db.live_session().id if db.live_session() is not None else db.sessions(limit=1)[0].id)
        events = [e for e in db.compactions(sid) if e.session_id == sid]
        t_events = time.perf_counter() - t0
        spans = L._spans(events)
        rows = db.message_count()
        print(f"home {home_path}: {rows:,} rows in state.db; session {sid}: {len(spans)} compactions "
              f"(events read in {t_events * 1000:.0f} ms)")

        def run(cosine, method, which):
            ms, items = [], 0
            for ev, s, e in which:
                t = time.perf_counter()
                entry = L._compute(db, ev, s, e, cosine, method)
                ms.append((time.perf_counter() - t) * 1000)
                items += len(entry["items"])
            ms.sort()
            p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
            print(f"| {method} | {len(ms)} | {statistics.median(ms):.1f} | {p95:.1f} | {ms[-1]:.1f} | {sum(ms) / 1000:.2f} s "
                  f"| {items} |")

        print("| method | compactions | median ms | p95 ms | max ms | total | items |")
        print("|---|---|---|---|---|---|---|")
        run(None, "keyword", spans)
        if semantic_n:
            cosine, method = L._cosine(None, True)
            if method == "semantic":
                run(cosine, "semantic", spans[-semantic_n:])
            else:
                print("(semantic: the semantic extra or its model is not available)")
        L.clear_process_cache()
        t = time.perf_counter()
        first = L.session_ledger(db, None, None, sid, semantic=False)
        t_first = time.perf_counter() - t
        t = time.perf_counter()
        L.session_ledger(db, None, None, sid, semantic=False)
        t_kept = time.perf_counter() - t
        print(f"first full keyword ledger (session_ledger): {t_first:.2f} s; read again (every ledger kept): "
              f"{t_kept * 1000:.0f} ms; counts {L.counts(first)}")
    return 0


def main() -> int:
    if "--home" in sys.argv:
        a = sys.argv
        return timing(a[a.index("--home") + 1], a[a.index("--session") + 1] if "--session" in a else None,
                      int(a[a.index("--semantic") + 1]) if "--semantic" in a else 5)
    names = list(SETS)
    if "--set" in sys.argv:
        names = [sys.argv[sys.argv.index("--set") + 1]]
    cosine = None
    method = "keyword"
    if "--keyword" not in sys.argv:
        from memdeck.core.hygiene.similarity import SEMANTIC, cosine_matrix, hygiene_encoder

        enc = hygiene_encoder(None)
        if enc.method == SEMANTIC:
            method = "semantic"

            def cosine(a: str, b: str) -> float:
                return float(cosine_matrix(enc, [a, b])[0, 1])
    for name in names:
        cases = yaml.safe_load((ROOT / SETS[name]).read_text(encoding="utf-8"))["pairs"]
        report(name, cases, cosine, method)
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"({time.perf_counter() - t0:.1f} s)")
    sys.exit(rc)
