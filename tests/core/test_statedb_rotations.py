"""Rotation-mode compactions are reconstructed once, not on every refresh (issue 9).

Hermes compacts by rotation where ``compression.in_place`` is missing from an older
config.yaml: the session ends with ``'compression'`` and a child carries the handoff. A
long-lived home then holds one session pair per compaction, and every change of state.db
(every appended message) recomputed every pair from all their rows: 250 rotations of 800 rows,
0.4-0.55 s per refresh. A pair whose child already has a row after its handoff region is final
(its region cannot grow) and is kept, keyed by the pair and the sessions' end, start and rewind
count; every result still equals the full scan (``reference_compactions``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.statedb import reference_compactions


@pytest.fixture
def rows_read(monkeypatch) -> list[str]:
    """Sessions whose rows are read whole (``_session_rows`` wrapped)."""
    seen: list[str] = []
    orig = StateDB._session_rows

    def recording(self, conn, session_id):
        seen.append(session_id)
        return orig(self, conn, session_id)
    monkeypatch.setattr(StateDB, "_session_rows", recording)
    return seen


def _rotated_home(tmp_path: Path, rotations: int) -> tuple[Path, sqlite3.Connection, str, float]:
    p = tmp_path / "state.db"
    conn = hs.create_state_db(p)
    t = 100.0
    sid = hs.add_session(conn, "s00", started_at=t, title="gateway")
    for k in range(rotations):
        for i in range(12):
            t += 1.0
            hs.append_message(conn, sid, "user" if i % 2 else "assistant", f"turn {k}.{i}", timestamp=t)
        t += 1.0
        sid = hs.rotate(conn, sid, f"s{k + 1:02d}", f"summary {k}", keep_head=1, keep_tail=2, now=t)
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
    rows_read.clear()
    for j in range(3):  # the agent goes on: every pair is final now
        t += 1.0
        hs.append_message(conn, live, "assistant" if j % 2 else "user", f"more {j}", timestamp=t)
        conn.commit()
        assert db.compactions() == reference_compactions(p)
    mine = [s for s in rows_read if s in {f"s{k:02d}" for k in range(9)}]
    reference_reads = 3 * 2 * 8  # reference_compactions reads each pair's two sessions, every time
    assert len(mine) == reference_reads, mine  # the reader itself read none of them


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
    assert changed[0].archived_count < [e for e in before if e.session_id == old_parent][0].archived_count
