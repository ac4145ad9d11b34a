"""The request queue to running sessions (issues 33 #2, 34 #3): memdeck.db ``agent_requests``,
journaled, undoable until delivered, claimed at most once by the plugin's part.

The plugin's part is driven here with a stand-in agent object for its bookkeeping only; what Hermes
does with a rebuild and what the model receives are tested through the real ``AIAgent`` in
``tests/interop/test_agent_requests_hermes.py``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from typing import Any

import pytest

from memdeck.core.cli import main
from memdeck.core.config import load_config
from memdeck.core.deck import db as deckdb
from memdeck.core.deck import journal
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.plugin.agent_requests import AgentRequests, find_agent
from memdeck.core.requests.queue import (
    claim,
    correction_line,
    list_requests,
    queue_correction,
    queue_rebuild,
)
from memdeck.core.sessions import hermes_schema
from memdeck.core.undo import undo

RULE = "skip the lint step for this commit"


class StandIn:
    """Only what the plugin's part calls on Hermes' ``AIAgent`` (the real one: the interop tests)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._cached_system_prompt: str | None = "old prompt"
        self.calls: list[str] = []
        self._session_db = self
        self.stored: dict[str, str] = {}

    def _invalidate_system_prompt(self) -> None:
        self.calls.append("invalidate")
        self._cached_system_prompt = None

    def _build_system_prompt(self, system_message: Any = None) -> str:
        self.calls.append(f"build:{system_message}")
        return "new prompt"

    def update_system_prompt(self, sid: str, prompt: str) -> None:
        self.stored[sid] = prompt


def state_db(home: HermesHome, *, ended: bool = False) -> None:
    conn = hermes_schema.create_state_db(home.state_db)
    hermes_schema.add_session(conn, "open1", system_prompt="You are Hermes. " * 50)
    hermes_schema.add_session(conn, "done1", system_prompt="x", ended_at=1.0, end_reason="user_exit")
    conn.commit()
    conn.close()


def test_the_queue_is_a_migration_at_the_end(hermes_home: HermesHome) -> None:
    conn = deckdb.connect(hermes_home)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        cols = {r[1] for r in conn.execute("PRAGMA table_info(agent_requests)")}
    finally:
        conn.close()
    assert {"session_id", "kind", "text", "state", "turn", "turn_id", "at", "journal_id"} <= cols
    assert "agent_requests" in deckdb.MIGRATIONS[-1] or any("agent_requests" in m for m in deckdb.MIGRATIONS)


def test_a_correction_is_journaled_and_undo_cancels_it_before_delivery(hermes_home: HermesHome) -> None:
    req = queue_correction(hermes_home, "S", RULE, actor="tui", compaction_id=3, summary_line="- " + RULE)
    assert req.text == correction_line(RULE) == (f"The instruction '{RULE}' applied to one operation only; "
                                                 "it is not a standing rule.")
    [row] = journal.entries(hermes_home, kind="request")
    assert (row.op, row.session_id, row.after, row.detail["request_id"]) == ("correction", "S", req.text, req.request_id)
    with pytest.raises(Refused) as dup:
        queue_correction(hermes_home, "S", RULE)
    assert dup.value.code == "duplicate"
    out = undo(hermes_home, load_config(hermes_home))
    assert out["cancelled"] == [req.request_id]
    [again] = list_requests(hermes_home, "S")
    assert again.state == "cancelled"
    assert not claim(hermes_home, req.request_id, turn=2, turn_id=None)  # a cancelled request is never sent


def test_a_delivered_request_cannot_be_undone(hermes_home: HermesHome) -> None:
    req = queue_rebuild(hermes_home, "S", prompt_tokens=10)
    assert claim(hermes_home, req.request_id, turn=4, turn_id="t4")
    assert not claim(hermes_home, req.request_id, turn=5, turn_id="t5")  # at most once
    with pytest.raises(Refused) as exc:
        undo(hermes_home, load_config(hermes_home))
    assert exc.value.code == "conflict" and "delivered at turn 4" in exc.value.reason
    assert list_requests(hermes_home, "S")[0].state == "delivered"


