"""Benchmark live memory's cost per turn in the plugin's ``pre_llm_call`` (issue 33).

    python bench/bench_live_memory.py [N] [--turns 2000]   # N live-session rows (default 1,000,000)

Home: bench/bighome_core.py's cached home of N rows (the demo home: memory files, config, MemLock
anchors on the live session, ~1,240 in-place compactions at 1M). The hook is the real plugin
callback (``core.plugin.entry.register`` with a recording context), called with the live session's
id and a 100-message history, so every number includes the exception guards and MemLock's guard.

Rows (milliseconds per turn, p50 / p95 over ``--turns`` turns):

* the guard alone (``memdeck.live_memory: off``): MemLock's quiet-turn cost, for comparison;
* the whole hook with live memory on (``notice``) and nothing changed: the common steady state;
* live memory's own part alone on a quiet turn (``LIVE.pre_llm_call``): the added time per turn;
* a turn after MEMORY.md changed (each turn appends an entry): the stored prompt read from state.db
  (``mode=ro``, by session id), the diff, the block and the memdeck.db record.

MEMORY.md and the bench session's delivery rows are put back afterwards (the cached home is reused).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bighome_core

from memdeck.core.deck import db as deckdb
from memdeck.core.demo import demo_plan
from memdeck.core.plugin import entry as plugin_entry


class Ctx:
    def __init__(self) -> None:
        self.hooks: dict[str, object] = {}

    def register_hook(self, name: str, cb: object) -> None:
        self.hooks[name] = cb

    def register_tool(self, *a: object, **k: object) -> None:
        pass

    def register_command(self, *a: object, **k: object) -> None:
        pass


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def measure(fn, n: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    runs = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs), pct(runs, 95)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=1_000_000)
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--home", type=Path, default=None, help="an existing home of that shape (not rebuilt)")
    args = ap.parse_args()
    from memdeck.core.home import HermesHome

    home = HermesHome(args.home) if args.home else bighome_core.build(args.n)
    os.environ["HERMES_HOME"] = str(home.path)
    sid = demo_plan().live_session_id
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "x" * 400}
               for i in range(100)]
    config_before = home.config_path.read_bytes()
    mem_before = home.memory_file("memory").read_bytes()
    rows: list[tuple[str, float, float]] = []
    try:
        home.config_path.write_bytes(config_before + b"\nmemdeck:\n  live_memory: off\n")
        ctx = Ctx()
        plugin_entry.register(ctx)
        pre = ctx.hooks["pre_llm_call"]
        pre(session_id=sid, conversation_history=history, user_message="warm")  # type: ignore[operator]
        rows.append(("guard alone (live_memory: off), quiet turn",
                     *measure(lambda i: pre(session_id=sid, conversation_history=history, user_message="q"), args.turns)))  # type: ignore[operator]
        home.config_path.write_bytes(config_before + b"\nmemdeck:\n  live_memory: notice\n")
        pre(session_id=sid, conversation_history=history, user_message="warm")  # type: ignore[operator]
        rows.append(("whole hook, live memory on, nothing changed",
                     *measure(lambda i: pre(session_id=sid, conversation_history=history, user_message="q"), args.turns)))  # type: ignore[operator]
        live = plugin_entry.LIVE
        assert live is not None
        rows.append(("live memory's part alone, nothing changed (added time per turn)",
                     *measure(lambda i: live.pre_llm_call(session_id=sid, conversation_history=history,
                                                          user_message="q"), args.turns)))
        assert live.last is not None and live.last.skipped == "unchanged", live.last
        mem = home.memory_file("memory")
        texts: list[str] = []

        def changed(i: int) -> None:
            with open(mem, "a", encoding="utf-8") as fh:
                fh.write(f"\n§\nbench entry {i}")
            texts.append(str(live.pre_llm_call(session_id=sid, conversation_history=history, user_message="q")))

        n_change = max(20, args.turns // 20)
        rows.append((f"live memory's part, MEMORY.md changed before each turn ({n_change} turns)", *measure(changed, n_change)))
        assert all("1 added" in t for t in texts), texts[:3]  # each turn delivered exactly its new entry
    finally:
        home.config_path.write_bytes(config_before)
        home.memory_file("memory").write_bytes(mem_before)
        with deckdb.opened(home) as conn, deckdb.transaction(conn):
            conn.execute("DELETE FROM live_deliveries WHERE session_id = ?", (sid,))
    import sqlite3

    size = os.path.getsize(home.state_db)
    with sqlite3.connect(f"file:{home.state_db}?mode=ro", uri=True) as c:
        rows_n = c.execute("SELECT max(id) FROM messages").fetchone()[0]
    print(f"home: {home.path}: {rows_n:,} message rows, state.db {size / 1e6:.0f} MB, session {sid}")
    print(f"| {'row':<72} | p50 ms | p95 ms |")
    print(f"|{'-' * 74}|--------|--------|")
    for name, p50, p95 in rows:
        print(f"| {name:<72} | {p50:6.3f} | {p95:6.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
