"""Rotation-mode compactions are reconstructed once, not on every refresh (issue 9).

Hermes compacts by rotation where ``compression.in_place`` is missing from an older
config.yaml: the session ends with ``'compression'`` and a child carries the handoff. A
long-lived home then holds one session pair per compaction, and every change of state.db
(every appended message) recomputed every pair from all their rows: 250 rotations of 800 rows,
0.4-0.55 s per refresh. A pair whose child already has a row after its handoff region is final
(appended rows cannot grow its region) and is kept, keyed by the pair and the sessions' end,
start and rewind count, until either session gains a row; every result still equals the full
scan (``reference_compactions``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.statedb import reference_compactions


@pytest.fixture
def rows_read(monkeypatch, tmp_path: Path) -> list[str]:
    """Sessions whose rows are read whole (``_session_rows`` wrapped) by readers of this test's
    files (an earlier test's reader still ending in this worker is not counted)."""
    seen: list[str] = []
    orig = StateDB._session_rows

    def recording(self, conn, session_id):
        if Path(self.path).is_relative_to(tmp_path):
            seen.append(session_id)
        return orig(self, conn, session_id)
    monkeypatch.setattr(StateDB, "_session_rows", recording)
    return seen


def _rotated_home(tmp_path: Path, rotations: int, words: str = "turn") -> tuple[Path, sqlite3.Connection, str, float]:
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    t = 100.0
    sid = hs.add_session(conn, "s00", started_at=t, title="gateway")
    for k in range(rotations):
        for i in range(12):
            t += 1.0
            hs.append_message(conn, sid, "user" if i % 2 else "assistant", f"{words} {k}.{i}", timestamp=t)
        t += 1.0
        sid = hs.rotate(conn, sid, f"s{k + 1:02d}", f"{words} summary {k}", keep_head=1, keep_tail=2, now=t)
    conn.commit()
    return p, conn, sid, t


def test_a_refresh_reads_only_the_open_rotation(tmp_path: Path, rows_read: list[str]) -> None:
    p, conn, live, t = _rotated_home(tmp_path, 8)
    db = StateDB(p)
    assert db.compactions() == reference_compactions(p)
    assert len(db.compactions()) == 8
    t += 1.0
    hs.append_message(conn, live, "user", "a new question", timestamp=t)  # closes the newest handoff region
    conn.commit()
    assert db.compactions() == reference_compactions(p)
    for j in range(3):  # the agent goes on in the newest child: plain appended rows change no pair
        t += 1.0
        hs.append_message(conn, live, "assistant" if j % 2 else "user", f"more {j}", timestamp=t)
        conn.commit()
        rows_read.clear()
        got = db.compactions()
        assert rows_read == []
        assert got == reference_compactions(p)
    t += 1.0
    hs.append_message(conn, live, "user", "[a row that might be a summary", timestamp=t)
    conn.commit()
    rows_read.clear()
    got = db.compactions()
    assert sorted(rows_read) == ["s07", "s08"]  # the newest pair is read again, no other
    assert got == reference_compactions(p)


def test_an_open_region_is_read_again_until_it_closes(tmp_path: Path) -> None:
    """A child whose rows all belong to the handoff may still grow it: a next row with the
    next id that repeats a live row of the parent is a copy (Hermes writes the handoff in one
    transaction, copies keeping their stamps)."""
    p, conn, live, t = _rotated_home(tmp_path, 3)
    db = StateDB(p)
    before = db.compactions()
    assert before == reference_compactions(p)
    parent = conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (live,)).fetchone()[0]
    role, content = conn.execute("SELECT role, content FROM messages WHERE session_id = ? AND active = 1 ORDER BY id LIMIT 1",
                                 (parent,)).fetchone()
    hs.append_message(conn, live, role, content, timestamp=t - 50.0)  # a copy, right after the tail
    conn.commit()
    after = db.compactions()
    assert after == reference_compactions(p)
    newest = [e for e in after if e.child_session_id == live]
    old = [e for e in before if e.child_session_id == live]
    assert newest[0].region_last_id == old[0].region_last_id + 1  # the region grew by the copy


def test_a_rewound_parent_is_reconstructed_again(tmp_path: Path) -> None:
    p, conn, live, t = _rotated_home(tmp_path, 4)
    db = StateDB(p)
    t += 1.0
    hs.append_message(conn, live, "user", "closing the newest region", timestamp=t)
    conn.commit()
    before = db.compactions()
    assert before == reference_compactions(p)
    old_parent = "s01"  # ended by rotation; a rewind deactivates its last rows
    last_ids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY id", (old_parent,))]
    hs.rewind(conn, old_parent, last_ids[-4])
    conn.commit()
    after = db.compactions()
    assert after == reference_compactions(p)
    changed = [e for e in after if e.session_id == old_parent]
    assert changed[0].archived_count < next(e for e in before if e.session_id == old_parent).archived_count


def _with_memdeck_db(tmp_path: Path) -> None:
    from memdeck.core.deck import db as deckdb

    deckdb.connect(tmp_path).close()


