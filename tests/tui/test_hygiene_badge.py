"""The Capacity tab's badge counts memory hygiene findings (issue 36: "a count in the tab"), from
the entries' text alone, so the demo shows the same on every machine; it is not the Context tab's
frozen-memory count any more (issue 39 #12: two equal badges, no explanation)."""

from __future__ import annotations

import pytest

from memdeck.core.config import Config
from memdeck.core.demo import DEMO_NOW
from memdeck.core.hygiene.detect import BADGE_KINDS, hygiene_report, pair_counts
from memdeck.core.memory.store import MemoryStore
from memdeck.tui.app import make_app
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

#: the demo's first entry said again (as screenshots/make_screenshots.py's hygiene picture adds it)
PARAPHRASE = ("linkhop is the FastAPI URL shortener in ~/code/linkhop; make test runs its suite and make lint "
              "runs ruff and mypy --strict.")


def test_pair_counts_are_the_reports_pair_findings_without_stale_ones(tmp_path) -> None:
    entries = {
        "memory": ["Deploy target is pi.local (Raspberry Pi 5)", "The deploy target moved to pi.lan",
                   "Project uses uv for Python dependency management",
                   "Python dependencies in this project are managed with uv",
                   f"Notes live in {tmp_path}/gone-notes.md"],  # a path gone from this machine: stale, not counted
        "user": ["User prefers concise answers without preamble", "User prefers concise answers, no preamble"],
    }
    counts = pair_counts(entries)
    assert set(counts) == set(BADGE_KINDS)
    assert counts["duplicate"] == 2 and counts["contradiction"] == 1, counts
    # the same as the full report's duplicate/contradiction/wasteful findings (lexical) on a home with them
    from memdeck.core.memory.entries import serialize_entries

    (tmp_path / "memories").mkdir()
    (tmp_path / "config.yaml").write_text("model: {}\n", encoding="utf-8")
    for target, name in (("memory", "MEMORY.md"), ("user", "USER.md")):
        (tmp_path / "memories" / name).write_text(serialize_entries(entries[target]), encoding="utf-8")
    from memdeck.core.home import HermesHome

    report = hygiene_report(HermesHome(tmp_path), semantic=False)
    kinds = [f.kind for f in report.findings]
    assert "stale" in kinds  # the report has it; the badge leaves it out
    assert {k: kinds.count(k) for k in BADGE_KINDS} == counts


async def test_the_capacity_tab_counts_hygiene_findings_and_says_so(demo_home) -> None:
    app = make_app(demo_home, watch=True, now=DEMO_NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        tabs = app.query_one("#panels")
        # the demo: no duplicate, contradiction or wasteful entry (its one stale finding, a path
        # that depends on this machine, is not counted): no badge on Capacity, on any machine
        assert not sum(app.snapshot.hygiene_counts.values())
        assert tabs.get_tab("capacity").label.plain == "4 Capacity"
        context_badge = app._badges_shown.get("context")
        MemoryStore(demo_home, Config(), actor="cli").add("memory", PARAPHRASE)
        await wait_for(pilot, lambda: sum(app.snapshot.hygiene_counts.values()) == 1)
        await settle(pilot, app)
        assert app.snapshot.hygiene_counts["duplicate"] == 1
        assert tabs.get_tab("capacity").label.plain == "4 Capacity 1"
        tip = str(tabs.get_tab("capacity").tooltip)
        assert "1 memory hygiene finding" in tip and "1 duplicate group" in tip and "H shows them" in tip
        assert "stale entries are not counted" in tip
        # Context's count is the frozen memory's differences: one more entry the session has not seen
        assert app._badges_shown.get("context") == (context_badge or 0) + 1
        assert "frozen memory" in str(tabs.get_tab("context").tooltip)
