"""Issue 22 #3: ``watch --exec CMD`` with a CMD that never exits.

The old ``watch`` ran CMD with ``subprocess.run`` inside the event loop: a CMD that never exits
hung it for good, and ``--timeout 5`` with ``sleep 30`` returned after 35 s. Now every run has its
own process group and a bound (``--exec-timeout``), runs happen beside the event stream, and
``--timeout`` kills a running CMD (``core/cli/exec_hook.py``). The process tests below start
CMDs that sleep for 1,000 s: on the old code they end only at the test's hang guard.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memdeck.core.cli.exec_hook import ExecHook
from memdeck.core.config import Config
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore

#: a hang guard for the watch process, never a timing assertion
GUARD = 120


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of nobody we know is dead too
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


class _Watch:
    def __init__(self, home: HermesHome, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "memdeck.core.cli", "--home", str(home.path), "watch",
                                      "--ready", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert json.loads(line) == {"event": "ready"}, line + (self.proc.stderr.read() if self.proc.stderr else "")

    def finish(self) -> tuple[int, list[dict], str]:
        try:
            out, err = self.proc.communicate(timeout=GUARD)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            pytest.fail(f"watch did not stop (a CMD held it up): {out[-500:]} {err[-500:]}")
        return self.proc.returncode, [json.loads(x) for x in out.splitlines() if x.strip()], err


def _writes(home: HermesHome, n: int, first: int = 0) -> None:
    s = MemoryStore(home, Config())
    for i in range(first, first + n):
        s.add("memory", f"watched fact number {i}")


def test_each_run_is_bounded_and_its_whole_group_killed(hermes_home: HermesHome, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    out.mkdir()
    # the shell records the JSON line it got, starts a background sleep in its group, then waits
    cmd = f'cat > {out}/line.$$; sleep 1000 & echo $! > {out}/bg.$$; wait'
    w = _Watch(hermes_home, "--exec", cmd, "--exec-timeout", "0.5", "--max-events", "2")
    _writes(hermes_home, 2)
    code, events, err = w.finish()
    assert code == 0
    timeouts = [e for e in events if e.get("event") == "exec"]
    assert [e["outcome"] for e in timeouts] == ["timeout", "timeout"], events
    assert all(e["trigger"] == "change" and e["seconds"] == 0.5 for e in timeouts)
    assert err.count("passed its 0.5 s bound; its process group") == 2, err
    lines = sorted(out.glob("line.*"))
    assert len(lines) == 2 and all(json.loads(p.read_text())["event"] == "change" for p in lines)
    pids = [int(p.read_text()) for p in out.glob("bg.*")]
    assert len(pids) == 2 and not any(_alive(p) for p in pids), "a sleep of a killed run survived"


def test_timeout_stops_watch_and_kills_the_running_cmd_while_events_keep_coming(hermes_home: HermesHome,
                                                                               tmp_path: Path) -> None:
    """A run that would take 1,000 s and an --exec-timeout of 1,000 s: the stream goes on (the
    next events are queued, not lost) and --timeout ends it all, reporting what it killed."""
    out = tmp_path / "runs"
    out.mkdir()
    cmd = f'echo $$ > {out}/sh.$$; cat > /dev/null; exec sleep 1000'
    # --timeout leaves the three writes (in this process: milliseconds) ample time to be seen
    w = _Watch(hermes_home, "--exec", cmd, "--exec-timeout", "1000", "--timeout", "12")
    _writes(hermes_home, 1)
    for _ in range(GUARD * 20):  # the first run has started (its shell wrote its pid)
        if any(p.read_text().strip() for p in out.glob("sh.*")):
            break
        time.sleep(0.05)
    _writes(hermes_home, 2, first=1)
    code, events, err = w.finish()
    assert code == 0
    outcomes = [e["outcome"] for e in events if e.get("event") == "exec"]
    assert outcomes[0] == "killed", events
    not_run = [e for e in events if e.get("outcome") == "not_run"]
    assert not_run and not_run[0]["count"] >= 1, events  # later events were taken in while the run went on
    assert "watch stopped during the --exec run" in err
    pids = [int(p.read_text()) for p in out.glob("sh.*")]
    assert len(pids) == 1 and not _alive(pids[0])


def test_a_failing_cmd_is_reported_and_the_next_event_still_runs(hermes_home: HermesHome, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    out.mkdir()
    w = _Watch(hermes_home, "--exec", f"cat >> {out}/all; exit 3", "--max-events", "2")
    _writes(hermes_home, 2)
    code, events, err = w.finish()
    assert code == 0
    failed = [e for e in events if e.get("outcome") == "failed"]
    assert [e["exit_code"] for e in failed] == [3, 3], events
    assert err.count("--exec command exited 3") == 2
    assert len((out / "all").read_text().splitlines()) == 2


def test_a_full_queue_drops_the_oldest_and_says_how_many(tmp_path: Path, capsys) -> None:
    got = tmp_path / "got"
    reports: list[dict] = []

    async def run() -> None:
        hook = ExecHook(f"cat >> {got}", run_timeout=30, report=reports.append, queue_max=2)
        for i in range(5):  # no await between them: the runs start after all five arrived
            ev = {"event": "change", "n": i}
            hook.submit(ev, json.dumps(ev))
        await hook.wait()
        await hook.close()

    asyncio.run(run())
    assert [json.loads(x)["n"] for x in got.read_text().splitlines()] == [3, 4]
    assert reports == [{"event": "exec", "outcome": "dropped", "count": 3}]
    assert "3 event(s) dropped" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--exec-timeout", "0"], ["--timeout", "-1"], ["--max-events", "0"]])
def test_bounds_must_be_positive(hermes_home: HermesHome, capsys, argv) -> None:
    from memdeck.core.cli import main

    assert main(["--home", str(hermes_home.path), "watch", "--exec", "true", *argv]) == 2
    assert "must be" in capsys.readouterr().err


def _next_event(w: _Watch, kind: str) -> dict:
    """Read watch's lines until an event of ``kind`` (EOF fails: watch stopped early)."""
    assert w.proc.stdout is not None
    while True:
        line = w.proc.stdout.readline()
        assert line, f"watch ended before a {kind!r} event: {w.proc.stderr.read() if w.proc.stderr else ''}"
        event = json.loads(line)
        if event.get("event") == kind:
            return event


def test_after_a_pending_age_deadline_watch_still_streams_changes(hermes_home: HermesHome) -> None:
    """The age of a pending write passes with no file event: watch wakes at that moment (issue
    25). Waking must not end the watcher: a wait that cancelled the watcher's pending step ended
    its generator, and the next file change was never reported."""
    from memdeck.core.overview.alerts import AlertSettings

    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    limit = AlertSettings().pending_age_s
    rec = {"id": "a9e0a9e0", "subsystem": "memory", "action": "add", "summary": "add to memory: aged",
           "origin": "background_review", "created_at": time.time() - limit + 2.0,
           "payload": {"action": "add", "target": "memory", "content": "a staged fact that ages"}}
    (d / "a9e0a9e0.json").write_text(json.dumps(rec), encoding="utf-8")
    w = _Watch(hermes_home, "--timeout", str(GUARD))
    try:
        aged = _next_event(w, "pending_age")
        assert "a9e0a9e0" in json.dumps(aged)
        _writes(hermes_home, 1)
        change = _next_event(w, "change")
        assert "watched fact number 0" in json.dumps(change)
    finally:
        w.proc.kill()
        w.proc.communicate()
