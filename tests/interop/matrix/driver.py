"""Drive one installed Hermes against a home: runs INSIDE that Hermes' venv.

Imports only the standard library and the Hermes modules of the venv it runs in (never
memdeck), so the same file drives hermes-agent 0.17 ... 0.22 (and the iot 0.21 builds). Usage::

    <venv>/bin/python driver.py HERMES_HOME < commands.json > results.json

``commands.json`` is a JSON list of command objects (``{"op": ..., ...}``); the output is a
JSON object ``{"results": [...]}`` with one result per command, in order. A command with a
``home`` field runs on that Hermes home instead (it stays the home of the commands after it),
so one process can serve many homes. A command that
this Hermes cannot do reports ``{"unsupported": "<reason>"}``; one that raised reports
``{"error": "<type>: <message>"}``. Nothing else is printed on stdout (Hermes' own logging
goes to stderr).

Ops (all optional fields have defaults):

* ``info``: Hermes version, SCHEMA_VERSION, which APIs exist, PyYAML / ruamel.yaml presence.
* ``config`` {text}: write ``config.yaml`` verbatim (``memory.write_approval``, ``plugins``).
* ``mem_read`` {target}: the raw file text and the entries a fresh ``MemoryStore`` loads.
* ``mem`` {action: add|replace|remove|patch|batch, target, content, old_text, operations}:
  call the real ``MemoryStore`` method directly (no write gate).
* ``stage`` {action, target, content, old_text, operations}: call the real ``memory_tool``
  entry point (the write gate runs; with ``memory.write_approval: true`` it stages);
  returns the tool's JSON and the staged record read back from disk.
* ``pending``: ``write_approval.list_pending("memory")``.
* ``approve`` {id}: ``apply_memory_pending(record["payload"], store)`` like ``/memory
  approve``; the record is discarded only when the apply succeeded.
* ``approve_dry`` {ids}: for each id, what this Hermes' own approval would do now, the home left
  as it was: ``apply_memory_pending(record["payload"], store)`` on the files as they are, then the
  files put back byte for byte (the record is never discarded). Per id: ``success``, ``error``
  (Hermes' words) and ``changed`` (whether MEMORY.md or USER.md changed).
* ``approve_all`` {ids}: ``approve`` for each id in order (a real approval: records discarded on
  success), each result.
* ``session`` {id, source, parent, system_prompt}; ``msg`` {sid, role, content, tool_name,
  tool_calls, timestamp}; ``end`` {sid, reason}; ``system_prompt`` {sid, prompt}.
* ``prompt_build`` {sid, platform, model, system_message, soul, agents_md, skills, store}: the
  system prompt this Hermes' own builder makes (``AIAgent._build_system_prompt``), stored with
  ``update_system_prompt`` as on a session's first turn.
* ``compact`` {sid, head, tail, summary, child, legacy}: in-place ``archive_and_compact`` when this
  Hermes has it (reporting how many rows it archived), else rotation (end the session with
  ``compression`` and continue in ``child``), the summary row built with this Hermes' own
  ``SUMMARY_PREFIX`` (``legacy``: its ``LEGACY_SUMMARY_PREFIX`` form, as an older Hermes wrote it).
* ``prune`` {sid, min_chars, protect_last_n}: the proactive tool-result prune
  (``ContextCompressor.prune_tool_results_only``, 0.20+; on by default in 0.23), committed
  through ``archive_and_compact`` with no summary row; reports how many rows it archived.
* ``get_session`` {sid}: the session row as ``SessionDB.get_session`` returns it.
* ``estimates`` {texts, messages, thresholds}: this Hermes' ``estimate_tokens_rough``,
  ``estimate_messages_tokens_rough`` and the ``threshold_tokens`` of a real ``ContextCompressor``.
* ``search`` {query, current_session_id}: this Hermes' ``session_search`` tool output and
  the raw ``SessionDB.search_messages`` rows (id, session_id, snippet).
* ``scan`` {texts, scope}: ``scan_for_threats(text, scope)`` for each text (scope ``strict``).
* ``plugins``: ``discover_and_load()`` of this Hermes' plugin manager; every plugin found
  with enabled / error / hooks.
* ``memory_setup``: build the agent as Hermes does for a turn (``AIAgent``, offline) and report
  what it made of config.yaml's ``memory:``: ``memory_enabled``, ``user_profile_enabled`` (the
  built-in stores it keeps) and ``providers`` (the external memory providers its memory manager
  holds, none when it has no manager).
* ``turns`` {sid, platform, messages, calls, prefetch_timeout, reply}: real turns. An
  OpenAI-compatible model server on a loopback port, in this process, answers ``reply`` to every
  request and keeps each request; an ``AIAgent`` pointed at it runs ``run_conversation`` once
  per message of ``messages`` (the history carried from turn to turn, as the CLI does), so the
  memory provider's prefetch, the ``pre_llm_call`` hooks and the persistence of ``api_content``
  run as in production. ``calls`` are tool calls made on the memory manager first (e.g.
  holographic's ``fact_store`` add); ``prefetch_timeout`` shortens the external provider's
  prefetch timeout (0.19+: 8 s). Returns, per turn, the content of the last user message of
  the request the model received (what went over the wire) and the final response.
* ``live_turns`` {steps, platform, reply, tool_turns}: real turns of several sessions, with other processes
  run between them (``exec`` steps); returns each turn's request bodies byte for byte, the system
  message's JSON text as sent, the last user message (issue 33) and the final reply. ``tool_turns``
  maps a turn's text to a tool call ``{name, arguments}`` the model makes first in that turn (the
  tool's result goes back to the model, which then answers ``reply``; issue 35's notice). A
  ``{"compress": sid, "summary": text}`` step forces this Hermes' own compressor
  (``AIAgent._compress_context(..., force=True)``) on that session's history, the summariser answered
  ``summary``; the session carries on with the compressed history (and the id the compressor gave it).
* ``compress_turns`` {sid, turns, summary, after, in_place, reply}: real turns, then the agent's own
  compaction (``AIAgent._compress_context(..., force=True)``, as ``/compress``) with the
  summariser's reply scripted, then more turns (issue 34: the constraint ledger's fixtures).
  ``base_url``: the test's own model server instead of the driver's (issue 37: its responses report
  cached tokens; no bodies then).
* ``plugin_turns`` {name, sid, active, extra, announce}: load plugins, then call ``pre_llm_call``
  on a quiet history, a compacted one (this Hermes' ``SUMMARY_PREFIX`` + ``active`` messages)
  and again; ``extra`` adds keyword arguments to every hook call and ``announce`` fires extra
  hook names first (what a newer Hermes passes and fires: 0.23 announces gateway clients).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any

HOME: Path
_DB: Any = None


def _sessiondb() -> Any:
    global _DB
    if _DB is None:
        from hermes_state import SessionDB

        _DB = SessionDB(HOME / "state.db")
    return _DB


def _store() -> Any:
    """A ``MemoryStore`` with the char limits of the home's config.yaml (``memory.memory_char_limit``
    / ``user_char_limit``, Hermes' defaults 2200 / 1375 when unset), as the agent builds it."""
    from tools.memory_tool import MemoryStore

    limits: dict[str, Any] = {}
    try:
        from hermes_cli.config import load_config

        mem = load_config().get("memory") or {}
        if isinstance(mem, dict):
            limits = {k: int(mem[k]) for k in ("memory_char_limit", "user_char_limit") if mem.get(k) is not None}
    except Exception:  # noqa: BLE001 - no config: Hermes' defaults
        limits = {}
    store = MemoryStore(**limits)
    store.load_from_disk()
    return store


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, dict):
            return {str(k): _jsonable(v) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            return [_jsonable(v) for v in value]
        return repr(value)


# ------------------------------------------------------------------------------ ops


def op_info(cmd: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"python": sys.version.split()[0]}
    try:
        import hermes_cli

        out["version"] = getattr(hermes_cli, "__version__", None)
        out["release_date"] = getattr(hermes_cli, "__release_date__", None)
    except Exception as exc:  # noqa: BLE001 - depends on the venv  # pragma: no cover
        out["version_error"] = repr(exc)
    try:
        import hermes_state

        version = getattr(hermes_state, "SCHEMA_VERSION", None)
        if version is None:  # 0.20+: the constant moved to hermes_state_common
            version = getattr(__import__("hermes_state_common"), "SCHEMA_VERSION", None)
        out["schema_version"] = version
        from hermes_state import SessionDB

        out["sessiondb"] = {n: hasattr(SessionDB, n) for n in (
            "archive_and_compact", "replace_messages", "update_system_prompt", "search_messages")}
    except Exception as exc:  # noqa: BLE001 - the probe reports what failed in its answer
        out["state_error"] = repr(exc)
    try:
        from tools import memory_tool

        store_cls = memory_tool.MemoryStore
        out["memory_store"] = {n: hasattr(store_cls, n) for n in ("add", "replace", "remove", "patch", "apply_batch")}
        out["apply_memory_pending"] = hasattr(memory_tool, "apply_memory_pending")
    except Exception as exc:  # noqa: BLE001 - the probe reports what failed in its answer
        out["memory_error"] = repr(exc)
    for mod in ("yaml", "ruamel.yaml"):
        try:
            m = __import__(mod, fromlist=["__version__"])
            out[mod] = getattr(m, "__version__", "present")
        except Exception:  # noqa: BLE001 - a module that fails to import is reported absent
            out[mod] = None
    return out


def op_config(cmd: dict[str, Any]) -> dict[str, Any]:
    (HOME / "config.yaml").write_text(cmd["text"], encoding="utf-8")
    return {"ok": True}


def op_mem_read(cmd: dict[str, Any]) -> dict[str, Any]:
    target = cmd.get("target", "memory")
    path = HOME / "memories" / ("USER.md" if target == "user" else "MEMORY.md")
    raw = path.read_bytes().decode("utf-8") if path.exists() else None
    store = _store()
    entries = store.user_entries if target == "user" else store.memory_entries
    return {"raw": raw, "entries": list(entries)}


def op_mem(cmd: dict[str, Any]) -> dict[str, Any]:
    store = _store()
    action, target = cmd["action"], cmd.get("target", "memory")
    if action == "add":
        return store.add(target, cmd["content"])
    if action == "replace":
        return store.replace(target, cmd["old_text"], cmd["content"])
    if action == "remove":
        return store.remove(target, cmd["old_text"])
    if action == "patch":
        if not hasattr(store, "patch"):
            return {"unsupported": "MemoryStore.patch does not exist in this Hermes"}
        return store.patch(target, cmd["old_text"], cmd["content"])
    if action == "batch":
        return store.apply_batch(target, cmd["operations"])
    return {"unsupported": f"unknown memory action {action!r}"}


def op_stage(cmd: dict[str, Any]) -> dict[str, Any]:
    from tools import memory_tool, write_approval

    params = inspect.signature(memory_tool.memory_tool).parameters
    kwargs: dict[str, Any] = {"target": cmd.get("target", "memory"), "store": _store()}
    if cmd.get("operations") is not None:
        if "operations" not in params:
            return {"unsupported": "memory_tool has no 'operations' (batch) parameter"}
        kwargs["operations"] = cmd["operations"]  # every version: operations set -> batch path
    else:
        kwargs["action"] = cmd["action"]
        for key in ("content", "old_text"):
            if cmd.get(key) is not None:
                kwargs[key] = cmd[key]
    raw = memory_tool.memory_tool(**kwargs)
    result = json.loads(raw)
    record = None
    if result.get("pending_id"):
        record = write_approval.get_pending(write_approval.MEMORY, result["pending_id"])
        path = HOME / "pending" / "memory" / f"{result['pending_id']}.json"
        if path.exists():
            record = json.loads(path.read_text(encoding="utf-8"))
    return {"result": result, "record": record}


def op_pending(cmd: dict[str, Any]) -> dict[str, Any]:
    from tools import write_approval

    return {"records": write_approval.list_pending(write_approval.MEMORY)}


def op_approve(cmd: dict[str, Any]) -> dict[str, Any]:
    from tools import memory_tool, write_approval

    rec = write_approval.get_pending(write_approval.MEMORY, cmd["id"])
    if rec is None:
        return {"success": False, "error": f"no pending record {cmd['id']}"}
    if not hasattr(memory_tool, "apply_memory_pending"):
        return {"unsupported": "tools.memory_tool.apply_memory_pending does not exist"}
    result = memory_tool.apply_memory_pending(rec.get("payload", {}), _store())
    if result.get("success"):
        write_approval.discard_pending(write_approval.MEMORY, cmd["id"])
    return {"result": result, "discarded": bool(result.get("success"))}


def _memory_files() -> dict[str, bytes | None]:
    out = {}
    for name in ("MEMORY.md", "USER.md"):
        path = HOME / "memories" / name
        out[name] = path.read_bytes() if path.exists() else None
    return out


def _put_back(files: dict[str, bytes | None]) -> None:
    for name, data in files.items():
        path = HOME / "memories" / name
        if data is None:
            if path.exists():
                path.unlink()
        elif not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)


