"""Attribution of the changes memdeck did not journal.

A memory change the journal does not explain (``core/history/observation.py`` tries the journal
first) is attributed, in this order, to:

1. ``pending``: a Hermes pending write (``pending/memory/<id>.json``) memdeck saw earlier,
   now gone, whose payload explains the change (an approval applied by Hermes);
2. ``hermes``: an assistant message in state.db whose ``tool_calls`` call the ``memory`` tool
   with a matching action/target/content/old_text (``StateDB.memory_tool_calls``), within
   :data:`ATTRIBUTION_SLACK` seconds of the window; with its session id and ``source``.
   Hermes writes messages at the end of a turn, possibly after memdeck saw the change, so
   ``reattribute`` retries recent ``external`` rows;
3. ``external``: nothing explained it (a manual edit, the background review, cron...).

The copies of staged pending writes live in ``history_seen`` rows of kind ``pending``.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .. import jsondata
from ..fsio import list_names, read_regular_bytes
from ..home import TARGETS, HermesHome
from ..sessions.statedb import StateDB

#: seconds around a change's window in which a Hermes memory tool call may explain it
ATTRIBUTION_SLACK = 300.0


def _explains(args: dict[str, Any], target: str, op: str, before: str | None, after: str | None) -> bool:
    """Whether memory-tool arguments (or a pending payload) ``args`` produce this change
    (Hermes 0.19 semantics: ``old_text`` is a substring of the entry; ``content`` is stripped)."""
    if (args.get("target") or "memory") != target:
        return False
    action = args.get("action")
    if action == "batch" or isinstance(args.get("operations"), list):
        return any(isinstance(o, dict) and _explains({"target": target, **o}, target, op, before, after)
                   for o in args.get("operations") or [])
    content = str(args.get("content") or "").strip()
    old_text = str(args.get("old_text") or "").strip()
    if op == "added":
        return action == "add" and content == after
    if op == "removed":
        return action == "remove" and bool(old_text) and old_text in (before or "")
    if op == "replaced":
        return action == "replace" and bool(old_text) and old_text in (before or "") and content == after
    return False


def hermes_attribution(db: StateDB | None, target: str, op: str, before: str | None, after: str | None,
                        since: float | None, until: float) -> dict[str, Any] | None:
    """The state.db memory tool call that explains this change, within :data:`ATTRIBUTION_SLACK`
    seconds of the window ``since .. until`` (``since`` None: the day before ``until``), as
    ``{"session_id", "source", "message_id", "tool_call_id", "timestamp", "action"}``; None when
    none does or there is no state.db (``db`` None)."""
    if db is None:
        return None
    lo = (since if since is not None else until - 86400.0) - ATTRIBUTION_SLACK
    for call in db.memory_tool_calls(lo, until + ATTRIBUTION_SLACK):
        if _explains(call["args"], target, op, before, after):
            return {"session_id": call["session_id"], "source": call["source"], "message_id": call["message_id"],
                    "tool_call_id": call["tool_call_id"], "timestamp": call["timestamp"],
                    "action": call["args"].get("action")}
    return None


def pending_attribution(conn: sqlite3.Connection, home: HermesHome, target: str, op: str, before: str | None,
                         after: str | None) -> dict[str, Any] | None:
    """``{"pending_id", "origin"}`` of a pending write memdeck remembered (:func:`remember_pending`),
    whose file is gone now (applied or rejected) and whose payload explains this change; else None."""
    rows = conn.execute("SELECT path, content FROM history_seen WHERE kind = 'pending'").fetchall()
    for r in rows:
        if (home.path / r["path"]).exists():
            continue  # still staged: not applied
        try:
            rec = json.loads(r["content"] or "{}")
        except ValueError:
            continue
        payload = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
        if _explains(payload, target, op, before, after):
            return {"pending_id": rec.get("id"), "origin": rec.get("origin")}
    return None


def remember_pending(conn: sqlite3.Connection, home: HermesHome, now: float) -> None:
    """Keep a copy of each staged pending write (so a later apply by Hermes can be attributed);
    forget copies older than 7 days whose file is gone."""
    d = home.pending_dir  # <home>/pending/memory
    try:
        names = list_names(d, ".json")[0]
    except OSError:
        names = []
    known = {r[0] for r in conn.execute("SELECT path FROM history_seen WHERE kind = 'pending'")}
    for n in names:
        rel = f"pending/memory/{n}"
        if rel in known:
            continue
        # imported only for a record not yet seen: a recall process imports no memory write code (issue 23)
        from ..memory.pending import MAX_PENDING_BYTES

        try:
            rec = jsondata.loads(read_regular_bytes(d / n, max_bytes=MAX_PENDING_BYTES))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict):
            payload = rec.get("payload")
            target = payload.get("target") if isinstance(payload, dict) else None
            conn.execute("INSERT OR REPLACE INTO history_seen (path, kind, target, stamp, content, seen_at) "
                         "VALUES (?, 'pending', ?, NULL, ?, ?)",
                         (rel, target if target in TARGETS else "memory", json.dumps(rec, ensure_ascii=False), now))
    present = {f"pending/memory/{n}" for n in names}
    gone = [(path,) for (path,) in conn.execute("SELECT path FROM history_seen WHERE kind = 'pending' AND seen_at < ?",
                                                (now - 7 * 86400.0,)) if path not in present]
    conn.executemany("DELETE FROM history_seen WHERE kind = 'pending' AND path = ?", gone)


__all__ = ["ATTRIBUTION_SLACK", "hermes_attribution", "pending_attribution", "remember_pending"]
