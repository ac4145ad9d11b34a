"""memdeck's memory core against the real hermes-agent 0.19.0 MemoryStore (run in subprocesses)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memdeck.core.config import Config
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.memory.pending import approve, list_pending
from memdeck.core.memory.reader import read_memory
from memdeck.core.memory.store import MemoryStore
from tests.conftest import requires_hermes
from tests.helpers.memory import hermes_json

pytestmark = [requires_hermes, pytest.mark.interop]

ENTRIES = ["First fact", "Second fact\nmultiline", "Uses § inline and ümlauts", "emoji 🧠 ok", "tabs\tinside"]

HERMES_WRITE = """
import json, sys
from tools.memory_tool import MemoryStore
s = MemoryStore(); s.load_from_disk()
out = []
for e in json.loads(sys.argv[1]):
    out.append(s.add("memory", e)["success"])
print(json.dumps(out))
"""

HERMES_READ = """
import json
from tools.memory_tool import MemoryStore
s = MemoryStore(); s.load_from_disk()
r = s.replace("memory", "First", "First fact (edited by hermes)")
print(json.dumps({"entries": s.memory_entries, "user": s.user_entries, "replace": r}))
"""


def test_hermes_writes_memdeck_reads_identically(hermes_home: HermesHome) -> None:
    assert hermes_json(hermes_home, HERMES_WRITE, json.dumps(ENTRIES)) == [True] * len(ENTRIES)
    state = read_memory(hermes_home, Config(), "memory")
    assert [e.text for e in state.entries] == ENTRIES and state.drift is None
    raw = hermes_home.memory_file("memory").read_text(encoding="utf-8")
    assert serialize_entries([e.text for e in state.entries]) == raw and state.chars == len(raw)


def test_memdeck_writes_hermes_reads_and_rewrites_without_drift(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config())
    for e in ENTRIES:
        s.add("memory", e)
    s.add("user", "Likes tea")
    out = hermes_json(hermes_home, HERMES_READ)
    assert out["entries"][1:] == ENTRIES[1:] and out["user"] == ["Likes tea"]
    assert out["replace"]["success"] is True  # Hermes' drift guard accepts our canonical file
    assert not list(hermes_home.memories_dir.glob("*.bak.*"))
    assert read_memory(hermes_home, Config(), "memory").entries[0].text == "First fact (edited by hermes)"


def test_memdeck_normalize_satisfies_hermes_drift_guard(hermes_home: HermesHome) -> None:
    hermes_home.memory_file("memory").write_text("First fact\n\n§\n\nSecond\n§\nFirst fact", encoding="utf-8")
    MemoryStore(hermes_home, Config()).normalize("memory")
    out = hermes_json(hermes_home, HERMES_READ)
    assert out["replace"]["success"] is True and out["entries"] == ["First fact (edited by hermes)", "Second"]


def test_pending_written_by_hermes_is_listed_and_approved_like_hermes_replay(hermes_home: HermesHome, tmp_path: Path) -> None:
    MemoryStore(hermes_home, Config()).add("memory", "alpha one\n§\nnot a delimiter here".replace("\n§\n", " § "))
    code = """
    import json
    from tools import write_approval as wa
    ops = [{"action": "add", "content": "gamma"}, {"action": "replace", "old_text": "alpha", "content": "alpha 1"}]
    r1 = wa.stage_write(wa.MEMORY, {"action": "batch", "target": "memory", "operations": ops}, summary="b", origin="background_review")
    r2 = wa.stage_write(wa.MEMORY, {"action": "add", "target": "user", "content": "Likes tea", "old_text": None},
                        summary="a", origin="foreground")
    print(json.dumps([r1["id"], r2["id"]]))
    """
    ids = hermes_json(hermes_home, code)
    recs = {r.id: r for r in list_pending(hermes_home)}
    assert set(recs) == set(ids) and recs[ids[0]].action == "batch" and recs[ids[1]].target == "user"
    twin = tmp_path / "twin"
    shutil.copytree(hermes_home.path, twin)
    replay = """
    import json
    from tools import write_approval as wa
    from tools.memory_tool import MemoryStore, apply_memory_pending
    s = MemoryStore(); s.load_from_disk()
    print(json.dumps([apply_memory_pending(r["payload"], s)["success"] for r in wa.list_pending(wa.MEMORY)]))
    """
    assert hermes_json(twin, replay) == [True, True]
    for pid in ids:
        approve(hermes_home, Config(), pid)
    for t in ("MEMORY.md", "USER.md"):
        assert (hermes_home.memories_dir / t).read_bytes() == (twin / "memories" / t).read_bytes()
    assert list_pending(hermes_home) == []


# -- concurrency ---------------------------------------------------------------------------------
N_OPS = 24

HERMES_WORKER = """
import sys
from tools.memory_tool import MemoryStore
tag, n = sys.argv[1], int(sys.argv[2])
s = MemoryStore(memory_char_limit=1_000_000, user_char_limit=1_000_000)
s.load_from_disk()
for k in range(n):
    r = s.add("memory", f"[{tag}-{k}]")
    assert r["success"], r
    if k % 2:
        r = s.remove("memory", f"[{tag}-{k}]")
        assert r["success"], r
