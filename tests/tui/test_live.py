"""Live behaviour: the watcher sees external writers, bad sources become banners, hostile text
renders literally."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.tui.app import make_app
from memdeck.tui.watcher import is_noise
from tests.conftest import requires_hermes
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

HOSTILE = "[bold red]boom[/] [link=https://evil.example]x[/link] \x1b[31mred\x1b]8;;https://e.example\x07L\x1b]8;;\x07 a\u202eb\u200bc"


def test_watch_filter_ignores_write_noise() -> None:
    for name in (".mem_1a2b3c4d.tmp", "MEMORY.md.lock", "MEMORY.md.bak.1784824800", "state.db-shm",
                 "state.db-journal", "s1.json.tmp", "config.yaml.bak-20260101-000000"):
        assert is_noise(name), name
    for name in ("MEMORY.md", "USER.md", "state.db", "state.db-wal", "20260723_150454_0a097c.json", "119a72d1.json"):
        assert not is_noise(name), name


async def test_bad_memlock_file_mid_run_is_a_banner_and_recovers(demo_home) -> None:
    app = make_app(demo_home, watch=True, now=DEMO_NOW)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await pilot.press("2")
        path = app.snapshot.session_anchors.path
        good = path.read_text(encoding="utf-8")
        path.write_text("{ broken", encoding="utf-8")  # an external writer corrupts it
        banner = app.query_one("#panel-anchors-banner")
        await wait_for(pilot, lambda: banner.display and "not valid JSON" in banner.content.plain)
        assert app.is_running
        assert app.snapshot.sessions  # the other sources still work
        path.write_text(good, encoding="utf-8")
        await wait_for(pilot, lambda: not banner.display or "not valid JSON" not in banner.content.plain)
        await wait_for(pilot, lambda: app.query_one("#anchors-table").row_count > 0)


async def test_anchor_markup_and_escapes_render_literally(demo_home) -> None:
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        path = app.snapshot.session_anchors.path
        data = json.loads(path.read_text(encoding="utf-8"))
        aid = next(iter(data["anchors"]))
        data["anchors"][aid]["text"] = HOSTILE
        data["anchors"][aid]["reminder"] = HOSTILE
        data["anchors"][aid]["priority"] = 100
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        app.request_refresh()
        await settle(pilot, app)
        await pilot.press("2")
        table = app.query_one("#anchors-table")
        table.select_key(f"a:{aid}")
        await pilot.pause()
        cell = table.cells(f"a:{aid}")[-1].plain
        assert cell.startswith("[bold red]boom[/] [link=https://evil.example]x[/link] ⟨ESC⟩[31mred⟨ESC⟩]8;;")
        detail = app.query_one("#anchors-detail").content.plain
        assert "[bold red]boom[/]" in detail and "⟨ESC⟩[31m" in detail and "⟨BEL⟩" in detail
        assert "⟨U+202E⟩" in detail and "⟨U+200B⟩" in detail
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "\u202e" not in svg
        assert "boom" in svg


async def test_entry_markup_and_escapes_render_literally(demo_home) -> None:
    mem = demo_home.memory_file("memory")
    mem.write_text("short note\n§\n" + HOSTILE, encoding="utf-8")
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        rows = app.panel("capacity").rows
        row = next(r for r in rows if r.text.startswith("[bold red]boom"))
        table = app.query_one("#capacity-table")
        table.select_key(row.key)
        await pilot.pause()
        cell = table.cells(row.key)[-1].plain
        assert "[bold red]boom[/]" in cell and "⟨ESC⟩" in cell and "\x1b" not in cell
        detail = app.query_one("#capacity-detail").content
        plain = detail.plain if hasattr(detail, "plain") else str(detail)
        assert "⟨U+202E⟩" in app.export_screenshot() or "⟨U+202E⟩" in plain


HERMES_WRITER = r"""
import sys
from tools.memory_tool import MemoryStore
store = MemoryStore(memory_char_limit=int(sys.argv[2]), user_char_limit=1375)
store.load_from_disk()
result = store.add("memory", sys.argv[1])
assert result.get("success"), result
"""


@requires_hermes
async def test_external_hermes_write_shows_without_a_key_press(demo_home) -> None:
    app = make_app(demo_home, watch=True, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await pilot.press("4")
        await pilot.pause()
        marker = "Hermes wrote this while memdeck watched"
        assert not any(marker in r.text for r in app.panel("capacity").rows)
        env = {**os.environ, "HERMES_HOME": str(demo_home.path)}
        limit = str(app.config.memory_char_limit)
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", HERMES_WRITER, marker, limit, env=env,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()[-2000:]
        await wait_for(pilot, lambda: any(marker in r.text for r in app.panel("capacity").rows))
        table = app.query_one("#capacity-table")
        assert any(marker in table.cells(k)[-1].plain for k in table.keys)


async def test_rows_update_in_place_and_the_cursor_stays_on_its_row(demo_home) -> None:
    from memdeck.core.memory.store import MemoryStore

    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        table = app.query_one("#capacity-table")
        rows = app.panel("capacity").rows
        chosen = rows[5]
        assert table.select_key(chosen.key)
        await pilot.pause()
        # another writer removes an entry *above* the cursor: the rows shift, the cursor follows its row
        MemoryStore(app.home, app.config, actor="test").remove("memory", rows[0].entry.id)
        app.request_refresh()
        await settle(pilot, app)
        assert rows[0].key not in table.keys
        assert table.selected_key == chosen.key
        assert table.cursor_row == table.keys.index(chosen.key) == 4
