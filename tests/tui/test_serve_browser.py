"""``memdeck serve`` in a real headless Chromium (Debian's ``chromium``, driven by Playwright):
the page, the keys, a pending write approved in the browser against Hermes 0.19's own apply, a
Hermes write showing up live, two tabs. The screen is read from xterm.js's buffer
(:mod:`tests.helpers.browser`)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memdeck.core.config import load_config
from memdeck.core.home import HermesHome
from memdeck.core.memory.entries import entry_id
from memdeck.core.memory.reader import read_memory
from tests.conftest import requires_hermes
from tests.helpers.browser import chromium, press, screen_text, unavailable_reason, wait_for_text
from tests.helpers.memory import hermes_json
from tests.helpers.serve import served, wait_until

_WHY = unavailable_reason()
pytestmark = pytest.mark.skipif(_WHY is not None, reason=_WHY or "")


def test_the_page_loads_with_the_token_and_4_shows_capacity(demo_home: HermesHome, tmp_path: Path) -> None:
    config = load_config(demo_home)
    with served(demo_home.path, tmp=tmp_path) as s, chromium(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "favicon" not in m.text else None)
        page.goto(s.url)
        assert page.url == s.base + "/"  # the token left the address bar
        cookies = {c["name"]: c for c in ctx.cookies()}
        cookie = cookies[f"memdeck_session_{s.port}"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and s.token not in cookie["value"]
        wait_for_text(page, "1 Integrity")
        press(page, "4")
        wait_for_text(page, "MEMORY.md ")
        wait_for_text(page, "USER.md ")
        text = screen_text(page)
        for target, name in (("memory", "MEMORY.md"), ("user", "USER.md")):
            state = read_memory(demo_home, config, target)
            assert f"{state.chars:,}/{state.limit:,} chars · {len(state.entries)} entries" in text, (name, text)
        memory = read_memory(demo_home, config, "memory").entries
        for e in memory[:10]:  # the rows on screen: id and the entry's first words
            assert entry_id(e.text) in text and e.text[:40] in text, e.text
        shot = tmp_path / "capacity.png"
        page.screenshot(path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert not [e for e in errors if "Content Security Policy" in e], errors  # nothing the CSP blocked


STAGE = """
import json
from tools import write_approval as wa
ops = [{"action": "add", "content": "Deploys go out on Tuesdays after the stand-up."},
       {"action": "replace", "old_text": "structlog", "content": "Logging is structlog: JSON in production, pretty locally."}]
r = wa.stage_write(wa.MEMORY, {"action": "batch", "target": "memory", "operations": ops}, summary="tidy logging note",
                   origin="background_review")
print(json.dumps(r["id"]))
"""

APPLY = """
import json
from tools import write_approval as wa
from tools.memory_tool import MemoryStore, apply_memory_pending
s = MemoryStore(); s.load_from_disk()
print(json.dumps([apply_memory_pending(r["payload"], s)["success"] for r in wa.list_pending(wa.MEMORY)]))
"""


@requires_hermes
def test_approving_a_pending_write_in_the_browser_lands_hermes_bytes(demo_home: HermesHome, tmp_path: Path) -> None:
    pending = demo_home.path / "pending" / "memory"
    for f in pending.glob("*.json"):
        f.unlink()  # only the record Hermes stages below
    pid = hermes_json(demo_home, STAGE)
    twin = tmp_path / "twin"
    shutil.copytree(demo_home.path, twin, symlinks=True)
    assert hermes_json(twin, APPLY) == [True]  # Hermes 0.19's own /memory approve, on a copy
    expected = {t: (twin / "memories" / t).read_bytes() for t in ("MEMORY.md", "USER.md")}
    assert expected["MEMORY.md"] != demo_home.memory_file("memory").read_bytes()
    with served(demo_home.path, tmp=tmp_path) as s, chromium(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        page.goto(s.url)
        wait_for_text(page, "1 Integrity")
        press(page, "6")
        wait_for_text(page, str(pid))  # the Review panel lists it (and selects it: the only row)
        press(page, "A")
        wait_for_text(page, f"approved pending write {pid}")
        wait_until(lambda: not (pending / f"{pid}.json").exists(), describe="the pending record to go")
    for t, data in expected.items():
        assert (demo_home.memories_dir / t).read_bytes() == data, t


def _small_home(root: Path) -> HermesHome:
    """A Hermes home with three short MEMORY.md entries (every row fits on the screen)."""
    home = root / "small"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("Alpha fact.\n§\nBeta fact.\n§\nGamma fact.", encoding="utf-8")
    (home / "memories" / "USER.md").write_text("Likes tea.", encoding="utf-8")
    return HermesHome(home)


HERMES_ADD = """
import sys
from tools.memory_tool import MemoryStore
s = MemoryStore(); s.load_from_disk()
r = s.add("memory", sys.argv[1])
assert r["success"], r
print("added", flush=True)
sys.stdin.read()  # stay until the test has looked
"""


def _hermes_add(home: HermesHome, text: str) -> subprocess.Popen:
    """Hermes' ``MemoryStore.add`` in its own process; returns once the write is done (the
    process prints ``added`` after ``add`` returned)."""
    env = {**os.environ, "HERMES_HOME": str(home.path)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HERMES_ADD), text], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    ready, _w, _x = select.select([proc.stdout], [], [], 120)
    line = proc.stdout.readline() if ready else b""
    if line.strip() != b"added":
        proc.kill()
        raise AssertionError(f"Hermes did not add the entry: {proc.stderr.read().decode()[-2000:]}")
    return proc


@requires_hermes
def test_an_entry_hermes_adds_appears_in_the_page_within_1s(tmp_path: Path) -> None:
    home = _small_home(tmp_path)
    with served(home.path, tmp=tmp_path) as s, chromium(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        page.goto(s.url)
        wait_for_text(page, "1 Integrity")
        press(page, "4")
        wait_for_text(page, "Gamma fact.")
        assert "Delta fact from Hermes" not in screen_text(page)
        writer = _hermes_add(home, "Delta fact from Hermes.")
        try:
            t0 = time.monotonic()
            wait_for_text(page, "Delta fact from Hermes.", timeout_ms=1000)  # the bound is the wait's timeout
            print(f"shown {time.monotonic() - t0:.3f} s after Hermes' add returned")
        finally:
            writer.communicate(b"", timeout=60)


@requires_hermes
def test_two_tabs_are_two_dashboards_and_both_update(tmp_path: Path) -> None:
    home = _small_home(tmp_path)
    with served(home.path, tmp=tmp_path) as s, chromium(tmp_path / "profile") as ctx:
        pages = [ctx.new_page(), ctx.new_page()]
        pages[0].goto(s.url)  # the first tab exchanges the token; the second has the cookie
        pages[1].goto(s.base + "/")
        for page in pages:
            wait_for_text(page, "1 Integrity")
            press(page, "4")
            wait_for_text(page, "Gamma fact.")
        pids = s.dashboards()
        assert len(pids) == 2 and pids[0] != pids[1]
        writer = _hermes_add(home, "Epsilon fact from Hermes.")
        try:
            for page in pages:
                wait_for_text(page, "Epsilon fact from Hermes.")
        finally:
            writer.communicate(b"", timeout=60)
        pages[0].close()  # closing a tab ends its dashboard, the other runs on
        wait_until(lambda: len(s.dashboards()) == 1, describe="the closed tab's dashboard to end")
        assert s.dashboards() == [pids[1]]
        assert "Epsilon fact from Hermes." in screen_text(pages[1])