def op_approve_dry(cmd: dict[str, Any]) -> dict[str, Any]:
    """What this Hermes' approval of each record would do, the home left as it was (see the docstring)."""
    from tools import memory_tool, write_approval

    if not hasattr(memory_tool, "apply_memory_pending"):
        return {"unsupported": "tools.memory_tool.apply_memory_pending does not exist"}
    out = {}
    for pid in cmd["ids"]:
        rec = write_approval.get_pending(write_approval.MEMORY, pid)
        if rec is None:
            out[pid] = {"success": False, "error": f"no pending record {pid}", "changed": False}
            continue
        before = _memory_files()
        try:
            res = memory_tool.apply_memory_pending(rec.get("payload", {}), _store())
        finally:
            after = _memory_files()
            _put_back(before)
        out[pid] = {"success": bool(res.get("success")), "error": res.get("error"), "message": res.get("message"),
                    "changed": after != before}
    return {"results": out}


def op_approve_all(cmd: dict[str, Any]) -> dict[str, Any]:
    return {"results": [op_approve({"id": pid}) for pid in cmd["ids"]]}


def op_session(cmd: dict[str, Any]) -> dict[str, Any]:
    db = _sessiondb()
    kwargs: dict[str, Any] = {}
    if cmd.get("parent"):
        kwargs["parent_session_id"] = cmd["parent"]
    db.create_session(cmd["id"], source=cmd.get("source", "cli"), **kwargs)
    if cmd.get("system_prompt") is not None:
        db.update_system_prompt(cmd["id"], cmd["system_prompt"])
    return {"ok": True}


