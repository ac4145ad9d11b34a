"""Hygiene proposals applied while real Hermes 0.19 ``MemoryStore`` writers add and remove entries
in the same home (issue 36; the interop stress shape of test_memory_interop.py): nothing of
theirs is lost, the file stays canonical, and every hygiene change is undone to the seed entries."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memdeck.core.config import load_config
from memdeck.core.deck.archive import items
from memdeck.core.home import HermesHome
from memdeck.core.hygiene.apply import apply_finding
from memdeck.core.hygiene.detect import hygiene_report
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.undo import undo
from tests.conftest import requires_hermes
from tests.interop.test_memory_interop import HERMES_WORKER

pytestmark = [requires_hermes, pytest.mark.interop]

N_OPS = 30
SEEDS = [
    ("memory", "Project uses uv for Python dependency management"),
    ("memory", "Python dependencies in this project are managed with uv"),
    ("memory", "Run tests with pytest -q before every commit"),
    ("memory", "Before every commit, run the tests with pytest -q"),
    ("memory", "Das Deploy-Ziel ist pi.local"),
    ("memory", "Deploy-Ziel: pi.local"),
    ("user", "User prefers concise answers without preamble"),
    ("user", "User prefers concise answers, no preamble"),
    ("memory", "Config lives in /tmp/memdeck-interop-gone-3b2e.toml"),
]


def test_hygiene_while_hermes_writes_loses_nothing_and_undoes_to_the_seeds(hermes_home: HermesHome) -> None:
    (hermes_home.path / "config.yaml").write_text("memory:\n  memory_char_limit: 1000000\n  user_char_limit: 1000000\n")
    for target in ("memory", "user"):
        hermes_home.memory_file(target).write_text("\n§\n".join(t for tt, t in SEEDS if tt == target), encoding="utf-8")
    env = dict(os.environ, HERMES_HOME=str(hermes_home.path), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    config = load_config(hermes_home)
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(HERMES_WORKER), f"h{i}", str(N_OPS)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(3)]
    applied: list[str] = []
    overlap = 0

    def hermes_entries() -> int:
        return sum(1 for e in parse_entries(hermes_home.memory_file("memory").read_text(encoding="utf-8"))
                   if e.startswith("[h"))

    try:
        seen = 0
        while True:  # every proposal that needs no choice, one at a time, each after Hermes wrote more
            while hermes_entries() <= seen and any(p.poll() is None for p in procs):
                time.sleep(0.005)  # polling the file for the writers' next entry (bounded: they finish N_OPS each)
            seen = hermes_entries()
            todo = [f for f in hygiene_report(hermes_home, config, semantic=False).findings
                    if f.kind != "contradiction" and f.id not in applied]
            if not todo:
                break
            apply_finding(hermes_home, config, todo[0].id, semantic=False)
            applied.append(todo[0].id)
            overlap += any(p.poll() is None for p in procs)
    finally:
        for p in procs:
            out, err = p.communicate(timeout=240)
            assert p.returncode == 0 and out.strip() == "done", err[-2000:]
    assert len(applied) == 5  # four duplicate pairs and the stale path
    assert overlap > 0, "no hygiene change ran while Hermes was writing"
    raw = hermes_home.memory_file("memory").read_text(encoding="utf-8")
    mem = parse_entries(raw)
    assert serialize_entries(mem) == raw  # canonical
    hermes = {f"[h{i}-{k}]" for i in range(3) for k in range(0, N_OPS, 2)}
    assert hermes <= set(mem) and not any(e.startswith("[h") and e not in hermes for e in mem)  # none lost or left
    assert len([e for e in mem if not e.startswith("[h")]) == 3  # one of each memory pair
    assert len(items(hermes_home, kind="memory", state="archived")) == 5
    for _ in applied:  # every hygiene change, newest first: the seeds come back, Hermes' entries stay
        undo(hermes_home, config)
    mem = parse_entries(hermes_home.memory_file("memory").read_text(encoding="utf-8"))
    user = parse_entries(hermes_home.memory_file("user").read_text(encoding="utf-8"))
    assert {t for tt, t in SEEDS if tt == "memory"} <= set(mem) and hermes <= set(mem)
    assert user == [t for tt, t in SEEDS if tt == "user"]