print("done")
"""

MEMDECK_WORKER = """
import sys
from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
home = HermesHome(__import__("pathlib").Path(sys.argv[3]))
tag, n = sys.argv[1], int(sys.argv[2])
s = MemoryStore(home, load_config(home), actor="cli", lock_timeout=60)
for k in range(n):
    s.add("memory", f"[{tag}-{k}]")
    if k % 2:
        s.remove("memory", f"[{tag}-{k}]")
print("done")
"""

READER = """
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
D = "\\n\\u00a7\\n"
reads = bad = 0
while not os.path.exists(stop):
    try:
        raw = open(path, encoding="utf-8").read()
    except FileNotFoundError:
        continue
    reads += 1
    pieces = [p.strip() for p in raw.split(D)] if raw.strip() else []
    ok = all(p.startswith("[") and p.endswith("]") for p in pieces) and D.join(pieces) == raw
    bad += not ok
print(reads, bad)
"""


def test_four_hermes_and_four_memdeck_writers_lose_nothing(hermes_home: HermesHome, tmp_path: Path) -> None:
    (hermes_home.path / "config.yaml").write_text("memory:\n  memory_char_limit: 1000000\n")
    env = dict(os.environ, HERMES_HOME=str(hermes_home.path), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(hermes_home.memory_file("memory")), str(stop)],
                              env=env, stdout=subprocess.PIPE, text=True)
    procs = []
    for i in range(4):
        procs.append(subprocess.Popen([sys.executable, "-c", textwrap.dedent(HERMES_WORKER), f"h{i}", str(N_OPS)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        procs.append(subprocess.Popen([sys.executable, "-c", textwrap.dedent(MEMDECK_WORKER), f"m{i}", str(N_OPS),
                                       str(hermes_home.path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        for p in procs:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0 and out.strip() == "done", err[-2000:]
    finally:
        stop.write_text("x")
        rout, _ = reader.communicate(timeout=60)
    reads, bad = map(int, rout.split())
    assert reads > 0 and bad == 0, (reads, bad)
    raw = hermes_home.memory_file("memory").read_text(encoding="utf-8")
    pieces = raw.split("\n§\n")
    expected = {f"[{t}{i}-{k}]" for t in "hm" for i in range(4) for k in range(0, N_OPS, 2)}
    assert len(pieces) == len(set(pieces)) == len(expected)  # nothing duplicated
    assert set(pieces) == expected  # nothing lost, nothing left behind
    assert serialize_entries(parse_entries(raw)) == raw  # round-trips
    assert not list(hermes_home.memories_dir.glob(".mem_*.tmp"))
    assert not list(hermes_home.memories_dir.glob("*.bak.*"))