def op_system_prompt(cmd: dict[str, Any]) -> dict[str, Any]:
    _sessiondb().update_system_prompt(cmd["sid"], cmd["prompt"])
    return {"ok": True}


def op_prompt_build(cmd: dict[str, Any]) -> dict[str, Any]:
    """Build a session's system prompt with this Hermes' own prompt builder and store it as Hermes
    does on a session's first turn (``AIAgent._build_system_prompt`` then
    ``SessionDB.update_system_prompt``, 0.19 ``agent/conversation_loop.py:304-425``).

    Fields: ``sid``, ``platform`` (``cli``, ``telegram``, ...), ``model``, ``system_message``,
    ``soul`` (SOUL.md text written first), ``agents_md`` (an AGENTS.md in the working directory),
    ``skills`` (``[{category, name, description}]`` written as ``skills/<category>/<name>/SKILL.md``),
    ``store`` (default true). The agent is built offline: a custom provider on a closed loopback
    port and ``model.context_length`` in config.yaml, so nothing is probed that matters. Returns the
    prompt and ``tiers`` (``build_system_prompt_parts``: ``{stable, context, volatile}``, None before 0.17).
    """
    sid = cmd.get("sid", "S1")
    if cmd.get("soul") is not None:
        (HOME / "SOUL.md").write_text(cmd["soul"], encoding="utf-8")
    if cmd.get("agents_md") is not None:
        Path("AGENTS.md").write_text(cmd["agents_md"], encoding="utf-8")
    for sk in cmd.get("skills") or ():  # PyPI wheels ship no bundled skills: a user's own, as SKILL.md
        d = HOME / "skills" / sk.get("category", "general") / sk["name"]
        d.mkdir(parents=True, exist_ok=True)
        (d / "SKILL.md").write_text(f"---\nname: {sk['name']}\ndescription: {sk.get('description', '')}\n---\n\n"
                                    f"# {sk['name']}\n\n{sk.get('body', 'Steps.')}\n", encoding="utf-8")
    from run_agent import AIAgent

    db = _sessiondb()
    if db.get_session(sid) is None:
        db.create_session(sid, source=cmd.get("platform", "cli"))
    wanted = dict(model=cmd.get("model", "test-model"), api_key="sk-test", base_url="http://127.0.0.1:9/v1",
                  provider="custom", quiet_mode=True, session_id=sid, session_db=db,
                  platform=cmd.get("platform", "cli"))
    params = inspect.signature(AIAgent.__init__).parameters
    agent = AIAgent(**{k: v for k, v in wanted.items() if k in params})
    prompt = agent._build_system_prompt(cmd.get("system_message"))
    if cmd.get("store", True):
        db.update_system_prompt(sid, prompt)
    out: dict[str, Any] = {"prompt": prompt, "chars": len(prompt)}
    try:  # the three cache tiers the prompt was joined from (agent/system_prompt.py, 0.17+; issue 37)
        from agent.system_prompt import build_system_prompt_parts

        out["tiers"] = build_system_prompt_parts(agent, system_message=cmd.get("system_message"))
    except ImportError:
        out["tiers"] = None
    return out


