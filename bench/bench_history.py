"""How long `memdeck history --json --limit 50` takes with 100,000 recorded changes.

Fills a temp home's memdeck.db with 100,000 change rows (the bound, core.history.MAX_CHANGES),
then times the CLI command in-process (observation + re-attribution + query + JSON) and the
query alone. Prints milliseconds (median of 20 runs). Run: python bench/bench_history.py
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from memdeck.core import history
from memdeck.core.cli import main
from memdeck.core.deck import db as deckdb
from memdeck.core.home import HermesHome

N = history.MAX_CHANGES


def fill(home: HermesHome) -> None:
    (home.path / "memories").mkdir(parents=True, exist_ok=True)
    history.observe(home)
    conn = deckdb.connect(home)
    now = time.time() - N
    with deckdb.transaction(conn):
        conn.executemany(
            "INSERT INTO history (kind, target, path, op, before, after, since, until, actor, attribution) "
            "VALUES (?,?,?,?,?,?,?,?,?,?)",
            (("memory", ("memory", "user")[i % 2], "memories/MEMORY.md", "replaced", f"old entry {i} " * 8,
              f"new entry {i} " * 8, now + i - 1, now + i, ("external", "hermes", "cli")[i % 3],
              json.dumps({"session_id": "s"} if i % 3 == 1 else {})) for i in range(N)))
    conn.close()


def timed(fn) -> float:
    runs = []
    for _ in range(20):
        t = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs)


def run_cli(home: HermesHome) -> None:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["--home", str(home.path), "history", "--json", "--limit", "50"]) == 0
    assert len(json.loads(out.getvalue())) == 50


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        home = HermesHome(Path(d))
        fill(home)
        print(f"changes stored: {N:,}")
        print(f"history --json --limit 50 (CLI, in-process): {timed(lambda: run_cli(home)):.1f} ms")
        print(f"list_changes(limit=50): {timed(lambda: history.list_changes(home, limit=50)):.2f} ms")
        print(f"list_changes(target='user', limit=50): {timed(lambda: history.list_changes(home, target='user', limit=50)):.2f} ms")
        print(f"observe() with nothing changed: {timed(lambda: history.observe(home)):.2f} ms")
