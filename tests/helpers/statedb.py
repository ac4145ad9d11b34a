"""Builders for state.db fixtures (sessions area). Uses core.hermes_schema, never a real home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.compaction import match_summary
from memdeck.core.sessions.connection import FRESH_STAMP_TOLERANCE
from memdeck.core.sessions.records import CompactionEvent
from memdeck.core.sessions.statedb import StateDB


def build_history(path: Path) -> dict[str, object]:
    """A small history: s1 with two in-place compactions (standalone, merged), rotated into s2;
    s3 ended normally with a rewound row; s4 a cron session. Returns facts the tests assert."""
    conn = hs.create_state_db(path)
    hs.add_session(conn, "s1", source="cli", title="deploy work", started_at=1000)
    for i in range(6):
        hs.append_message(conn, "s1", "user" if i % 2 == 0 else "assistant", f"turn {i} about kubernetes deploy", timestamp=1000 + i)
    hs.compact_in_place(conn, "s1", "first summary: deployed to staging", keep_head=1, keep_tail=2, now=2000)
    for i in range(6, 10):
        hs.append_message(conn, "s1", "user" if i % 2 == 0 else "assistant", f"turn {i} rollout", timestamp=2000 + i)
    hs.compact_in_place(conn, "s1", "second summary: rollout done", keep_head=1, keep_tail=2, now=3000, merge_into_tail=True)
    hs.append_message(conn, "s1", "user", "after second compaction", timestamp=3100)
    hs.rotate(conn, "s1", "s2", "rotation summary: continuing", now=4000)
    hs.append_message(conn, "s2", "user", "in the child session", timestamp=4100)
    hs.add_session(conn, "s3", source="telegram", title="chat", started_at=500)
    hs.append_message(conn, "s3", "user", "kubernetes question from telegram", timestamp=501)
    rid = hs.append_message(conn, "s3", "user", "secretword that was rewound", timestamp=502)
    hs.rewind(conn, "s3", rid)
    hs.end_session(conn, "s3", "user_exit", ended_at=600)
    hs.add_session(conn, "s4", source="cron", title="nightly", started_at=5000)
    hs.append_message(conn, "s4", "user", "kubernetes nightly report", timestamp=5001)
    hs.end_session(conn, "s4", "cron_complete", ended_at=5002)
    conn.close()
    return {"rewound_id": rid}


HERMES_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from hermes_state import SessionDB
    from agent.context_compressor import SUMMARY_PREFIX
    db = SessionDB(Path(os.environ["HERMES_HOME"]) / "state.db")
    plan = json.loads(sys.argv[1])
    out = {}
    for step in plan:
        op = step[0]
        if op == "session":
            db.create_session(step[1], source=step[2], parent_session_id=step[3] if len(step) > 3 else None)
        elif op == "title":
            db.set_session_title(step[1], step[2])
        elif op == "msg":
            kw = step[4] if len(step) > 4 else {}
            out.setdefault("ids", []).append(db.append_message(step[1], step[2], step[3], **kw))
        elif op == "compact":
            sid, head, tail, summary = step[1], step[2], step[3], step[4]
            live = db.get_messages_as_conversation(sid)
            keep_ts = step[5] if len(step) > 5 else False
            if not keep_ts:
                live = [{k: v for k, v in m.items() if k != "timestamp"} for m in live]
            summ = {"role": "assistant" if live[head - 1]["role"] == "user" else "user",
                    "content": SUMMARY_PREFIX + "\\n" + summary
                    + "\\n\\n--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"}
            db.archive_and_compact(sid, live[:head] + [summ] + live[len(live) - tail:])
            time.sleep(0.01)
        elif op == "rotate":
            old, new, head, tail, summary = step[1:6]
            live = [{k: v for k, v in m.items() if k != "timestamp"} for m in db.get_messages_as_conversation(old)]
            db.end_session(old, "compression")
            db.create_session(new, source="cli", parent_session_id=old)
            summ = {"role": "assistant", "content": SUMMARY_PREFIX + "\\n" + summary}
            db.replace_messages(new, live[:head] + [summ] + live[len(live) - tail:])
            time.sleep(0.01)
        elif op == "end":
            db.end_session(step[1], step[2])
        elif op == "rewind":
            db.rewind_to_message(step[1], out["ids"][step[2]])
        elif op == "sleep":
            time.sleep(step[1])
    db.close()
    print(json.dumps(out))
    """
)


