"""The change history under concurrency (issue 40 item 4): a history row is one writer's change,
timed after memdeck.db's lock is taken.

* Two observers, real processes: one reads the clock and waits for memdeck.db's write lock while
  the other records a change (a hook in the first process holds it at the lock until the second
  is done, no sleeps); the first then records the next change. Old code: its row ended before it
  started (``until`` read before the wait, ``since`` is the other's later ``seen_at``).
* A memdeck write killed between its file replace and its ``done`` commit (tests/crashpoints.py),
  then Hermes 0.19's real MemoryStore removing another entry on top: old code filed both as one
  ``external`` ``replaced`` row (a revert would undo both); now memdeck's add is memdeck's row and
  Hermes' removal is Hermes' row, also after recovery settles the killed write.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.history.observation import observe
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore, recover_intents
from tests.conftest import requires_hermes
from tests.crashpoints import CRASH_STATUS, crash_points, run_in_child
from tests.helpers.memory import run_hermes

pytestmark = [requires_hermes, pytest.mark.interop]

HERMES_WRITE = """
import json, sys
from tools.memory_tool import MemoryStore
s = MemoryStore(); s.load_from_disk()
action, arg = sys.argv[1], sys.argv[2]
r = s.add("memory", arg) if action == "add" else s.remove("memory", arg)
print(json.dumps(r.get("success")))
"""


def _hermes(home: HermesHome, action: str, arg: str) -> None:
    proc = run_hermes(home, HERMES_WRITE, action, arg)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "true", proc.stderr[-2000:]


def _history(home: HermesHome) -> list[sqlite3.Row]:
    conn = sqlite3.connect(f"file:{deckdb.db_path(home)}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM history WHERE kind = 'memory' ORDER BY change_id").fetchall()
    finally:
        conn.close()


def _observer_held_at_the_lock(home_path: str, at_lock: Any, go: Any) -> None:  # pragma: no cover - child
    """observe(), held (by a hook) just before it takes memdeck.db's write lock for its rows."""
    import memdeck.core.deck.db as deck

    real = deck.transaction

    @contextmanager
    def held(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        if sys._getframe(2).f_code.co_name == "observe" and not at_lock.is_set():
            at_lock.set()
            if not go.wait(120):
                raise SystemExit(3)
        with real(conn) as c:
            yield c

    deck.transaction = held  # type: ignore[assignment]
    observe(HermesHome(Path(home_path)))


def test_an_observer_that_waited_for_the_lock_never_ends_a_row_before_it_starts(hermes_home: HermesHome) -> None:
    MemoryStore(hermes_home, Config()).add("memory", "alpha fact")
    observe(hermes_home)  # the baseline
    _hermes(hermes_home, "add", "hermes one")
    ctx = multiprocessing.get_context("fork")
    at_lock, go = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_observer_held_at_the_lock, args=(str(hermes_home.path), at_lock, go))
    child.start()
    try:
        assert at_lock.wait(120), "the observer never reached memdeck.db's lock"
        first = observe(hermes_home)  # another observer records "hermes one" meanwhile
        assert [(c.op, c.after) for c in first] == [("added", "hermes one")]
        _hermes(hermes_home, "add", "hermes two")  # and a change for the waiting one to find
    finally:
        go.set()
        child.join(120)
    assert child.exitcode == 0
    rows = _history(hermes_home)
    two = [r for r in rows if r["after"] == "hermes two"]
    assert len(two) == 1 and two[0]["since"] == first[0].until
    bad = [(r["change_id"], r["after"], r["since"], r["until"]) for r in rows
           if r["since"] is not None and r["until"] < r["since"]]
    assert not bad, f"rows that end before they start: {bad}"


