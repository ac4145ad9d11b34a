"""The parts evaluator (core/overview/parts.py, through HomeReader) read incrementally equals the
same evaluator read from scratch, field by field, on the demo home, a bigger home and the hostile
homes, across a sequence of changes: nothing changed, a message appended, a compaction, memory
edited, a pending write staged, config.yaml changed, a MemLock file edited, a session pinned.
Each step one reader kept from the start (each part read again only when the key of its inputs
changed) and a new reader (every part read) read the same home: a reuse rule that keeps a value
its sources no longer give is a difference here. (This replaced the parity with the hand-written
builder the parts were taken from, deleted once nothing else used it.)

memdeck.db (where the change history is recorded) is put back between the two reads of a step
with SQLite's own backup, so both observe the same changes.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.config import load_config
from memdeck.core.deck.db import db_path
from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home, demo_plan
from memdeck.core.demo.big import build_big_home
from memdeck.core.home import HermesHome
from memdeck.core.overview.reader import HomeReader
from memdeck.core.sessions import hermes_schema as hs
from tests.helpers.hostile import HOMES, build_base, build_hostile

#: fields that differ between two reads of the same sources by design: the clock, and state.db's
#: ``PRAGMA data_version``, which counts the commits *other* connections made since this
#: connection opened (the fresh reader's is new each step)
TIMESTAMPS = ("taken_at",)
PER_CONNECTION = ("data_version",)


def _comparable(name: str, value: Any) -> Any:
    if name == "stamps" and value is not None and value.statedb is not None:
        return dataclasses.replace(value, statedb=value.statedb[:2])  # the file, not its data_version
    if name == "agent_view" and value is not None:
        return dataclasses.replace(value, basis=())  # its basis holds data_version
    return value


def differences(kept: Any, fresh: Any) -> list[str]:
    """The names of the snapshot fields that differ (the fields above aside)."""
    return [f.name for f in dataclasses.fields(fresh) if f.name not in TIMESTAMPS + PER_CONNECTION
            and _comparable(f.name, getattr(kept, f.name)) != _comparable(f.name, getattr(fresh, f.name))]


def _backup(home: HermesHome) -> sqlite3.Connection | None:
    path = db_path(home)
    if not path.is_file():
        return None
    try:
        src = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        mem = sqlite3.connect(":memory:")
        src.backup(mem)
        src.close()
        return mem
    except sqlite3.Error:
        return None


def _restore(home: HermesHome, mem: sqlite3.Connection | None) -> None:
    if mem is None:
        return
    dst = sqlite3.connect(db_path(home))
    try:
        mem.backup(dst)
    finally:
        dst.close()


class Pair:
    """One reader kept across the steps (incremental) beside a new reader each step (from scratch)."""

    def __init__(self, home: HermesHome) -> None:
        self.home = home
        self.config = load_config(home)
        self.reader = HomeReader(home, self.config, clock=lambda: DEMO_NOW)
        self.new: Any = None
        self.session: str | None = None
        #: a hostile state.db whose reader reopens its connection during a read (its
        #: ``data_version`` starts again): the read after an appended message reads once more
        self.settles = False

    def first(self) -> None:
        painted = self.reader.first_paint()
        assert painted.partial and painted.sessions == () and painted.audit is None
        self.step("first read")

    def step(self, what: str, *, unchanged: bool = False) -> Any:
        """Read the home with the kept reader; compare it with a fresh reader's read, or (nothing
        changed since the last step: ``unchanged``) check it is the last snapshot itself."""
        prev = self.new
        self.reader.config = self.config
        if unchanged:
            kept = self.reader.read(self.session)
            assert kept is prev or prev.errors, what  # a read with a banner reads every part again
            return kept
        saved = _backup(self.home)
        kept = self.reader.read(self.session)
        if not kept.errors:  # read again at once: nothing changed, the very same snapshot
            again = self.reader.read(self.session)
            if again is not kept and self.settles:  # one read more, then settled
                kept, again = again, self.reader.read(self.session)
            assert again is kept, what
        _restore(self.home, saved)
        fresh_reader = HomeReader(self.home, self.config, clock=lambda: DEMO_NOW)
        try:
            fresh = fresh_reader.read(self.session)
        finally:
            fresh_reader.close()
        # the very same snapshot returned for an unchanged home keeps the rows its read recorded
        # (``new_changes``: what that read observed); a fresh reader observes nothing new
        same = ("new_changes",) if kept is prev else ()
        assert [d for d in differences(kept, fresh) if d not in same] == [], what
        self.new = kept
        return kept

    def close(self) -> None:
        self.reader.close()


def _append(home: HermesHome, text: str) -> None:
    if not home.state_db.is_file():
        return
    try:
        conn = hs.connect(home.state_db)
        try:
            hs.append_message(conn, demo_plan(DEMO_SEED, DEMO_NOW).live_session_id, "user", text, timestamp=DEMO_NOW)
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # a broken state.db stays broken: both readers show it


def _compact(home: HermesHome) -> None:
    conn = hs.connect(home.state_db)
    try:
        hs.compact_in_place(conn, demo_plan(DEMO_SEED, DEMO_NOW).live_session_id, "summary of the parity test",
                            now=DEMO_NOW)
    finally:
        conn.close()


def _edit_memory(home: HermesHome) -> None:
    path = home.memory_file("memory")
    # a FIFO, a directory, /dev/zero are left as they are; so is a 50 MB file (both read it whole)
    if path.is_file() and not path.is_symlink() and path.stat().st_size < 1 << 20:
        path.write_bytes(path.read_bytes() + "\n§\nparity: the deploy window is Tuesday.".encode())


def _stage_pending(home: HermesHome) -> None:
    if not home.pending_dir.is_dir():
        return
    rec = {"id": "feedf00d", "subsystem": "memory", "action": "add", "target": "memory", "origin": "parity",
           "summary": "add a note", "created_at": DEMO_NOW - 60, "payload": {"action": "add", "target": "memory",
                                                                           "content": "parity pending note"}}
    try:
        (home.pending_dir / "feedf00d.json").write_text(json.dumps(rec), encoding="utf-8")
    except OSError:
        pass


def _change_config(pair: Pair) -> None:
    path = pair.home.config_path
    if path.is_file() and not path.is_symlink():
        with open(path, "ab") as f:
            f.write(b"\n# parity\n")
    pair.config = load_config(pair.home)


def _touch_memlock(home: HermesHome) -> None:
    d = home.path / "memlock"
    files = sorted(d.glob("*.json")) if d.is_dir() else []
    for f in [f for f in files if f.is_file() and not f.is_symlink()][:1]:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                data["parity"] = True
                f.write_text(json.dumps(data), encoding="utf-8")
        except (OSError, ValueError):
            pass


def run_sequence(home: HermesHome, *, compaction: bool = True, short: bool = False, settles: bool = False) -> Pair:
    """Read ``home`` through the steps (module docstring); ``short``: without the pinned session
    and the second message (the hostile homes: each breaks one source, which the steps before
    already read in every state)."""
    pair = Pair(home)
    pair.settles = settles
    try:
        pair.first()
        pair.step("nothing changed", unchanged=True)
        _append(home, "parity: one more user turn")
        pair.step("a message appended")
        if compaction:
            _compact(home)
            pair.step("a compaction")
        _edit_memory(home)
        pair.step("memory edited")
        _stage_pending(home)
        pair.step("a pending write staged")
        _change_config(pair)
        pair.step("config.yaml changed")
        _touch_memlock(home)
        pair.step("a MemLock file edited")
        sessions = [s.id for s in pair.new.sessions if s.id != pair.new.session_id]
        if short:
            return pair
        if sessions:
            pair.session = sessions[-1]
            pair.step("a session pinned")
            pair.session = None
            pair.step("following the live session again")
        _append(home, "parity: and another")
        pair.step("another message")
        pair.step("nothing changed again", unchanged=True)
    finally:
        pair.close()
    return pair


def test_demo_home_reads_the_same(tmp_path: Path) -> None:
    home = build_demo_home(tmp_path / "demo", seed=DEMO_SEED, now=DEMO_NOW)
    pair = run_sequence(home)
    assert pair.new.audit is not None and pair.new.sessions  # the sequence read something real


def test_bigger_home_reads_the_same(tmp_path: Path) -> None:
    home = build_big_home(tmp_path / "big", 20_000, now=DEMO_NOW, fts=False)
    pair = run_sequence(home)
    assert len(pair.new.sessions) > 20


@pytest.fixture(scope="module")
def hostile_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_base(tmp_path_factory.mktemp("parity-base") / "home")


PARITY_HOMES = [h for h in HOMES if h.holder is None and not h.unprivileged and h.source != "home"]


@pytest.mark.parametrize("hostile", PARITY_HOMES, ids=lambda h: h.name)
def test_hostile_home_reads_the_same(hostile: Any, hostile_base: Path, tmp_path: Path) -> None:
    root = build_hostile(hostile, hostile_base, tmp_path / "home")
    run_sequence(HermesHome(root), compaction=False, short=True, settles=hostile.name == "statedb-sessions-missing-columns")


def test_a_pending_audit_is_continued_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read whose audit left compactions pending (a semantic history's budget ran out) is read
    again on the next read even when no source changed (the ``unfinished`` input)."""
    from memdeck.core.overview import parts

    home = build_demo_home(tmp_path / "demo", seed=DEMO_SEED, now=DEMO_NOW)
    reader = HomeReader(home, load_config(home), clock=lambda: DEMO_NOW)
    calls: list[int] = []
    real: Callable[[Any], Any] = parts.read_audit

    def pending_once(ctx: Any) -> Any:
        got = real(ctx)
        calls.append(1)
        if len(calls) == 1 and got["audit"] is not None:
            return {"audit": dataclasses.replace(got["audit"], pending=3)}
        return got

    table = tuple(dataclasses.replace(p, read=pending_once) if p.name == "audit" else p for p in parts.PARTS)
    monkeypatch.setattr(parts, "PARTS", table)
    first = reader.read()
    assert first.audit is not None and first.audit.pending == 3
    second = reader.read()
    assert len(calls) == 2 and second is not first and second.audit.pending == 0
    assert reader.read() is second and len(calls) == 2  # finished: kept
    reader.close()