def op_msg(cmd: dict[str, Any]) -> dict[str, Any]:
    kwargs = {k: cmd[k] for k in ("tool_name", "tool_calls", "tool_call_id") if cmd.get(k) is not None}
    if cmd.get("timestamp") is not None:
        if "timestamp" not in inspect.signature(_sessiondb().append_message).parameters:
            return {"unsupported": "SessionDB.append_message takes no timestamp in this Hermes"}
        kwargs["timestamp"] = cmd["timestamp"]
    mid = _sessiondb().append_message(cmd["sid"], cmd["role"], cmd.get("content"), **kwargs)
    return {"id": mid}


def op_end(cmd: dict[str, Any]) -> dict[str, Any]:
    _sessiondb().end_session(cmd["sid"], cmd.get("reason", "user_exit"))
    return {"ok": True}


def _summary_row(live: list[dict[str, Any]], head: int, text: str, legacy: bool = False) -> dict[str, Any]:
    """The summary row this Hermes inserts; ``legacy``: the ``[CONTEXT SUMMARY]:`` form older Hermes
    wrote (``LEGACY_SUMMARY_PREFIX``, which this Hermes still recognises), no end marker."""
    from agent.context_compressor import SUMMARY_PREFIX

    end = getattr(sys.modules["agent.context_compressor"], "_SUMMARY_END_MARKER", "")
    role = "assistant" if head and live[head - 1].get("role") == "user" else "user"
    if legacy:
        prefix = getattr(sys.modules["agent.context_compressor"], "LEGACY_SUMMARY_PREFIX", "[CONTEXT SUMMARY]:")
        return {"role": role, "content": prefix + " " + text}
    content = SUMMARY_PREFIX + "\n" + text + ("\n\n" + end if end else "")
    return {"role": role, "content": content}


def op_compact(cmd: dict[str, Any]) -> dict[str, Any]:
    db = _sessiondb()
    sid, head, tail = cmd["sid"], int(cmd.get("head", 1)), int(cmd.get("tail", 1))
    live = [{k: v for k, v in m.items() if k != "timestamp"} for m in db.get_messages_as_conversation(sid)]
    new = live[:head] + [_summary_row(live, head, cmd.get("summary", "summary"), bool(cmd.get("legacy")))] + live[len(live) - tail:]
    if hasattr(db, "archive_and_compact") and not cmd.get("rotate"):
        params = inspect.signature(db.archive_and_compact).parameters
        kwargs = {"tail_count": tail} if "tail_count" in params else {}
        before = _compacted_rows(sid)
        count = db.archive_and_compact(sid, new, **kwargs)
        return {"mode": "in_place", "active": count, "archived": _compacted_rows(sid) - before}
    child = cmd.get("child") or f"{sid}_c"
    db.end_session(sid, "compression")
    db.create_session(child, source="cli", parent_session_id=sid)
    db.replace_messages(child, new)
    return {"mode": "rotation", "child": child,
            "note": None if hasattr(db, "archive_and_compact") else "no archive_and_compact in this Hermes"}


def _compacted_rows(sid: str) -> int:
    """How many rows of ``sid`` are ``compacted = 1`` (read with SQLite, after the commit)."""
    import sqlite3

    conn = sqlite3.connect(f"{(HOME / 'state.db').as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ? AND compacted = 1", (sid,)).fetchone()[0])
    finally:
        conn.close()


def op_prune(cmd: dict[str, Any]) -> dict[str, Any]:
    """The proactive tool-result prune (``ContextCompressor.prune_tool_results_only``, 0.20+;
    opt-in there, on by default in 0.23): deterministic, no summary row, committed through
    ``archive_and_compact``. Gates opened so it fires on a small history: trigger 1 token, no
    minimum reclaim, tool results over ``min_chars`` (default 200) pruned, ``protect_last_n``
    (default 2) messages protected."""
    from agent import context_compressor as cc_mod

    cls = cc_mod.ContextCompressor
    if not hasattr(cls, "prune_tool_results_only"):
        return {"unsupported": "ContextCompressor.prune_tool_results_only does not exist in this Hermes"}
    db, sid = _sessiondb(), cmd["sid"]
    params = inspect.signature(db.get_messages_as_conversation).parameters
    msgs = db.get_messages_as_conversation(sid, **({"include_row_ids": True} if "include_row_ids" in params else {}))
    comp = cls(model="test/model", quiet_mode=True, config_context_length=64000, proactive_prune_tokens=1,
               proactive_prune_min_reclaim_tokens=0, proactive_prune_min_result_chars=int(cmd.get("min_chars", 200)),
               protect_last_n=int(cmd.get("protect_last_n", 2)))
    comp.bind_session_state(db, sid)
    before = _compacted_rows(sid)
    _out, pruned = comp.prune_tool_results_only(msgs)
    return {"pruned": pruned, "active": len(db.get_messages(sid)), "archived": _compacted_rows(sid) - before}


