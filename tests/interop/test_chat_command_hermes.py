"""Issue 35 #1: ``/memdeck`` in a chat, through the real Hermes 0.19 and 0.22.2 gateways.

Records are staged by Hermes' own write gate (the matrix driver's ``stage``: ``memory_tool`` with
``memory.write_approval: true``); one of five is made stale by Hermes' own ``MemoryStore``. Then a
real ``GatewayRunner`` (``gateway/run.py``) handles Telegram ``MessageEvent``\\ s with
``_handle_message``, the one entry point every platform adapter's message goes through: the
authorisation, the slash access policy (``allow_admin_from`` / ``user_allowed_commands``), the
``pre_gateway_dispatch`` hook and the plugin command dispatch are all Hermes'. memdeck's plugin is
the directory plugin ``memdeck plugin install`` writes (the venv's entry point is switched off, as
in ``test_plugin_hermes.py``). The files memdeck's approvals leave must equal what Hermes' own
``apply_memory_pending`` gives for the same records in the same order on a copy of the home.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.config import load_config
from memdeck.core.deck import journal
from memdeck.core.home import HermesHome
from memdeck.core.memory.pending import list_pending
from memdeck.core.memory.review import review_queue
from memdeck.core.plugin.install import install_plugin
from memdeck.core.undo import undo
from tests.conftest import requires_hermes
from tests.helpers.plugin import REPO
from tests.interop.matrix import run
from tests.interop.matrix.run import hermes_or_skip

pytestmark = [requires_hermes, pytest.mark.interop]

ADMIN, USER = "111", "222"
CONFIG = "plugins:\n  enabled: [memdeck]\nmemory:\n  write_approval: {gate}\n  memory_char_limit: 2200\n"

# A real GatewayRunner handling each message as a Telegram adapter hands it over; after each
# message, the sha256 of every file under memories/ and pending/ (what a refusal must not touch).
GATEWAY = r"""
import asyncio, hashlib, json, os, sys
from pathlib import Path
import hermes_cli.plugins as hp
hp.PluginManager._scan_entry_points = lambda self: []   # the venv also declares the entry point: the dir form only
from gateway.config import GatewayConfig, PlatformConfig, Platform
from gateway.platforms.base import MessageEvent
from gateway.session import SessionSource
from gateway.run import GatewayRunner
home = Path(os.environ["HERMES_HOME"])
cfg = GatewayConfig(platforms={Platform.TELEGRAM: PlatformConfig(enabled=True, token="t",
    extra={"allow_admin_from": [sys.argv[2]], "user_allowed_commands": ["memdeck"]})})
