"""Issue 22's blocker: memdeck.db shared by several memdeck processes at once.

CLI writers (one process per command: their add/remove pairs plus every writing command of
``tests/helpers/commands.py`` in turn), the real dashboard (headless, writing through its write
worker, refreshing on every change), ``memdeck watch`` and a process standing for a Hermes gateway
answering ``/memdeck`` in chats (every sub-command, and the chat notice's hooks) run on one demo home for
``MEMDECK_STRESS_SECONDS`` (default 40 s; the note's figures come from runs of several minutes).
Afterwards memdeck.db passes ``PRAGMA integrity_check``, its journal holds no write left
half-done, every command succeeded or was refused with a reason, every writing command ran, and
nothing was lost: every entry the home held before is in MEMORY.md, USER.md or the archive, or a
journaled change of memdeck's took it out. On the code before the fix (a descriptor of memdeck.db
opened and closed after ``sqlite3.connect``) most commands failed with "database disk image is
malformed".
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memdeck.core.deck import db as deckdb
from memdeck.core.home import HermesHome
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SECONDS = float(os.environ.get("MEMDECK_STRESS_SECONDS", "40"))
ROLES = [("cli", "a"), ("cli", "b"), ("cli", "c"), ("dashboard", "d"), ("watch", "w"), ("chat", "g")]


def _entries(home: HermesHome) -> set[str]:
    from memdeck.core.memory.entries import parse_entries

    return {e for t in ("MEMORY.md", "USER.md") for e in parse_entries(
        (home.path / "memories" / t).read_text(encoding="utf-8"))}


def test_memdeck_processes_share_memdeck_db_without_corruption(demo_home: HermesHome) -> None:  # noqa: F811 - the fixture
    before = _entries(demo_home)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TZ": "UTC", "HERMES_HOME": str(demo_home.path)}
    cli = [tag for role, tag in ROLES if role == "cli"]
    share = {tag: [f"{cli.index(tag)}/{len(cli)}"] for tag in cli}  # the writing commands, split among them
    procs = [subprocess.Popen([sys.executable, "-m", "tests.helpers.store_stress", role, str(demo_home.path),
                               str(SECONDS), tag, *share.get(tag, [])], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
             for role, tag in ROLES]
    reports = []
    for proc, (role, tag) in zip(procs, ROLES):
        out, err = proc.communicate(timeout=SECONDS + 300)
        assert proc.returncode == 0, f"{role} {tag} exited {proc.returncode}: {err[-2000:]}"
        reports.append(json.loads(out.strip().splitlines()[-1]))

    summary = {f"{r['role']}-{r['tag']}": r["counts"] for r in reports}
    print("store stress:", json.dumps(summary))
    failures = [f"{r['role']}-{r['tag']}: {f}" for r in reports for f in r["failures"]]
    assert not failures, "\n".join(failures[:30])
    assert sum(r["counts"]["ok"] for r in reports if r["role"] == "cli") >= 10, summary
    dash = next(r for r in reports if r["role"] == "dashboard")
    assert dash["writes"] >= 4 and dash["counts"]["ok"] >= 2, dash

    path = deckdb.db_path(demo_home)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        left = conn.execute("SELECT COUNT(*) FROM journal WHERE state != 'done'").fetchone()[0]
        assert left == 0, "writes left half-done in the journal"
        archiving = conn.execute("SELECT COUNT(*) FROM archive WHERE state IN ('archiving', 'restoring')").fetchone()[0]
        assert archiving == 0
        archived = {r[0] for r in conn.execute("SELECT text FROM archive")}
        taken_out: set[str] = set()
        from memdeck.core.memory.entries import parse_entries

        for b, a in conn.execute("SELECT before, after FROM journal WHERE kind = 'memory' AND state = 'done'"):
            taken_out |= set(parse_entries(b or "")) - set(parse_entries(a or ""))
    finally:
        conn.close()
    lost = before - _entries(demo_home) - archived - taken_out
    assert not lost, f"entries gone with no journaled change of memdeck's: {sorted(lost)[:5]}"
    ran = {name for r in reports if r["role"] == "cli" for name in r.get("writers", {})}
    from tests.helpers.commands import writers

    assert ran == set(writers()), f"writing commands that never ran: {sorted(set(writers()) - ran)}"
    from tests.helpers.commands import CHAT_SAMPLES

    chat = next(r for r in reports if r["role"] == "chat")
    assert set(chat["chat"]) == set(CHAT_SAMPLES), f"chat sub-commands that never ran: {set(CHAT_SAMPLES) - set(chat['chat'])}"
    assert chat["counts"]["ok"] >= len(CHAT_SAMPLES), chat