def op_estimates(cmd: dict[str, Any]) -> dict[str, Any]:
    """This Hermes' own token estimates and compaction thresholds: ``estimate_tokens_rough`` of each
    of ``texts``, ``estimate_messages_tokens_rough`` of ``messages`` (one list of message dicts), and
    for each ``[context_length, threshold_percent, max_tokens, threshold_tokens_cap]`` of
    ``thresholds`` the ``threshold_tokens`` a real ``ContextCompressor`` installs (built with that
    ``config_context_length``, so nothing is probed)."""
    from agent import model_metadata as mm
    from agent.context_compressor import ContextCompressor

    out: dict[str, Any] = {"texts": [mm.estimate_tokens_rough(t) for t in cmd.get("texts", [])]}
    if cmd.get("messages") is not None:
        out["messages"] = mm.estimate_messages_tokens_rough(cmd["messages"])
    params = inspect.signature(ContextCompressor.__init__).parameters
    th = []
    for length, pct, max_tokens, cap in cmd.get("thresholds", []):
        kwargs = dict(model="test-model", threshold_percent=pct, quiet_mode=True, config_context_length=length,
                      base_url="http://127.0.0.1:9/v1", provider="custom", max_tokens=max_tokens,
                      threshold_tokens_cap=cap)
        cc = ContextCompressor(**{k: v for k, v in kwargs.items() if k in params})
        th.append({"threshold_tokens": cc.threshold_tokens, "context_length": cc.context_length,
                   "cap_supported": "threshold_tokens_cap" in params, "max_tokens_supported": "max_tokens" in params})
    out["thresholds"] = th
    return out


def op_get_session(cmd: dict[str, Any]) -> dict[str, Any]:
    row = _sessiondb().get_session(cmd["sid"])
    return {"session": _jsonable(dict(row)) if row else None}


def op_search(cmd: dict[str, Any]) -> dict[str, Any]:
    db = _sessiondb()
    out: dict[str, Any] = {}
    try:
        from tools.session_search_tool import session_search

        raw = session_search(query=cmd["query"], db=db, current_session_id=cmd.get("current_session_id"))
        out["tool"] = json.loads(raw)
    except Exception as exc:  # noqa: BLE001 - the probe reports what failed in its answer
        out["tool_error"] = f"{type(exc).__name__}: {exc}"
    rows = db.search_messages(cmd["query"], limit=int(cmd.get("limit", 20)))
    out["rows"] = [{"id": r.get("id"), "session_id": r.get("session_id"), "snippet": r.get("snippet")} for r in rows]
    return out


def op_scan(cmd: dict[str, Any]) -> dict[str, Any]:
    from tools.threat_patterns import scan_for_threats

    scope = cmd.get("scope", "strict")
    return {"verdicts": [sorted(set(scan_for_threats(t, scope=scope))) for t in cmd["texts"]]}


def op_plugins(cmd: dict[str, Any]) -> dict[str, Any]:
    from hermes_cli import plugins

    mgr = plugins.get_plugin_manager()
    mgr.discover_and_load(force=True) if "force" in inspect.signature(mgr.discover_and_load).parameters else mgr.discover_and_load()
    found = {}
    only = set(cmd.get("names") or ())
    for key, p in getattr(mgr, "_plugins", {}).items():
        if only and str(key).split("/")[-1] not in only:
            continue
        found[str(key)] = {
            "enabled": bool(getattr(p, "enabled", False)),
            "error": getattr(p, "error", None),
            "hooks": list(getattr(p, "hooks_registered", []) or []),
            "source": getattr(getattr(p, "manifest", None), "source", None),
        }
    return {"group": getattr(plugins, "ENTRY_POINTS_GROUP", None), "plugins": found}


def op_plugin_turns(cmd: dict[str, Any]) -> dict[str, Any]:
    """Load plugins with this Hermes' plugin manager, then run ``pre_llm_call`` as Hermes does:
    a quiet turn, then a turn whose history holds a compaction summary built with this
    Hermes' own ``SUMMARY_PREFIX`` (and end marker), then the same history again."""
    from agent.context_compressor import SUMMARY_PREFIX
    from hermes_cli import plugins

    end = getattr(sys.modules["agent.context_compressor"], "_SUMMARY_END_MARKER", "")
    mgr = plugins.get_plugin_manager()
    if cmd.get("no_entry_points") and hasattr(mgr, "_scan_entry_points"):
        mgr._scan_entry_points = lambda *a, **k: []  # a venv with memdeck installed: test the directory form
    mgr.discover_and_load(force=True) if "force" in inspect.signature(mgr.discover_and_load).parameters else mgr.discover_and_load()
    name = cmd.get("name", "memdeck")
    lp = next((p for k, p in getattr(mgr, "_plugins", {}).items() if str(k).split("/")[-1] == name), None)
    if lp is None:
        return {"loaded": False, "plugins": sorted(map(str, getattr(mgr, "_plugins", {})))}
    sid = cmd["sid"]

    extra = dict(cmd.get("extra") or {})  # hook arguments a newer Hermes adds (0.23: the gateway client)

    def turn(history: list[dict[str, Any]], user: str) -> Any:
        return mgr.invoke_hook("pre_llm_call", session_id=sid, task_id="t", turn_id="x", user_message=user,
                               conversation_history=history, is_first_turn=False, model="m", platform="cli",
                               sender_id="", **extra)

    for hook in cmd.get("announce") or ():  # hooks a newer Hermes fires that this one may not know
        mgr.invoke_hook(hook, session_id=sid, platform="cli", **extra)
    mgr.invoke_hook("on_session_start", session_id=sid, model="m", platform="cli", **extra)
    sysmsg = {"role": "system", "content": "You are Hermes."}
    summary = {"role": "user", "content": SUMMARY_PREFIX + "\nWe set up the repo." + ("\n\n" + end if end else "")}
    compacted = [sysmsg, {"role": "user", "content": "old"}, summary] + cmd.get("active", [])
    out = {"loaded": True, "enabled": bool(getattr(lp, "enabled", False)), "load_error": getattr(lp, "error", None),
           "hooks": sorted(getattr(lp, "hooks_registered", []) or []),
           "module": getattr(getattr(lp, "module", None), "__name__", None),
           "quiet": turn([sysmsg, {"role": "user", "content": "hello"}], "hello"),
           "compacted": turn(compacted, "next question"),
           "again": turn(compacted + [{"role": "user", "content": "more"}], "more")}
    mgr.invoke_hook("on_session_end", session_id=sid, completed=True, interrupted=False, model="m", platform="cli",
                    **extra)
    return out


