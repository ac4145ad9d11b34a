"""Issue 13 #3: a full disk never makes the reported outcome differ from the disk.

memdeck journals a memory write in a transaction opened before the file is replaced; when the
COMMIT then fails (SQLITE_FULL), the file is put back, so "failed" means "the file is as it
was and the journal has no row", and "done" means "the file changed and the journal says so".
The deterministic test makes each COMMIT of each write path fail in turn (a connection proxy
raising ``sqlite3.OperationalError("database or disk is full")``); the tmpfs test fills a real
1 MiB filesystem (skipped with the reason where mounting is not allowed).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import uuid
from pathlib import Path

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import archive as _archive
from memdeck.core.deck import db as deckdb
from memdeck.core.deck import journal
from memdeck.core.errors import MemdeckError
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import parse_entries
from memdeck.core.memory.store import MemoryStore, recover_intents


class _FullConn:
    """A memdeck.db connection whose ``n``-th COMMIT (counted across connections) fails."""

    commits = 0
    fail_at: int | None = None

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._c = conn

    def execute(self, sql: str, *a):
        if sql.strip().upper() == "COMMIT":
            type(self).commits += 1
            if type(self).commits == type(self).fail_at:
                raise sqlite3.OperationalError("database or disk is full")
        return self._c.execute(sql, *a)

    def __getattr__(self, name: str):
        return getattr(self._c, name)


def _state(home: HermesHome) -> tuple:
    files = tuple(p.read_bytes() if p.exists() else None for p in (home.memory_file("memory"), home.memory_file("user")))
    rows = tuple((e.journal_id, e.undone_by) for e in journal.entries(home, 1000))
    return files, rows


def _setup(home: HermesHome) -> MemoryStore:
    s = MemoryStore(home, Config())
    s.add("memory", "alpha entry")
    s.add("memory", "beta entry")
    s.add("user", "user likes tea")
    s.archive("memory", "beta entry")
    return s


OPS = {
    "add": lambda s: s.add("memory", "gamma entry"),
    "replace": lambda s: s.replace("memory", "alpha entry", "alpha entry v2"),
    "remove": lambda s: s.remove("memory", "alpha entry"),
    "move": lambda s: s.move("memory", "alpha entry", "user"),
    "archive": lambda s: s.archive("memory", "alpha entry"),
    "restore": lambda s: s.restore(_archive.items(s.home)[0].archive_id),
    "undo": lambda s: s.undo_rows(journal.last_undoable(s.home)),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_every_commit_failing_leaves_outcome_equal_to_disk(hermes_home: HermesHome, monkeypatch, op) -> None:
    store = _setup(hermes_home)
    real_connect = deckdb.connect
    monkeypatch.setattr(deckdb, "connect", lambda *a, **k: _FullConn(real_connect(*a, **k)))
    # count the COMMITs of one clean run, on a copy of the home
    _FullConn.commits, _FullConn.fail_at = 0, None
    n_commits = 0
    for k in range(1, 8):
        home = HermesHome(hermes_home.path.parent / f"h{op}{k}")
        subprocess.run(["cp", "-a", str(hermes_home.path), str(home.path)], check=True)
        s = MemoryStore(home, Config())
        before = _state(home)
        _FullConn.commits, _FullConn.fail_at = 0, k
        try:
            OPS[op](s)
        except MemdeckError as exc:
            assert "full" in str(exc)
            after = _state(home)
            assert after[0] == before[0], f"{op}: commit #{k} failed but a file changed"
            assert after[1] == before[1], f"{op}: commit #{k} failed but the journal changed"
            # recovery resolves any intent without changing a file, and no entry is archived twice
            recover_intents(home, Config())
            assert not _archive.unfinished_archive_intents(home, "memory")
            texts = parse_entries(home.memory_file("memory").read_text()) + parse_entries(home.memory_file("user").read_text())
            archived = [i.text for i in _archive.items(home)]
            for t in ("alpha entry", "beta entry", "user likes tea"):
                assert (t in texts) + (t in archived) == 1, f"{op}/#{k}: {t!r} in files {texts} and archive {archived}"
            n_commits += 1
            continue
        assert _FullConn.commits < k, f"{op}: commit #{k} failed but the operation reported success"
        break
    assert n_commits >= 1, f"{op}: no commit was exercised"


def _try_mount(tmp: Path) -> str | None:
    tmp.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tmp)], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip() or f"mount exited {r.returncode}")


def test_disk_full_on_a_real_tmpfs(tmp_path: Path) -> None:
    """Fill a 1 MiB tmpfs a little more before each write: every write either lands and is
    journaled, or fails with both the file and the journal unchanged."""
    mnt = tmp_path / "mnt"
    why = _try_mount(mnt)
    if why is not None:
        pytest.skip(f"cannot mount a small tmpfs here ({why}); the monkeypatched test covers the logic")
    try:
        home = HermesHome(mnt / "home")
        (mnt / "home" / "memories").mkdir(parents=True)
        s = MemoryStore(home, Config(memory_char_limit=1_000_000))
        s.add("memory", "seed entry")
        path = home.memory_file("memory")
        for i in range(8):  # a file of ~24 KB: a journal row (before + after) needs twice that
            s.add("memory", f"bulk {i} " + "y" * 3000)
        landed: list[str] = [e.after for e in reversed(journal.entries(home, 10_000))]
        blocks: list[Path] = []
        while True:  # fill the disk to the last block
            b = mnt / f"fill{len(blocks)}"
            try:
                with open(b, "wb", buffering=0) as fh:
                    fh.write(os.urandom(4096))
            except OSError:
                b.unlink(missing_ok=True)
                break
            blocks.append(b)
        messages: list[str] = []
        while blocks:  # free one block at a time: the file fits before its journal row does
            blocks.pop().unlink()
            before = path.read_bytes()
            try:
                s.add("memory", "the new entry " + "z" * 2000)
            except MemdeckError as exc:
                messages.append(str(exc))
                assert path.read_bytes() == before, f"the write failed ({exc}) but the file changed"
                continue
            landed.append(path.read_text())
            break
        for b in blocks:
            b.unlink()
        rows = [e.after for e in reversed(journal.entries(home, 10_000))]
        assert rows == landed, "the journal does not hold exactly the writes that landed"
        assert any("commit" in m for m in messages), f"the COMMIT never failed: {messages[-3:]}"
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
