"""Precision and recall of memdeck's constraint ledger per class (kept, weakened, lost, promoted)
on the hand-labelled rule / summary-line pairs, keyword and semantic (issue 34), reported for each
set separately:

* ``tuned``: tests/fixtures/constraints/pairs.yaml, the set the keyword rule was tuned on;
* ``held-out``: tests/fixtures/constraints/heldout.yaml, written after that tuning and never used
  for it (its figures are the honest estimate).

    python bench/bench_constraints.py [--keyword] [--set tuned|held-out]
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


def main() -> int:
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