def op_memory_setup(cmd: dict[str, Any]) -> dict[str, Any]:
    """What this Hermes' agent makes of config.yaml's ``memory:`` section (see the docstring)."""
    agent = _offline_agent(cmd.get("sid", "MEMSETUP"), "http://127.0.0.1:9/v1")
    mgr = getattr(agent, "_memory_manager", None)
    names = [p.name for p in mgr.providers] if mgr is not None else []
    return {"memory_enabled": bool(getattr(agent, "_memory_enabled", False)),
            "user_profile_enabled": bool(getattr(agent, "_user_profile_enabled", False)),
            "providers": [n for n in names if n != "builtin"]}


def op_conv_estimate(cmd: dict[str, Any]) -> dict[str, Any]:
    """This Hermes' own size of a stored session as a resumed turn sees it: ``rough``
    (``estimate_messages_tokens_rough`` of ``SessionDB.get_messages_as_conversation``), ``anchor``
    (0.21.5+ ``agent/usage_anchor.py`` ``persisted_anchor_tokens``: the provider's reported usage plus
    the rough size of what came after; None when this Hermes has none or it is stale) and the
    message keys it loaded."""
    from agent import model_metadata as mm

    db = _sessiondb()
    msgs = db.get_messages_as_conversation(cmd["sid"])
    out: dict[str, Any] = {"rough": mm.estimate_messages_tokens_rough(msgs), "anchor": None,
                           "keys": sorted({k for m in msgs for k in m})}
    try:
        from agent.usage_anchor import persisted_anchor_tokens
    except ImportError:
        return out
    out["anchor"] = persisted_anchor_tokens(db, cmd["sid"], msgs)
    return out


def op_agent_budget(cmd: dict[str, Any]) -> dict[str, Any]:
    """The compaction threshold this Hermes' own agent installs from the home's config.yaml
    (``AIAgent.__init__`` builds its ``ContextCompressor``): ``{threshold_tokens, context_length}``."""
    agent = _offline_agent(cmd.get("sid", "BUDGET"), "http://127.0.0.1:9/v1")
    cc = agent.context_compressor
    return {"threshold_tokens": int(cc.threshold_tokens), "context_length": int(cc.context_length)}


def _offline_agent(sid: str, base_url: str, platform: str = "cli") -> Any:
    from run_agent import AIAgent

    db = _sessiondb()
    if db.get_session(sid) is None:
        db.create_session(sid, source=platform)
    wanted = dict(model="test-model", api_key="sk-test", base_url=base_url, provider="custom", quiet_mode=True,
                  session_id=sid, session_db=db, platform=platform)
    params = inspect.signature(AIAgent.__init__).parameters
    return AIAgent(**{k: v for k, v in wanted.items() if k in params})


class _ModelServer:
    """An OpenAI-compatible chat-completions server on a loopback port (stdlib only): every POST
    is kept (``requests``) and answered with ``reply`` (streamed when the request asks)."""

    def __init__(self, reply: str, tool_turns: dict[str, Any] | None = None, answer: Any = None) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        tool_turns = dict(tool_turns or {})
        self.requests: list[dict[str, Any]] = []
        self.raw: list[bytes] = []  # each request body, byte for byte
        self.reply = reply  # what every request is answered (a step may change it)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, obj: Any) -> None:
                body = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self._json({"object": "list", "data": [{"id": "test-model", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) or b"{}"
                req = json.loads(raw)
                server.requests.append(req)
                server.raw.append(raw)
                text = (answer(req) if answer is not None else None) or server.reply
                usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
                msgs = req.get("messages") or [{}]
                last = msgs[-1] if isinstance(msgs[-1], dict) else {}
                call = next((c for t, c in tool_turns.items() if req.get("tools") and last.get("role") == "user"
                             and isinstance(last.get("content"), str) and last["content"].startswith(t)), None)
                if call is not None:  # the model asks for a tool; the tool's result comes back as a 'tool' message
                    tc = {"id": "call_1", "type": "function",
                          "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
                    if not req.get("stream"):
                        self._json({"id": "c1", "object": "chat.completion", "created": 1, "model": "test-model",
                                    "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                                         "tool_calls": [tc]},
                                                 "finish_reason": "tool_calls"}], "usage": usage})
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for choice, extra in (({"index": 0, "delta": {"role": "assistant", "content": None,
                                                                  "tool_calls": [{"index": 0, **tc}]},
                                            "finish_reason": None}, {}),
                                          ({"index": 0, "delta": {}, "finish_reason": "tool_calls"}, {"usage": usage})):
                        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
                                 "choices": [choice], **extra}
                        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                if not req.get("stream"):
                    self._json({"id": "c1", "object": "chat.completion", "created": 1, "model": "test-model",
                                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                             "finish_reason": "stop"}], "usage": usage})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for choice, extra in (({"index": 0, "delta": {"role": "assistant", "content": text},
                                        "finish_reason": None}, {}),
                                      ({"index": 0, "delta": {}, "finish_reason": "stop"}, {"usage": usage})):
                    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
                             "choices": [choice], **extra}
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _last_user_content(req: dict[str, Any]) -> Any:
    for m in reversed(req.get("messages") or []):
        if m.get("role") == "user":
            return m.get("content")
    return None


