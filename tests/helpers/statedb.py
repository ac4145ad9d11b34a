"""Builders for state.db fixtures (sessions area). Uses core.hermes_schema, never a real home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from core import hermes_schema as hs


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
                    "content": SUMMARY_PREFIX + "\\n" + summary + "\\n\\n--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"}
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
