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
    _setup(hermes_home)
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


# --------------------------------------------------------------------------- every writing command of the CLI
#
# Every command of the real parser that is not marked read-only (tests/helpers/commands.py), run
# as ``memdeck ...`` on the crash matrix's home, with each of its durable steps failing in turn
# as on a full disk (tests/crashpoints.py ``fail_at``: ENOSPC from a rename, link, unlink or
# fsync; SQLITE_FULL from a commit of memdeck.db, the change history's included). Whatever step
# fails, the command ends with a result or a reason (never a traceback), and what it reports is
# what the disk holds: success means the files hold an uninterrupted run's result; a failure
# means the data files and the journal are as they were.

from tests.core import test_crash_matrix as matrix  # noqa: E402 - the CLI matrix's home and snapshot


@pytest.fixture(scope="module")
def full_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("diskfull_cli"))


def _outcome_is_the_disk(cmd: str, root: str) -> list[str]:
    from tests.crashpoints import DONE_STATUS, crash_points, run_in_child
    from tests.helpers.hostile import copy_home, remove_home

    base = Path(root)
    template, argv = matrix._cli_case(cmd, base)  # noqa: SLF001
    old = matrix.snapshot(HermesHome(template))
    h_new = copy_home(template, base / f"full-{cmd.replace(' ', '_')}-new")
    steps, log = crash_points(matrix._cli_op(h_new, argv))  # noqa: SLF001
    new = matrix.snapshot(HermesHome(h_new))
    bad: list[str] = []
    for n in range(1, steps + 1):
        path = copy_home(template, base / f"full-{cmd.replace(' ', '_')}-{n}")
        status, _, child_log = run_in_child(matrix._cli_op(path, argv, ok=(0, 3)), None, fail_at=n)  # noqa: SLF001
        got = matrix.snapshot(HermesHome(path))
        where = f"{cmd} step {n} ({log[n - 1]} fails)"
        reported = child_log[-1] if child_log else ""
        if status == DONE_STATUS:
            if got.logical() != new.logical():
                bad.append(f"{where}: reported success but the disk does not hold the result: {matrix._diff(got, new)}")  # noqa: SLF001
        elif "exit 1:" in reported and "Traceback" not in reported:
            if got.files != old.files or got.journal != old.journal:
                changed = sorted(k for k in set(got.files) | set(old.files) if got.files.get(k) != old.files.get(k))
                bad.append(f"{where}: reported a failure but changed {changed or 'the journal'}")
            if "full" not in reported and "No space" not in reported and "disk" not in reported:
                bad.append(f"{where}: the reason does not say the disk is full: {reported[-200:]}")
        else:
            bad.append(f"{where}: {reported[-400:]}")
        if matrix._integrity(HermesHome(path)) != []:  # noqa: SLF001
            bad.append(f"{where}: {matrix._integrity(HermesHome(path))}")  # noqa: SLF001
        remove_home(path)
    return bad


@pytest.mark.parametrize("cmd", matrix._writers())  # noqa: SLF001
def test_every_writing_command_on_a_full_disk_reports_what_the_disk_holds(cmd: str, full_root: str) -> None:
    bad = _outcome_is_the_disk(cmd, full_root)
    assert not bad, "\n".join(bad)
