"""Reading state.db ahead of a long first scan (issue 9: the first launch on a cold page cache).

The reader thread reads the whole file and nothing else, stops when the scan ends, is used only
for long scans of a file that fits in half the available memory, and the compaction history a
scan finds with it is the full-scan reference.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memdeck.core.sessions import compaction_events
from memdeck.core.sessions import read_ahead as ra
from memdeck.core.sessions.statedb import StateDB
from tests.core.test_statedb_tracks import _home
from tests.helpers.statedb import reference_compactions

BIG = 1 << 40


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memdeck-read-ahead"]


@pytest.mark.parametrize(("file_bytes", "rows", "memory", "want"), [
    (1 << 30, ra.MIN_ROWS, 4 << 30, True),
    (1 << 30, ra.MIN_ROWS - 1, 4 << 30, False),      # a short scan: not worth a thread
    (1 << 30, 10 * ra.MIN_ROWS, None, False),         # available memory unknown
    (3 << 30, 10 * ra.MIN_ROWS, 4 << 30, False),      # more than half of what is available
    (2 << 30, 10 * ra.MIN_ROWS, 4 << 30, True),       # exactly half
    (0, 10 * ra.MIN_ROWS, 4 << 30, False),            # empty or unreadable file
])
def test_when_reading_ahead_is_worth_it(file_bytes: int, rows: int, memory: int | None, want: bool) -> None:
    assert ra.worth_reading_ahead(file_bytes, rows, memory) is want


def test_available_memory_is_read_from_the_kernel() -> None:
    got = ra.available_memory()
    if not Path("/proc/meminfo").exists():
        assert got is None
    else:
        assert got is not None and got > 0


def test_the_reader_reads_the_whole_file_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ra, "CHUNK_BYTES", 4096)
    (tmp_path / "h").mkdir()
    f = tmp_path / "h" / "state.db"
    data = os.urandom(5 * 4096 + 123)
    f.write_bytes(data)
    before = f.stat()
    with ra.read_ahead(f, ra.MIN_ROWS, memory=lambda: BIG) as reader:
        assert reader is not None
        reader.join()  # ends by itself at the end of the file
        assert reader.bytes_read == len(data)
    after = f.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert sorted(p.name for p in f.parent.iterdir()) == ["state.db"]


def test_a_short_scan_or_unknown_memory_starts_no_thread(tmp_path: Path) -> None:
    f = tmp_path / "state.db"
    f.write_bytes(b"x" * 8192)
    asked: list[int] = []
    with ra.read_ahead(f, ra.MIN_ROWS - 1, memory=lambda: asked.append(1) or BIG) as reader:
        assert reader is None and _threads() == []
    assert asked == []  # every refresh re-reads a short window: it costs no /proc/meminfo read
    with ra.read_ahead(f, ra.MIN_ROWS, memory=lambda: None) as reader:
        assert reader is None and _threads() == []
    with ra.read_ahead(tmp_path / "missing.db", ra.MIN_ROWS, memory=lambda: BIG) as reader:
        assert reader is None


def test_the_reader_stops_when_the_scan_ends(tmp_path: Path, monkeypatch) -> None:
    """Leaving the block stops the thread after the chunk in flight, long before the file's end."""
    monkeypatch.setattr(ra, "CHUNK_BYTES", 4096)
    f = tmp_path / "state.db"
    f.write_bytes(b"\0" * (64 * 4096))
    reading = threading.Event()
    release = threading.Event()
    real_readv = os.readv

    def gated(fd, buffers):
        reading.set()
        release.wait()  # the chunk in flight finishes only once the scan has ended
        return real_readv(fd, buffers)

    monkeypatch.setattr(ra.os, "readv", gated)
    with ra.read_ahead(f, ra.MIN_ROWS, memory=lambda: BIG) as reader:
        assert reader is not None
        assert reading.wait(10)
        reader.stop.set()  # what the block's exit does first; the gate then lets the read finish
        release.set()
    assert not reader.is_alive()
    assert reader.bytes_read == 4096
    assert _threads() == []


def test_a_long_first_scan_reads_ahead_and_finds_the_reference_history(tmp_path: Path, monkeypatch) -> None:
    home, conn, _ = _home(tmp_path, deck=False)
    conn.close()
    p = home / "state.db"
    spans: list[int] = []
    real = compaction_events.read_ahead

    def spy(path, rows, **kw):
        spans.append(rows)
        return real(path, rows, memory=lambda: BIG)

    monkeypatch.setattr(ra, "MIN_ROWS", 100)
    monkeypatch.setattr(compaction_events, "read_ahead", spy)
    db = StateDB(p)
    try:
        assert db.compactions() == reference_compactions(p)
    finally:
        db.close()
    n_rows = 30 * 68  # _grow: 30 rounds of 60 messages and 8 inserted rows (head 3 + summary + tail 5)
    assert spans and max(spans) >= n_rows * 9 // 10  # the first scan of the big session spans its ids
    assert _threads() == []
