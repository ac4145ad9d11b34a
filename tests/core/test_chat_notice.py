"""The chat notice's rules (issue 35 #2) without Hermes: the hooks' decisions, the settings, memdeck.db.

The notice through the real Hermes 0.19 and 0.22.2 agents is tests/interop/test_chat_notice_hermes.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.live_memory.settings import live_settings
from memdeck.core.plugin.chat_notice import ChatNotices, load_noticed, notice_line, staged_id

NOW = 1_800_000_000.0


def make_home(tmp_path: Path, memdeck_yaml: str = "") -> HermesHome:
    (tmp_path / "memories").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.yaml").write_text("memory:\n  write_approval: true\n" + memdeck_yaml, encoding="utf-8")
    return HermesHome(tmp_path)


def stage(home: HermesHome, pid: str, created: float) -> None:
    home.pending_dir.mkdir(parents=True, exist_ok=True)
    rec = {"id": pid, "subsystem": "memory", "action": "add", "summary": "s", "origin": "foreground",
           "created_at": created, "payload": {"action": "add", "target": "memory", "content": "x"}}
    tmp = home.pending_dir / f"{pid}.json.tmp"
    tmp.write_text(json.dumps(rec), encoding="utf-8")
    os.replace(tmp, home.pending_dir / f"{pid}.json")


def notices(home: HermesHome) -> ChatNotices:
    return ChatNotices(home, lambda: load_config(home), clock=lambda: NOW)


def tool_staged(n: ChatNotices, sid: str, pid: str) -> None:
    n.post_tool_call(tool_name="memory", args={}, result=json.dumps({"success": True, "staged": True,
                                                                     "pending_id": pid}), session_id=sid)


def test_line_and_staged_result() -> None:
    assert notice_line(1) == "1 memory write waits for review: /memdeck pending"
    assert notice_line(3) == "3 memory writes wait for review: /memdeck pending"
    assert staged_id('{"success": true, "staged": true, "pending_id": "ab12cd34"}') == "ab12cd34"
    assert staged_id({"success": True}) is None and staged_id("not json") is None
    assert staged_id({"staged": True, "pending_id": "../x"}) is None


def test_staged_once_per_record_per_chat(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    n = notices(home)
    assert n.transform_llm_output(response_text="Hi.", session_id="A") is None  # nothing pending: one stat
    stage(home, "aaaa1111", NOW - 60)
    assert n.transform_llm_output(response_text="Hi.", session_id="A") is None  # not staged here, not old
    tool_staged(n, "A", "aaaa1111")
    n.post_tool_call(tool_name="terminal", result='{"staged": true, "pending_id": "zz"}', session_id="A")
    assert n.transform_llm_output(response_text="Done.\n", session_id="A") == "Done.\n\n" + notice_line(1)
    assert n.transform_llm_output(response_text="Again.", session_id="A") is None
    assert load_noticed(home, "session:A") == {"aaaa1111"}
    # another process serving the same chat agrees (memdeck.db), and never repeats it
    m = notices(home)
    tool_staged(m, "A", "aaaa1111")
    assert m.transform_llm_output(response_text="x", session_id="A") is None and m.last == "already told"


def test_age_and_off(tmp_path: Path) -> None:
    home = make_home(tmp_path, "memdeck:\n  alerts:\n    pending_age_hours: 2\n")
    stage(home, "old00001", NOW - 3 * 3600)
    stage(home, "new00002", NOW - 60)
    n = notices(home)
    assert n.transform_llm_output(response_text="A.", session_id="B") == "A.\n\n" + notice_line(2)
    assert n.transform_llm_output(response_text="A.", session_id="B") is None
    assert n.transform_llm_output(response_text="C.", session_id="C") == "C.\n\n" + notice_line(2)  # another chat
    assert load_noticed(home, "session:B") == {"old00001"}
    home.config_path.write_text("memdeck:\n  chat_notices: false\n", encoding="utf-8")
    off = notices(home)
    tool_staged(off, "D", "new00002")
    assert off.transform_llm_output(response_text="D.", session_id="D") is None and off.last == "off"


def test_settings_read_beside_live_memory() -> None:
    s = live_settings({"memdeck": {"live_memory": "delta", "chat_notices": False, "alerts": {"pending_age_hours": 6}}})
    assert (s.mode, s.chat_notices, s.pending_age_hours, s.warnings) == ("delta", False, 6.0, ())
    d = live_settings(None)
    assert d.chat_notices is True and d.pending_age_hours == 24.0
    bad = live_settings({"memdeck": {"chat_notices": "maybe", "alerts": {"pending_age_hours": -1}}})
    assert bad.chat_notices is True and bad.pending_age_hours == 24.0 and len(bad.warnings) == 2


def test_the_chat_is_the_gateway_session_key_when_hermes_sets_one(monkeypatch) -> None:
    """In a gateway turn Hermes binds ``HERMES_SESSION_KEY`` (``gateway/session_context.py``
    ``get_session_env``); the chat outlives ``/new``. Read only when that module is loaded."""
    import sys
    import types

    from memdeck.core.plugin.chat_notice import chat_key

    assert chat_key("S1") == "session:S1" or "gateway.session_context" in sys.modules
    mod = types.ModuleType("gateway.session_context")
    mod.get_session_env = lambda name, default="": "agent:main:telegram:dm:42" if name == "HERMES_SESSION_KEY" else default  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gateway.session_context", mod)
    assert chat_key("S1") == "agent:main:telegram:dm:42"
    mod.get_session_env = lambda name, default="": ""  # type: ignore[attr-defined]
    assert chat_key("S2") == "session:S2"
