"""The demo home read by the real hermes-agent 0.19.0 (in a subprocess with HERMES_HOME set)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from memdeck.core.demo import DEMO_NOW, demo_plan
from memdeck.core.demo.story import FLAGGED_MEMORY_ENTRY, FLAGGED_MEMORY_FINDINGS
from tests.conftest import requires_hermes
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from hermes_state import SessionDB
    from tools.memory_tool import MemoryStore
    from tools.threat_patterns import scan_for_threats
    from tools import write_approval as wa

    home, live = sys.argv[1], sys.argv[2]
    store = MemoryStore(memory_char_limit=2200, user_char_limit=1375)
    store.load_from_disk()
    db = SessionDB(home + "/state.db", read_only=True)
    rich = db.list_sessions_rich(limit=50)
    pending = wa.list_pending("memory")
    out = {
        "memory": store.memory_entries,
        "user": store.user_entries,
        "flagged": [[e, scan_for_threats(e, "strict")] for e in store.memory_entries + store.user_entries
                    if scan_for_threats(e, "strict")],
        "snapshot_memory": store.format_for_system_prompt("memory"),
        "sessions": [[s["id"], s["source"]] for s in rich],
        "live_messages": [[m["role"], m["content"]] for m in db.get_messages(live)],
        "pending": [[p["id"], p["payload"]["content"], scan_for_threats(p["payload"]["content"], "strict")]
                    for p in pending],
    }
    print(json.dumps(out))
    """
)


def _run(home) -> dict:
    env = dict(os.environ, HERMES_HOME=str(home.path))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(home.path), demo_plan(7, DEMO_NOW).live_session_id],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@requires_hermes
def test_hermes_reads_the_demo_home(demo_home) -> None:  # noqa: F811
    plan = demo_plan(7, DEMO_NOW)
    out = _run(demo_home)
    # MemoryStore loads our files unchanged (no de-duplication, nothing dropped).
    assert out["memory"] == list(plan.memory_entries) and out["user"] == list(plan.user_entries)
    # Exactly one entry on disk is flagged by Hermes' strict scan, with the ids we document.
    assert out["flagged"] == [[FLAGGED_MEMORY_ENTRY, list(FLAGGED_MEMORY_FINDINGS)]]
    assert "[BLOCKED: MEMORY.md entry contained threat pattern(s): read_secrets, hermes_env." in out["snapshot_memory"]
    # SessionDB (read-only) lists our sessions with the live one first.
    ids = [s[0] for s in out["sessions"]]
    assert ids[0] == plan.live_session_id
    assert {s[1] for s in out["sessions"]} >= {"cli", "telegram", "cron"}
    roles = [m[0] for m in out["live_messages"]]
    assert roles.count("user") >= 3 and out["live_messages"][0][1].startswith("[CONTEXT COMPACTION — REFERENCE ONLY]")
    # Hermes' own pending store lists the four staged writes; its scan flags exactly two.
    assert sorted(p[0] for p in out["pending"]) == sorted(plan.pending_ids)
    hostile = {p[0]: p[2] for p in out["pending"] if p[2]}
    assert sorted(v for vs in hostile.values() for v in vs) == ["exfil_curl", "prompt_injection"]


@requires_hermes
def test_demo_home_file_is_untouched_by_hermes_reading_it(demo_home) -> None:  # noqa: F811
    before = {t: demo_home.memory_file(t).read_bytes() for t in ("memory", "user")}
    _run(demo_home)
    assert {t: demo_home.memory_file(t).read_bytes() for t in ("memory", "user")} == before
