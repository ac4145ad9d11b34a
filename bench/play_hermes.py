"""Play Hermes beside a dashboard, for a person watching it (issue 23's ten-minute soak).

    HERMES_HOME=H python bench/play_hermes.py --minutes 10 [--every 2] [--compact-at 800] [--memory-every 20]

Runs Hermes 0.19's own code on the home: ``SessionDB.append_message`` into the live session
every ``--every`` seconds (every fifth turn an assistant tool call and its result), an in-place
``archive_and_compact`` (head 3 + summary + tail 20, as bench/bighome.py) whenever the live
session reaches ``--compact-at`` active rows, and ``MemoryStore.replace`` of one entry every
``--memory-every`` seconds. One JSON line per event on stdout (``t`` epoch seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--every", type=float, default=2.0)
    ap.add_argument("--compact-at", type=int, default=800)
    ap.add_argument("--memory-every", type=float, default=20.0)
    args = ap.parse_args()
    home = Path(os.environ["HERMES_HOME"])
    from agent.context_compressor import SUMMARY_PREFIX
    from hermes_state import SessionDB
    from tools.memory_tool import MemoryStore

    ro = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    live = ro.execute("SELECT id FROM sessions WHERE ended_at IS NULL ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    ro.close()
    db = SessionDB(home / "state.db")
    store = MemoryStore()
    store.load_from_disk()
    marker = f"Soak marker {os.getpid()}"
    store.add("memory", marker)
    current = marker

    def say(**kw) -> None:
        print(json.dumps({"t": time.time(), **kw}), flush=True)

    def active_rows() -> list[dict]:
        c = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
        try:
            return [{"role": r, "content": t} for r, t in c.execute(
                "SELECT role, content FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (live,))]
        finally:
            c.close()

    n_active = len(active_rows())
    say(event="start", live=live, active=n_active)
    end = time.time() + args.minutes * 60
    next_msg, next_mem, i = time.time(), time.time() + args.memory_every, 0
    while time.time() < end:
        now = time.time()
        if now >= next_msg:
            i += 1
            if i % 5 == 0:
                cid = f"soak_{i}"
                db.append_message(live, "assistant", None, tool_calls=[{"id": cid, "type": "function", "function": {
                    "name": "terminal", "arguments": json.dumps({"command": f"kubectl get pods -n soak{i}"})}}])
                db.append_message(live, "tool", f"pod-{i} Running", tool_name="terminal", tool_call_id=cid)
                n_active += 2
            else:
                db.append_message(live, "user" if i % 2 else "assistant", f"soak turn {i}: kubernetes rollout status")
                n_active += 1
            say(event="append", active=n_active)
            next_msg += args.every
        if n_active >= args.compact_at:
            rows = [r for r in active_rows() if r["content"]]
            start = len(rows) - 20
            while start > 3 and rows[start]["role"] == "tool":
                start -= 1
            new = rows[:3] + [{"role": "assistant", "content": SUMMARY_PREFIX + f"\n## Goal\nsoak compaction at turn {i}"}] + rows[start:]
            db.archive_and_compact(live, new)
            n_active = len(new)
            say(event="compaction", active=n_active)
        if now >= next_mem:
            new_text = f"{marker} {'x' * (i % 37 + 1)} #{i}"
            r = store.replace("memory", current, new_text)
            if r.get("success"):
                current = new_text
            say(event="memory", ok=bool(r.get("success")))
            next_mem += args.memory_every
        time.sleep(0.02)
    db.close()
    say(event="done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