runner = GatewayRunner(cfg)
hp.discover_plugins()   # what GatewayRunner.start() does before any message (gateway/run.py 7491)
def snapshot():
    out = {}
    for d in ("memories", "pending"):
        for p in sorted((home / d).rglob("*")):
            if p.is_file():
                out[str(p.relative_to(home))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out
async def main():
    out = []
    for text, user in json.loads(sys.argv[1]):
        ev = MessageEvent(text=text, source=SessionSource(platform=Platform.TELEGRAM, chat_id="chat-9",
                          chat_type="dm", user_id=user, user_name="name" + user))
        before = snapshot()
        reply = await runner._handle_message(ev)
        out.append({"text": text, "user": user, "reply": reply, "changed": snapshot() != before})
    return out
# the handler called in the gateway's process with no message behind it: no sender to check, so no write
before = snapshot()
direct = hp.get_plugin_command_handler("memdeck")("approve --all-clean")
direct = {"reply": direct, "changed": snapshot() != before}
res = asyncio.run(main())
lp = hp.get_plugin_manager()._plugins["memdeck"]
print("RESULT" + json.dumps({"messages": res, "direct": direct, "source": lp.manifest.source,
                             "args_hint": hp.get_plugin_commands()["memdeck"]["args_hint"]}))
"""


def gateway(home: Path, messages: list[tuple[str, str]], py: Path | str = sys.executable) -> dict[str, Any]:
    """``messages`` handled by a real ``GatewayRunner`` of the Hermes whose python is ``py``."""
    env = {**os.environ, "HERMES_HOME": str(home), "GATEWAY_ALLOW_ALL_USERS": "true",
           "HOME": str(home.parent / "user_home"), "PYTHONPATH": str(REPO)}
    (home.parent / "user_home").mkdir(exist_ok=True)
    proc = subprocess.run([str(py), "-c", GATEWAY, json.dumps(messages), ADMIN], capture_output=True,
                          text=True, timeout=600, env=env, cwd=str(home.parent))
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line is not None, f"rc={proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return json.loads(line[len("RESULT"):])


def stage_five(py: Path, home: Path, version: str = "0.19.0") -> tuple[list[str], str]:
    """Three entries, then five records staged by Hermes' gate; the one that removes "tabs" turns
    stale when Hermes' own store rewrites that entry. Returns (ids in staging order, the stale id).
    0.22's memory tool has ``patch`` (a span of one entry) where 0.19 has ``replace``."""
    patch = not version.startswith("0.19")
    cmds: list[dict[str, Any]] = [{"op": "config", "text": CONFIG.format(gate="false")}]
    cmds += [{"op": "mem", "action": "add", "target": "memory", "content": e}
             for e in ("Indent with tabs", "Editor is vim", "Deploy on fridays")]
    cmds.append({"op": "config", "text": CONFIG.format(gate="true")})
    cmds += [{"op": "stage", "target": "memory", "action": "add", "content": "Cite every source"},
             {"op": "stage", "target": "memory", "action": "remove", "old_text": "tabs"},
             {"op": "stage", "target": "memory", "action": "patch", "old_text": "vim", "content": "helix"} if patch else
             {"op": "stage", "target": "memory", "action": "replace", "old_text": "vim", "content": "Editor is helix"},
             {"op": "stage", "target": "user", "action": "add", "content": "Prefers dark mode"},
             {"op": "stage", "target": "memory", "action": "remove", "old_text": "fridays"}]
    cmds += [{"op": "config", "text": CONFIG.format(gate="false")},
             {"op": "mem", "action": "patch", "target": "memory", "old_text": "tabs", "content": "two spaces"} if patch
             else {"op": "mem", "action": "replace", "target": "memory", "old_text": "Indent with tabs",
                   "content": "Indent with two spaces"},
             {"op": "config", "text": CONFIG.format(gate="true")}]
    res = run.drive(py, home, cmds, timeout=600)
    staged = [r["result"]["pending_id"] for r in res if isinstance(r, dict) and (r.get("result") or {}).get("staged")]
    assert len(staged) == 5, res
    return staged, staged[1]


def files(home: Path) -> dict[str, bytes | None]:
    return {n: ((home / "memories" / n).read_bytes() if (home / "memories" / n).exists() else None)
            for n in ("MEMORY.md", "USER.md")}


#: the transcript of the last gateway run (README: "/memdeck in every chat"), per version
TRANSCRIPT = Path(os.environ.get("MEMDECK_CHAT_TRANSCRIPT", "")) if os.environ.get("MEMDECK_CHAT_TRANSCRIPT") else None


@pytest.mark.parametrize("version", ["0.19.0", "0.22.2.post1"])
def test_memdeck_in_a_telegram_chat_through_the_real_gateway(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = tmp_path / "a" / "home"
    (home / "memories").mkdir(parents=True)
    staged, stale = stage_five(py, home, version)
    install_plugin(HermesHome(home))
    twin = tmp_path / "twin" / "home"
    shutil.copytree(home, twin)
    h = HermesHome(home)
    from memdeck.core import history as _history

    _history.observe(h)  # a dashboard or `memdeck history` looked at the home before: changes get ids
    queue = {i.id: i for i in review_queue(h, load_config(h))}
    assert queue[stale].state == "stale" and all(queue[i].state == "clean" for i in staged if i != stale)
    first, edited = staged[0], staged[3]
    theme = "Prefers a dark theme everywhere"
    out = gateway(home, [
        ("/memdeck pending", USER),                  # read-only: the ordinary rule lets the user
        (f"/memdeck approve {first}", USER),         # /memory is admin-only here: refused
        ("/memdeck approve --all-clean", USER),
        (f"/memdeck reject {stale}", USER),
        (f"/memdeck edit {edited} {theme}", USER),
        (f"/memdeck approve {stale}", ADMIN),        # stale: refused with Hermes' reason
        (f"/memdeck approve {first}", ADMIN),
        (f"/memdeck edit {edited} {theme}", ADMIN),  # edit, then approve
        ("/memdeck approve --all-clean", ADMIN),     # the other two clean ones; the stale one skipped
        (f"/memdeck reject {stale}", ADMIN),
        ("/memdeck memory", USER),
        ("/memdeck history", USER),
        ("/memdeck stale", USER),
        ("/memory approve " + staged[2], USER),        # Hermes' own /memory for the same sender
    ], py)
    assert out["source"] == "user" and "approve ID|--all-clean" in out["args_hint"]
    assert out["direct"] == {"reply": "memdeck: refused: the sender of this command is unknown, so approve, edit and "
                                      "reject are not allowed here.", "changed": False}
    m = out["messages"]
    pending = m[0]["reply"]
    assert pending.startswith("5 pending memory writes (4 clean, 1 stale)")
    for pid in staged:
        assert pid in pending
    assert f"{stale} remove memory" in pending and queue[stale].reason and queue[stale].reason[:40] in pending
    assert "\x1b" not in pending and "[bold" not in pending and not m[0]["changed"]
    # refused by Hermes' own rule for /memory, in Hermes' words (0.22.2's iot wheel has no locales/:
    # its own words are the catalog key, which memdeck's refusal names)
    hermes_no = m[13]["reply"]
    assert not m[13]["changed"]
    said = (f"memdeck: refused: {hermes_no}" if " " in hermes_no else
            f"memdeck: refused: Hermes does not let this sender run /memory here ({hermes_no}), so approve, edit, "
            "reject and revert are not allowed.")
    assert "/memory is admin-only here" in said if version == "0.19.0" else hermes_no == "gateway.unauthorized.admin_only"
    for refused in m[1:5]:
        assert refused["reply"] == said
        assert not refused["changed"], refused
    # Hermes' reason for the stale record: 0.19 replays old_text ("No entry matched"), 0.22 pins the entry
    assert m[5]["reply"].startswith("memdeck: refused: ") and not m[5]["changed"]
    assert queue[stale].reason and queue[stale].reason[:20] in m[5]["reply"]
    assert m[6]["reply"].startswith(f"approved {first}") and m[6]["changed"]
    assert m[7]["reply"].startswith(f"edited and approved {edited}") and m[7]["changed"]
    assert m[8]["reply"].startswith("approved 2 of 3 pending writes; skipped 1: 1 stale"), m[8]["reply"]
    assert m[9]["reply"].startswith(f"rejected {stale}") and not list_pending(h)
    mem = m[10]["reply"]
    assert mem.startswith("MEMORY.md: ") and "MEMORY.md 1. Indent with two spaces" in mem
    assert f"USER.md 1. {theme}" in mem
    history = m[11]["reply"].splitlines()
    assert history[0] == "last 5 memory changes, newest first"  # the staging used Hermes' store, not memdeck's
    assert all("chat (telegram user 111)" in ln for ln in history[1:]) and f"reject memory {stale}" in history[1]
    # no agent ran a session here (0.22's gateway creates state.db at start, 0.19's does not)
    assert m[12]["reply"] in ("No state.db in this home: no sessions to compare.",
                              "No running session sees old memory (0 open sessions checked).") and not m[12]["changed"]
    # the edited approval's change (USER.md gains the theme), by the change id history names
    edit_line = next(ln for ln in history if f" user {edited}" in ln)
    cid = edit_line.rsplit(" - change ", 1)[1].split(",")[0].strip()
    rev = gateway(home, [(f"/memdeck revert {cid}", USER), (f"/memdeck revert {cid}", ADMIN),
                         (f"/memdeck revert {cid}", ADMIN)], py)["messages"]
    assert rev[0]["reply"] == said
    assert not rev[0]["changed"]
    assert rev[1]["reply"].startswith(f"Reverted change #{cid} (added) in user.") and rev[1]["changed"]
    assert rev[2]["reply"].startswith(f"memdeck: refused: change #{cid} was already reverted") and not rev[2]["changed"]
    if TRANSCRIPT is not None:  # README's transcript, from this very run
        TRANSCRIPT.parent.mkdir(parents=True, exist_ok=True)
        with TRANSCRIPT.open("a", encoding="utf-8") as fh:
            fh.write(f"## Hermes {version}\n")
            for msg in (m[0], m[1], m[6], m[8]):
                fh.write(f"> {msg['text']}   (user {msg['user']})\n{msg['reply']}\n\n")
            fh.write(f"## more {version}\n")
            for msg in (m[7], m[9], m[11], rev[0], rev[1]):
                fh.write(f"> {msg['text']}   (user {msg['user']})\n{msg['reply']}\n\n")

    # each action one journaled write naming the platform, chat and sender
    rows = [r for r in journal.entries(h, limit=50) if r.actor == "chat"]
    origin = {"platform": "telegram", "chat_id": "chat-9", "user_id": ADMIN, "user_name": "name" + ADMIN,
              "chat_type": "dm"}
    applied_order = [r.detail["pending_id"] for r in sorted(rows, key=lambda r: r.journal_id) if r.op != "reject"
                     and r.detail.get("pending_id")]
    assert set(applied_order) == set(staged) - {stale} and applied_order[:2] == [first, edited]
    assert all(r.detail.get("origin") == origin for r in rows)
    assert len({r.detail.get("pending_id") for r in rows if r.op != "revert"}) == 5
    assert [r.detail.get("change_id") for r in rows if r.op == "revert"] == [int(cid)]

    # the files equal what Hermes' own approval gives for the same records in the same order (the
    # edited one: Hermes' own store adding the edited text, which is what its apply of an add does)
    twin_cmds: list[dict[str, Any]] = []
    for pid in applied_order:
        twin_cmds.append({"op": "mem", "action": "add", "target": "user", "content": theme} if pid == edited
                         else {"op": "approve", "id": pid})
    twin_cmds.append({"op": "mem", "action": "remove", "target": "user", "old_text": theme})  # the revert, by Hermes
    theirs = run.drive(py, twin, [{"op": "config", "text": CONFIG.format(gate="false")}, *twin_cmds])
    assert all(r.get("success") or (r.get("result") or {}).get("success") for r in theirs[1:]), theirs
    assert files(home) == files(twin)

    # `memdeck undo` reverts the chat's last actions: the revert, then the reject (the record staged again)
    undo(h, load_config(h), actor="test")
    assert f"USER.md 1. {theme}" in gateway(home, [("/memdeck memory", USER)], py)["messages"][0]["reply"]
    assert undo(h, load_config(h), actor="test")["id"] == stale
    assert [p.id for p in list_pending(h)] == [stale]


# Hermes' own CLI (cli.py HermesCLI.process_command: "plugin-registered slash commands") typing
# /memdeck at the prompt: the local user, no gateway in the process.
CLI = r"""
import contextlib, io, json, sys
import hermes_cli.plugins as hp
hp.PluginManager._scan_entry_points = lambda self: []
from cli import HermesCLI
cli = HermesCLI()
out = []
for line in json.loads(sys.argv[1]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cli.process_command(line)
    out.append(buf.getvalue())
print("RESULT" + json.dumps({"replies": out, "gateway_loaded": "gateway.run" in sys.modules}))
"""


def test_memdeck_at_hermes_cli_prompt_approves_as_the_local_user(tmp_path: Path) -> None:
    py = hermes_or_skip("0.19.0")
    home = tmp_path / "a" / "home"
    (home / "memories").mkdir(parents=True)
    staged, stale = stage_five(py, home)
    install_plugin(HermesHome(home))
    twin = tmp_path / "twin" / "home"
    shutil.copytree(home, twin)
    env = {**os.environ, "HERMES_HOME": str(home), "HOME": str(tmp_path / "user_home"), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", CLI, json.dumps(["/memdeck approve --all-clean"])],
                          capture_output=True, text=True, timeout=600, env=env, cwd=str(tmp_path))
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line is not None, f"rc={proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    res = json.loads(line[len("RESULT"):])
    assert not res["gateway_loaded"]
    assert "approved 4 of 5 pending writes; skipped 1: 1 stale" in res["replies"][0]
    h = HermesHome(home)
    assert [p.id for p in list_pending(h)] == [stale]
    rows = sorted((r for r in journal.entries(h, limit=50) if r.actor == "chat"), key=lambda r: r.journal_id)
    assert [r.detail.get("origin") for r in rows] == [{"platform": "cli"}] * 4
    order = [r.detail["pending_id"] for r in rows]
    assert set(order) == set(staged) - {stale}
    theirs = run.drive(py, twin, [{"op": "approve_all", "ids": order}])[0]["results"]
    assert all(r["result"]["success"] for r in theirs), theirs
    assert files(home) == files(twin)
