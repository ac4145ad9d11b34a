"""The change history against the real hermes-agent 0.19.0: MemoryStore writes made by Hermes
(memdeck closed and open), attributed through state.db rows written by Hermes' own SessionDB,
reverted by memdeck and read back by Hermes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memdeck.core.cli import main
from memdeck.core.config import Config
from memdeck.core.deck import journal
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from tests.conftest import requires_hermes
from tests.helpers.memory import hermes_json

pytestmark = [requires_hermes, pytest.mark.interop]

#: Hermes removes/replaces through its MemoryStore, then records the turn in state.db with
#: SessionDB.append_message (assistant tool_calls + tool result), as its agent loop does.
HERMES_TURN = """
import json, sys, time
from tools.memory_tool import MemoryStore
from hermes_state import SessionDB
from hermes_constants import get_hermes_home
calls = json.loads(sys.argv[1])
log = sys.argv[2] == "log"
s = MemoryStore(); s.load_from_disk()
results = []
for c in calls:
    if c["action"] == "remove":
        results.append(s.remove(c["target"], c["old_text"]))
    elif c["action"] == "replace":
        results.append(s.replace(c["target"], c["old_text"], c["content"]))
    else:
        results.append(s.add(c["target"], c["content"]))
if log:
    db = SessionDB(get_hermes_home() / "state.db")
    db.create_session("tg-1", "telegram")
    for i, c in enumerate(calls):
        tc = [{"id": f"call_{i}", "type": "function", "function": {"name": "memory", "arguments": json.dumps(c)}}]
        db.append_message("tg-1", "assistant", content="", tool_calls=tc)
        db.append_message("tg-1", "tool", content=json.dumps(results[i]), tool_name="memory", tool_call_id=f"call_{i}")
print(json.dumps([r.get("success") for r in results]))
"""

HERMES_READ = """
import json
from tools.memory_tool import MemoryStore
s = MemoryStore(); s.load_from_disk()
print(json.dumps(s.memory_entries))
"""


def _cli(capsys: pytest.CaptureFixture[str], home: HermesHome, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["--home", str(home.path), *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _history(capsys: pytest.CaptureFixture[str], home: HermesHome) -> list[dict]:
    rc, out, err = _cli(capsys, home, "history", "--json")
    assert rc == 0, err
    return json.loads(out)


def _seed(home: HermesHome, *entries: str) -> None:
    s = MemoryStore(home, Config())
    for e in entries:
        s.add("memory", e)


def _turn(home: HermesHome, calls: list[dict], log: bool = True) -> None:
    assert hermes_json(home, HERMES_TURN, json.dumps(calls), "log" if log else "nolog") == [True] * len(calls)


def test_changes_made_while_memdeck_was_closed_are_found_and_attributed(hermes_home: HermesHome, capsys) -> None:
    _cli(capsys, hermes_home, "status")  # the first observation is the baseline (empty file)
    _seed(hermes_home, "Always run tests before pushing.", "User lives in Leeds.", "Deploys happen on Fridays.")
    assert _cli(capsys, hermes_home, "status")[0] == 0  # memdeck sees the file, then closes
    _turn(hermes_home, [{"action": "remove", "target": "memory", "old_text": "run tests"},
                        {"action": "replace", "target": "memory", "old_text": "Leeds",
                         "content": "User lives in York."}])
    rows = _history(capsys, hermes_home)
    by_op = {r["op"]: r for r in rows if r["actor"] != "cli"}
    removed, replaced = by_op["removed"], by_op["replaced"]
    assert removed["before"] == "Always run tests before pushing." and removed["after"] is None
    assert removed["actor"] == "hermes"
    assert removed["attribution"]["session_id"] == "tg-1" and removed["attribution"]["source"] == "telegram"
    assert (replaced["before"], replaced["after"]) == ("User lives in Leeds.", "User lives in York.")
    assert replaced["actor"] == "hermes" and replaced["attribution"]["action"] == "replace"
    # memdeck's own seeding is attributed to memdeck's journal
    assert {r["actor"] for r in rows if r["op"] == "added"} == {"cli"}

    rc, _out, err = _cli(capsys, hermes_home, "revert", str(removed["id"]))
    assert rc == 0, err
    assert "Always run tests before pushing." in hermes_json(hermes_home, HERMES_READ)
    newest = _history(capsys, hermes_home)[0]
    assert newest["op"] == "added" and newest["after"] == "Always run tests before pushing."
    assert newest["actor"] == "cli" and newest["attribution"]["op"] == "revert"

    rc, _out, err = _cli(capsys, hermes_home, "revert", str(replaced["id"]))
    assert rc == 0, err
    assert "User lives in Leeds." in hermes_json(hermes_home, HERMES_READ)
    assert "User lives in York." not in hermes_json(hermes_home, HERMES_READ)


def test_unlogged_change_is_external(hermes_home: HermesHome, capsys) -> None:
    _seed(hermes_home, "Keep answers short.")
    _cli(capsys, hermes_home, "status")
    _turn(hermes_home, [{"action": "remove", "target": "memory", "old_text": "short"}], log=False)
    r = _history(capsys, hermes_home)[0]
    assert (r["op"], r["before"], r["actor"], r["attribution"]) == ("removed", "Keep answers short.", "external", {})


def test_revert_that_no_longer_applies_is_refused_and_changes_nothing(hermes_home: HermesHome, capsys) -> None:
    _seed(hermes_home, "Prefers tabs.", "Uses vim.")
    _cli(capsys, hermes_home, "status")
    _turn(hermes_home, [{"action": "remove", "target": "memory", "old_text": "tabs"}])
    removed = next(r for r in _history(capsys, hermes_home) if r["op"] == "removed")
    _turn(hermes_home, [{"action": "add", "target": "memory", "content": "Prefers tabs."}])  # Hermes put it back
    raw = hermes_home.memory_file("memory").read_bytes()
    njournal = len(journal.entries(hermes_home, limit=1000))
    rc, out, err = _cli(capsys, hermes_home, "revert", str(removed["id"]))
    assert rc == 1 and "already holds" in err
    assert hermes_home.memory_file("memory").read_bytes() == raw
    assert len(journal.entries(hermes_home, limit=1000)) == njournal
    # a replacement whose new text is gone again is refused too
    _turn(hermes_home, [{"action": "replace", "target": "memory", "old_text": "vim", "content": "Uses emacs."}])
    replaced = next(r for r in _history(capsys, hermes_home) if r["op"] == "replaced")
    _turn(hermes_home, [{"action": "remove", "target": "memory", "old_text": "emacs"}])
    rc, out, err = _cli(capsys, hermes_home, "revert", "--json", str(replaced["id"]))
    assert rc == 1 and json.loads(out)["code"] == "conflict"
    assert "Uses vim." not in hermes_json(hermes_home, HERMES_READ)


def test_revert_that_would_overflow_lists_what_could_be_archived(hermes_home: HermesHome, capsys) -> None:
    long = "x" * 1500
    _seed(hermes_home, long)
    _cli(capsys, hermes_home, "status")
    _turn(hermes_home, [{"action": "remove", "target": "memory", "old_text": "xxxx"},
                        {"action": "add", "target": "memory", "content": "a" * 400},
                        {"action": "add", "target": "memory", "content": "b" * 400}])
    removed = next(r for r in _history(capsys, hermes_home) if r["op"] == "removed")
    rc, _out, err = _cli(capsys, hermes_home, "revert", str(removed["id"]))
    assert rc == 1 and "over the limit" in err and "archive one with" in err


HERMES_ADDER = """
import sys
from tools.memory_tool import MemoryStore
print("go", flush=True)
for i in range(int(sys.argv[1])):
    s = MemoryStore(); s.load_from_disk()
    assert s.add("memory", f"concurrent fact {i}")["success"]