def run_hermes_plan(home: Path, plan: list[list[object]]) -> dict[str, object]:
    """Run ``plan`` with the real hermes-agent SessionDB in a subprocess (HERMES_HOME=home)."""
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HERMES_HOME=str(home))
    proc = subprocess.run([sys.executable, "-c", HERMES_SCRIPT, json.dumps(plan)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- reference reconstruction
# A frozen copy of core.statedb's in-place reconstruction as it was before the reader was made
# faster (commit 1e8849a): every row decoded, every compacted session found by a full scan.
# The equivalence tests compare the optimised reader with it, so a speed-up never changes results.


def reference_compactions(path: Path) -> list[CompactionEvent]:
    """Every compaction event of the database at ``path``, computed the slow, obvious way."""
    db = StateDB(path)
    assert db.status().ok, db.status()
    conn = db._conn
    events: list[CompactionEvent] = []
    for (sid,) in sorted(conn.execute("SELECT DISTINCT session_id FROM messages WHERE compacted = 1")):
        events += _ref_reconstruct_inplace(str(sid), db._session_rows(conn, str(sid)), db._row_text)
    events += _ref_rotation_events(db, conn)
    events.sort(key=lambda e: (e.time, e.session_id, e.region_first_id or 0))
    db.close()
    return events


def _ref_rotation_events(db: StateDB, conn: Any) -> list[CompactionEvent]:
    best: dict[str, tuple[Any, ...]] = {}
    sql = ("SELECT p.id, p.ended_at, c.id, c.started_at FROM sessions p JOIN sessions c ON c.parent_session_id = p.id"
           " WHERE p.end_reason = 'compression' ORDER BY c.started_at")
    for pid, ended, cid, cstart in conn.execute(sql):
        best[str(pid)] = (pid, ended, cid, cstart)
    out = []
    for pid, ended, cid, cstart in best.values():
        live_parent = [r for r in db._session_rows(conn, str(pid)) if r[3]]
        child_rows = db._session_rows(conn, str(cid))
        copies = {_ref_key(r, db._row_text) for r in live_parent}
        p = match = None
        for i, r in enumerate(child_rows[:64]):
            m = match_summary(db._row_text(r[2]))
            if m is not None:
                p, match = i, m
                break
        if p is None:
            end = 1
            while end < len(child_rows) and int(child_rows[end][0]) == int(child_rows[end - 1][0]) + 1:
                end += 1
            region, summary_id = [int(r[0]) for r in child_rows[:end]], None
        else:
            end = _ref_tail_end(child_rows, p, len(child_rows), db._row_text, copies)
            region, summary_id = [int(r[0]) for r in child_rows[:end]], int(child_rows[p][0])
        t = float(ended) if ended is not None else float(cstart or 0.0)
        out.append(CompactionEvent(
            session_id=str(pid), time=t, mode="rotation", summary_message_id=summary_id,
            kind=match.kind if match else None, merged=bool(match and match.merged),
            summary_hash=match.body_hash if match else None, archived_count=len(live_parent),
            child_session_id=str(cid), region_first_id=region[0] if region else None,
            region_last_id=region[-1] if region else None, index=1, region_ids=tuple(region),
        ))
    return out


def _ref_key(row: tuple[Any, ...], text_of: Callable[[Any], str]) -> tuple[str, str]:
    return (str(row[1]), text_of(row[2]))


def _ref_tail_end(rows: Sequence[tuple[Any, ...]], p: int, stop: int, text_of: Callable[[Any], str], copies: set[tuple[str, str]]) -> int:
    """Index one past the last row of the inserted set that contains the summary at ``p``."""
    try:
        ts0 = float(rows[p][5] or 0.0)
    except (TypeError, ValueError):
        ts0 = 0.0
    j = p + 1
    while j < stop:
        prev, cur = rows[j - 1], rows[j]
        if int(cur[0]) != int(prev[0]) + 1 or bool(cur[3]) != bool(rows[p][3]) or bool(cur[4]) != bool(rows[p][4]):
            break
        try:
            ts = float(cur[5] or 0.0)
        except (TypeError, ValueError):
            ts = 0.0
        fresh = abs(ts - ts0) <= FRESH_STAMP_TOLERANCE + 1e-6 * (j - p + 1)
        if not fresh and _ref_key(cur, text_of) not in copies:
            break
        j += 1
    return j


def _ref_reconstruct_inplace(session_id: str, rows: Sequence[tuple[Any, ...]], text_of: Callable[[Any], str]) -> list[CompactionEvent]:
    # summary candidates, skipping verbatim copies of an earlier summary
    cands: list[tuple[int, Any]] = []
    seen_content: set[str] = set()
    for i, r in enumerate(rows):
        text = text_of(r[2])
        if not text or text[:1] not in "[ \t\n\r":
            if not (isinstance(r[2], str) and r[2].startswith("\x00json:")):
                continue
        m = match_summary(text)
        if m is None:
            continue
        if text in seen_content:
            continue
        seen_content.add(text)
        cands.append((i, m))
    events: list[CompactionEvent] = []
    starts: list[int] = []
    lower = 0
    accepted: list[tuple[int, Any, int, list[int]]] = []
    for p, m in cands:
        if p < lower:
            continue
        if rows[p][3]:  # summary still live: the head is the live run right before it
            h = 0
            while p - h - 1 >= lower and rows[p - h - 1][3]:
                h += 1
        else:
            h = 0
            limit = (p - lower) // 2
            for j in range(limit, 0, -1):
                if all(_ref_key(rows[p - j + t], text_of) == _ref_key(rows[lower + t], text_of) for t in range(j)):
                    h = j
                    break
        start = p - h
        batch = [i for i in range(lower, start) if rows[i][4]]
        if not batch:
            continue
        accepted.append((p, m, start, batch))
        starts.append(start)
        lower = start
    for k, (p, m, start, batch) in enumerate(accepted):
        stop = accepted[k + 1][2] if k + 1 < len(accepted) else len(rows)
        copies = {_ref_key(rows[i], text_of) for i in batch}
        end = _ref_tail_end(rows, p, stop, text_of, copies)
        region = [int(rows[i][0]) for i in range(start, end)]
        stamps = []
        for i in range(start, end):
            try:
                stamps.append(float(rows[i][5] or 0.0))
            except (TypeError, ValueError):
                pass
        events.append(CompactionEvent(
            session_id=session_id, time=max(stamps) if stamps else 0.0, mode="in_place",
            summary_message_id=int(rows[p][0]), kind=m.kind, merged=m.merged, summary_hash=m.body_hash,
            archived_count=len(batch), region_first_id=region[0], region_last_id=region[-1], index=k + 1,
            region_ids=tuple(region),
        ))
    return events


