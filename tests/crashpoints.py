"""A crash-point injector for tests: run an operation in a forked child and kill it at step N
(or, for the disk-full tests, make step N fail as a full disk does).

A *step* is one durable effect the operation is about to make: an ``os.replace``/``os.rename``,
an ``os.fsync``, an ``os.unlink``/``os.link``, or an SQLite commit of memdeck.db (a ``COMMIT``
statement, or a write statement run in autocommit mode, which commits by itself). The child
counts them and calls ``os._exit`` *before* step N (no ``finally``, no ``atexit``, no SQLite
rollback: what a SIGKILL leaves). A first, dry run counts the steps, so a test covers all of
them (:func:`crash_points`), never a hand-picked few. No sleeps: the parent waits on the child.

In the child, ``os.fsync`` is counted but not executed: a killed process keeps the page cache,
so it changes nothing but the time the matrix takes.

``fail_at=N`` (instead of a crash) makes step N fail the way a full disk makes it fail and lets
the operation go on handling it: a file step raises ``OSError(ENOSPC)``, an SQLite commit
``sqlite3.OperationalError("database or disk is full")`` (SQLITE_FULL).
"""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
from collections.abc import Callable
from typing import Any

CRASH_STATUS = 77  # the child's exit status when it was "killed" at its step
DONE_STATUS = 0    # the operation finished before reaching the step
ERROR_STATUS = 3   # the operation raised (a refusal or a bug: the dry run reports it)

_WRITE_SQL = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")


class _Counter:
    def __init__(self, crash_at: int | None, fail_at: int | None = None) -> None:
        self.n = 0
        self.crash_at = crash_at
        self.fail_at = fail_at
        self.log: list[str] = []

    def step(self, what: str) -> None:
        self.n += 1
        self.log.append(what)
        if self.crash_at is not None and self.n == self.crash_at:
            os._exit(CRASH_STATUS)
        if self.fail_at is not None and self.n == self.fail_at:
            if what.startswith("sql "):
                raise sqlite3.OperationalError("database or disk is full")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _install(counter: _Counter) -> None:
    """Patch the child's os and sqlite3 so every durable effect passes through ``counter``."""
    real_replace, real_rename, real_unlink, real_link = os.replace, os.rename, os.unlink, os.link

    def replace(src: Any, dst: Any, *a: Any, **k: Any) -> None:
        counter.step(f"replace {os.path.basename(str(dst))}")
        real_replace(src, dst, *a, **k)

    def rename(src: Any, dst: Any, *a: Any, **k: Any) -> None:
        counter.step(f"rename {os.path.basename(str(dst))}")
        real_rename(src, dst, *a, **k)

    def unlink(path: Any, *a: Any, **k: Any) -> None:
        counter.step(f"unlink {os.path.basename(str(path))}")
        real_unlink(path, *a, **k)

    def link(src: Any, dst: Any, *a: Any, **k: Any) -> None:
        counter.step(f"link {os.path.basename(str(dst))}")
        real_link(src, dst, *a, **k)

    def fsync(fd: Any) -> None:
        counter.step("fsync")

    os.replace, os.rename, os.unlink, os.link, os.fsync = replace, rename, unlink, link, fsync  # type: ignore[assignment]

    class Conn(sqlite3.Connection):
        def _count(self, sql: str) -> None:
            head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
            if head in ("COMMIT", "END") or (head in _WRITE_SQL and not self.in_transaction):
                counter.step(f"sql {head}")

        def execute(self, sql: str, *a: Any, **k: Any) -> sqlite3.Cursor:  # type: ignore[override]
            self._count(sql)
            return super().execute(sql, *a, **k)

        def executemany(self, sql: str, *a: Any, **k: Any) -> sqlite3.Cursor:  # type: ignore[override]
            self._count(sql)
            return super().executemany(sql, *a, **k)

    real_connect = sqlite3.connect

    @functools.wraps(real_connect)
    def connect(*a: Any, **k: Any) -> sqlite3.Connection:
        k.setdefault("factory", Conn)
        return real_connect(*a, **k)

    sqlite3.connect = connect  # type: ignore[assignment]


def run_in_child(op: Callable[[], Any], crash_at: int | None, *,
                 fail_at: int | None = None) -> tuple[int, int, list[str]]:
    """Run ``op`` in a forked child, killed before step ``crash_at`` (None: never), its step
    ``fail_at`` failing as on a full disk (None: none).

    Returns ``(exit status, steps counted, step log)``: status :data:`CRASH_STATUS` when the
    child died at its step, :data:`DONE_STATUS` when ``op`` returned, :data:`ERROR_STATUS` when
    it raised (the exception's repr is the last log line).
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(r)
        counter = _Counter(crash_at, fail_at)
        status = DONE_STATUS
        try:
            _install(counter)
            try:
                op()
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                counter.log.append(f"raised {exc!r}")
                status = ERROR_STATUS
            os.write(w, ("\n".join([str(counter.n), *counter.log])).encode("utf-8", "replace"))
        finally:
            os._exit(status)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, st = os.waitpid(pid, 0)
    assert os.WIFEXITED(st), f"child died of signal {os.WTERMSIG(st)}"
    lines = b"".join(chunks).decode("utf-8", "replace").split("\n") if chunks else []
    steps = int(lines[0]) if lines and lines[0] else -1
    return os.WEXITSTATUS(st), steps, lines[1:]


def crash_points(op: Callable[[], Any]) -> tuple[int, list[str]]:
    """The dry run: how many steps ``op`` performs (and their log), run in a child so the
    caller's files are untouched only if ``op`` works on a throwaway home.

    Raises:
        AssertionError: ``op`` raised (its repr is in the message) or performed no step.
    """
    status, steps, log = run_in_child(op, None)
    assert status == DONE_STATUS, f"the dry run failed: {log[-1:]}"
    assert steps > 0, "the operation performed no durable step"
    return steps, log


#: the epoch seconds every deterministic run sees (far in the future, so stale-temp sweeps of
#: ``older_than`` seconds behave as they do on a real clock)
FAKE_NOW = 4_000_000_000.0


class deterministic:
    """Context manager: ``time.time`` returns :data:`FAKE_NOW` and ``uuid.uuid4`` a fixed
    sequence, so the same operation on the same home writes the same bytes (anchor ids,
    ``pinned_at``, the manifest's ``generated_at``) in the dry run and in every crashed run."""

    def __enter__(self) -> deterministic:
        import time
        import uuid

        self._saved = (time.time, uuid.uuid4)
        seq = iter(range(1, 1 << 30))
        time.time = lambda: FAKE_NOW  # type: ignore[assignment]
        uuid.uuid4 = lambda: uuid.UUID(int=(lambda n: (n << 96) | n)(next(seq)))  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: Any) -> None:
        import time
        import uuid

        time.time, uuid.uuid4 = self._saved  # type: ignore[assignment]