def _killed_after_its_file_replace(home: HermesHome, scratch: Path) -> None:
    """``memdeck memory add "memdeck fact"`` killed after MEMORY.md was replaced, before ``done``."""
    copy = HermesHome(scratch / "dry")
    shutil.copytree(home.path, copy.path)
    steps, log = crash_points(lambda: MemoryStore(copy, Config()).add("memory", "memdeck fact"))
    replaced = next(i for i, what in enumerate(log, 1) if what.split()[0] in ("replace", "rename")
                    and what.split()[-1] == "MEMORY.md")
    assert replaced < steps, log
    status, _, child_log = run_in_child(lambda: MemoryStore(home, Config()).add("memory", "memdeck fact"),
                                        replaced + 1)
    assert status == CRASH_STATUS, child_log[-1:]


def test_a_killed_memdeck_write_and_a_hermes_write_on_top_are_two_writers_rows(
        hermes_home: HermesHome, tmp_path: Path) -> None:
    MemoryStore(hermes_home, Config()).add("memory", "alpha fact")
    MemoryStore(hermes_home, Config()).add("memory", "beta fact")
    observe(hermes_home)  # the baseline
    base = len(_history(hermes_home))
    _killed_after_its_file_replace(hermes_home, tmp_path)
    _hermes(hermes_home, "remove", "alpha")  # Hermes' own write lands on top of memdeck's
    observe(hermes_home)

    def check() -> None:
        rows = _history(hermes_home)[base:]
        got = sorted((r["op"], r["before"], r["after"], r["actor"]) for r in rows)
        assert got == sorted([("added", None, "memdeck fact", "cli"), ("removed", "alpha fact", None, "external")]), \
            json.dumps([dict(r) for r in rows], default=str)

    check()
    recover_intents(hermes_home)  # the killed write is settled (done): nothing is recorded twice
    observe(hermes_home)
    check()


HERMES_LOOP = """
import json, sys
from tools.memory_tool import MemoryStore
ok = 0
for i in range(int(sys.argv[1])):
    s = MemoryStore(); s.load_from_disk()
    ok += bool(s.add("memory", f"h-{i}").get("success"))
print(json.dumps(ok))
"""


def _memdeck_writer(home_path: str, tag: str, n: int, start: Any) -> None:  # pragma: no cover - child
    home = HermesHome(Path(home_path))
    start.wait(120)
    for i in range(n):
        MemoryStore(home, Config()).add("memory", f"{tag}-{i}")
        observe(home)


def test_several_writers_and_observers_each_change_is_one_writers_row(hermes_home: HermesHome) -> None:
    """Three memdeck processes (each writes, then observes) and Hermes 0.19's MemoryStore in a
    fourth, on one home at once: every entry's history row names its writer, none is merged with
    another's change, none ends before it starts."""
    n = 8
    observe(hermes_home)  # the baseline (no file yet)
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    tags = ["m0", "m1", "m2"]
    procs = [ctx.Process(target=_memdeck_writer, args=(str(hermes_home.path), t, n, start)) for t in tags]
    for p in procs:
        p.start()
    start.set()
    hermes = run_hermes(hermes_home, HERMES_LOOP, str(n))
    for p in procs:
        p.join(300)
    assert hermes.returncode == 0 and hermes.stdout.strip().splitlines()[-1] == str(n), hermes.stderr[-2000:]
    assert [p.exitcode for p in procs] == [0, 0, 0]
    observe(hermes_home)
    rows = _history(hermes_home)
    bad = [(r["change_id"], r["since"], r["until"]) for r in rows if r["since"] is not None and r["until"] < r["since"]]
    assert not bad, f"rows that end before they start: {bad}"
    assert [r["op"] for r in rows if r["op"] != "added"] == [], [dict(r) for r in rows if r["op"] != "added"]
    by_entry: dict[str, list[str]] = {}
    for r in rows:
        by_entry.setdefault(r["after"], []).append(r["actor"])
    for t in tags:
        for i in range(n):
            assert by_entry.get(f"{t}-{i}") == ["cli"], (f"{t}-{i}", by_entry.get(f"{t}-{i}"))
    for i in range(n):
        assert by_entry.get(f"h-{i}") in (["external"], ["hermes"]), (f"h-{i}", by_entry.get(f"h-{i}"))
