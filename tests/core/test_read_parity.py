"""The parts evaluator (core/overview/parts.py, through HomeReader) reads the same snapshots as the
hand-written builder (core/overview/snapshot.py ``build_snapshot``), field by field, on the demo
home, a bigger home and the hostile homes, across a sequence of changes: nothing appended, a
message appended, a compaction, memory edited, a pending write staged, config.yaml changed, a
session pinned, a MemLock file edited.

Both read the same home; memdeck.db (where the change history is recorded) is put back between
the two reads of a step with SQLite's own backup, so both observe the same changes.
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
from memdeck.core.deck.db import DeckDB, db_path
from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home, demo_plan
from memdeck.core.demo.big import build_big_home
from memdeck.core.home import HermesHome
from memdeck.core.overview.reader import HomeReader
from memdeck.core.overview.snapshot import (
    build_memory_snapshot,
    build_snapshot,
    open_statedb,
    take_stamps,
)
from memdeck.core.sessions import hermes_schema as hs
from tests.helpers.hostile import HOMES, build_base, build_hostile

#: fields that differ between two reads of the same sources by design (the clock), and fields of
#: parts added after the builder (which never filled them)
TIMESTAMPS = ("taken_at",)
AFTER_BUILDER = ("stale_sessions",)


def differences(new: Any, old: Any) -> list[str]:
    """The names of the snapshot fields that differ (timestamps aside)."""
    return [f.name for f in dataclasses.fields(old)
            if f.name not in TIMESTAMPS + AFTER_BUILDER and getattr(new, f.name) != getattr(old, f.name)]


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
    """The old builder and the new reader side by side on one home."""

    def __init__(self, home: HermesHome) -> None:
        self.home = home
        self.config = load_config(home)
        self.reader = HomeReader(home, self.config, clock=lambda: DEMO_NOW)
        self.old_db = self.old_deck = None
        self.old: Any = None
        self.new: Any = None
        self.session: str | None = None

    def first(self) -> None:
        new = self.reader.first_paint()
        old = build_memory_snapshot(self.home, self.config, now=DEMO_NOW, stamps=take_stamps(self.home, None))
        assert differences(new, old) == []
        self.old = old
        self.step("first read")

    def step(self, what: str) -> tuple[Any, Any]:
        saved = _backup(self.home)
        prev_new = self.new
        self.reader.config = self.config
        new = self.reader.read(self.session)
        _restore(self.home, saved)
        if self.old_db is None:
            try:
                self.old_db = open_statedb(self.home)
            except Exception:  # noqa: BLE001 - the builder shows it as a banner
                self.old_db = None
            self.old_deck = DeckDB(self.home)
        prev_old = self.old
        with self.old_deck.bound():
            old = build_snapshot(self.home, self.config, self.old_db, previous=self.old, session_id=self.session,
                                 now=DEMO_NOW, stamps=take_stamps(self.home, self.old_db))
        assert differences(new, old) == [], what
        # an unchanged home is the very same snapshot on both sides
        assert (new is prev_new) == (old is prev_old), what
        self.new, self.old = new, old
        return new, old

    def close(self) -> None:
        self.reader.close()
        for c in (self.old_db, self.old_deck):
            if c is not None:
                c.close()


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


def run_sequence(home: HermesHome, *, compaction: bool = True) -> Pair:
    pair = Pair(home)
    try:
        pair.first()
        pair.step("nothing changed")
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
        if sessions:
            pair.session = sessions[-1]
            pair.step("a session pinned")
            pair.session = None
            pair.step("following the live session again")
        _append(home, "parity: and another")
        pair.step("another message")
        pair.step("nothing changed again")
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
    run_sequence(HermesHome(root), compaction=False)


def test_a_pending_audit_is_continued_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read whose audit left compactions pending (a semantic history's budget ran out) is read
    again on the next read even when no source changed; the builder returned the last snapshot."""
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
