"""Parts added to the read spine after the hand-written builder (core/overview/parts.py)."""

from __future__ import annotations

from pathlib import Path

from memdeck.core.config import load_config
from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home
from memdeck.core.memory.store import MemoryStore
from memdeck.core.overview.reader import HomeReader


def test_stale_sessions_counts_the_open_sessions_whose_frozen_memory_differs(tmp_path: Path) -> None:
    home = build_demo_home(tmp_path / "demo", seed=DEMO_SEED, now=DEMO_NOW)
    config = load_config(home)
    reader = HomeReader(home, config, clock=lambda: DEMO_NOW)
    try:
        assert reader.first_paint().stale_sessions is None  # no agent view yet: unknown, not 0
        before = reader.read()
        open_sessions = [d for d in before.agent_view.diffs if d.frozen.in_prompt]
        assert open_sessions
        assert before.stale_sessions == sum(1 for d in open_sessions if d.differences)
        MemoryStore(home, config).add("memory", "A rule no running session has seen yet.")
        after = reader.read()
        assert after.stale_sessions == len(open_sessions)  # every open session now differs
    finally:
        reader.close()