def _counting(monkeypatch: pytest.MonkeyPatch, fail: Callable[[str, int], bool] = lambda name, n: False) -> list[str]:
    """Make every part of the table record its name when read (``fail(name, nth read)``: that read
    fails, as a source does: a banner). Returns the list the names go to."""
    from memdeck.core.overview import parts

    read: list[str] = []
    times: dict[str, int] = {}

    def wrap(part: Any) -> Any:
        def counted(ctx: Any) -> Any:
            read.append(part.name)
            times[part.name] = times.get(part.name, 0) + 1
            if fail(part.name, times[part.name]):
                ctx.fail(part.panels or ("review",), part.name, RuntimeError("injected"))
            return part.read(ctx)

        return dataclasses.replace(part, read=counted)

    monkeypatch.setattr(parts, "PARTS", tuple(wrap(p) for p in parts.PARTS))
    return read


def _depending_on(*sources: str) -> set[str]:
    """The parts whose key holds one of ``sources``, directly or through another part's field."""
    from memdeck.core.overview.parts import FILLED_BY, PARTS

    out: set[str] = set()
    for p in PARTS:  # in table order: a part's inputs come before it
        if any(i in sources or (i in FILLED_BY and FILLED_BY[i].name in out) for i in p.inputs):
            out.add(p.name)
    return out


