"""Per-compaction audit verdicts are computed once and kept (issue 9): in memory, and in
memdeck.db's ``audit_verdicts`` when the home has one; reading never creates memdeck.db and an
unchanged refresh writes nothing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from memdeck.core.anchors import audit as audit_mod
from memdeck.core.anchors import integrity_history as history_mod
from memdeck.core.anchors import lifecycle as lifecycle_mod
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.deck import db as deckdb
from memdeck.core.demo import build_demo_home, demo_plan
from memdeck.core.sessions.statedb import StateDB


def _count_audits(monkeypatch) -> list[int]:
    calls = [0]
    real = audit_mod.run_audit

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    for mod in (lifecycle_mod, history_mod):  # the two modules that run the audit of a region
        monkeypatch.setattr(mod, "run_audit", counting)
    return calls


def _audit(home):
    sid = demo_plan().live_session_id
    with StateDB(home.state_db) as db:
        return lifecycle_mod.audit_session(db, AnchorStore(home), sid)


def test_history_verdicts_survive_a_restart_through_memdeck_db(tmp_path: Path, monkeypatch) -> None:
    home = build_demo_home(tmp_path / "home")
    deckdb.connect(home).close()  # the home has a memdeck.db (memdeck wrote to it before)
    history_mod.clear_process_cache()
    calls = _count_audits(monkeypatch)
    first = _audit(home)
    n_events = first.compactions
    assert n_events >= 2 and calls[0] == 1 + 1 + (n_events - 1)  # current, last, the older events
    with sqlite3.connect(deckdb.db_path(home)) as c:
        assert c.execute("SELECT COUNT(*) FROM audit_verdicts").fetchone()[0] == n_events  # the last one too
    history_mod.clear_process_cache()  # a new process
    calls[0] = 0
    second = _audit(home)
    assert calls[0] == 1  # only the current region: every compaction's verdicts came from memdeck.db
    assert second.history == first.history


def test_an_unchanged_audit_writes_nothing_and_reading_creates_no_store(tmp_path: Path, monkeypatch) -> None:
    home = build_demo_home(tmp_path / "home")
    shutil.rmtree(deckdb.db_path(home).parent)  # the demo ships its change history in memdeck.db: a home without one
    assert not deckdb.db_path(home).exists()
    history_mod.clear_process_cache()
    _audit(home)
    assert not deckdb.db_path(home).exists()  # computed in memory, nothing created
    deckdb.connect(home).close()
    _audit(home)  # verdicts are in memory already: nothing new to write
    with sqlite3.connect(deckdb.db_path(home)) as c:
        assert c.execute("SELECT COUNT(*) FROM audit_verdicts").fetchone()[0] == 0
    writes = []
    monkeypatch.setattr(deckdb, "store_audit_verdicts", lambda *a, **k: writes.append(a) or True)
    _audit(home)
    assert writes == []


def test_changed_anchors_are_a_new_key(tmp_path: Path) -> None:
    home = build_demo_home(tmp_path / "home")
    store = AnchorStore(home)
    sid = demo_plan().live_session_id
    anchors = store.load_session(sid).sorted_anchors()
    assert history_mod.anchors_hash(anchors) != history_mod.anchors_hash(anchors[1:])


def test_schema_steps_upgrade_a_version_1_store_and_keep_its_rows(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = deckdb.db_path(home)
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as c:
        c.executescript(deckdb.MIGRATIONS[0])
        c.execute("INSERT INTO journal (ts, actor, op, kind, target) VALUES (1, 'cli', 'add', 'memory', 'memory')")
        c.execute("PRAGMA user_version = 1")
    conn = deckdb.connect(home)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == deckdb.SCHEMA_VERSION
        assert conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM audit_verdicts").fetchone()[0] == 0
    finally:
        conn.close()
    assert len(deckdb.MIGRATIONS) == deckdb.SCHEMA_VERSION


def test_an_appended_message_reuses_the_history_and_a_new_anchor_or_compaction_does_not(tmp_path: Path, monkeypatch) -> None:
    """At 1M rows re-deriving 1,250 verdict keys and scores cost ~20 ms of every refresh after an
    appended message; the history is kept per session with the inputs it came from."""
    from memdeck.core.sessions import hermes_schema as hs

    home = build_demo_home(tmp_path / "home")
    history_mod.clear_process_cache()
    scored = [0]  # events scored by integrity_history (none when it returns the kept history)
    real = history_mod.integrity_score

    def counting(*a, **k):
        scored[0] += 1
        return real(*a, **k)
    monkeypatch.setattr(history_mod, "integrity_score", counting)

    def derived(audit_fn) -> tuple[object, int]:
        before = scored[0]
        out = audit_fn()
        return out, scored[0] - before

    audits = _count_audits(monkeypatch)
    sid = demo_plan().live_session_id
    first, n = derived(lambda: _audit(home))
    assert n == first.compactions >= 1 and first.history
    conn = sqlite3.connect(home.state_db)
    hs.append_message(conn, sid, "user", "one more message, no compaction")
    conn.commit()
    audits[0] = 0
    second, n = derived(lambda: _audit(home))
    assert n == 0 and second.history == first.history  # kept: nothing it depends on changed
    assert audits[0] == 1  # the current region only: the last compaction's verdicts are kept too
    assert [a.at_last_compaction for a in second.anchors] == [a.at_last_compaction for a in first.anchors]
    store = AnchorStore(home)
    store.pin("Always answer in haiku", probes=["haiku"], session_id=sid)
    third, n = derived(lambda: _audit(home))
    assert n == third.compactions  # the anchor set changed: derived again
    assert len(third.anchors) == len(second.anchors) + 1
    hs.compact_in_place(conn, sid, "summary that mentions haiku", keep_head=3, keep_tail=5, now=10**10)
    conn.commit()
    conn.close()
    fourth, n = derived(lambda: _audit(home))
    assert fourth.compactions == third.compactions + 1 and n == fourth.compactions
