"""The "Memory" tab in Hermes 0.19's own web dashboard (issue 35 #3), on the real server.

``memdeck plugin install`` puts the dashboard plugin into a copy of the demo home; Hermes' web
server (``hermes_cli.web_server.start_server`` on a loopback port, :mod:`tests.helpers.hermes_dashboard`)
discovers it and mounts its API; Debian's Chromium (Playwright, the flags of ``memdeck serve``'s
tests) opens the tab: it appears in Hermes' navigation, lists the home's pending writes, and
approving one there lands the bytes Hermes' own ``apply_memory_pending`` writes. The plugin's API
refuses a request without the dashboard's session token (Hermes' 401), and every write when the
tab is read-only (403).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from memdeck.core.home import HermesHome
from memdeck.core.memory.review import review_queue
from memdeck.core.plugin.install import install_plugin, uninstall_plugin
from tests.conftest import requires_hermes
from tests.helpers.browser import chromium, unavailable_reason
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401 - fixtures
from tests.helpers.hermes_dashboard import hermes_dashboard
from tests.helpers.memory import hermes_json

pytestmark = [pytest.mark.interop, requires_hermes]

_WHY = unavailable_reason()

#: Hermes 0.19's own /memory approve of one record (gateway/slash_commands.py: apply_memory_pending
#: on a MemoryStore loaded from disk), run on a copy of the home.
APPLY_ONE = """
import json, sys
from tools import write_approval as wa
from tools.memory_tool import MemoryStore, apply_memory_pending
s = MemoryStore(); s.load_from_disk()
rec = [r for r in wa.list_pending(wa.MEMORY) if r["id"] == sys.argv[1]][0]
print(json.dumps(apply_memory_pending(rec["payload"], s)["success"]))
"""

FILES = ("MEMORY.md", "USER.md")


def _journal(home: HermesHome) -> list[tuple[str, str, dict]]:
    conn = sqlite3.connect(f"file:{home.path / 'memdeck' / 'memdeck.db'}?mode=ro", uri=True)
    try:
        return [(a, op, json.loads(d or "{}")) for a, op, d in
                conn.execute("SELECT actor, op, detail FROM journal WHERE state = 'done' ORDER BY journal_id")]
    finally:
        conn.close()


def _installed(home: HermesHome) -> HermesHome:
    res = install_plugin(home)
    assert (res.plugin_dir / "dashboard" / "manifest.json").is_file()
    return home


def test_the_api_refuses_requests_without_the_dashboards_token(demo_home: HermesHome, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    home = _installed(demo_home)
    pid = next(i.record.id for i in review_queue(home) if i.state == "clean")
    before = {t: (home.memories_dir / t).read_bytes() for t in FILES}
    with hermes_dashboard(home.path, tmp_path) as d:
        status, body = d.request("GET", "/api/plugins/memdeck/state", token=d.token)
        assert status == 200, body  # mounted, and answering with the token
        assert pid in [p["id"] for p in body["pending"]]
        assert [c["file"] for c in body["capacity"]] == list(FILES)
        # no token, a wrong token, the legacy bearer path with a wrong value: Hermes' 401
        assert d.request("GET", "/api/plugins/memdeck/state")[0] == 401
        assert d.request("GET", "/api/plugins/memdeck/state", token="x" * 43)[0] == 401
        assert d.request("POST", f"/api/plugins/memdeck/pending/{pid}/approve")[0] == 401
        assert d.request("POST", f"/api/plugins/memdeck/pending/{pid}/reject", token=d.token[:-1])[0] == 401
        assert d.request("POST", "/api/plugins/memdeck/changes/1/revert")[0] == 401
        assert (home.path / "pending" / "memory" / f"{pid}.json").exists()
        assert {t: (home.memories_dir / t).read_bytes() for t in FILES} == before
        # a refusal of the core comes back with its reason
        status, body = d.request("POST", "/api/plugins/memdeck/pending/nosuchid/approve", token=d.token)
        assert status == 404 and "nosuchid" in body["detail"]["refused"], body
        # read-only (memdeck: dashboard_read_only): every write is 403, nothing written
        with open(home.config_path, "a", encoding="utf-8") as fh:
            fh.write("memdeck:\n  dashboard_read_only: true\n")
        status, body = d.request("GET", "/api/plugins/memdeck/state", token=d.token)
        assert status == 200 and body["read_only"] is True
        status, body = d.request("POST", f"/api/plugins/memdeck/pending/{pid}/approve", token=d.token)
        assert status == 403 and "read-only" in body["detail"]["refused"], body
        status, body = d.request("POST", f"/api/plugins/memdeck/pending/{pid}/edit", token=d.token,
                                 body=json.dumps({"text": "Edited."}).encode())
        assert status == 403, body
        assert (home.path / "pending" / "memory" / f"{pid}.json").exists()
        assert {t: (home.memories_dir / t).read_bytes() for t in FILES} == before


@pytest.mark.skipif(_WHY is not None, reason=_WHY or "")
def test_the_tab_lists_the_queue_and_approving_lands_hermes_bytes(demo_home: HermesHome, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    home = _installed(demo_home)
    queue = review_queue(home)
    pid = next(i.record.id for i in queue if i.state == "clean")
    twin = tmp_path / "twin"
    shutil.copytree(home.path, twin, symlinks=True)
    assert hermes_json(twin, APPLY_ONE, pid) is True  # Hermes 0.19's own apply, on a copy
    expected = {t: (twin / "memories" / t).read_bytes() for t in FILES}
    assert expected != {t: (home.memories_dir / t).read_bytes() for t in FILES}
    with hermes_dashboard(home.path, tmp_path) as d, chromium(tmp_path / "profile") as ctx:
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(d.base + "/sessions")
        nav = page.locator("a[href='/memdeck']")
        nav.wait_for(timeout=60_000)  # Hermes' navigation shows the plugin's tab
        assert "Memory" in (nav.text_content() or "")  # the manifest's label (the theme shows it in capitals)
        nav.click()
        page.locator("[data-memdeck-tab]").wait_for(timeout=60_000)
        for item in queue:  # every pending write of the home, with its state
            row = page.locator(f"[data-pending-id='{item.record.id}']")
            row.wait_for()
            assert item.state in (row.text_content() or "")
        assert "MEMORY.md" in page.locator("[data-capacity='memory']").inner_text()
        page.locator(f"[data-pending-id='{pid}'] [data-action='approve']").click()
        page.locator("[data-message='ok']").wait_for(timeout=60_000)
        page.locator(f"[data-pending-id='{pid}']").wait_for(state="detached", timeout=60_000)
        # read-only: the tab says so and offers no write
        with open(home.config_path, "a", encoding="utf-8") as fh:
            fh.write("memdeck:\n  dashboard_read_only: true\n")
        page.get_by_role("button", name="Refresh").click()
        page.locator("[data-read-only]").wait_for(timeout=60_000)
        assert page.locator("[data-pending-id]").count() == len(queue) - 1
        assert page.locator("[data-action]").count() == 0
        assert errors == []
    assert {t: (home.memories_dir / t).read_bytes() for t in FILES} == expected
    assert not (home.path / "pending" / "memory" / f"{pid}.json").exists()
    actor, op, detail = _journal(home)[-1]
    assert (actor, detail.get("pending_id"), detail.get("origin")) == ("dashboard", pid, {"platform": "hermes-dashboard"}), (op, detail)


def test_uninstall_removes_the_tab(demo_home: HermesHome, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    home = _installed(demo_home)
    uninstall_plugin(home)
    assert not (home.plugins_dir / "memdeck").exists()
    with hermes_dashboard(home.path, tmp_path) as d:
        status, plugins = d.request("GET", "/api/dashboard/plugins")
        assert status == 200 and "memdeck" not in [p["name"] for p in plugins]
        assert d.request("GET", "/api/plugins/memdeck/state", token=d.token)[0] == 404


def test_edit_then_revert_through_the_api(demo_home: HermesHome, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    """Edit before approve, then revert that change, through Hermes' server with its token: each one
    journaled write of the core, the journal naming the dashboard."""
    home = _installed(demo_home)
    item = next(i for i in review_queue(home) if i.state == "clean" and i.record.action == "replace")
    old = item.record.payload["old_text"]
    text = "Prefers short answers; code first."
    user_md = home.memories_dir / "USER.md"
    with hermes_dashboard(home.path, tmp_path) as d:
        status, body = d.request("POST", f"/api/plugins/memdeck/pending/{item.record.id}/edit", token=d.token,
                                 body=json.dumps({"text": text}).encode())
        assert status == 200 and body["journal_id"], body
        entries = user_md.read_text(encoding="utf-8").split("\n§\n")
        assert text in entries and old not in entries
        status, state = d.request("GET", "/api/plugins/memdeck/state", token=d.token)
        change = next(c for c in state["changes"] if c["after"] == text)
        assert change["before"] == old and change["reverted_by"] is None
        status, body = d.request("POST", f"/api/plugins/memdeck/changes/{change['id']}/revert", token=d.token)
        assert status == 200 and body["journal_id"], body
        entries = user_md.read_text(encoding="utf-8").split("\n§\n")
        assert old in entries and text not in entries
        # a second revert of the same change is the core's refusal, with its reason
        status, body = d.request("POST", f"/api/plugins/memdeck/changes/{change['id']}/revert", token=d.token)
        assert status == 409 and "already reverted" in body["detail"]["refused"], body
    rows = _journal(home)
    assert [(a, op) for a, op, _ in rows[-2:]] == [("dashboard", rows[-2][1]), ("dashboard", "revert")]
    assert rows[-2][2]["origin"] == {"platform": "hermes-dashboard"} and rows[-2][2]["pending_id"] == item.record.id