def test_a_part_is_read_again_only_when_the_key_of_its_inputs_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdeck.core.overview.parts import PARTS

    home = build_demo_home(tmp_path / "demo", seed=DEMO_SEED, now=DEMO_NOW)
    read = _counting(monkeypatch)
    reader = HomeReader(home, load_config(home), clock=lambda: DEMO_NOW)
    try:
        first = reader.read()
        # every part, once, but those read only when asked for (status --json's)
        assert not first.errors and sorted(read) == sorted(p.name for p in PARTS if not p.asked)
        read.clear()
        assert reader.read() is first and read == []  # nothing changed: nothing read
        _edit_memory(home)
        second = reader.read()
        assert second is not first and len(second.memory["memory"].entries) == len(first.memory["memory"].entries) + 1
        may = _depending_on("stamp.memory", "each read")
        assert {"memory", "prompt_blocks", "findings", "usage_history"} <= set(read) <= may, sorted(set(read) - may)
        # nothing of state.db, the pending writes or MemLock's files was read again
        assert not set(read) & {"db_status", "sessions", "pending", "anchor_sessions", "compactions", "hermes_profile"}
        assert second.sessions is first.sessions and second.compactions is first.compactions
        read.clear()
        _append(home, "one more turn")
        third = reader.read()
        assert "db_status" in read and "memory" not in read and "pending" not in read
        # ``new_changes`` is each read's own (empty now): only its counters' part takes it again
        may = _depending_on("stamp.statedb", "each read") | {"_memory_changes"}
        assert set(read) <= may, sorted(set(read) - may)
        assert "history" not in read and "usage_history" not in read
        assert third.memory["memory"] is second.memory["memory"]  # the memory part kept
    finally:
        reader.close()


def test_a_part_that_failed_is_read_again_whatever_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdeck.core.overview.parts import PARTS

    home = build_demo_home(tmp_path / "demo", seed=DEMO_SEED, now=DEMO_NOW)
    read = _counting(monkeypatch, fail=lambda name, n: name == "pending" and n == 1)  # its first read fails
    reader = HomeReader(home, load_config(home), clock=lambda: DEMO_NOW)
    try:
        first = reader.read()
        assert "pending: RuntimeError: injected" in (first.errors.get("review") or "")
        read.clear()
        second = reader.read()  # no source changed, but the last read had a banner: every part again
        assert not second.errors and sorted(read) == sorted(p.name for p in PARTS if not p.asked)
        read.clear()
        assert reader.read() is second and read == []  # recovered: kept
    finally:
        reader.close()
