"""The Integrity panel's health line tells which Hermes wrote the home and spells out every
degradation; the Review detail shows both verdicts where the loading Hermes judges differently."""

from __future__ import annotations

import sqlite3

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import make_app
from memdeck.tui.views.review import review_detail, review_rows
from tests.tui.conftest import settle

pytestmark = pytest.mark.anyio


async def test_demo_home_health_line_says_fully_supported(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        line = app.query_one("#integrity-health").content.plain
        assert "Hermes 0.19 (schema 22, from state.db schema)" in line and "state.db  ok · fully supported" in line, line


async def test_newer_schema_degradation_and_differing_verdicts_on_screen(demo_home) -> None:
    conn = sqlite3.connect(demo_home.state_db)
    conn.execute("UPDATE schema_version SET version = 40")
    conn.commit()
    conn.close()
    # Hermes 0.22 accepts this entry (memdeck refuses it), so it arrives as 0.22 writes it
    mem = demo_home.memory_file("memory")
    mem.write_text(mem.read_text(encoding="utf-8") + "\n§\ncheck that ~/.ssh is chmod 700", encoding="utf-8")
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        line = app.query_one("#integrity-health").content.plain
        assert "Hermes newer than 0.22 (schema 40" in line and "1 degradation" in line, line
        assert "! schema 40 is newer than memdeck knows (31, Hermes 0.22)" in line, line
        (row,) = [r for r in review_rows(app.snapshot, DEMO_NOW) if "~/.ssh" in r.text]
        detail = review_detail(row).plain
        assert "verdicts differ: memdeck (strict) ssh_access · Hermes clean" in detail, detail
        assert "rules applied: Hermes 0.22 rules" in detail and "does not flag it" in detail
