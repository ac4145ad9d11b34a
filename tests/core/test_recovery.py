"""Issue 22 Majors 1 and 2 in the core: interrupted memory writes are settled per entry, and a
pending record is applied at most once.

The pure parts (the entry-level effect, the verdict on one row, the staged names of a write)
are checked directly, the effect with hypothesis against random entries and random other
writers; the store's parts by killing a write in a forked child (no ``finally`` runs, as with
SIGKILL) and then writing the file as another writer would. The end-to-end matrix against the
real Hermes is tests/interop/test_crash_interleave.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdeck.core import history, undo
from memdeck.core.config import Config
from memdeck.core.deck import db as deckdb
from memdeck.core.deck import journal
from memdeck.core.errors import Refused
from memdeck.core.fsio import INTENT_TEMP_PREFIX, applied, cleanup_stale_temps, discard_staged, replace_outcome, stage_replace
from memdeck.core.home import HermesHome
from memdeck.core.memory import pending
from memdeck.core.memory.approval import APPLYING_SUFFIX, sweep
from memdeck.core.memory.effects import EntryEffect
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.memory.recovery import _File, verdict
from memdeck.core.memory.store import MemoryStore, recover_intents

CFG = Config()

# ----------------------------------------------------------------------------- the effect, pure

texts = st.text(alphabet="abcdefgh ", min_size=1, max_size=6).map(str.strip).filter(bool)


@st.composite
def change_and_writer(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], list[str]]:
    """(before, after, other writer's result on before, on after): the change adds/removes/
    replaces entries; the other writer adds fresh texts and removes entries the change does
    not touch (Hermes' add/remove on other entries)."""
    before = draw(st.lists(texts, unique=True, max_size=6))
    kind = draw(st.sampled_from(["add", "remove", "replace", "batch"]))
    fresh = [f"new {t}" for t in draw(st.lists(texts, unique=True, min_size=1, max_size=3))]
    after = list(before)
    if kind in ("remove", "replace", "batch") and before:
        i = draw(st.integers(0, len(before) - 1))
        if kind == "replace":
            after[i] = fresh[0]
        else:
            del after[i]
    if kind in ("add", "batch") or not before:
        after += [f for f in fresh if f not in after]
    touched = (set(before) ^ set(after))
    others = [f"other {t}" for t in draw(st.lists(texts, unique=True, max_size=2))]
    gone = set(draw(st.lists(st.sampled_from(before), unique=True, max_size=2)) if before else []) - touched

    def writer(es: list[str]) -> list[str]:
        return [e for e in es if e not in gone] + [o for o in others if o not in es]
    return before, after, writer(before), writer(after)


@settings(max_examples=300, deadline=None)
@given(change_and_writer())
def test_the_effect_survives_other_writers(case: tuple[list[str], list[str], list[str], list[str]]) -> None:
    before, after, h_before, h_after = case
    eff = EntryEffect.of(serialize_entries(before), serialize_entries(after))
    if not eff.entry_level:
        return
    assert eff.status(h_after) == "present"      # happened, then another writer wrote
    assert eff.status(h_before) == "absent"      # never happened, another writer wrote
    assert set(eff.apply(h_before)) == set(h_after)   # finishing it by entries
    assert eff.apply(h_after) == h_after              # idempotent
    assert set(eff.revert(h_after, before)) == set(h_before)  # undoing it by entries


def test_the_effect_says_mixed_when_another_writer_touched_its_entries() -> None:
    eff = EntryEffect.of("a\n§\nb", "a\n§\nc")   # replace b -> c
    assert (eff.removed, eff.added) == (("b",), ("c",))
    assert eff.status(["a", "b", "c"]) == "mixed" and "is in the file" in eff.why_mixed(["a", "b", "c"])
    assert eff.status(["a"]) == "mixed" and "not in the file" in eff.why_mixed(["a"])
    assert eff.revert(["x", "a", "c", "y"], ["a", "b"]) == ["x", "a", "b", "y"]  # back in its place
    assert EntryEffect.of("a\n\n§\nb", "a\n§\nb").status(["a", "b"]) == "formatting"


# ----------------------------------------------------------------------------- the staged names


def test_the_staged_names_tell_each_outcome(tmp_path: Path) -> None:
    f = tmp_path / "MEMORY.md"
    f.write_text("old")
    st_ = stage_replace(f, b"new", "ab12")
    assert f.read_text() == "old" and replace_outcome(f, st_.names()) == "not_made"
    with applied(st_):
        assert f.read_text() == "new"
    assert replace_outcome(f, st_.names()) == "made"
    discard_staged(st_)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(INTENT_TEMP_PREFIX)]
    st2 = stage_replace(f, b"newer", "cd34")
    with pytest.raises(RuntimeError), applied(st2):
        raise RuntimeError("the COMMIT failed")
    assert f.read_text() == "new" and replace_outcome(f, st2.names()) == "rolled_back"
    assert replace_outcome(f, {"new": "../x", "old": None}) == "unknown"
    # the stale-temp sweep never takes a staged name (a journal row may still need it)
    st3 = stage_replace(f, b"x", "ef56")
    assert cleanup_stale_temps(tmp_path, older_than=0.0) == 0 and st3.new.exists() and st3.old.exists()


def _row(before: str | None, after: str, witness: dict | None = None, op: str = "add") -> journal.JournalRow:
    return journal.JournalRow(1, 0.0, "cli", op, "memory", "memory", before, after,
                              {"witness": witness} if witness else {})


def test_the_witness_decides_whatever_the_file_holds_now() -> None:
    row = _row("a", "a\n§\nb")
    reverted = _File("a", ["a"])  # b added, then removed again by another writer
    assert verdict(row, "made", reverted).state == "applied"
    assert verdict(row, "not_made", _File("a\n§\nb", ["a", "b"])).state == "absent"
    assert verdict(row, "rolled_back", reverted).state == "absent"
    # without a witness (a row of an older memdeck): per entry
    v = verdict(row, None, _File("a\n§\nb\n§\nhermes", ["a", "b", "hermes"]))
    assert (v.state, v.by) == ("applied", "entries")
    assert verdict(row, None, _File("a\n§\nhermes", ["a", "hermes"])).state == "absent"
    mixed = verdict(_row("a\n§\nb", "a\n§\nc", op="replace"), None, _File("a", ["a"]))
    assert mixed.state == "unknown" and "'c'" in mixed.reason
    form = _row("a\n\n§\nb", "a\n§\nb", op="normalize")
    assert verdict(form, None, _File("a\n§\nb", ["a", "b"])).state == "applied"
    assert verdict(form, None, _File("a\n§\nb\n§\nc", ["a", "b", "c"])).state == "unknown"


# ----------------------------------------------------------------------------- the store, killed


def _die_at(cls_attr: tuple[object, str], fn) -> None:
    """Run ``fn`` in a child that dies (``os._exit``) when ``cls_attr`` is called."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            setattr(cls_attr[0], cls_attr[1], lambda *a, **k: os._exit(9))
            fn()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9, "the child did not die at its injection point"


def _die_at_done_commit(fn) -> None:
    """Kill the child at the COMMIT that marks the write ``done`` (the file already replaced)."""
    real = journal.mark_done

    def boom(conn, ids):
        os._exit(9)

    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            journal.mark_done = boom
            fn()
        finally:
            journal.mark_done = real
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9


def _another_writer(home: HermesHome, target: str, add: str | None = None, remove: str | None = None) -> None:
    """A write as Hermes makes it: reload, change entries, write the canonical form."""
    p = home.memory_file(target)
    es = parse_entries(p.read_text() if p.exists() else "")
    es = [e for e in es if e != remove] + ([add] if add and add not in es else [])
    p.write_text(serialize_entries(es))


def _stage(home: HermesHome, pid: str, payload: dict) -> None:
    home.pending_dir.mkdir(parents=True, exist_ok=True)
    (home.pending_dir / f"{pid}.json").write_text(json.dumps(
        {"id": pid, "subsystem": "memory", "action": payload["action"], "summary": "s", "origin": "background_review",
         "created_at": 1.0, "payload": payload}))


def _rows(home: HermesHome) -> list[journal.JournalRow]:
    with deckdb.opened(home) as c:
        return [journal.row_of(r) for r in c.execute("SELECT * FROM journal ORDER BY journal_id")]


def test_the_repro_an_approval_killed_after_its_write_is_not_replayed(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, CFG)
    s.add("memory", "deploy on Tuesdays")
    s.add("memory", "alpha fact")
    _stage(hermes_home, "eeee0001", {"action": "remove", "target": "memory", "old_text": "deploy"})
    _die_at_done_commit(lambda: pending.approve(hermes_home, CFG, "eeee0001"))
    assert not (hermes_home.pending_dir / "eeee0001.json").exists()  # set aside: Hermes cannot replay it
    _another_writer(hermes_home, "memory", add="deploy freeze on Fridays")
    with pytest.raises(Refused) as exc:
        pending.approve(hermes_home, CFG, "eeee0001")
    assert exc.value.code == "not_found"
    s.add("memory", "next command")  # settles the kill under the lock
    assert parse_entries(hermes_home.memory_file("memory").read_text()) == [
        "alpha fact", "deploy freeze on Fridays", "next command"]
    (row,) = [r for r in _rows(hermes_home) if r.detail.get("pending_id") == "eeee0001"]
    assert row.state == "done" and row.detail["recovery"]["by"] == "witness"
    assert not list(hermes_home.pending_dir.iterdir())


def test_an_approval_killed_before_its_write_is_staged_again(hermes_home: HermesHome) -> None:
    from memdeck.core.memory.store import MemoryStore as M

    MemoryStore(hermes_home, CFG).add("memory", "deploy on Tuesdays")
    _stage(hermes_home, "eeee0002", {"action": "add", "target": "memory", "content": "staged fact"})
    staged = (hermes_home.pending_dir / "eeee0002.json").read_bytes()
    _die_at((M, "_replacing"), lambda: pending.approve(hermes_home, CFG, "eeee0002"))
    assert (hermes_home.pending_dir / f"eeee0002.json{APPLYING_SUFFIX}").exists()
    _another_writer(hermes_home, "memory", add="deploy freeze on Fridays")
    recover_intents(hermes_home, CFG)
    assert (hermes_home.pending_dir / "eeee0002.json").read_bytes() == staged
    assert not [r for r in _rows(hermes_home) if r.detail.get("pending_id")]  # nothing happened
    pending.approve(hermes_home, CFG, "eeee0002")
    assert "staged fact" in parse_entries(hermes_home.memory_file("memory").read_text())


def test_a_move_killed_between_its_renames_ends_in_one_file(hermes_home: HermesHome) -> None:
    import memdeck.core.memory.store as store_mod
    from memdeck.core.fsio import applied as real_applied

    s = MemoryStore(hermes_home, CFG)
    s.add("memory", "moved fact")
    s.add("user", "user fact")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child: dies at the second rename (the source)
        n = {"i": 0}

        def second(staged):
            n["i"] += 1
            if n["i"] == 2:
                os._exit(9)
            return real_applied(staged)
        store_mod.applied = second
        try:
            s.move("memory", "moved fact", "user")
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9
    _another_writer(hermes_home, "memory", add="hermes memory note")
    _another_writer(hermes_home, "user", add="hermes user note")
    s.add("user", "next command")  # one target's write: the move's other file is taken too
    mem = parse_entries(hermes_home.memory_file("memory").read_text())
    usr = parse_entries(hermes_home.memory_file("user").read_text())
    assert (mem.count("moved fact"), usr.count("moved fact")) == (0, 1)
    assert "hermes memory note" in mem and "hermes user note" in usr
    moves = [r for r in _rows(hermes_home) if r.op == "move"]
    assert [r.state for r in moves] == ["done", "done"]
    assert next(r for r in moves if r.target == "memory").detail["recovery"].get("finished") is True
    undo.undo(hermes_home, CFG)  # the next command's add
    undo.undo(hermes_home, CFG)  # the move, per entry: Hermes' notes stay
    assert parse_entries(hermes_home.memory_file("memory").read_text()) == ["moved fact", "hermes memory note"]
    assert parse_entries(hermes_home.memory_file("user").read_text()) == ["user fact", "hermes user note"]


def test_a_row_of_an_older_memdeck_is_settled_per_entry(hermes_home: HermesHome) -> None:
    """Intent rows written before the staged names existed (no witness): their entries decide."""
    s = MemoryStore(hermes_home, CFG)
    s.add("memory", "a")
    with deckdb.opened(hermes_home) as c, deckdb.transaction(c):
        applied_id = journal.record(hermes_home, actor="cli", op="add", kind="memory", target="memory",
                                    before="a", after="a\n§\nb", detail={"text": "b"}, conn=c, state="intent")
    hermes_home.memory_file("memory").write_text("a\n§\nb\n§\nhermes")  # it happened, then Hermes wrote
    s.add("memory", "c")
    row = journal.get(hermes_home, applied_id)
    assert row.state == "done" and row.detail["recovery"]["by"] == "entries"
    with deckdb.opened(hermes_home) as c, deckdb.transaction(c):
        mixed_id = journal.record(hermes_home, actor="cli", op="replace", kind="memory", target="memory",
                                  before="a\n§\nb\n§\nhermes\n§\nc", after="a\n§\nB\n§\nhermes\n§\nc",
                                  detail={}, conn=c, state="intent")
    hermes_home.memory_file("memory").write_text("a\n§\nhermes\n§\nc")  # b gone, B not there
    recover_intents(hermes_home, CFG)
    row = journal.get(hermes_home, mixed_id)
    assert row.state == "unknown" and "'B'" in row.detail["recovery"]["reason"]


def test_set_aside_records_are_settled_by_their_row(hermes_home: HermesHome) -> None:
    d = hermes_home.pending_dir
    d.mkdir(parents=True)
    MemoryStore(hermes_home, CFG).add("memory", "a")
    for name in ("done01", "none01", "intent01"):
        (d / f"{name}.json{APPLYING_SUFFIX}").write_text("{}")
    with deckdb.opened(hermes_home) as c, deckdb.transaction(c):
        for name, state in (("done01", "done"), ("intent01", "intent")):
            journal.record(hermes_home, actor="cli", op="add", kind="memory", target="memory", before="", after="x",
                           detail={"record_aside": f"{name}.json{APPLYING_SUFFIX}"}, conn=c, state=state)
    with deckdb.opened(hermes_home) as c:
        sweep(hermes_home, c)
    assert sorted(p.name for p in d.iterdir()) == [f"intent01.json{APPLYING_SUFFIX}", "none01.json"]


def test_orphan_staged_names_are_removed_and_referenced_ones_kept(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, CFG)
    s.add("memory", "a")
    orphan = hermes_home.memories_dir / f"{INTENT_TEMP_PREFIX}0000_new.tmp"  # a kill before its row's COMMIT
    orphan.write_text("x")
    s.add("memory", "b")  # holds memory, takes user without waiting: no write is between staging and intent
    assert not orphan.exists()
    kept = hermes_home.memories_dir / f"{INTENT_TEMP_PREFIX}1111_new.tmp"
    kept.write_text("y")
    with deckdb.opened(hermes_home) as c, deckdb.transaction(c):
        journal.record(hermes_home, actor="cli", op="add", kind="memory", target="user", before=None, after="y",
                       detail={"witness": {"new": kept.name, "old": None}}, conn=c, state="intent")
    assert s._drop_orphan_staged(hermes_home.memories_dir) == 0 and kept.exists()  # its row still needs it


def test_history_gives_memdeck_a_change_it_saw_before_the_row_was_done(hermes_home: HermesHome) -> None:
    s = MemoryStore(hermes_home, CFG)
    s.add("memory", "a")
    history.observe(hermes_home)
    _die_at_done_commit(lambda: s.add("memory", "b"))
    # a write still in flight is memdeck's at once, entry by entry, even with another writer's
    # entry beside it (issue 40 #4: a history row is one writer's change; observation.py checks
    # the in-flight write's entries against the file), and the other writer's is its own row ...
    _another_writer(hermes_home, "memory", add="hermes note")
    seen = history.observe(hermes_home)
    assert sorted((c.op, c.after, c.actor) for c in seen) == [("added", "b", "cli"),
                                                              ("added", "hermes note", "external")]
    # ... and stays so once recovery settles the row
    s.add("user", "u")
    recover_intents(hermes_home, CFG)
    history.observe(hermes_home)
    changes = {(c.target, c.op, c.after): c for c in history.list_changes(hermes_home)}
    mine = changes[("memory", "added", "b")]
    assert mine.actor == "cli" and mine.attribution["op"] == "add"
    assert changes[("memory", "added", "hermes note")].actor == "external"


def test_a_row_whose_detail_is_not_an_object_still_settles(hermes_home: HermesHome) -> None:
    """The recovery note is written with SQLite's JSON functions; a detail that is not a JSON
    object (a hostile memdeck.db) is kept as it is, and the row still settles."""
    s = MemoryStore(hermes_home, CFG)
    s.add("memory", "a")
    with deckdb.opened(hermes_home) as c, deckdb.transaction(c):
        jid = journal.record(hermes_home, actor="cli", op="add", kind="memory", target="memory", before="a",
                             after="a\n§\nb", detail={}, conn=c, state="intent")
        c.execute("UPDATE journal SET detail = '[1, 2]' WHERE journal_id = ?", (jid,))
    hermes_home.memory_file("memory").write_text("a\n§\nb")
    recover_intents(hermes_home, CFG)
    with deckdb.opened(hermes_home) as c:
        assert tuple(c.execute("SELECT state, detail FROM journal WHERE journal_id = ?", (jid,)).fetchone()) == (
            "done", "[1, 2]")
