"""The plugin's live-memory part (core/plugin/live.py) on a home with a stored prompt: once per
session, nothing when unchanged, nothing on a slash command, off, the budget, two sessions."""

from __future__ import annotations

import time

from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.live_memory.block import FENCE_OPEN
from memdeck.core.live_memory.record import load_deliveries
from memdeck.core.memory.prompt_block import render_block
from memdeck.core.plugin.entry import ConfigReloader
from memdeck.core.plugin.hermes_rules import hermes_rules
from memdeck.core.plugin.live import LiveMemory
from memdeck.core.sessions.hermes_schema import create_state_db

HIST = [{"role": "user", "content": "hi"}]


def _write(home: HermesHome, target: str, entries: list[str]) -> None:
    home.memory_file(target).write_text("\n§\n".join(entries), encoding="utf-8")


def _home(home: HermesHome, mode: str | None, sids: tuple[str, ...] = ("s1",), extra: str = "") -> LiveMemory:
    cfg = "" if mode is None else f"memdeck:\n  live_memory: {mode}\n{extra}"
    home.config_path.write_text(cfg, encoding="utf-8")
    _write(home, "memory", ["keep this", "old rule about tabs"])
    _write(home, "user", ["Name: Ana"])
    prompt = ("You are Hermes.\n\n" + render_block("memory", ["keep this", "old rule about tabs"], 2200) + "\n\n"
              + render_block("user", ["Name: Ana"], 1375))
    conn = create_state_db(home.state_db)
    for sid in sids:
        conn.execute("INSERT INTO sessions (id, source, started_at, system_prompt) VALUES (?, 'cli', ?, ?)",
                     (sid, time.time(), prompt))
    conn.commit()
    conn.close()
    return LiveMemory(home, ConfigReloader(home), rules=hermes_rules())


def _edit(home: HermesHome) -> None:
    _write(home, "memory", ["keep this", "old rule about tabs, use 4 spaces", "日本語 § inside"])
    _write(home, "user", [])


def test_delta_once_then_nothing(hermes_home: HermesHome) -> None:
    live = _home(hermes_home, "delta")
    assert live.pre_llm_call(session_id="s1", user_message="hi", conversation_history=HIST) is None
    _edit(hermes_home)
    ctx = live.pre_llm_call(session_id="s1", user_message="next", conversation_history=HIST * 2, turn_id="t2")
    assert ctx is not None and ctx["context"].startswith(FENCE_OPEN)
    text = ctx["context"]
    assert "~ replaced: old rule about tabs\n  now: old rule about tabs, use 4 spaces" in text
    assert "+ added: 日本語 § inside" in text and "- removed: Name: Ana" in text
    assert live.pre_llm_call(session_id="s1", user_message="again", conversation_history=HIST * 3) is None
    assert live.last is not None and live.last.skipped == "unchanged"
    rows = load_deliveries(hermes_home, "s1")
    assert sorted((d.change, d.state, d.turn, d.turn_id) for d in rows.values()) == [
        ("added", "delivered", 2, "t2"), ("removed", "delivered", 2, "t2"), ("replaced", "delivered", 2, "t2")]
    # another process (a new LiveMemory) does not send it again: memdeck.db remembers
    other = LiveMemory(hermes_home, ConfigReloader(hermes_home), rules=hermes_rules())
    assert other.pre_llm_call(session_id="s1", user_message="x", conversation_history=HIST) is None
    assert other.last is not None and other.last.checked


def test_notice_default_slash_and_two_sessions(hermes_home: HermesHome) -> None:
    live = _home(hermes_home, None, ("s1", "s2"))
    live.pre_llm_call(session_id="s1", user_message="hi", conversation_history=HIST)
    _edit(hermes_home)
    assert live.pre_llm_call(session_id="s1", user_message="/help", conversation_history=HIST) is None
    n1 = live.pre_llm_call(session_id="s1", user_message="ok", conversation_history=HIST)
    n2 = live.pre_llm_call(session_id="s2", user_message="ok", conversation_history=HIST)
    assert n1 == n2 and n1 is not None and "\n" not in n1["context"]
    assert "(1 added, 1 replaced, 1 removed)" in n1["context"]
    assert live.pre_llm_call(session_id="s2", user_message="ok", conversation_history=HIST) is None


def test_off_sends_nothing_and_budget_says_how_many_wait(hermes_home: HermesHome) -> None:
    live = _home(hermes_home, "off")
    _edit(hermes_home)
    assert live.pre_llm_call(session_id="s1", user_message="ok", conversation_history=HIST) is None
    assert not (hermes_home.memdeck_dir / "memdeck.db").exists()
    hermes_home.config_path.write_text("memdeck:\n  live_memory: delta\n  live_memory_max_chars: 480\n", encoding="utf-8")
    _write(hermes_home, "user", ["Name: Ana"])
    _write(hermes_home, "memory", ["keep this", "old rule about tabs"] + [f"new fact {i} " + "x" * 60 for i in range(5)])
    ctx = live.pre_llm_call(session_id="s1", user_message="ok", conversation_history=HIST)
    assert ctx is not None and len(ctx["context"]) <= 480
    assert live.last is not None and live.last.over and "wait" in ctx["context"].split("\n")[-2]
    assert "new fact 4" in ctx["context"] and "new fact 0" not in ctx["context"]  # newest first
    states = sorted(d.state for d in load_deliveries(hermes_home, "s1").values())
    assert states.count("withheld") == len(live.last.over)
    assert load_config(hermes_home).raw["memdeck"]["live_memory_max_chars"] == 480


def test_store_switched_off_sends_nothing(hermes_home: HermesHome) -> None:
    live = _home(hermes_home, "delta")
    with open(hermes_home.config_path, "a", encoding="utf-8") as fh:
        fh.write("memory:\n  memory_enabled: false\n  user_profile_enabled: false\n")
    _edit(hermes_home)
    assert live.pre_llm_call(session_id="s1", user_message="ok", conversation_history=HIST) is None
