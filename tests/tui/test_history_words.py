"""History in words (issue 22 #9, #12): memdeck's own unpin is memdeck's, a toast never shows the
JSON the history stores, anchor changes read field by field, an archive says "archived (archive
#N)", and the relative times are drawn again once a minute only while a panel that has them is
shown."""

from __future__ import annotations

import json

import pytest

from memdeck.core import history as core_history
from memdeck.core.anchors.files import AnchorFiles
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import Config
from memdeck.core.history.changes import Change
from memdeck.core.memory.store import MemoryStore
from memdeck.tui.app import make_app
from memdeck.tui.screens.confirm import ConfirmScreen
from memdeck.tui.views import history as hv
from tests.tui.conftest import settle, wait_for

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0


def _anchor_change(op: str, before: dict | None, after: dict | None, **kw) -> Change:
    dump = lambda d: None if d is None else json.dumps(d, sort_keys=True)  # noqa: E731
    return Change(kw.pop("change_id", 7), "anchor", None, "memlock/s1.json", op, dump(before), dump(after),
                  NOW - 900, NOW - 720, kw.pop("actor", "external"), kw.pop("attribution", {"anchor_id": "pin_1"}),
                  scope=kw.pop("scope", "session"), session_id=kw.pop("session_id", "s1"))


OLD = {"text": "Run the tests before pushing.", "reminder": "Run the tests before pushing", "priority": 80,
       "probes": ["tests", "pushing"]}
NEW = {"text": "Never push to main without running the full test suite first.",
       "reminder": "Run the tests before pushing", "priority": 90, "probes": ["push", "main", "test suite"]}


def test_an_anchor_change_reads_field_by_field() -> None:
    t = hv.anchor_change_text(_anchor_change("anchor_changed", OLD, NEW)).plain
    assert "{" not in t and "[" not in t  # neither JSON nor a Python list
    assert "priority  80 → 90" in t
    assert "probes    added “push”, “main”, “test suite”; removed “tests”, “pushing”" in t
    assert "unchanged: reminder" in t
    assert "scope     session · s1" in t
    # two different sentences are not interleaved word by word: the old one, then the new one
    assert ("text      Run the tests before pushing.\n"
            "          → Never push to main without running the full test suite first.") in t


def test_the_table_says_who_and_where_in_a_few_words() -> None:
    c = _anchor_change("anchor_removed", NEW, None, scope="global", session_id=None,
                       attribution={"anchor_id": "pin_1", "journal_id": 3, "op": "unpin"}, actor="tui")
    assert (hv.who_short(c), hv.where_short(c)) == ("memdeck tui", "global pin pin_1")
    base = dict(kind="memory", target="user", path="memories/USER.md", op="added", before=None, after="x",
                since=NOW - 60, until=NOW)
    assert hv.who_short(Change(1, actor="pending", attribution={"pending_id": "ab", "origin": "background_review"},
                               **base)) == "background review"
    assert hv.who_short(Change(2, actor="hermes", attribution={"source": "telegram", "session_id": "s9"},
                               **base)) == "hermes telegram"


def test_an_added_or_removed_anchor_lists_its_fields_and_its_scope() -> None:
    t = hv.anchor_change_text(_anchor_change("anchor_removed", NEW, None, scope="global", session_id=None)).plain
    assert t.startswith("it was\n")
    assert "probes    “push”, “main”, “test suite”" in t and "priority  90" in t
    assert "scope     global (the durable copy in memlock/persist/" in t
    added = hv.anchor_change_text(_anchor_change("anchor_added", None, OLD)).plain
    assert added.startswith("pinned with\n") and "text      Run the tests before pushing." in added