def op_turns(cmd: dict[str, Any]) -> dict[str, Any]:
    """Real turns against a local model server (see the docstring)."""
    server = _ModelServer(cmd.get("reply", "Noted."))
    try:
        agent = _offline_agent(cmd.get("sid", "S1"), server.url, cmd.get("platform", "cli"))
        mgr = getattr(agent, "_memory_manager", None)
        if cmd.get("prefetch_timeout") is not None and mgr is not None and hasattr(mgr, "_external_prefetch_timeout"):
            mgr._external_prefetch_timeout = float(cmd["prefetch_timeout"])
        calls = []
        for call in cmd.get("calls") or ():
            if mgr is None:
                return {"unsupported": "no memory manager: config.yaml names no provider this Hermes loads"}
            calls.append(json.loads(mgr.handle_tool_call(call["tool"], call.get("args") or {})))
        history = None
        turns = []
        for text in cmd.get("messages") or ():
            before = len(server.requests)
            res = agent.run_conversation(text, conversation_history=history)
            history = res.get("messages")
            sent = [c for c in (_last_user_content(r) for r in server.requests[before:])
                    if isinstance(c, str) and c.startswith(text)]  # 0.22 asks for a title beside the turn
            turns.append({"final": res.get("final_response"), "sent": sent[0] if sent else None,
                          "requests": len(sent)})
        return {"providers": [p.name for p in mgr.providers] if mgr is not None else [], "calls": calls,
                "turns": turns}
    finally:
        server.close()


def _system_bytes(raw: bytes) -> str | None:
    """The ``system`` message's content of a raw request body, as the JSON text it was sent in
    (re-encoded from the parsed body would hide an escaping difference; this slices the bytes)."""
    req = json.loads(raw)
    msgs = req.get("messages") or []
    if not msgs or msgs[0].get("role") != "system":
        return None
    # the body's own encoding of the content: locate it by re-encoding candidates Hermes' client uses
    content = msgs[0].get("content")
    for enc in (json.dumps(content), json.dumps(content, ensure_ascii=False),
                json.dumps(content, separators=(",", ":")), json.dumps(content, ensure_ascii=False, separators=(",", ":"))):
        if enc.encode() in raw:
            return enc
    return None


def op_live_turns(cmd: dict[str, Any]) -> dict[str, Any]:
    """Real turns of one or more sessions against a local model server, with other processes run
    between them (issue 33: live memory). ``steps``: ``{"turn": text, "sid": id}`` runs
    ``AIAgent.run_conversation`` of that session's agent (one agent per session, its history carried
    as the CLI does); ``{"exec": argv, "input": text}`` runs another process and waits for it.
    Per turn: ``bodies`` (every request body of the turn, byte for byte, as text), ``system`` (the
    system message's JSON text as sent), ``user`` (the last user message's content), ``requests``."""
    import subprocess

    server = _ModelServer(cmd.get("reply", "Noted."), cmd.get("tool_turns"))
    base_url = cmd.get("base_url") or server.url  # the test's own server when it brings one (issue 37)
    agents: dict[str, Any] = {}
    histories: dict[str, Any] = {}
    out: list[dict[str, Any]] = []
    try:
        for step in cmd.get("steps") or ():
            if "exec" in step:
                proc = subprocess.run(step["exec"], input=step.get("input"), capture_output=True, text=True,
                                      timeout=300)
                out.append({"exec": proc.returncode, "stdout": proc.stdout[-4000:], "stderr": proc.stderr[-2000:]})
                continue
            if "compress" in step:  # this Hermes' own compressor, forced, the summariser's reply scripted
                agent = agents[step["compress"]]
                keep, server.reply = server.reply, step.get("summary", "Summary of the earlier turns.")
                before = len(server.raw)
                histories_before = list(histories[step["compress"]])
                try:
                    msgs, prompt = agent._compress_context(list(histories_before), None, force=True)
                finally:
                    server.reply = keep
                histories[step["compress"]] = msgs
                out.append({"compressed": step["compress"], "session_id": agent.session_id, "system": prompt,
                            "messages_before": len(histories_before), "messages": len(msgs),
                            "summariser_requests": len(server.raw) - before})
                continue
            sid, text = step.get("sid", "S1"), step["turn"]
            if sid not in agents:
                agents[sid] = _offline_agent(sid, base_url, cmd.get("platform", "cli"))
            before = len(server.raw)
            had = getattr(agents[sid], "_cached_system_prompt", None)
            res = agents[sid].run_conversation(text, conversation_history=histories.get(sid))
            histories[sid] = res.get("messages")
            # the turn's own requests: the agent's system prompt first, the one it had before the turn
            # or after it (a rebuild changes it during the turn; 0.21.5+ also ask for a title, with a
            # prompt of their own, quoting the turn's text)
            own = getattr(agents[sid], "_cached_system_prompt", None)
            raws = [r for r in server.raw[before:]
                    if isinstance(_last_user_content(json.loads(r)), str)
                    and _last_user_content(json.loads(r)).startswith(text)
                    and ((json.loads(r).get("messages") or [{}])[0].get("content") in (own, had) or own is None)]
            out.append({"sid": sid, "turn": text, "requests": len(raws),
                        "bodies": [r.decode("utf-8") for r in raws],
                        "system": [_system_bytes(r) for r in raws],
                        "user": [_last_user_content(json.loads(r)) for r in raws],
                        "final": res.get("final_response")})
        return {"steps": out}
    finally:
        server.close()


