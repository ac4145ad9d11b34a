"""Issue 13 #2: undo of a move is crash-safe.

The undo is killed (``os._exit`` in a forked child: no cleanup runs) at each step of its write
path -- the intent transaction, each file replace, the final COMMIT. Afterwards the entry is in
at least one file (never in neither), and a second undo finishes the job: the entry back only in
its source file, the move marked undone, nothing duplicated.
"""

from __future__ import annotations

import os

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.deck import journal
from memdeck.core.home import HermesHome
from memdeck.core.memory import store as memory_mod
from memdeck.core.memory.entries import parse_entries
from memdeck.core.memory.store import MemoryStore, recover_intents

TEXT = "moved fact"


def _entries(home: HermesHome, t: str) -> list[str]:
    p = home.memory_file(t)
    return parse_entries(p.read_text()) if p.exists() else []


def _crash_undo_at(home: HermesHome, step: int, kind: str) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            n = {"i": 0}
            if kind == "replace":
                real = MemoryStore._replacing

                def replacing(self, *a, **k):
                    n["i"] += 1
                    if n["i"] == step:
                        os._exit(9)
                    return real(self, *a, **k)

                MemoryStore._replacing = replacing
            else:
                real_tx = deckdb.transaction
                import contextlib

                @contextlib.contextmanager
                def tx(conn):
                    with real_tx(conn) as c:
                        yield c
                        n["i"] += 1
                        if n["i"] == step:
                            os._exit(9)  # after the statements, before COMMIT

                memory_mod.deckdb.transaction = tx
            s = MemoryStore(home, Config())
            s.undo_rows(journal.last_undoable(home))
        finally:
            os._exit(0)
    _, st = os.waitpid(pid, 0)
    assert os.WIFEXITED(st)
    return os.WEXITSTATUS(st)


@pytest.mark.parametrize("kind,step", [("replace", 1), ("replace", 2), ("commit", 1), ("commit", 2)])
def test_undo_of_move_killed_at_each_step_loses_nothing(hermes_home: HermesHome, kind: str, step: int) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "stays")
    s.add("memory", TEXT)
    s.add("user", "user fact")
    s.move("memory", TEXT, "user")
    status = _crash_undo_at(hermes_home, step, kind)
    assert status == 9, "the undo finished before the injection point"
    total = _entries(hermes_home, "memory").count(TEXT) + _entries(hermes_home, "user").count(TEXT)
    assert total >= 1, "the entry is in neither file"
    recover_intents(hermes_home, Config())  # the write-ahead journal: the next write resolves the killed undo
    rows = journal.last_undoable(hermes_home)
    if rows and rows[-1].op == "move":
        MemoryStore(hermes_home, Config()).undo_rows(rows)
    assert _entries(hermes_home, "memory") == ["stays", TEXT]
    assert _entries(hermes_home, "user") == ["user fact"]
    assert not [r for r in journal.entries(hermes_home, 100) if r.op == "move" and r.undone_by is None]
