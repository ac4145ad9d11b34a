"""Issue 33 #2 and issue 34 #3 against the real Hermes: memdeck's request queue (memdeck.db
``agent_requests``) consumed by its plugin inside the agent's process.

The real ``AIAgent.run_conversation`` of each Hermes (its own venv, the driver's ``live_turns``)
talks to the loopback OpenAI-compatible server that keeps every request body byte for byte, as in
``test_live_memory_hermes.py``. Between turns other processes add a MEMORY.md entry through that
Hermes' own ``MemoryStore``, queue a rebuild with ``memdeck sessions rebuild``, queue a correction,
and undo.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.home import HermesHome
from memdeck.core.requests.queue import correction_line, list_requests
from tests.interop.matrix import run
from tests.interop.matrix.run import hermes_or_skip
from tests.interop.test_live_memory_hermes import MEMORY, USER, mem_exec, new_home

pytestmark = pytest.mark.interop

VERSIONS = ["0.19.0", "0.21.5.post2", "0.22.2.post1"]
LATE = "Rebuild rule: the release train leaves every second Tuesday."
RULE = "use the scratch database for this migration"


def cli(home: Path, *argv: str) -> dict[str, Any]:
    return {"exec": [sys.executable, "-m", "memdeck.core.cli", "--home", str(home), *argv]}


def correction(home: Path, sid: str, rule: str) -> dict[str, Any]:
    code = ("import sys; from pathlib import Path; from memdeck.core.home import HermesHome; "
            "from memdeck.core.requests.queue import queue_correction; "
            "queue_correction(HermesHome(Path(sys.argv[1])), sys.argv[2], sys.argv[3], actor='tui')")
    return {"exec": [sys.executable, "-c", code, str(home), sid, rule]}


def seed(py: Path, home: Path) -> None:
    run.drive(py, home, [{"op": "mem", "action": "add", "target": "memory", "content": e} for e in MEMORY]
              + [{"op": "mem", "action": "add", "target": "user", "content": e} for e in USER])


def turns(py: Path, home: Path, steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    res = run.drive(py, home, [{"op": "live_turns", "steps": steps}], timeout=900)[0]["steps"]
    for step, r in zip(steps, res):
        if "exec" in step:
            assert r["exec"] == 0, (step, r)
    out = {r["turn"]: r for r in res if "turn" in r}
    assert all(t["requests"] == 1 for t in out.values()), [(k, t["requests"]) for k, t in out.items()]
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_rebuild_request_rebuilds_that_session_once_through_hermes(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = new_home(tmp_path, "off")  # live memory off: only the rebuild can bring LATE into a request
    seed(py, home)
    steps = [{"turn": "a one", "sid": "A"}, {"turn": "b one", "sid": "B"},
             mem_exec(py, home, [{"op": "mem", "action": "add", "target": "memory", "content": LATE}]),
             cli(home, "sessions", "rebuild", "A", "--json"),
             {"turn": "a two", "sid": "A"}, {"turn": "b two", "sid": "B"},
             {"turn": "a three", "sid": "A"}, {"turn": "a four", "sid": "A"}, {"turn": "b three", "sid": "B"}]
    by = turns(py, home, steps)
    sys_of = {k: v["system"][0] for k, v in by.items()}
    assert LATE not in sys_of["a one"] and LATE not in sys_of["a two"]  # the consuming turn's prompt was chosen before any hook
    # the next request sends the prompt Hermes rebuilt: it holds the entry added after the session started
    assert sys_of["a three"] != sys_of["a one"] and LATE in json.loads(sys_of["a three"])
    assert sys_of["a four"] == sys_of["a three"]  # byte for byte again: the cache holds from here on
    # the other session is untouched
    assert sys_of["b one"] == sys_of["b two"] == sys_of["b three"] and LATE not in sys_of["b three"]
    # the request was delivered once, at A's second user turn, and Hermes stored the rebuilt prompt
    [req] = list_requests(HermesHome(home), "A")
    assert (req.kind, req.state, req.turn) == ("rebuild", "delivered", 2)
    assert req.detail["rebuilt_chars"] == len(json.loads(sys_of["a three"]))
    stored = run.drive(py, home, [{"op": "get_session", "sid": "A"}])[0]
    assert LATE in json.dumps(stored, ensure_ascii=False)
    assert not list_requests(HermesHome(home), "B")


@pytest.mark.parametrize("version", VERSIONS)
def test_correction_is_sent_once_and_undo_before_delivery_sends_nothing(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = new_home(tmp_path, "delta")
    seed(py, home)
    line = correction_line(RULE)
    undone = "use the red button this time"
    steps = [{"turn": "a one", "sid": "A"}, {"turn": "b one", "sid": "B"},
             correction(home, "A", RULE),
             correction(home, "A", undone), cli(home, "undo", "--json"),  # undone before delivery
             {"turn": "/help", "sid": "A"},  # a slash command carries nothing; the correction waits
             {"turn": "a two", "sid": "A"}, {"turn": "b two", "sid": "B"}, {"turn": "a three", "sid": "A"}]
    by = turns(py, home, steps)
    assert by["/help"]["user"][0] == "/help"
    assert by["a two"]["user"][0] == "a two\n\n" + line  # byte for byte, appended to the user turn
    assert by["a three"]["user"][0] == "a three" and by["b two"]["user"][0] == "b two"
    # sent once: only turn two's own user message carries it (later bodies replay that turn as Hermes stored it)
    assert [t["turn"] for t in by.values() if RULE in t["user"][0]] == ["a two"]
    assert undone not in json.dumps([t["bodies"] for t in by.values()], ensure_ascii=False)
    assert all(t["system"] == by[first]["system"] for first, sid in (("a one", "A"), ("b one", "B"))
               for t in by.values() if t["sid"] == sid)  # the system prompt never changed
    states = {r.text: (r.state, r.turn) for r in list_requests(HermesHome(home), "A")}
    assert states == {line: ("delivered", 3), correction_line(undone): ("cancelled", None)}


LATE_ONE = "Compaction rule one: deploy previews expire after 72 hours."
LATE_TWO = "Compaction rule two: the changelog is written in past tense."
SUMMARY = "The user and the assistant exchanged greetings over several short turns; no task is open."


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_rebuilds_the_prompt_and_live_memory_never_resends(version: str, tmp_path: Path) -> None:
    """Issue 33: after a compaction by the version's own compressor (the summariser's reply served by
    the loopback server), the rebuilt prompt holds the entries, and no later turn carries them again
    as a live-memory delta: neither the one delivered before the compaction nor the one added just
    before it."""
    py = hermes_or_skip(version)
    home = new_home(tmp_path, "delta")
    seed(py, home)
    filler = " ".join(f"Step {n}: read the build log, note each warning and the module it names." for n in range(40))
    steps: list[dict[str, Any]] = [{"turn": f"a {i}. {filler}", "sid": "A"} for i in range(1, 9)]
    steps += [mem_exec(py, home, [{"op": "mem", "action": "add", "target": "memory", "content": LATE_ONE}]),
              {"turn": "a delivered", "sid": "A"},
              mem_exec(py, home, [{"op": "mem", "action": "add", "target": "memory", "content": LATE_TWO}]),
              {"compress": "A", "summary": SUMMARY},
              {"turn": "a after one", "sid": "A"}, {"turn": "a after two", "sid": "A"}]
    res = run.drive(py, home, [{"op": "live_turns", "steps": steps}], timeout=900)[0]["steps"]
    for step, r in zip(steps, res):
        if "exec" in step:
            assert r["exec"] == 0, (step, r)
    by = {r["turn"]: r for r in res if "turn" in r}
    [comp] = [r for r in res if "compressed" in r]
    assert comp["summariser_requests"] >= 1 and comp["messages"] < comp["messages_before"], comp  # it compacted
    assert LATE_ONE in comp["system"] and LATE_TWO in comp["system"]
    assert LATE_ONE in by["a delivered"]["user"][0] and LATE_TWO not in by["a delivered"]["user"][0]
    for k in ("a after one", "a after two"):
        assert by[k]["user"][0] == k, (version, k, by[k]["user"][0])  # nothing re-sent, nothing new
        assert json.loads(by[k]["system"][0]) == comp["system"]  # the rebuilt prompt, byte for byte
        assert by[k]["requests"] == 1
    stored = run.drive(py, home, [{"op": "get_session", "sid": comp["session_id"]}])[0]
    assert LATE_TWO in json.dumps(stored, ensure_ascii=False)  # Hermes stored the rebuilt prompt (what memdeck reads)
