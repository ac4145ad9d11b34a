"""Precision and recall of memdeck's hygiene pair verdicts on the hand-labelled pairs
(tests/fixtures/hygiene/pairs.yaml), per class and language, with a sweep of the semantic
duplicate threshold; and the cost of all findings on a full memory (issue 36).

    python bench/bench_hygiene.py [--lexical]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memdeck.core.hygiene import pairs as P  # noqa: E402
from memdeck.core.hygiene.similarity import LEXICAL, cosine_matrix, hygiene_encoder  # noqa: E402


def load() -> list[dict]:
    return yaml.safe_load((ROOT / "tests/fixtures/hygiene/pairs.yaml").read_text(encoding="utf-8"))["pairs"]


def scores(rows: list[dict], predicted: list[str]) -> dict[str, tuple[float, float, int, int, int]]:
    out = {}
    for cls in (P.DUPLICATE, P.CONTRADICTION):
        tp = sum(1 for r, p in zip(rows, predicted) if p == cls and r["label"] == cls)
        fp = sum(1 for r, p in zip(rows, predicted) if p == cls and r["label"] != cls)
        fn = sum(1 for r, p in zip(rows, predicted) if p != cls and r["label"] == cls)
        out[cls] = (tp / max(1, tp + fp), tp / max(1, tp + fn), tp, fp, fn)
    return out


def main() -> int:
    rows = load()
    enc = hygiene_encoder(None, allow_semantic="--lexical" not in sys.argv)
    cos = []
    for r in rows:
        m = cosine_matrix(enc, [r["a"], r["b"]])
        cos.append(None if m is None else float(m[0, 1]))
    print(f"method: {enc.method}{' (' + enc.reason + ')' if enc.reason else ''}; {len(rows)} labelled pairs")
    sweep = [None] if enc.method == LEXICAL else [0.70, 0.75, 0.80, 0.85, 0.90, 0.95]
    print("| duplicate cosine | dup precision | dup recall | contradiction precision | contradiction recall |")
    print("|---|---|---|---|---|")
    for t in sweep:
        pred = [P.classify(r["a"], r["b"], c, duplicate_cosine=t if t is not None else 2.0).kind for r, c in zip(rows, cos)]
        s = scores(rows, pred)
        mark = " (shipped)" if t == P.DUPLICATE_COSINE or t is None else ""
        print(f"| {t if t is not None else 'lexical'}{mark} | {s[P.DUPLICATE][0]:.2f} | {s[P.DUPLICATE][1]:.2f} "
              f"| {s[P.CONTRADICTION][0]:.2f} | {s[P.CONTRADICTION][1]:.2f} |")
    pred = [P.classify(r["a"], r["b"], c).kind for r, c in zip(rows, cos)]
    held = [i for i, r in enumerate(rows) if r.get("held_out")]
    s = scores([rows[i] for i in held], [pred[i] for i in held])
    print(f"\nsecond batch only ({len(held)} pairs written after the first thresholds were set; the change-word, instead-of "
          "and function-word rules were added after seeing its misses, so it is no longer held out): duplicate "
          f"{s[P.DUPLICATE][0]:.2f}/{s[P.DUPLICATE][1]:.2f}, contradiction "
          f"{s[P.CONTRADICTION][0]:.2f}/{s[P.CONTRADICTION][1]:.2f} (precision/recall)")
    print("\nper language at the shipped thresholds (precision/recall):")
    for lang in sorted({r["lang"] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r["lang"] == lang]
        s = scores([rows[i] for i in idx], [pred[i] for i in idx])
        print(f"  {lang}: duplicate {s[P.DUPLICATE][0]:.2f}/{s[P.DUPLICATE][1]:.2f}, "
              f"contradiction {s[P.CONTRADICTION][0]:.2f}/{s[P.CONTRADICTION][1]:.2f}")
    wrong = [(r, p, c) for r, p, c in zip(rows, pred, cos) if p != r["label"]]
    for r, p, c in wrong:
        print(f"  miss: {r['label']} -> {p} cos={c if c is None else round(c, 2)}: {r['a']!r} / {r['b']!r}")
    if "--cost" in sys.argv:
        cost()
    return 0


def _full_home(root: Path) -> Path:
    """MEMORY.md and USER.md filled to their char limits with realistic entries, 200 archived."""
    import random

    from memdeck.core.deck.archive import insert
    from memdeck.core.deck.db import connect

    rng = random.Random(7)
    rows = load()
    texts = [r[k] for r in rows for k in ("a", "b")]
    (root / "memories").mkdir(parents=True)
    (root / "config.yaml").write_text("model: {}\n", encoding="utf-8")
    for name, limit in (("MEMORY.md", 2200), ("USER.md", 1375)):
        out: list[str] = []
        while True:
            t = f"{rng.choice(texts)} (note {rng.randrange(10_000)})"
            if len("\n§\n".join([*out, t])) > limit:
                break
            out.append(t)
        (root / "memories" / name).write_text("\n§\n".join(out), encoding="utf-8")
    conn = connect(root)
    with conn:
        for i in range(200):
            insert(conn, kind="memory", target="memory", text=f"archived {i}: {rng.choice(texts)}", actor="cli",
                   reason="bench", payload={}, state="archived")
    conn.close()
    return root


def cost() -> None:
    """All findings of a full memory and 200 archived entries, each method, in fresh processes
    (the semantic one twice: the first embeds, the second reads the vectors from memdeck.db)."""
    import subprocess
    import tempfile

    home = _full_home(Path(tempfile.mkdtemp(prefix="memdeck-hygiene-bench-")) / "home")
    code = ("import sys,time; from memdeck.core.home import HermesHome; "
            "from memdeck.core.hygiene.detect import hygiene_report; h=HermesHome(__import__(\"pathlib\").Path(sys.argv[1])); "
            "t=time.perf_counter(); r=hygiene_report(h, semantic=sys.argv[2]=='1'); "
            "print(r.method, len(r.findings), round((time.perf_counter()-t)*1000, 1))")
    for label, sem in (("lexical", "0"), ("semantic, first (embeds)", "1"), ("semantic, again (cached)", "1")):
        out = subprocess.run([sys.executable, "-c", code, str(home), sem], capture_output=True, text=True, check=True)
        method, n, ms = out.stdout.split()
        print(f"cost: {label}: {ms} ms for {n} findings ({method})")


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"({time.perf_counter() - t0:.1f} s)")
    sys.exit(rc)
