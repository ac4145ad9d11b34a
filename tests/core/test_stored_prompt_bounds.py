"""Hostile stored prompts are read bounded (issue 40 item 10): a 50 MB system prompt and a 50 MB
``api_content`` in state.db; ``status --json`` completes, says each was cut and by how much, and
the process's peak memory stays bounded (old code: 554 MB and ~20 s on this machine)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from memdeck.core.home import HermesHome
from memdeck.core.sessions.bounds import MAX_STORED_TEXT_CHARS
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401 - fixtures

BIG = 50_000_000
PEAK_BOUND_MB = 200

#: runs one CLI command in this fresh process and reports its peak RSS: ``VmHWM`` of
#: /proc/self/status (KiB), the high-water mark of this image only (``ru_maxrss`` keeps the
#: pre-exec high of the forked test process, which holds the 50 MB strings)
_MEASURED = """
import sys
from memdeck.core.cli import main
rc = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as fh:
    hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
sys.stderr.write("PEAK_KIB %s\\n" % hwm)
sys.exit(rc)
"""


def _hostile(home: HermesHome) -> tuple[str, int, int, int]:
    """Store a 50 MB system prompt on the live session and a 50 MB api_content on its last user
    turn; returns (session id, message id, prompt chars, api_content chars)."""
    conn = sqlite3.connect(home.state_db)
    try:
        sid = conn.execute("SELECT id FROM sessions WHERE ended_at IS NULL ORDER BY started_at DESC").fetchone()[0]
        prompt = conn.execute("SELECT system_prompt FROM sessions WHERE id = ?", (sid,)).fetchone()[0] or ""
        big_prompt = prompt + "\n" + "a hostile line that never ends " * (BIG // 31)
        conn.execute("UPDATE sessions SET system_prompt = ? WHERE id = ?", (big_prompt, sid))
        mid = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = ? AND role = 'user'", (sid,)).fetchone()[0]
        content = conn.execute("SELECT content FROM messages WHERE id = ?", (mid,)).fetchone()[0] or ""
        api = content + "\n\n<memory-context>" + "é" * (BIG // 2) + "</memory-context>"
        conn.execute("UPDATE messages SET api_content = ? WHERE id = ?", (api, mid))
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sid, mid, len(big_prompt), len(api)
    finally:
        conn.close()


def _run(home: HermesHome, *argv: str) -> tuple[int, str, int]:
    done = subprocess.run([sys.executable, "-c", _MEASURED, "--home", str(home.path), *argv],
                          capture_output=True, text=True, timeout=600, check=False)
    peak = [line for line in done.stderr.splitlines() if line.startswith("PEAK_KIB ")]
    assert peak, done.stderr[-2000:]
    return done.returncode, done.stdout, int(peak[-1].split()[1]) // 1024


def test_status_json_of_a_50mb_prompt_is_bounded_and_says_it_was_cut(demo_home: HermesHome) -> None:  # noqa: F811
    sid, mid, prompt_chars, api_chars = _hostile(demo_home)
    code, out, peak_mb = _run(demo_home, "status", "--json")
    assert code == 0
    assert peak_mb < PEAK_BOUND_MB, f"status --json peaked at {peak_mb} MB with a 50 MB prompt"
    st = json.loads(out)
    cuts = {c["what"]: c for c in st["cut_reads"]}
    prompt_cut = cuts[f"system prompt of session {sid}"]
    assert prompt_cut == {"what": f"system prompt of session {sid}", "chars": prompt_chars,
                          "kept": MAX_STORED_TEXT_CHARS, "dropped": prompt_chars - MAX_STORED_TEXT_CHARS}
    api_cut = cuts[f"api_content of message {mid}"]
    assert api_cut["chars"] == api_chars and api_cut["dropped"] == api_chars - MAX_STORED_TEXT_CHARS
    assert st["integrity"]["session_id"] == sid  # the sections that read the prompt still ran
    # and on screen
    code, out, _ = _run(demo_home, "status")
    assert code == 0
    assert f"note: the system prompt of session {sid} is {prompt_chars:,} chars: only its first " \
           f"{MAX_STORED_TEXT_CHARS:,} were read" in out


def test_the_reader_returns_the_bounded_head_and_the_stored_length(demo_home: HermesHome) -> None:  # noqa: F811
    sid, mid, prompt_chars, api_chars = _hostile(demo_home)
    with StateDB(demo_home.state_db) as db:
        prompt = db.system_prompt(sid)
        assert len(prompt) == MAX_STORED_TEXT_CHARS
        turn = next(t for t in db.user_turns(sid) if t.id == mid)
        assert turn.api_content is not None and len(turn.api_content) == MAX_STORED_TEXT_CHARS
        assert turn.api_content_chars == api_chars
        msg = db.message(mid)
        assert msg is not None and msg.api_content_chars == api_chars
        assert msg.api_content is not None and len(msg.api_content) == MAX_STORED_TEXT_CHARS
        stamp = next(s for s in db.prompt_stamps() if s.session_id == sid)
        assert stamp.prompt_chars == prompt_chars  # counted through the blob reader, as SQL length() does


def test_a_normal_prompt_is_read_whole(demo_home: HermesHome) -> None:  # noqa: F811
    conn = sqlite3.connect(demo_home.state_db)
    sid, want = conn.execute("SELECT id, system_prompt FROM sessions WHERE system_prompt IS NOT NULL").fetchone()
    conn.close()
    with StateDB(demo_home.state_db) as db:
        assert db.system_prompt(sid) == want
        stamp = next(s for s in db.prompt_stamps([sid]))
        assert stamp.prompt_chars == len(want)
