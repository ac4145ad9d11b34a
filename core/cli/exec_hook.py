"""``memdeck watch --exec CMD``: run a person's command once per event, bounded, never in the way.

Each run of ``CMD`` (through ``/bin/sh -c``, the event's JSON line on its stdin) gets its own
session and so its own process group, and at most ``--exec-timeout`` seconds (default
:data:`DEFAULT_RUN_TIMEOUT`): then the whole group gets ``SIGTERM``, and ``SIGKILL``
:data:`KILL_GRACE` seconds later if anything of it is still there (a ``sleep`` the shell started,
a pipeline). A command that never exits can therefore hold nothing up for longer than its bound
(issue 22 #3: ``watch --exec`` hung on such a command and ``--timeout 5`` returned after 35 s).

Runs happen one at a time, in event order, in a task beside the watcher: the watcher keeps
reading events while a run is going. Serial, because a hook usually appends to a log, notifies or
calls an API, where order matters and N copies at once on a busy machine help nobody; bounded
per run, so the queue always drains. Events that arrive faster than the runs finish wait in a
queue of at most :data:`QUEUE_MAX`; when it is full the *oldest* waiting event is dropped (the
newest state matters most) and the drops are counted and reported.

Every run that does not end well is reported twice: as a JSON line on stdout (the stream a
script reads) and as a ``memdeck: warning:`` line on stderr (what a person sees):

* ``{"event": "exec", "outcome": "timeout", "trigger", "pid", "seconds"}``: the run passed its
  bound; its process group was killed;
* ``{"event": "exec", "outcome": "failed", "trigger", "pid", "exit_code"}``: CMD exited non-zero
  (a negative code: killed by that signal);
* ``{"event": "exec", "outcome": "killed", "trigger", "pid"}``: ``watch`` stopped (``--timeout``)
  during the run; its process group was killed;
* ``{"event": "exec", "outcome": "dropped", "count"}``: that many events were dropped from a full
  queue and never ran;
* ``{"event": "exec", "outcome": "not_run", "count"}``: ``watch`` stopped with that many events
  still queued.

``trigger`` is the ``event`` of the line the run was given (``change``, ``pending``...).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

#: Seconds one run of CMD may take before its process group is killed (``--exec-timeout``).
DEFAULT_RUN_TIMEOUT = 10.0
#: Seconds between ``SIGTERM`` and ``SIGKILL`` of a run's process group.
KILL_GRACE = 1.0
#: Events that may wait for their run; beyond it the oldest waiting one is dropped.
QUEUE_MAX = 100


class ExecHook:
    """Runs ``cmd`` once per submitted event line, serially, each run bounded (module docstring).

    Args:
        cmd: the shell command.
        run_timeout: seconds per run (> 0).
        report: called with each outcome event (a dict, see the module docstring); the caller
            prints it on stdout. A warning line is written to stderr here.
        queue_max: the queue bound.
    """

    def __init__(self, cmd: str, *, run_timeout: float = DEFAULT_RUN_TIMEOUT,
                 report: Callable[[dict[str, Any]], None], queue_max: int = QUEUE_MAX) -> None:
        self.cmd = cmd
        self.run_timeout = run_timeout
        self.queue_max = queue_max
        self._report = report
        self._queue: collections.deque[tuple[str, str]] = collections.deque()
        self._dropped = 0
        self._task: asyncio.Task[None] | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._trigger = ""
        self.runs = 0

    # -- the queue -------------------------------------------------------------------------
    def submit(self, event: dict[str, Any], line: str) -> None:
        """Queue one run for ``event`` (its JSON ``line``); never waits."""
        if len(self._queue) >= self.queue_max:
            self._queue.popleft()
            self._dropped += 1
        self._queue.append((str(event.get("event", "")), line))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def wait(self) -> None:
        """Until every queued event has had its run."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self) -> None:
        """Stop now: kill the running group (reported ``killed``) and report what never ran."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._flush_dropped()
        if self._queue:
            self._emit({"event": "exec", "outcome": "not_run", "count": len(self._queue)},
                       f"watch stopped with {len(self._queue)} event(s) whose --exec run never started")
            self._queue.clear()

    # -- the runs --------------------------------------------------------------------------
    async def _drain(self) -> None:
        while self._queue:
            self._flush_dropped()
            trigger, line = self._queue.popleft()
            await self._run(trigger, line)
        self._flush_dropped()

    def _flush_dropped(self) -> None:
        if self._dropped:
            n, self._dropped = self._dropped, 0
            self._emit({"event": "exec", "outcome": "dropped", "count": n},
                       f"{n} event(s) dropped: more than {self.queue_max} were waiting for --exec runs")

    async def _run(self, trigger: str, line: str) -> None:
        try:
            proc = await asyncio.create_subprocess_shell(
                self.cmd, stdin=asyncio.subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self._emit({"event": "exec", "outcome": "failed", "trigger": trigger, "pid": None, "exit_code": None},
                       f"--exec command could not be started: {exc}")
            return
        self._proc, self._trigger = proc, trigger
        self.runs += 1
        try:
            await asyncio.wait_for(self._feed_and_wait(proc, line), self.run_timeout)
        except TimeoutError:
            await _kill_group(proc)
            self._emit({"event": "exec", "outcome": "timeout", "trigger": trigger, "pid": proc.pid,
                        "seconds": self.run_timeout},
                       f"--exec run for a {trigger} event passed its {self.run_timeout:g} s bound; its process "
                       f"group (pid {proc.pid}) was killed")
            return
        except asyncio.CancelledError:
            await _kill_group(proc)
            self._emit({"event": "exec", "outcome": "killed", "trigger": trigger, "pid": proc.pid},
                       f"watch stopped during the --exec run for a {trigger} event; its process group "
                       f"(pid {proc.pid}) was killed")
            raise
        finally:
            self._proc = None
        if proc.returncode != 0:
            self._emit({"event": "exec", "outcome": "failed", "trigger": trigger, "pid": proc.pid,
                        "exit_code": proc.returncode},
                       f"--exec command exited {proc.returncode} for a {trigger} event")

    @staticmethod
    async def _feed_and_wait(proc: asyncio.subprocess.Process, line: str) -> None:
        if proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(line.encode("utf-8") + b"\n")
                await proc.stdin.drain()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.close()
        await proc.wait()

    def _emit(self, event: dict[str, Any], warning: str) -> None:
        self._report(event)
        print(f"memdeck: warning: {warning}", file=sys.stderr, flush=True)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """``SIGTERM`` the run's process group, ``SIGKILL`` it after :data:`KILL_GRACE` seconds if the
    shell has not exited, and reap the shell. The group id is the shell's pid (its own session)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        if sig == signal.SIGKILL:
            break
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE)
        except TimeoutError:
            continue
        # the shell is gone; anything it left in its group goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        break
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


def json_line(event: dict[str, Any]) -> str:
    """The one-line JSON form of an event (hidden characters escaped, see ``core/text.py``)."""
    from ..text import json_safe

    return json_safe(json.dumps(event, ensure_ascii=False))


__all__ = ["DEFAULT_RUN_TIMEOUT", "KILL_GRACE", "QUEUE_MAX", "ExecHook", "json_line"]
