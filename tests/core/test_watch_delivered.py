"""Issue 33: ``memdeck watch`` prints a ``delivered`` line per live-memory delivery the plugin
records in memdeck.db ``live_deliveries`` (``core/live_memory/record.py``).

The rows are written through ``record()`` itself while ``watch`` runs, from this process (as the
plugin writes them from Hermes' process). The old watcher never woke on memdeck.db and had no
such event: the line never came and ``watch`` ended at its ``--timeout`` with nothing printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from memdeck.core.home import HermesHome
from memdeck.core.live_memory.record import Delivery, load_recorded, record

#: a hang guard for the watch process, never a timing assertion
GUARD = 60


def _row(sid: str, key: str, turn: int, state: str = "delivered") -> Delivery:
    return Delivery(sid, key, "memory", "added", state, "delta", None if state == "delivered" else "over budget",
                    turn, f"turn-{turn}" if state == "delivered" else None, time.time())


def _watch(home: HermesHome, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "memdeck.core.cli", "--home", str(home.path), "watch", "--ready",
                             "--timeout", str(GUARD), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert json.loads(line) == {"event": "ready"}, line + (proc.stderr.read() if proc.stderr else "")
    return proc


def _finish(proc: subprocess.Popen[str]) -> list[dict]:
    try:
        out, err = proc.communicate(timeout=GUARD + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"watch did not stop: {out[-500:]} {err[-500:]}")
    assert proc.returncode == 0, err
    return [json.loads(x) for x in out.splitlines() if x.strip()]


@pytest.mark.parametrize("db_before", [True, False], ids=["memdeck.db-exists", "memdeck.db-created-later"])
def test_a_recorded_delivery_is_one_delivered_line(hermes_home: HermesHome, db_before: bool) -> None:
    if db_before:  # a row from before watch started is state, not an event
        assert record(hermes_home, [_row("old-session", "k" * 32, 1)])
    proc = _watch(hermes_home, "--max-events", "2")
    # a withheld row is no delivery: no line for it
    assert record(hermes_home, [_row("live-session", "w" * 32, 2, state="withheld")])
    assert record(hermes_home, [_row("live-session", "a" * 32, 3)])
    assert record(hermes_home, [_row("live-session", "b" * 32, 4)])
    events = _finish(proc)
    stored = {d.key: d for d in load_recorded(hermes_home, "delivered")}
    assert [e["event"] for e in events] == ["delivered", "delivered"], events
    for e, key, turn in zip(events, ("a" * 32, "b" * 32), (3, 4), strict=True):
        d = stored[key]
        assert e == {"event": "delivered", "session_id": "live-session", "target": "memory", "change": "added",
                     "entry_hash": key, "mode": "delta", "turn": turn, "turn_id": f"turn-{turn}", "at": d.at}


def test_recording_the_same_row_again_is_no_second_line(hermes_home: HermesHome) -> None:
    row = _row("live-session", "a" * 32, 3)
    proc = _watch(hermes_home, "--max-events", "2")
    assert record(hermes_home, [row])
    assert record(hermes_home, [row])  # INSERT OR IGNORE: the first delivery wins
    assert record(hermes_home, [_row("live-session", "c" * 32, 5)])
    events = _finish(proc)
    assert [e["entry_hash"] for e in events] == ["a" * 32, "c" * 32], events