def test_the_plugin_part_sends_a_correction_once_and_rebuilds_through_the_agent(hermes_home: HermesHome) -> None:
    parts = AgentRequests(hermes_home)
    assert parts.pre_llm_call(session_id="S", user_message="hi") is None  # no memdeck.db yet: nothing, no error
    queue_correction(hermes_home, "S", RULE)
    queue_rebuild(hermes_home, "S")
    queue_correction(hermes_home, "OTHER", "only for the other session")
    agent = StandIn("S")
    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]

    def turn(agent: Any, system_message: str | None, text: str) -> Any:  # Hermes' frame holds `agent`
        return parts.pre_llm_call(session_id="S", user_message=text, conversation_history=history, turn_id="t2")

    assert turn(agent, "sys", "/help") is None  # a slash command: everything waits
    assert agent.calls == []
    assert turn(agent, "sys", "go") == {"context": correction_line(RULE)}
    assert agent.calls == ["invalidate", "build:sys"]
    assert agent._cached_system_prompt == agent.stored["S"] == "new prompt"
    assert turn(agent, "sys", "again") is None  # once
    rows = {r.kind: r for r in list_requests(hermes_home, "S")}
    assert rows["correction"].state == rows["rebuild"].state == "delivered"
    assert (rows["rebuild"].turn, rows["rebuild"].turn_id) == (2, "t2")
    assert rows["rebuild"].detail["rebuilt_chars"] == len("new prompt")
    assert list_requests(hermes_home, "OTHER")[0].state == "queued"  # other sessions untouched


def test_a_rebuild_for_a_session_this_process_does_not_run_stays_queued(hermes_home: HermesHome) -> None:
    queue_rebuild(hermes_home, "S")
    parts = AgentRequests(hermes_home)
    assert parts.pre_llm_call(session_id="S", user_message="hi") is None
    assert list_requests(hermes_home, "S")[0].state == "queued"


def test_the_agent_is_found_on_the_turn_threads_stack() -> None:
    """0.21+ run hot-path hooks in a worker thread while the turn's thread waits."""
    stand_in = StandIn("T")  # not named `agent` here: this thread's own stack is searched first
    found: list[Any] = []
    ready, done = threading.Event(), threading.Event()

    def turn_thread(agent: Any, system_message: str) -> None:
        ready.set()
        done.wait(10)

    t = threading.Thread(target=turn_thread, args=(stand_in, "the system message"))
    t.start()
    ready.wait(10)
    try:
        found.append(find_agent("T"))
        found.append(find_agent("nobody"))
    finally:
        done.set()
        t.join()
    assert found == [(stand_in, "the system message"), (None, None)]


def test_sessions_rebuild_states_the_cost_and_refuses_unknown_and_ended(hermes_home: HermesHome, capsys: Any) -> None:
    state_db(hermes_home)
    assert main(["--home", str(hermes_home.path), "sessions", "rebuild", "open1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["request"]["state"] == "queued" and out["cost"]["prompt_chars"] == len("You are Hermes. " * 50)
    assert out["cost"]["prompt_tokens"] == (len("You are Hermes. " * 50) + 3) // 4  # Hermes' rough estimator
    assert main(["--home", str(hermes_home.path), "sessions", "rebuild", "open1"]) == 1  # already queued
    assert "already has this rebuild request queued" in capsys.readouterr().err
    for sid, word in (("nope", "no session"), ("done1", "has ended")):
        assert main(["--home", str(hermes_home.path), "sessions", "rebuild", sid]) == 1
        err = capsys.readouterr().err
        assert err.startswith("memdeck: refused: ") and word in err
    assert [r.session_id for r in list_requests(hermes_home)] == ["open1"]
    assert main(["--home", str(hermes_home.path), "sessions", "list", "--json"]) == 0
    assert {s["id"] for s in json.loads(capsys.readouterr().out)["sessions"]} == {"open1", "done1"}


def test_an_old_memdeck_db_without_the_queue_costs_the_plugin_nothing(hermes_home: HermesHome) -> None:
    path = deckdb.db_path(hermes_home)
    path.parent.mkdir(parents=True)
    sqlite3.connect(path).close()  # an empty database: no agent_requests table
    assert AgentRequests(hermes_home).pre_llm_call(session_id="S", user_message="hi") is None