def test_archive_and_restore_are_said_as_such() -> None:
    base = dict(kind="memory", target="memory", path="memories/MEMORY.md", since=NOW - 60, until=NOW)
    archived = Change(1, op="removed", before="Old rule.", after=None, actor="tui",
                      attribution={"journal_id": 4, "op": "archive", "archive_id": 3}, **base)
    restored = Change(2, op="added", before=None, after="Old rule.", actor="cli",
                      attribution={"journal_id": 5, "op": "restore", "archive_id": 3}, **base)
    removed = Change(3, op="removed", before="Old rule.", after=None, actor="external", **base)
    approved = Change(4, op="added", before=None, after="New rule.", actor="cli",
                      attribution={"journal_id": 6, "op": "add", "pending_id": "1a2b3c4d"}, **base)
    assert [hv.op_words(c) for c in (archived, restored, removed, approved)] == [
        "archived (archive #3)", "restored (archive #3)", "removed", "added (approved 1a2b3c4d)"]


def test_a_toast_never_shows_the_stored_json() -> None:
    c = _anchor_change("anchor_removed", NEW, None)
    text = hv.toast_text(c)
    assert "{" not in text and '"priority"' not in text
    assert text.startswith("anchor removed in anchor pin_1 (s1) by a writer other than memdeck: Never push to main")
    assert text.endswith("(memdeck revert 7)")


async def test_memdecks_unpin_is_memdecks_even_when_the_watcher_looks_mid_write(hermes_home, monkeypatch) -> None:
    """The dashboard's watcher observes between the session file's replace and the row's done
    commit (the hook runs the observation exactly there): no "other writer" toast, History says
    memdeck tui."""
    store = AnchorStore(hermes_home, actor="cli")
    a = store.pin("Never print or log secrets; redact tokens as ***.", session_id="s1", scope="global")
    core_history.observe(hermes_home)
    real_finish = AnchorFiles._finish

    def finish(self, conn, row):
        core_history.observe(hermes_home)
        real_finish(self, conn, row)

    app = make_app(hermes_home, watch=True, session_id="s1")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        monkeypatch.setattr(AnchorFiles, "_finish", finish)
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_panel_id == "anchors")
        await wait_for(pilot, lambda: app.selection() is not None and app.selection().anchor_id == a.id)
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: any(n.title == "unpin" for n in app.notification_log))
        await wait_for(pilot, lambda: len([c for c in app.snapshot.history if c.op == "anchor_removed"]) == 2)
        await settle(pilot, app)
        removed = [c for c in app.snapshot.history if c.op == "anchor_removed"]
        assert {(c.actor, c.scope) for c in removed} == {("tui", "session"), ("tui", "global")}
        assert not [n for n in app.notification_log if "other than memdeck" in n.message or "{" in n.message]
        await pilot.press("7")
        await wait_for(pilot, lambda: app.current_panel_id == "history")
        rows = app.panel("history").rows
        assert [r.cells[2].plain for r in rows[:2]] == ["memdeck tui", "memdeck tui"]
        assert rows[0].cells[5].plain == "Never print or log secrets; redact tokens as ***."


async def test_relative_times_are_redrawn_once_a_minute_only_while_shown(hermes_home) -> None:
    s = MemoryStore(hermes_home, Config(), actor="cli")
    s.add("memory", "Rule one.")
    core_history.observe(hermes_home)
    s.add("memory", "Rule two.")
    core_history.observe(hermes_home)
    clock = [core_history.list_changes(hermes_home)[0].until]  # memdeck's change: when its journal row says
    app = make_app(hermes_home, watch=False, clock=lambda: clock[0])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        await settle(pilot, app)
        assert app.retime_timer is not None and app.retime_timer._interval == app.RETIME_S == 60.0  # Integrity has them
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_panel_id == "capacity")
        await pilot.pause()
        assert app.retime_timer is None  # Capacity shows no relative time: no timer at all
        await pilot.press("7")
        await wait_for(pilot, lambda: app.current_panel_id == "history")
        await wait_for(pilot, lambda: app.retime_timer is not None)
        panel = app.panel("history")
        table = app.query_one("#history-table")
        assert panel.rows[0].cells[1].plain == "0 s ago"
        cursor = table.cursor_row
        clock[0] += 12 * 60
        app._retime()  # what the timer runs once a minute
        await pilot.pause()
        assert panel.rows[0].cells[1].plain == "12 min ago"
        assert str(table.get_cell_at((0, 1))) == "12 min ago" and table.cursor_row == cursor
        assert "seen 12 min ago" in app.query_one("#history-detail").content.plain
