"""Reading state.db ahead of a full scan, so a first launch on a cold page cache is not 4 KiB at a time.

One concept: warming the operating system's page cache. The first reconstruction of a long
session's compaction history reads every row of the session through the table b-tree in ``id``
order (:meth:`.compaction_events.CompactionEventReader._stream_batches`). On a home Hermes has
written for weeks, those table pages are interleaved with the FTS5 index pages in the file, so
SQLite's 4 KiB ``pread`` calls defeat the kernel's read-ahead: measured on a 2.6 GB state.db
(1M rows, 1,252 compactions) with a cold page cache, the first full history took 10.6 s, of
which ~8 s waiting on the disk, against 2.4 s when the file was cached. A thread that reads the
file front to back in large chunks while the scan runs brings it to ~4 s (bench/RESULTS.md).

Read-only and bounded: the thread opens its own descriptor, writes nothing, stops when the scan
ends (the ``with`` block exits) or when the file ends, and is used only when the scan is long
(:data:`MIN_ROWS`) and the whole file fits in half the memory the kernel reports available
(``MemAvailable``), so it never pushes a working set out of the cache for a file that would not
stay there. The pages it reads belong to the page cache, not to memdeck's RSS.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from .. import sqlite_files

#: Rows a scan must span (by id range) before reading ahead is worth a thread: below this the
#: scan reads a few MB, cached or not.
MIN_ROWS = 100_000

#: Bytes per ``read`` of the read-ahead thread (large enough for sequential disk throughput).
CHUNK_BYTES = 4 << 20


def available_memory() -> int | None:
    """Bytes the kernel reports it can give without swapping (``/proc/meminfo`` ``MemAvailable``),
    or None where that is not known (not Linux, unreadable)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def worth_reading_ahead(file_bytes: int, rows: int, memory: int | None) -> bool:
    """Whether a scan spanning ``rows`` ids of a ``file_bytes`` file should read the file ahead.

    True only for a long scan (``rows >= MIN_ROWS``) of a file that fits in half of ``memory``
    (bytes available, None = unknown: then no).
    """
    return rows >= MIN_ROWS and memory is not None and 0 < file_bytes <= memory // 2


class _Reader(threading.Thread):
    def __init__(self, path: Path) -> None:
        super().__init__(name="memdeck-read-ahead", daemon=True)
        self.path = path
        self.stop = threading.Event()
        self.bytes_read = 0

    def run(self) -> None:
        try:  # the scanning connection is open: sqlite_files parks the descriptor, never closes it under it
            with sqlite_files.raw_fd(self.path) as fd:
                buf = bytearray(CHUNK_BYTES)
                while not self.stop.is_set():
                    n = os.readv(fd, [buf])
                    if n <= 0:
                        return
                    self.bytes_read += n
        except OSError:
            return


@contextlib.contextmanager
def read_ahead(path: Path, rows: int, *, memory: Callable[[], int | None] = available_memory) -> Iterator[_Reader | None]:
    """Read ``path`` front to back in a background thread while the ``with`` block scans it.

    ``rows``: the id span the scan will read. Yields the reader thread (its ``bytes_read`` is
    the progress so far) or None when reading ahead is not worth it (:func:`worth_reading_ahead`)
    or the file cannot be stat'ed. On exit the thread is told to stop and joined (at most one
    chunk's read later). Never raises of its own: a file that vanishes or fails to read just
    ends the thread early.
    """
    size = 0
    if rows >= MIN_ROWS:  # the short re-reads of every refresh stop here: no stat, no /proc read
        try:
            size = path.stat().st_size
        except OSError:
            pass
    if not worth_reading_ahead(size, rows, memory() if size else None):
        yield None
        return
    reader = _Reader(path)
    reader.start()
    try:
        yield reader
    finally:
        reader.stop.set()
        reader.join()
