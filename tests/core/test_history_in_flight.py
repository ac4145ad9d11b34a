"""memdeck's own writes are memdeck's in the history, whenever the observer looks (issue 22 #9).

A writer commits its journal row as ``intent``, replaces the file, then marks the row ``done``.
The dashboard's watcher wakes on the file and observes at once, so the observation can run between
the file write and the ``done`` commit. These tests run :func:`history.observe` exactly there (a
hook on the writer, no threads, no timing) and check that the change is attributed to memdeck's
row, that nothing is recorded twice once the row is done, and that no clock is consulted to
match an anchor row (the dashboard's clock may be fixed, the journal's is the wall clock).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memdeck.core import history
from memdeck.core.anchors.files import AnchorFiles
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import Config
from memdeck.core.deck import journal
from memdeck.core.home import HermesHome
from memdeck.core.memory.store import MemoryStore
from tests.helpers.memory import write_raw


def _observe_before_done(monkeypatch: pytest.MonkeyPatch, home: HermesHome, seen: list[Any]) -> None:
    """Run ``history.observe`` after every memdeck file write and before its ``done`` commit."""
    real_finish = AnchorFiles._finish
    real_replacing = MemoryStore._replacing

    def finish(self: AnchorFiles, conn: Any, row: Any) -> None:
        seen.extend(history.observe(home))
        real_finish(self, conn, row)

    def replacing(self: MemoryStore, *args: Any) -> Any:
        cm = real_replacing(self, *args)

        class _Wrapped:
            def __enter__(self_inner) -> None:
                cm.__enter__()
                seen.extend(history.observe(home))

            def __exit__(self_inner, *exc: Any) -> Any:
                return cm.__exit__(*exc)

        return _Wrapped()

    monkeypatch.setattr(AnchorFiles, "_finish", finish)
    monkeypatch.setattr(MemoryStore, "_replacing", replacing)


def _ops(changes: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(c.op, c.actor, c.scope) for c in changes]


def test_an_unpin_observed_before_its_done_commit_is_memdecks(hermes_home: HermesHome, monkeypatch) -> None:
    store = AnchorStore(hermes_home, actor="tui")
    a = store.pin("Never deploy on Fridays.", session_id="s1", scope="global")
    history.observe(hermes_home)  # the baseline of the session file and the global pin
    seen: list[Any] = []
    _observe_before_done(monkeypatch, hermes_home, seen)
    store.unpin(a.id, session_id="s1", scope="global")
    rows = journal.entries(hermes_home, 1)
    assert rows[0].op == "unpin" and rows[0].state == "done"
    assert sorted(_ops(seen)) == [("anchor_removed", "tui", "global"), ("anchor_removed", "tui", "session")]
    assert all(c.attribution["journal_id"] == rows[0].journal_id for c in seen)
    # the row is done now: the next observation records nothing more
    assert history.observe(hermes_home) == []
    assert len(history.list_changes(hermes_home)) == 2


def test_a_pin_and_an_edit_observed_in_flight_are_memdecks(hermes_home: HermesHome, monkeypatch) -> None:
    store = AnchorStore(hermes_home, actor="cli")
    store.pin("Reply in British English.", session_id="s1")
    history.observe(hermes_home)
    seen: list[Any] = []
    _observe_before_done(monkeypatch, hermes_home, seen)
    b = store.pin("Use uv, not pip.", session_id="s1", priority=70)
    store.update(b.id, priority=90, session_id="s1")
    assert _ops(seen) == [("anchor_added", "cli", "session"), ("anchor_changed", "cli", "session")]
    assert [c.attribution["op"] for c in seen] == ["pin", "update"]
    assert history.observe(hermes_home) == []


def test_a_memory_write_observed_before_its_done_commit_is_memdecks(hermes_home: HermesHome, monkeypatch) -> None:
    write_raw(hermes_home, "user", "Name: Priya.")
    history.observe(hermes_home)
    seen: list[Any] = []
    _observe_before_done(monkeypatch, hermes_home, seen)
    s = MemoryStore(hermes_home, Config(), actor="tui")
    s.add("user", "Likes dry humour.")
    s.remove("user", "Name: Priya.")
    assert [(c.op, c.actor) for c in seen] == [("added", "tui"), ("removed", "tui")]
    assert history.observe(hermes_home) == []
    assert [(c.op, c.actor) for c in history.list_changes(hermes_home)] == [("removed", "tui"), ("added", "tui")]


def test_an_anchor_row_matches_whatever_the_observers_clock_says(hermes_home: HermesHome) -> None:
    """The dashboard passes its own clock to observe (a fixed one in the demo's pictures): the
    journal row is matched by its place and content, not by its wall-clock ``ts``."""
    store = AnchorStore(hermes_home, actor="tui")
    a = store.pin("Never deploy on Fridays.", session_id="s1")
    history.observe(hermes_home, now=1_000_000.0)
    store.unpin(a.id, session_id="s1")
    got = history.observe(hermes_home, now=1_000_060.0)
    assert _ops(got) == [("anchor_removed", "tui", "session")]


def test_another_sessions_row_does_not_explain_a_change(hermes_home: HermesHome) -> None:
    """A global pin lives in every session's file under one id: memdeck unpinning it from s1
    does not make MemLock's removal of the same id from s2 memdeck's."""
    store = AnchorStore(hermes_home, actor="tui")
    a = store.pin("Never deploy on Fridays.", session_id="s1")
    s2 = store.load_session("s1").to_dict()
    s2["session_id"] = "s2"
    (hermes_home.memlock_dir / "s2.json").write_text(json.dumps(s2), encoding="utf-8")
    history.observe(hermes_home)
    store.unpin(a.id, session_id="s1")
    data = json.loads((hermes_home.memlock_dir / "s2.json").read_text(encoding="utf-8"))
    del data["anchors"][a.id]
    (hermes_home.memlock_dir / "s2.json").write_text(json.dumps(data), encoding="utf-8")
    got = history.observe(hermes_home)
    assert sorted((c.session_id, c.actor) for c in got) == [("s1", "tui"), ("s2", "external")]


def test_an_edit_after_memdecks_write_is_not_memdecks(hermes_home: HermesHome) -> None:
    """The row explains a change only when the file holds the row's result."""
    store = AnchorStore(hermes_home, actor="tui")
    store.pin("Reply in British English.", session_id="s1")
    history.observe(hermes_home)
    b = store.pin("Use uv, not pip.", session_id="s1")
    path = hermes_home.memlock_dir / "s1.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["anchors"][b.id]["text"] = "Use pip."
    path.write_text(json.dumps(data), encoding="utf-8")
    got = history.observe(hermes_home)
    assert _ops(got) == [("anchor_added", "external", "session")]



def test_the_cli_says_an_anchor_change_in_words(hermes_home: HermesHome, capsys) -> None:
    """``memdeck history`` printed the stored JSON of an anchor change (issue 22 #12)."""
    from memdeck.core.cli import main

    store = AnchorStore(hermes_home, actor="cli")
    a = store.pin("Run the tests before pushing.", session_id="s1", priority=80, probes=["tests", "pushing"])
    history.observe(hermes_home)
    path = hermes_home.memlock_dir / "s1.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["anchors"][a.id].update(text="Never push to main without the full test suite.", priority=90,
                                 probes=["push", "main", "test suite"])
    path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert main(["--home", str(hermes_home.path), "history"]) == 0
    out = capsys.readouterr().out
    assert "{" not in out and "[" not in out, out
    assert ('    text: "Run the tests before pushing." -> "Never push to main without the full test suite."' in out)
    assert "    priority: 80 -> 90" in out
    assert '    probes: added "push", "main", "test suite"; removed "tests", "pushing"' in out
    assert "    unchanged: reminder" in out and '    text: "Run the tests before pushing."' in out  # the pin too
