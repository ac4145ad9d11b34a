"""A big Hermes home of the real long-lived shape, for the core benchmarks of issue 9.

    python bench/bighome_core.py 200000        # prints the home's path (built once, cached)

The demo home (memory files, config, MemLock anchors pinned on the live session, older
sessions) plus, appended to its live session, ``n`` messages written the way Hermes writes
them (user / assistant / tool turns through the Hermes 0.19-shaped writer in
``core.sessions.hermes_schema``, FTS triggers on) with an in-place compaction
(``compact_in_place``: protect_first_n 3, tail 20) every ~800 active rows: ~245 compactions
at 200k, ~1,240 at 1M. A few other sessions are written beside it. Cached under
``~/.cache/memdeck-bench/perf9-<n>/`` (a finished build leaves ``.built``).

If the branch ``h-bench`` generator (bench/bighome.py, driving Hermes' own SessionDB) is
present, prefer it; this one exists so the core work can be measured without it.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memdeck.core.demo import build_demo_home, demo_plan
from memdeck.core.home import HermesHome
from memdeck.core.sessions import hermes_schema as hs

CACHE = Path.home() / ".cache" / "memdeck-bench"
WORDS = [
    "kubernetes", "deploy", "rollout", "grafana", "prometheus", "invoice", "budget", "travel", "paris", "python", "rust",
    "async", "database", "index", "vacuum", "migration", "schema", "anchor", "memory", "drift", "summary", "compaction",
    "session", "profile", "cron", "telegram", "discord", "slack", "weather", "garden", "recipe", "bread", "yeast", "flour",
    "guitar", "chord", "tempo", "marathon", "training", "interval", "the", "and", "of", "to", "in", "is", "it", "that",
    "for", "on", "with", "as",
]
CJK = ("東京の天気", "データベース移行", "会議の議事録", "机器学习模型", "部署回滚")


def _text(rnd: random.Random, n_words: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n_words))


def build(n: int, *, every: int = 800, seed: int = 9) -> HermesHome:
    """Build (or reuse) the home with ``n`` appended live-session messages; returns it."""
    root = CACHE / f"perf9-{n}"
    if (root / ".built").exists():
        return HermesHome(root)
    if root.exists():
        import shutil
        shutil.rmtree(root)
    plan = demo_plan()
    home = build_demo_home(root)
    sid = plan.live_session_id
    rnd = random.Random(seed)
    conn = hs.connect(home.state_db)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (sid,))
    t = time.time() - n * 2.0
    others = [f"bench_other_{i}" for i in range(5)]
    for i, o in enumerate(others):
        hs.add_session(conn, o, source="cli", title=f"other {i}", started_at=t + i)
        hs.end_session(conn, o, "cli_close", ended_at=t + i + 1)
    written = 0
    live = len(hs.active_messages(conn, sid))
    k = 0
    while written < n:
        conn.execute("BEGIN")
        for _ in range(min(200, n - written)):
            t += 2.0
            r = written % 4
            if written % 997 == 0:
                content = f"rare identifier ZX{written:07d}Q and {rnd.choice(CJK)} {_text(rnd, 8)}"
                role = "user"
            elif r == 0:
                role, content = "user", _text(rnd, rnd.randint(5, 30))
            elif r == 1:
                role, content = "assistant", _text(rnd, rnd.randint(20, 120))
            elif r == 2:
                role, content = "tool", _text(rnd, rnd.randint(10, 200))
            else:
                role, content = "assistant", _text(rnd, rnd.randint(10, 60))
            conn.execute(hs._INSERT_SQL, hs._row_values(sid, {"role": role, "content": content,
                                                              "tool_name": "terminal" if role == "tool" else None}, t))
            written += 1
            live += 1
            if written % 2000 == 0:
                o = others[written // 2000 % len(others)]
                conn.execute(hs._INSERT_SQL, hs._row_values(o, {"role": "user", "content": _text(rnd, 12)}, t + 0.5))
        conn.execute("COMMIT")
        if live >= every:
            k += 1
            live = hs.compact_in_place(conn, sid, f"## Goal\nbench compaction {k}: {_text(rnd, 60)}",
                                       keep_head=3, keep_tail=20, now=t + 1.0)
    conn.execute("UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 1)"
                 " WHERE id = ?", (sid, sid))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for side in ("-wal", "-shm"):
        p = Path(str(home.state_db) + side)
        if p.exists():
            p.unlink()
    (root / ".built").write_text(f"{n} {k}\n")
    return home


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    t0 = time.perf_counter()
    h = build(n)
    print(h.state_db.parent, f"({time.perf_counter() - t0:.1f} s)")
