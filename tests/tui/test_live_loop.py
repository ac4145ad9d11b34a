"""The live loop beside a running Hermes: memdeck's own files never wake it, an unchanged home
repaints nothing, the dashboard follows the live session, and a replaced state.db is reopened.

Every wait is on a message, a worker or a condition of the app; nothing sleeps.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from textual.message import Message

from memdeck.core.demo import DEMO_NOW
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from memdeck.core.overview.reader import HomeReader
from memdeck.core.overview.snapshot import open_statedb
from memdeck.core.sessions import hermes_schema as hs
from memdeck.tui.app import make_app
from memdeck.tui.messages import SourcesChanged
from memdeck.tui.watcher import source_of
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio


def _hermes_style_write(home: HermesHome, text: str) -> None:
    """Append an entry the way Hermes does: temp file in the same directory, then os.replace."""
    path = home.memory_file("memory")
    current = path.read_text(encoding="utf-8")
    tmp = path.parent / ".mem_test1234.tmp"
    tmp.write_text(current + "\n§\n" + text, encoding="utf-8")
    os.replace(tmp, path)


def test_memdecks_own_files_are_no_source(demo_home: HermesHome) -> None:
    h = demo_home.path
    for own in ("memdeck/memdeck.db", "memdeck/memdeck.db-wal", "memdeck/memdeck.db-shm", "memdeck",
                "memories/MEMORY.md.lock", "memories/.mem_abcd1234.tmp", "state.db-shm", "memlock/s.json.tmp",
                "memories/MEMORY.md.bak.1784824800", "logs/agent.log"):
        assert source_of(demo_home, h / own) is None, own
    expected = {"memories/MEMORY.md": "memory", "memories/USER.md": "memory", "state.db": "statedb",
                "state.db-wal": "statedb", "config.yaml": "config", "pending/memory/a1.json": "pending",
                "memlock/s1.json": "memlock", "memlock/persist/pin_1.json": "memlock", "memlock": "memlock"}
    for rel, kind in expected.items():
        assert source_of(demo_home, h / rel) == kind, rel


def test_a_build_with_every_source_unchanged_returns_the_previous_snapshot(demo_home: HermesHome) -> None:
    from memdeck.core.config import load_config

    config = load_config(demo_home)
    reader = HomeReader(demo_home, config)
    first = reader.read(now=DEMO_NOW)
    # reading memdeck.db (the archive) and state.db changed nothing any watcher or stamp sees
    again = reader.read(now=DEMO_NOW)
    assert again is first
    _hermes_style_write(demo_home, "a change Hermes made")
    third = reader.read(now=DEMO_NOW)
    assert third is not first
    assert any(e.text == "a change Hermes made" for e in third.memory["memory"].entries)
    # only the memory part was re-read: the state.db part is the same object
    assert third.sessions is first.sessions and third.compactions is first.compactions
    reader.close()


async def test_own_database_writes_never_trigger_a_refresh(demo_home: HermesHome) -> None:
    # memdeck has written to this home once, so memdeck/memdeck.db (and its -wal) exist
    MemoryStore(demo_home, actor="cli").add("user", "written by the memdeck CLI before the dashboard opened")
    # beside a live Hermes state.db's -wal and -shm exist already (a reader opening an idle WAL
    # database creates them once, which is a change of state.db's own and not memdeck's loop)
    db = open_statedb(demo_home)
    db.status()
    assert os.path.exists(str(demo_home.state_db) + "-wal")
    seen: list[frozenset[str]] = []

    def hook(message: Message) -> None:
        if isinstance(message, SourcesChanged):
            seen.append(message.kinds)

    app = make_app(demo_home, watch=True, now=DEMO_NOW)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        for i in range(3):  # three external writes, each must be one refresh and nothing more
            before = app.refresh_count
            marker = f"external write number {i}"
            _hermes_style_write(demo_home, marker)
            await wait_for(pilot, lambda: any(e.text == marker for e in app.snapshot.memory["memory"].entries))
            await settle(pilot, app)
            assert app.refresh_count == before + 1
        # every wake-up was for a file Hermes wrote, none for memdeck.db or its side files
        assert seen and all(kinds == frozenset({"memory"}) for kinds in seen), seen
        assert len(seen) <= 3
        # asking again with nothing changed builds nothing new and repaints nothing
        runs, count, snap = app.refresh_runs, app.refresh_count, app.snapshot
        app.request_refresh()
        await settle(pilot, app)
        assert app.refresh_runs == runs + 1 and app.refresh_count == count and app.snapshot is snap
    db.close()


async def test_the_dashboard_follows_a_new_live_session_until_one_is_pinned(demo_home: HermesHome) -> None:
    app = make_app(demo_home, watch=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        first = app.snapshot.session_id
        assert first and app.snapshot.following_live
        assert "following live" in app.query_one("#statusline").content.plain
        # Hermes starts a new session (/new, a gateway reset): it becomes the live one
        conn = hs.connect(demo_home.state_db)
        hs.add_session(conn, "20991231_000000_newone", source="cli", title="fresh", started_at=time.time())
        hs.append_message(conn, "20991231_000000_newone", "user", "hello again", timestamp=time.time())
        conn.close()
        await wait_for(pilot, lambda: app.snapshot.session_id == "20991231_000000_newone")
        # pin the old one with the picker's result: the header says so and a new session does not move it
        app.session_id = first
        app.request_refresh(force=True)
        await wait_for(pilot, lambda: app.snapshot.session_id == first and not app.snapshot.following_live)
        assert "pinned to" in app.query_one("#statusline").content.plain
        await pilot.press("f")
        await wait_for(pilot, lambda: app.snapshot.session_id == "20991231_000000_newone")
        assert app.session_id is None and "following live" in app.query_one("#statusline").content.plain


async def test_a_replaced_state_db_is_reopened(demo_home: HermesHome, tmp_path) -> None:
    app = make_app(demo_home, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        # a restore from backup: a different file is renamed over state.db
        copy = tmp_path / "restored.db"
        shutil.copy2(demo_home.state_db, copy)
        for side in ("-wal", "-shm"):
            if os.path.exists(str(demo_home.state_db) + side):
                shutil.copy2(str(demo_home.state_db) + side, str(copy) + side)
        conn = hs.connect(copy)
        hs.add_session(conn, "20991231_000001_restored", source="cli", title="from the backup", started_at=time.time())
        hs.append_message(conn, "20991231_000001_restored", "user", "restored row", timestamp=time.time())
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        os.replace(copy, demo_home.state_db)
        await wait_for(pilot, lambda: any(s.id == "20991231_000001_restored" for s in app.snapshot.sessions))
        assert app.snapshot.db_status is not None and app.snapshot.db_status.state == "ok"


async def test_memlock_sessions_without_state_db_show_memlocks_own_flags(demo_home: HermesHome) -> None:
    """Issue 13 #14: a home with MemLock session files but no state.db is no AttributeError."""
    for f in demo_home.path.glob("state.db*"):
        f.unlink()
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert dict(app.snapshot.errors) == {}
        assert app.snapshot.session_anchors is not None and app.snapshot.audit is None
        facts = app.query_one("#integrity-facts").content.plain
        assert "none in this home: MemLock's own score" in facts
        await pilot.press("2")
        await settle(pilot, app)
        assert app.query_one("#anchors-table").row_count == len(app.snapshot.session_anchors.anchors)
        assert not any(b.display for b in app.query(".banner"))
