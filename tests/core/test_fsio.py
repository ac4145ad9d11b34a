"""The sidecar lock and atomic write protocol (core/fsio.py)."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from memdeck.core.errors import LockTimeout, UnreadableFile
from memdeck.core.fsio import atomic_write_text, cleanup_stale_temps, file_lock, lock_path_for, read_text_strict


def _hold_lock(path: str, ready, release) -> None:  # runs in a child process
    with file_lock(Path(path), timeout=5):
        ready.set()
        release.wait(10)


@contextlib.contextmanager
def held_by_other_process(target: Path):
    """Another process holds ``target``'s lock until the block sets the yielded event."""
    ctx = mp.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_lock, args=(str(target), ready, release))
    proc.start()
    try:
        assert ready.wait(10)
        yield release
    finally:
        release.set()
        proc.join(10)


def test_lock_sidecar_name_and_mode(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    with file_lock(target) as waited:
        assert waited >= 0
    lock = lock_path_for(target)
    assert lock.name == "MEMORY.md.lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert lock.exists()  # never deleted, like Hermes


def test_lock_excludes_other_process_and_times_out(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    with held_by_other_process(target), pytest.raises(LockTimeout, match="locked by another writer"), file_lock(target, timeout=0.2):
        pass
    with file_lock(target, timeout=2):  # free again once the holder is gone
        pass


def test_symlinked_lock_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    (tmp_path / "elsewhere").write_text("x")
    os.symlink(tmp_path / "elsewhere", lock_path_for(target))
    with pytest.raises(UnreadableFile, match="symlink"), file_lock(target):
        pass


def test_atomic_write_keeps_symlink_and_mode(tmp_path: Path) -> None:
    real_dir = tmp_path / "dotfiles"
    real_dir.mkdir()
    real = real_dir / "MEMORY.md"
    real.write_text("old", encoding="utf-8")
    os.chmod(real, 0o640)
    link = tmp_path / "MEMORY.md"
    os.symlink(real, link)
    atomic_write_text(link, "new\n§\nentry")
    assert link.is_symlink()
    assert real.read_bytes() == "new\n§\nentry".encode()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert [p.name for p in real_dir.iterdir()] == ["MEMORY.md"]  # no temp left


def test_failed_replace_leaves_original_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "memories"
    d.mkdir()
    target = d / "MEMORY.md"
    target.write_text("original", encoding="utf-8")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(target, "new content")
    assert target.read_text(encoding="utf-8") == "original"
    assert sorted(p.name for p in d.iterdir()) == ["MEMORY.md"]


def test_new_file_is_0600(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "USER.md"
    atomic_write_text(target, "x")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_read_text_strict(tmp_path: Path) -> None:
    p = tmp_path / "f"
    assert read_text_strict(p) is None
    p.write_bytes("\ufeffa\r\n§\r\nb".encode("utf-8"))
    assert read_text_strict(p) == "a\n§\nb"
    p.write_bytes(b"ok \xff\xfe bad")
    with pytest.raises(UnreadableFile, match="not valid UTF-8"):
        read_text_strict(p)
    with pytest.raises(UnreadableFile, match="directory"):
        read_text_strict(tmp_path)


def test_cleanup_stale_temps(tmp_path: Path) -> None:
    old = tmp_path / ".mem_deadbeef.tmp"
    fresh = tmp_path / ".mem_cafebabe.tmp"
    keep = tmp_path / "MEMORY.md"
    for p in (old, fresh, keep):
        p.write_text("x")
    os.utime(old, (1, 1))
    assert cleanup_stale_temps(tmp_path, older_than=60) == 1
    assert not old.exists() and fresh.exists() and keep.exists()
    assert cleanup_stale_temps(tmp_path, older_than=0) == 1
    assert keep.exists()


def test_abandoned_waiter_never_leaks_the_lock(tmp_path: Path) -> None:
    """A wait that times out must not leave a thread that later holds the lock forever."""
    target = tmp_path / "MEMORY.md"
    with held_by_other_process(target):
        for _ in range(3):
            with pytest.raises(LockTimeout), file_lock(target, timeout=0.05):
                pass
    # the abandoned waiters got the lock in turn and released it: a fresh try succeeds soon
    deadline = time.monotonic() + 5
    while True:
        try:
            with file_lock(target, timeout=0):
                break
        except LockTimeout:
            assert time.monotonic() < deadline, "an abandoned waiter kept the lock"
            time.sleep(0.01)


def test_waiter_wakes_when_holder_releases(tmp_path: Path) -> None:
    target = tmp_path / "MEMORY.md"
    with held_by_other_process(target) as release:
        threading.Timer(0.2, release.set).start()
        with file_lock(target, timeout=10) as waited:
            assert 0.1 < waited < 5
