"""Issue 35 #2 against the real Hermes: a memory write that waits for review ends the agent's next
reply in that chat with one line, once per record per chat.

The real ``AIAgent.run_conversation`` of each Hermes (its own venv, ``tests/interop/matrix/driver.py``
``live_turns``) talks to the tests' OpenAI-compatible server on a loopback port; in the turn the
model calls Hermes' ``memory`` tool, Hermes' write gate (``memory.write_approval: true``) stages the
write in ``pending/memory/``; memdeck's plugin (the directory plugin, installed in the home) appends
the notice through ``transform_llm_output``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.home import HermesHome
from memdeck.core.plugin.chat_notice import load_noticed
from memdeck.core.plugin.install import install_plugin
from tests.interop.matrix import run
from tests.interop.matrix.run import hermes_or_skip

pytestmark = pytest.mark.interop

VERSIONS = ["0.19.0", "0.22.2.post1"]
REPLY = "Noted, I will keep that in mind."
ONE = "1 memory write waits for review: /memdeck pending"
RULE = "Release tags carry the build number."
CALL = {"name": "memory", "arguments": {"action": "add", "target": "memory", "content": RULE}}


def new_home(tmp_path: Path, extra: str = "") -> Path:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "config.yaml").write_text(
        "model:\n  default: test-model\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n"
        "memory:\n  write_approval: true\n"
        f"memdeck:\n  live_memory: off\n{extra}", encoding="utf-8")
    install_plugin(HermesHome(home))
    return home


def age_exec(home: Path, hours: float) -> dict[str, Any]:
    """Every pending record made ``hours`` older (its ``created_at`` moved back), written as Hermes
    writes a record (a temp file renamed over it)."""
    code = ("import json, os, pathlib, sys\n"
            "for p in pathlib.Path(sys.argv[1]).glob('*.json'):\n"
            "    r = json.loads(p.read_text()); r['created_at'] -= float(sys.argv[2]) * 3600\n"
            "    t = p.with_suffix('.json.tmp'); t.write_text(json.dumps(r)); os.replace(t, p)\n")
    return {"exec": [sys.executable, "-c", code, str(home / "pending" / "memory"), str(hours)]}


def turns(py: Path, home: Path, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    res = run.drive(py, home, [{"op": "live_turns", "steps": steps, "reply": REPLY,
                                "tool_turns": {"remember": CALL}}], timeout=600)[0]
    assert "steps" in res, res
    for step, r in zip(steps, res["steps"]):
        if "exec" in step:
            assert r["exec"] == 0, (step, r)
    return [r for r in res["steps"] if "turn" in r]


def pending_ids(home: Path) -> list[str]:
    return sorted(p.stem for p in (home / "pending" / "memory").glob("*.json"))


@pytest.mark.parametrize("version", VERSIONS)
def test_a_staged_write_ends_that_turns_reply_once(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = new_home(tmp_path)
    got = turns(py, home, [{"turn": "remember: tag releases with the build number", "sid": "A"},
                           {"turn": "thanks", "sid": "A"},
                           {"turn": "hello from another chat", "sid": "B"},  # nothing staged there, nothing old
                           age_exec(home, 30),  # the record is now 30 h old (alerts.pending_age_hours: 24)
                           {"turn": "and another thing", "sid": "A"},  # chat A was told about it already
                           {"turn": "hello again", "sid": "B"},  # chat B: the oldest passed 24 h
                           {"turn": "one more", "sid": "B"}])
    finals = {(t["sid"], t["turn"]): t["final"] for t in got}
    ids = pending_ids(home)
    assert len(ids) == 1, ids  # the gate staged the model's write; MEMORY.md untouched
    mem = home / "memories" / "MEMORY.md"
    assert not mem.exists() or RULE not in mem.read_text(encoding="utf-8")
    assert finals[("A", "remember: tag releases with the build number")] == REPLY + "\n\n" + ONE
    assert finals[("A", "thanks")] == REPLY
    assert finals[("B", "hello from another chat")] == REPLY
    assert finals[("A", "and another thing")] == REPLY
    assert finals[("B", "hello again")] == REPLY + "\n\n" + ONE
    assert finals[("B", "one more")] == REPLY
    assert all(t["final"].count("/memdeck pending") <= 1 for t in got)
    # remembered in memdeck.db, per chat and record
    assert load_noticed(HermesHome(home), "session:A") == set(ids)
    assert load_noticed(HermesHome(home), "session:B") == set(ids)


@pytest.mark.parametrize("version", ["0.19.0"])
def test_off_and_plural(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    off = new_home(tmp_path / "off", "  chat_notices: false\n")
    got = turns(py, off, [{"turn": "remember: tag releases", "sid": "A"}, {"turn": "remember: again", "sid": "A"}])
    assert [t["final"] for t in got] == [REPLY, REPLY]
    assert len(pending_ids(off)) == 2  # the gate staged both; no line said so
    on = new_home(tmp_path / "on")
    got = turns(py, on, [{"turn": "remember: one", "sid": "A"}, {"turn": "remember: two", "sid": "A"}])
    assert [t["final"] for t in got] == [REPLY + "\n\n" + ONE,
                                         REPLY + "\n\n2 memory writes wait for review: /memdeck pending"]
    assert len(pending_ids(on)) == 2
    assert load_noticed(HermesHome(on), "session:A") == set(pending_ids(on))
