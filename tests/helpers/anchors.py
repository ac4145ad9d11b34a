"""Fixtures for the anchors area: MemLock session/pin files of every version, message builders."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memdeck.core.sessions.compaction import SUMMARY_LEAD

#: The 0.2.0 session file from shared/reference/memlock.md §1.2 (produced by the real snapshot).
SAMPLE_V02: dict[str, Any] = {
    "session_id": "20260617_212608_ab12cd",
    "anchors": {
        "pin_1795349762_0": {
            "id": "pin_1795349762_0",
            "text": "Always reply in bullet points, never paragraphs. Second line",
            "reminder": "Always reply in bullet points, never paragraphs",
            "priority": 80, "probes": ["always", "reply", "bullet", "points", "never"],
            "pinned": True, "drifted": True, "last_alive_turn": 0,
        },
        "pin_1795349762_1": {
            "id": "pin_1795349762_1", "text": "Use British English spelling everywhere",
            "reminder": "Use British English spelling everywhere", "priority": 50,
            "probes": ["british", "english", "spelling", "everywhere"],
            "pinned": True, "drifted": False, "last_alive_turn": 1,
        },
    },
    "static_anchor_ids": [], "pinned_count": 2,
    "last_summary_hash": "e815a908" + "0" * 56, "last_compaction_at": 1795349762.78,
    "integrity_score": 50,
    "drift_log": [{"time": 1795349762.78, "score": 50, "casualties": ["pin_1795349762_0"]}],
    "last_alert_at": 1795349762.78, "last_reinject_turn": 1,
}


def sample_v04() -> dict[str, Any]:
    """0.4.0 shape: an updated pin carries ``history``; a drift event carries ``reverse``."""
    d = json.loads(json.dumps(SAMPLE_V02))
    d["session_id"] = "sess/a.b"
    a = d["anchors"]["pin_1795349762_1"]
    a["history"] = [{"text": "Use British spelling", "reminder": "Use British spelling", "priority": 40,
                     "probes": ["british", "spelling"], "updated_at": 1795340000.0}]
    d["drift_log"][0]["reverse"] = {"absent": [], "contradicted": [], "stale": [], "unknown": []}
    return d


def sample_v05() -> dict[str, Any]:
    """>= 0.5 shape: uuid pin ids, ``turn_count`` and ``self_sha256``, plus a key from the future."""
    d = sample_v04()
    d["session_id"] = "20260701_090000_ffee00"
    d["anchors"] = {
        "pin_1a2b3c4d": {**d["anchors"]["pin_1795349762_1"], "id": "pin_1a2b3c4d"},
        "format-bullets": {"id": "format-bullets", "text": "Use bullets", "reminder": "Use bullets",
                           "priority": 30, "probes": ["bullets"], "pinned": False, "drifted": False,
                           "last_alive_turn": 3, "future_field": {"x": 1}},
    }
    d["static_anchor_ids"] = ["format-bullets"]
    d["pinned_count"] = 1
    d["turn_count"] = 17
    d["some_future_key"] = [1, 2, 3]
    d["self_sha256"] = hashlib.sha256(json.dumps(d["anchors"], sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return d


def write_memlock_file(memlock_dir: Path, stem: str, data: dict[str, Any]) -> Path:
    """Write a session file as MemLock does (indent=2, ensure_ascii=False)."""
    memlock_dir.mkdir(parents=True, exist_ok=True)
    p = memlock_dir / f"{stem}.json"
    p.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    return p


def anchor(aid: str, *, text: str = "", reminder: str | None = None, priority: int = 50,
           probes: list[str] | None = None, drifted: bool = False, pinned: bool = True) -> dict[str, Any]:
    """A MemLock anchor dict (as in a session file)."""
    text = text or f"Instruction {aid}"
    d = {"id": aid, "text": text, "priority": priority, "probes": list(probes or []),
         "pinned": pinned, "drifted": drifted, "last_alive_turn": 0}
    d["reminder"] = text[:120] if reminder is None else reminder
    return d


def history(*active: str, summary: str = "Earlier we talked.") -> list[dict[str, Any]]:
    """A compacted conversation: system prompt, MemLock-style summary, then ``active`` user turns."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful agent."},
                                  {"role": "assistant", "content": f"{SUMMARY_LEAD} {summary}"}]
    msgs += [{"role": "user", "content": t} for t in active]
    return msgs