def test_a_later_process_takes_the_final_events_from_memdeck_db(tmp_path: Path, rows_read: list[str]) -> None:
    p, conn, live, t = _rotated_home(tmp_path, 6)
    _with_memdeck_db(tmp_path)
    t += 1.0
    hs.append_message(conn, live, "user", "closing the newest region", timestamp=t)
    conn.commit()
    ref = reference_compactions(p)
    assert StateDB(p).compactions() == ref           # first process: every pair read, all stored
    rows_read.clear()
    assert StateDB(p).compactions() == ref           # a later process
    assert rows_read == []                           # no pair read again
    # a rewind in s02 changes the two pairs it belongs to (as child of s01, as parent of s03)
    ids = [r[0] for r in conn.execute("SELECT id FROM messages WHERE session_id = 's02' ORDER BY id")]
    hs.rewind(conn, "s02", ids[-3])
    conn.commit()
    ref = reference_compactions(p)
    rows_read.clear()
    assert StateDB(p).compactions() == ref
    assert sorted(rows_read) == ["s01", "s02", "s02", "s03"]
    conn.close()


def test_stored_events_of_another_database_are_not_used(tmp_path: Path, rows_read: list[str]) -> None:
    """state.db replaced by another file with the same session ids, row ids and stamps but other
    words: the stored check row's hash differs, so nothing stored is used."""
    p, conn, live, t = _rotated_home(tmp_path, 3)
    _with_memdeck_db(tmp_path)
    hs.append_message(conn, live, "user", "closing", timestamp=t + 1)
    conn.commit()
    conn.close()
    assert StateDB(p).compactions() == reference_compactions(p)
    p.unlink()
    _p, other, live, t = _rotated_home(tmp_path, 3, words="other")
    hs.append_message(other, live, "user", "closing", timestamp=t + 1)
    other.commit()
    other.close()
    rows_read.clear()
    ref = reference_compactions(p)
    assert StateDB(p).compactions() == ref
    assert len(rows_read) == 2 * 2 * 3  # reader and reference, each pair's two sessions


def test_without_memdeck_db_no_rotation_event_is_stored(tmp_path: Path) -> None:
    p, conn, live, t = _rotated_home(tmp_path, 2)
    hs.append_message(conn, live, "user", "closing", timestamp=t + 1)
    conn.commit()
    assert StateDB(p).compactions() == reference_compactions(p)
    assert not (tmp_path / "memdeck").exists()
    conn.close()


def test_a_rotation_child_compacted_in_place_is_read_again(tmp_path: Path) -> None:
    """A home whose config turned ``compression.in_place`` on: the live child of the last
    rotation is compacted in place, which flips the flags of its handoff rows."""
    p, conn, live, t = _rotated_home(tmp_path, 3)
    _with_memdeck_db(tmp_path)
    for j in range(6):
        t += 1.0
        hs.append_message(conn, live, "user" if j % 2 else "assistant", f"after the handoff {j}", timestamp=t)
    conn.commit()
    db = StateDB(p)
    before = db.compactions()
    assert before == reference_compactions(p)
    hs.compact_in_place(conn, live, "in place now", keep_head=1, keep_tail=0, now=t + 1)
    conn.commit()
    after = reference_compactions(p)
    assert after != before
    assert StateDB(p).compactions() == after  # a later process: the pair stored before is not used
    assert db.compactions() == after          # this process: the kept pair is not used
    conn.close()


def test_a_second_in_place_compaction_of_the_child_can_grow_a_final_region(tmp_path: Path) -> None:
    """The shape hypothesis found: the child's first in-place compaction inserts a head copy
    right after the handoff (flags differ: the region ends before it, final); the second flips
    that copy's flags too, and the copy joins the region."""
    p, conn, live, t = _rotated_home(tmp_path, 2)
    _with_memdeck_db(tmp_path)
    hs.compact_in_place(conn, live, "first in place", keep_head=1, keep_tail=0, now=t + 1)
    conn.commit()
    kept = StateDB(p)
    first = kept.compactions()
    assert first == reference_compactions(p)             # the pair is final now, kept and stored
    hs.compact_in_place(conn, live, "second in place", keep_head=1, keep_tail=0, now=t + 2)
    conn.commit()
    ref = reference_compactions(p)
    grown = next(e for e in ref if e.child_session_id == live)
    assert grown.region_last_id == next(e for e in first if e.child_session_id == live).region_last_id + 1
    assert StateDB(p).compactions() == ref               # a later process
    assert kept.compactions() == ref                     # the process that kept it
    conn.close()


def test_a_pair_read_again_unchanged_is_not_written_again(tmp_path: Path) -> None:
    """Watching writes nothing: a pair re-read after a row that might have been a summary, and
    found the same, leaves memdeck.db as it was."""
    p, conn, live, t = _rotated_home(tmp_path, 3)
    _with_memdeck_db(tmp_path)
    hs.append_message(conn, live, "user", "closing", timestamp=t + 1)
    conn.commit()
    db = StateDB(p)
    assert db.compactions() == reference_compactions(p)
    store = sqlite3.connect(tmp_path / "memdeck" / "memdeck.db")
    rows = store.execute("SELECT * FROM rotation_events ORDER BY parent_id").fetchall()
    assert len(rows) == 3
    hs.append_message(conn, live, "user", "[maybe a summary, but not one", timestamp=t + 2)
    conn.commit()
    assert db.compactions() == reference_compactions(p)
    assert store.execute("SELECT * FROM rotation_events ORDER BY parent_id").fetchall() == rows
    store.close()
    conn.close()
