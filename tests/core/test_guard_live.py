"""The live loop: the plugin's pre_llm_call runs turn after turn while other processes pin,
edit and archive anchors through the CLI and the core. Every change shows in the next turn's
injection and no write from either side is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from memdeck.core.anchors.rehydration import reminder_lines
from memdeck.core.anchors.rules import REMINDER_MARKER
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.plugin.entry import register
from tests.helpers.plugin import BRITISH, BULLETS, REPO, RecordingContext, history, read_session, seed, write_config

SID = "20260702_080000_c0ffee"


def memdeck(home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memdeck.core.cli", "--home", str(home.path), *args], capture_output=True,
                          text=True, timeout=60, cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)})


def plugin(home):
    ctx = RecordingContext()
    register(ctx)
    return ctx


def turn(ctx, n: int, *, compaction: bool = True) -> list[str]:
    """One Hermes turn; a fresh summary body each time forces an audit + a write of the file."""
    h = history([f"turn {n} talk"], body=f"summary number {n}" if compaction else None)
    res = ctx.hooks["pre_llm_call"][0](session_id=SID, conversation_history=h, user_message=f"turn {n} talk")
    ctx.hooks["on_session_end"][0](session_id=SID, completed=True, interrupted=False)
    if res is None:
        return []
    block = res["context"]
    assert block.startswith(REMINDER_MARKER + "\n")
    return reminder_lines(block)


def test_cli_pin_edit_unpin_show_in_the_next_turn(hermes_home):
    write_config(hermes_home, "memlock:\n  inject: always\n  max_slots: 16\n  max_reminder_chars: 4000\n")
    seed(hermes_home, SID, BULLETS)
    ctx = plugin(hermes_home)
    ctx.hooks["on_session_start"][0](session_id=SID)
    assert turn(ctx, 1) == ["Always reply in bullet points, never paragraphs"]

    r = memdeck(hermes_home, "pin", "Cite every source you quote.", "--priority", "90", "--session", SID, "--json")
    assert r.returncode == 0, r.stderr
    pin_id = json.loads(r.stdout)["anchor"]["id"]
    assert turn(ctx, 2) == ["Cite every source you quote.", "Always reply in bullet points, never paragraphs"]

    r = memdeck(hermes_home, "anchor", "edit", pin_id, "--text", "Cite every source with a link.", "--session", SID)
    assert r.returncode == 0, r.stderr
    assert turn(ctx, 3)[0] == "Cite every source with a link."

    r = memdeck(hermes_home, "unpin", "pin_bullets", "--session", SID)
    assert r.returncode == 0, r.stderr
    assert turn(ctx, 4) == ["Cite every source with a link."]

    data = read_session(hermes_home, SID)
    assert set(data["anchors"]) == {pin_id}
    assert data["anchors"][pin_id]["history"][0]["text"] == "Cite every source you quote."
    assert data["turn_count"] == 4 and data["last_reinject_turn"] == 4
    assert len(data["drift_log"]) == 4  # one audit per turn (each turn had a new summary), none lost


def test_cli_archive_and_restore_show_in_the_next_turn(hermes_home):
    write_config(hermes_home, "memlock:\n  inject: always\n")
    seed(hermes_home, SID, BULLETS, BRITISH)
    ctx = plugin(hermes_home)
    assert len(turn(ctx, 1)) == 2
    r = memdeck(hermes_home, "anchor", "archive", "pin_bullets", "--session", SID, "--json")
    assert r.returncode == 0, r.stderr
    archive_id = json.loads(r.stdout).get("archive_id")
    assert turn(ctx, 2) == ["Use British English spelling everywhere"]
    r = memdeck(hermes_home, "anchor", "restore", str(archive_id))
    assert r.returncode == 0, r.stderr
    assert turn(ctx, 3) == ["Always reply in bullet points, never paragraphs", "Use British English spelling everywhere"]
    assert read_session(hermes_home, SID)["turn_count"] == 3


WRITER = r"""
import json, sys
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
import pathlib, time
home = HermesHome(pathlib.Path(sys.argv[1])); sid = sys.argv[2]; n = int(sys.argv[3])
go = pathlib.Path(sys.argv[4])
while not go.exists():  # start once the driver is looping
    time.sleep(0.005)
store = AnchorStore(home, load_config(home), actor="cli")
ids = []
for i in range(n):
    a = store.pin(f"Concurrent rule {i} about walrus{i}", probes=[f"walrus{i}"], session_id=sid)
    ids.append(a.id)
    if i % 4 == 3:  # unpin every fourth one again
        store.unpin(ids.pop(), session_id=sid)
print("IDS" + json.dumps(ids))
"""


def test_concurrent_writers_lose_nothing(hermes_home):
    write_config(hermes_home, "memlock:\n  inject: always\n  max_pins: 64\n  max_slots: 64\n  max_reminder_chars: 100000\n")
    seed(hermes_home, SID, BULLETS)
    ctx = plugin(hermes_home)
    n = 24
    go = hermes_home.path / "go"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(hermes_home.path), SID, str(n), str(go)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO),
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    turns = 0
    while proc.poll() is None and turns < 2000:
        turns += 1
        turn(ctx, turns)
        if turns == 1:
            go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    kept = json.loads(next(ln for ln in out.splitlines() if ln.startswith("IDS"))[3:])
    assert len(kept) == n - n // 4
    turns += 1
    last = turn(ctx, turns)  # the next turn sees every surviving pin
    data = read_session(hermes_home, SID)
    assert set(data["anchors"]) == set(kept) | {"pin_bullets"}
    assert sorted(last) == sorted([data["anchors"][k]["reminder"] for k in data["anchors"]])
    # the plugin's own writes survived the writer's: counters, hash, audit log
    assert data["turn_count"] == turns and data["last_reinject_turn"] == turns
    assert len(data["drift_log"]) == min(20, turns)
    assert data["pinned_count"] == len(kept) + 1
    assert AnchorStore(hermes_home, load_config(hermes_home)).load_session(SID).pinned_now() == len(kept) + 1
