"""Crash test: writers SIGKILLed at random moments; the file is always old-or-new and complete,
and no stray temp file survives the next write."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import time

from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.memory.store import MemoryStore

ROUNDS = 200


def _child(home: HermesHome, tag: str, ready: int | None = None) -> None:
    """Add and remove entries forever. With ``ready`` (a pipe's write end), stop after the
    first add, say so on the pipe and wait to be killed: a kill between an add and its remove."""
    try:
        s = MemoryStore(home, Config(), actor="cli", lock_timeout=5)
        k = 0
        while True:
            s.add("memory", f"{tag}-{k}")
            if ready is not None:
                os.write(ready, b"x")
                signal.pause()
            s.remove("memory", f"{tag}-{k}")
            k += 1
    finally:
        os._exit(0)


def test_sigkill_during_writes_never_tears_the_file(hermes_home: HermesHome) -> None:
    rng = random.Random(1234)
    store = MemoryStore(hermes_home, Config())
    base = ["keep: alpha", "keep: beta\nmultiline", "keep: gamma §"]
    for e in base:
        store.add("memory", e)
    path = hermes_home.memory_file("memory")
    seen_new = 0
    for i in range(ROUNDS):
        tag = f"crash{i}"
        between = i % 10 == 0  # every tenth kill lands between an add and its remove, for sure
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os.close(r)
            _child(hermes_home, tag, w if between else None)
        os.close(w)
        if between:
            assert os.read(r, 1) == b"x"  # the child's add is on disk
        else:
            time.sleep(rng.uniform(0, 0.006))  # a random moment to kill at, not a wait
        os.close(r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raw = path.read_text(encoding="utf-8")
        entries = parse_entries(raw)
        assert raw == serialize_entries(entries), f"round {i}: torn or non-canonical file {raw!r}"
        assert entries[:3] == base
        extra = entries[3:]
        assert len(extra) <= 1 and all(e.startswith(f"{tag}-") for e in extra), (i, extra)
        seen_new += bool(extra)
        # the next write removes any temp left by the killed writer
        if extra:
            store.remove("memory", extra[0])
        else:
            store.add("memory", "marker")
            store.remove("memory", "marker")
        assert not list(hermes_home.memories_dir.glob(".mem_*.tmp")), f"round {i}: stray temp survived"
        assert not list(hermes_home.memories_dir.glob(".bak_*"))
    assert parse_entries(path.read_text()) == base
    assert seen_new >= ROUNDS // 10  # at least the kills made between an add and its remove
    conn = sqlite3.connect(deckdb.db_path(hermes_home))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
