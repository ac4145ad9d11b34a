"""Benchmark the plugin area: ``pre_llm_call`` cost per turn, with and without a compaction.

    python bench/bench_plugin.py [--quick] [--out bench/results/plugin.md]

Setup: a temp Hermes home, one session with 16 pinned anchors (5 probes each), a conversation
whose active region is 200,000 chars (100 messages of 2,000) after a compaction summary.
The hook is the real plugin callback (``core.hermes_plugin.register`` with a recording
context), so every number includes the exception guard, the config stat, the session-file
stat/reload, the history scan and, on compaction turns, the audit, the locked read-modify-write
and the fsync'ed atomic write.

Rows:
* quiet turn, no summary in the history;
* quiet turn, the same summary as last time (hash equal: no audit) - the common steady state;
* compaction turn, a new summary body every turn (audit + drift log + reminder block + write);
* for comparison, what persisting ``turn_count`` every turn would cost (one locked RMW write,
  MemLock >= 694ec32 does a save per turn) - the write memdeck moves to ``on_session_end``.

Semantic mode uses a fake deterministic encoder (hash-seeded 384-dim vectors; no model) so the
numbers measure memdeck's own work; a real sentence-transformers model adds its encoding time.
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

from memdeck.core.anchors.model import Anchor
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.plugin import entry as hermes_plugin
from memdeck.core.sessions.compaction import SUMMARY_PREFIX_0_19

SID = "bench_session"
N_ANCHORS = 16
ACTIVE_CHARS = 200_000
MSG_CHARS = 2_000


class Ctx:
    def __init__(self) -> None:
        self.hooks: dict[str, object] = {}

    def register_hook(self, name, cb):
        self.hooks[name] = cb

    def register_tool(self, *a, **k):
        pass

    def register_command(self, *a, **k):
        pass


WORDS = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike",
    "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee",
    "zulu",
]


def active_region() -> list[dict]:
    msgs = []
    n = ACTIVE_CHARS // MSG_CHARS
    for i in range(n):
        text = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(MSG_CHARS // 6))
        text = (text + " " + "x" * MSG_CHARS)[:MSG_CHARS]
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    # half of the anchors survive: their probes appear in the active region
    extra = " " + " ".join(f"kwsurv{k}x" for k in range(N_ANCHORS // 2))
    msgs[-1]["content"] = msgs[-1]["content"][: MSG_CHARS - len(extra)] + extra
    return msgs


def make_home(root: Path, detection: str) -> HermesHome:
    home = HermesHome(root / detection)
    (home.path / "memories").mkdir(parents=True)
    home.config_path.write_text(f"memlock:\n  detection: {detection}\n  hard_reinject_turns: 0\n", encoding="utf-8")
    store = AnchorStore(home, load_config(home), actor="bench")

    def mutate(s):
        for k in range(N_ANCHORS):
            probe = f"kwsurv{k}x" if k < N_ANCHORS // 2 else f"kwgone{k}x"
            s.add(Anchor(id=f"pin_{k:08x}", text=f"Standing instruction {k}: always mention {probe} when relevant.",
                         reminder=f"Instruction {k}", priority=50 + k, probes=[probe]))

    store.update_session(SID, mutate)
    return home


def pct(runs: list[float], p: float) -> float:
    s = sorted(runs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def measure(fn, n: int) -> tuple[float, float]:
    runs = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs), pct(runs, 99)


def bench_mode(root: Path, detection: str, quiet_n: int, comp_n: int) -> list[tuple[str, str, float, float, str]]:
    import os

    home = make_home(root, detection)
    os.environ["HERMES_HOME"] = str(home.path)
    ctx = Ctx()
    hermes_plugin.register(ctx)
    guard = hermes_plugin.GUARD
    if detection == "semantic":
        guard.encoder = FakeEncoder()
    pre = ctx.hooks["pre_llm_call"]
    active = active_region()
    system = {"role": "system", "content": "You are Hermes."}
    summary = {"role": "user", "content": SUMMARY_PREFIX_0_19 + " the first summary"}
    base = [system, {"role": "user", "content": "old"}, summary] + active
    no_summary = [system] + active
    assert sum(len(m["content"]) for m in active) >= ACTIVE_CHARS

    rows = []
    pre(session_id=SID, conversation_history=base, user_message="go")  # records the first summary
    p50, p99 = measure(lambda i: pre(session_id=SID, conversation_history=no_summary, user_message="q"), quiet_n)
    rows.append((detection, "quiet turn, no summary in history", p50, p99, "no audit, no write"))
    p50, p99 = measure(lambda i: pre(session_id=SID, conversation_history=base, user_message="q"), quiet_n)
    rows.append((detection, "quiet turn, same summary as last turn", p50, p99, "hash equal: no audit, no write"))

    injected = []

    def compaction_turn(i: int) -> None:
        h = [system, {"role": "user", "content": "old"},
             {"role": "user", "content": SUMMARY_PREFIX_0_19 + f" summary number {i}"}] + active
        res = pre(session_id=SID, conversation_history=h, user_message="q")
        injected.append(res)

    p50, p99 = measure(compaction_turn, comp_n)
    out = guard.last_outcome
    assert out is not None and out.audited and out.compaction, out
    rows.append((detection, "compaction turn (new summary every turn)", p50, p99,
                 f"audit of {N_ANCHORS} anchors, score {out.score}%, {len(out.injected)} re-injected, 1 write"))
    store = guard.store
    p50, p99 = measure(lambda i: store.update_session(SID, lambda s: setattr(s, "turn_count", s.turn_count + 1)), quiet_n)
    rows.append((detection, "(reference) persist turn_count each turn", p50, p99, "locked RMW + fsync'ed atomic write"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer turns")
    ap.add_argument("--out", default=None, help="also write the markdown table here (default: bench/results/plugin.md unless --quick)")
    args = ap.parse_args(argv)
    quiet_n, comp_n = (50, 10) if args.quick else (500, 60)
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for detection in ("keyword", "semantic"):
            rows += bench_mode(Path(tmp), detection, quiet_n, comp_n)
    header = (f"pre_llm_call per turn: {N_ANCHORS} anchors, active region {ACTIVE_CHARS:,} chars "
              f"({ACTIVE_CHARS // MSG_CHARS} messages), {quiet_n} quiet / {comp_n} compaction turns per row; "
              f"semantic = fake deterministic encoder\n")
    lines = [header, "| detection | turn | p50 (ms) | p99 (ms) | work |", "|---|---|---:|---:|---|"]
    lines += [f"| {d} | {t} | {a:.3f} | {b:.3f} | {w} |" for d, t, a, b, w in rows]
    table = "\n".join(lines)
    print(table)
    out = args.out or (None if args.quick else str(Path(__file__).resolve().parent / "results" / "plugin.md"))
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text("# bench_plugin\n\n" + table + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