def _is_summariser_request(req: dict[str, Any]) -> bool:
    """A request of Hermes' compressor (``ContextCompressor._generate_summary``): its prompt is the
    summary template, whose sections include ``## Constraints & Preferences`` (0.17-0.23), sent
    without tools; an agent turn carries tools and a summary only behind ``SUMMARY_PREFIX``."""
    if req.get("tools"):
        return False
    msgs = req.get("messages") or []
    text = "\n".join(m.get("content") for m in msgs if isinstance(m.get("content"), str))
    return "Constraints & Preferences" in text and "REFERENCE ONLY" not in text.split("Constraints & Preferences")[0][-4000:]


def op_compress_turns(cmd: dict[str, Any]) -> dict[str, Any]:
    """Real turns of one session, then this Hermes' own compaction of them, then more turns (issue
    34). ``turns`` run through ``AIAgent.run_conversation`` (history carried as the CLI does); then
    ``AIAgent._compress_context(history, None, force=True)``, the entry point of ``/compress``,
    runs the agent's own ``ContextCompressor`` (head, tail, serialisation, the summary template)
    and commits the compaction to state.db the way this Hermes does (rotation, or in place with
    ``compression.in_place``); the summariser's reply is ``summary`` (served by the loopback model
    server, which answers ``reply`` to every other request); ``after`` turns run on the compacted
    history. Returns the session ids before and after, the message counts, the summariser's
    requests (``summariser``: how many; ``prompt``: the last one's text) and the summary row as the
    agent kept it."""
    summary = cmd["summary"]
    server = _ModelServer(cmd.get("reply", "Noted."),
                          answer=lambda req: summary if _is_summariser_request(req) else None)
    try:
        sid = cmd.get("sid", "S1")
        agent = _offline_agent(sid, server.url, cmd.get("platform", "cli"))
        if cmd.get("in_place") is not None and hasattr(agent, "compression_in_place"):
            agent.compression_in_place = bool(cmd["in_place"])
        history = None
        for text in cmd.get("turns") or ():
            history = agent.run_conversation(text, conversation_history=history).get("messages")
        before = len(server.requests)
        n_before = len(history or [])
        compressed, _prompt = agent._compress_context(history, None, force=True)
        reqs = [r for r in server.requests[before:] if _is_summariser_request(r)]
        kept = [m.get("content") for m in compressed if isinstance(m.get("content"), str)
                and ("CONTEXT COMPACTION" in m["content"] or "CONTEXT SUMMARY" in m["content"])]
        history = compressed
        for text in cmd.get("after") or ():
            history = agent.run_conversation(text, conversation_history=history).get("messages")
        prompt = "\n".join(m.get("content") for m in (reqs[-1].get("messages") if reqs else [])
                           if isinstance(m.get("content"), str))
        return {"session_before": sid, "session_after": agent.session_id, "messages_before": n_before,
                "messages_after": len(compressed), "summariser": len(reqs), "prompt": prompt, "summary_rows": kept,
                "in_place": bool(getattr(agent, "_last_compaction_in_place", False))}
    finally:
        server.close()


OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}


def _switch_home(path: str) -> None:
    """Point this process at another Hermes home (Hermes resolves HERMES_HOME on every call)."""
    global HOME, _DB
    if _DB is not None:
        with contextlib.suppress(Exception):
            _DB.close()
        _DB = None
    HOME = Path(path).resolve()
    HOME.mkdir(parents=True, exist_ok=True)
    os.environ["HERMES_HOME"] = str(HOME)


def run(commands: list[dict[str, Any]]) -> list[Any]:
    results = []
    for cmd in commands:
        if cmd.get("home") and Path(cmd["home"]).resolve() != HOME:
            _switch_home(cmd["home"])
        fn = OPS.get(cmd.get("op", ""))
        if fn is None:
            results.append({"unsupported": f"unknown op {cmd.get('op')!r}"})
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # Hermes prints banners at times
                results.append(_jsonable(fn(cmd)))
        except ImportError as exc:
            results.append({"unsupported": f"{type(exc).__name__}: {exc}"})
        except Exception as exc:  # noqa: BLE001 - the driver answers every command; the error goes back to the test
            results.append({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-1500:]})
    return results


def main(argv: list[str]) -> int:
    global HOME
    if len(argv) < 2:
        print("usage: driver.py HERMES_HOME [COMMANDS_JSON] (or the commands on stdin)", file=sys.stderr)
        return 2
    HOME = Path(argv[1]).resolve()
    HOME.mkdir(parents=True, exist_ok=True)
    os.environ["HERMES_HOME"] = str(HOME)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    commands = json.loads(argv[2] if len(argv) > 2 else sys.stdin.read())
    results = run(commands)
    if _DB is not None:
        with contextlib.suppress(Exception):
            _DB.close()
    sys.stdout.write(json.dumps({"results": results}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
