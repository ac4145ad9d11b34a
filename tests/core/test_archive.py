"""Archive/restore of memory entries: round trip, checks on restore, and crash safety by injection."""

from __future__ import annotations

import os

import pytest

from memdeck.core.config import Config
from memdeck.core.deck import archive
from memdeck.core.deck import db as deckdb
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory import store as memory_mod
from memdeck.core.memory.entries import parse_entries
from memdeck.core.memory.store import MemoryStore
from tests.helpers.memory import HOSTILE, write_raw


class Crash(BaseException):
    """Stands in for the process dying at this point."""


def _die(*_a, **_k):
    os._exit(9)


def crash_in_child(fn) -> None:
    """Run ``fn`` in a forked child that must die at its injection point (``os._exit(9)``):
    no ``finally``/``__exit__`` runs, as with a real kill (an exception would roll back)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            fn()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 9, "the child did not die at the injection point"


def _crash_at_replace(op) -> None:
    def child() -> None:
        MemoryStore._replacing = _die  # type: ignore[method-assign]
        op()

    crash_in_child(child)


def _crash_at_state(op, state: str) -> None:
    def child() -> None:
        real = memory_mod._archive.set_state

        def boom(conn, aid, st, **kw):
            if st == state:
                _die()
            return real(conn, aid, st, **kw)

        memory_mod._archive.set_state = boom
        op()

    crash_in_child(child)


def entries(home: HermesHome, target: str = "memory") -> list[str]:
    p = home.memory_file(target)
    return parse_entries(p.read_text()) if p.exists() else []


def states(home: HermesHome) -> list[tuple[str, str]]:
    return [(i.text, i.state) for i in archive.items(home, kind="memory", state=None)]


def assert_consistent(home: HermesHome, text: str) -> None:
    """Nothing lost, nothing duplicated: the text is in the file xor archived."""
    in_file = entries(home).count(text)
    archived = sum(1 for t, s in states(home) if t == text and s == "archived")
    assert in_file + archived == 1, (in_file, states(home))


@pytest.fixture
def store(hermes_home: HermesHome) -> MemoryStore:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "keep me")
    s.add("memory", "old fact")
    return s


def test_archive_and_restore_round_trip(hermes_home: HermesHome, store: MemoryStore) -> None:
    r = store.archive(None, "old", reason="stale")
    assert entries(hermes_home) == ["keep me"] and r.archive_id is not None
    item = archive.get(hermes_home, r.archive_id)
    assert item and (item.text, item.target, item.reason, item.state) == ("old fact", "memory", "stale", "archived")
    assert archive.count(hermes_home) == 1
    store.restore(r.archive_id)
    assert entries(hermes_home) == ["keep me", "old fact"]
    assert archive.get(hermes_home, r.archive_id).state == "restored"
    with pytest.raises(Refused) as ei:
        store.restore(r.archive_id)
    assert ei.value.code == "not_found"


def test_restore_goes_through_budget_and_scan(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, Config(memory_char_limit=30))
    s.add("memory", "a" * 20)
    aid = s.archive("memory", "aaa").archive_id
    s.add("memory", "b" * 20)
    with pytest.raises(Refused) as ei:
        s.restore(aid)
    assert ei.value.code == "overflow" and archive.get(hermes_home, aid).state == "archived"
    with deckdb.opened(hermes_home) as c, deckdb.transaction(c):
        hostile = archive.insert(c, kind="memory", target="user", text=HOSTILE["ssh_backdoor"], actor="t", state="archived")
    with pytest.raises(Refused) as ei:
        s.restore(hostile)
    assert ei.value.code == "threat" and archive.get(hermes_home, hostile).state == "archived"


def test_restore_of_text_already_in_the_file_does_not_duplicate(hermes_home: HermesHome, store: MemoryStore) -> None:
    aid = store.archive(None, "old fact").archive_id
    store.add("memory", "old fact")
    r = store.restore(aid)
    assert r.changed is False and entries(hermes_home).count("old fact") == 1


@pytest.mark.parametrize("step", ["after_intent", "after_write"])
def test_archive_crash_between_steps_recovers(hermes_home: HermesHome, store: MemoryStore, monkeypatch, step: str) -> None:
    op = lambda: store.archive(None, "old fact")  # noqa: E731
    _crash_at_replace(op) if step == "after_intent" else _crash_at_state(op, "archived")
    assert [s for _, s in states(hermes_home)] == ["archiving"]
    assert memory_mod.recover_intents(hermes_home, Config()) == 1
    assert_consistent(hermes_home, "old fact")
    assert archive.unfinished_archive_intents(hermes_home) == []
    # and the usual operations work afterwards
    if step == "after_write":
        aid = archive.items(hermes_home)[0].archive_id
        store.restore(aid)
        assert "old fact" in entries(hermes_home)


@pytest.mark.parametrize("step", ["after_intent", "after_write"])
def test_restore_crash_between_steps_recovers(hermes_home: HermesHome, store: MemoryStore, monkeypatch, step: str) -> None:
    aid = store.archive(None, "old fact").archive_id
    op = lambda: store.restore(aid)  # noqa: E731
    _crash_at_replace(op) if step == "after_intent" else _crash_at_state(op, "restored")
    assert archive.get(hermes_home, aid).state == "restoring"
    # recovery runs implicitly at the start of the next archive/restore under the lock
    store.add("memory", "unrelated")
    if step == "after_intent":
        store.restore(aid)
    else:
        with pytest.raises(Refused):
            store.restore(aid)  # already resolved to restored by recovery
    assert entries(hermes_home).count("old fact") == 1
    assert archive.get(hermes_home, aid).state == "restored"


def test_generic_helpers_for_other_kinds(hermes_home: HermesHome) -> None:
    aid = archive.archive_record(hermes_home, anchor_id="pin_x", reason="r",
                                 payload={"anchor": {"text": "Cite"}, "session_id": "s1", "scope": "global"})
    rec = archive.get_record(hermes_home, aid, kind="anchor")
    assert rec and rec.text == "Cite" and rec.payload["anchor"]["text"] == "Cite"
    assert (rec.target, rec.anchor_id, rec.scope, rec.session_id) == (None, "pin_x", "global", "s1")
    assert rec.to_dict()["anchor_id"] == "pin_x" and rec.to_dict()["target"] is None
    assert archive.get_record(hermes_home, aid, kind="memory") is None
    assert archive.get_record(hermes_home, "no-such-archive") is None
    assert archive.mark_restored(hermes_home, aid) and archive.get(hermes_home, aid).state == "restored"
    assert not archive.mark_restored(hermes_home, aid)
    aid2 = archive.archive_record(hermes_home, anchor_id="pin_y")
    assert (archive.get(hermes_home, aid2).scope, archive.get(hermes_home, aid2).session_id) == ("session", None)
    assert archive.discard_record(hermes_home, aid2) and archive.get(hermes_home, aid2) is None
    assert archive.count(hermes_home, kind="anchor") == 0 and archive.count(hermes_home, kind="memory") == 0


def test_unreadable_file_leaves_intent_untouched(hermes_home: HermesHome, store: MemoryStore, monkeypatch) -> None:
    _crash_at_replace(lambda: store.archive(None, "old fact"))
    write_raw(hermes_home, "memory", b"\xff\xfe")
    assert memory_mod.recover_intents(hermes_home) == 0
    assert [s for _, s in states(hermes_home)] == ["archiving"]