"""


def test_concurrent_hermes_writers_during_a_revert_lose_nothing(hermes_home: HermesHome, capsys) -> None:
    _seed(hermes_home, "Standing rule: never force-push.")
    _cli(capsys, hermes_home, "status")
    _turn(hermes_home, [{"action": "remove", "target": "memory", "old_text": "force-push"}])
    removed = next(r for r in _history(capsys, hermes_home) if r["op"] == "removed")
    env = dict(os.environ, HERMES_HOME=str(hermes_home.path))
    proc = subprocess.Popen([sys.executable, "-c", HERMES_ADDER, "25"], env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
    rc, _out, err = _cli(capsys, hermes_home, "revert", str(removed["id"]))
    assert proc.wait(timeout=120) == 0
    assert rc == 0, err
    entries = hermes_json(hermes_home, HERMES_READ)
    assert "Standing rule: never force-push." in entries
    assert all(f"concurrent fact {i}" in entries for i in range(25))


def test_watch_reports_a_hermes_removal_while_memdeck_is_open(hermes_home: HermesHome, tmp_path: Path, capsys) -> None:
    _seed(hermes_home, "Rule A stays.", "Rule B goes.")
    _cli(capsys, hermes_home, "status")
    out_file = tmp_path / "events.jsonl"
    env = dict(os.environ, HERMES_HOME=str(hermes_home.path))
    watch = subprocess.Popen(
        [sys.executable, "-m", "memdeck.core.cli", "watch", "--ready", "--max-events", "1", "--timeout", "60",
         "--exec", f"cat >> {out_file}"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert watch.stdout is not None and json.loads(watch.stdout.readline()) == {"event": "ready"}
        _turn(hermes_home, [{"action": "remove", "target": "memory", "old_text": "Rule B"}])
        assert watch.wait(timeout=60) == 0
    finally:
        if watch.poll() is None:
            watch.kill()
    events = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert events[0]["event"] == "change" and events[0]["op"] == "removed" and events[0]["before"] == "Rule B goes."
    # the tool call rows may land after memdeck saw the change: history re-attributes
    r = next(r for r in _history(capsys, hermes_home) if r["op"] == "removed")
    assert r["actor"] == "hermes" and r["attribution"]["session_id"] == "tg-1"
