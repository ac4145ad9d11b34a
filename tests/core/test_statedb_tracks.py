"""A restart resumes the compaction history from the track stored in memdeck.db (issue 9).

A second reader (a new ``StateDB``, as a new process would make) with a stored track gives
exactly the events of the full scan (``reference_compactions``) while streaming only the rows
from the checkpoint's region start on; a stored track that no longer applies (checkpoint row
changed or deleted, session rewound) is ignored; a home without memdeck.db gets none.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memdeck.core.deck import db as deckdb
from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.statedb import reference_compactions


def _grow(conn: sqlite3.Connection, rounds: int, t: float, start: int = 0) -> float:
    for k in range(start, start + rounds):
        for i in range(60):
            t += 1.0
            content = f"turn {k}.{i}" if i % 7 else "\x00json:" + json.dumps([{"type": "text", "text": f"[part {k}.{i}]"}])
            hs.append_message(conn, "big" if i % 13 else "other", "user" if i % 2 else "assistant", content, timestamp=t)
        hs.compact_in_place(conn, "big", f"summary {k}", keep_head=3, keep_tail=5, now=t + 0.5)
    return t


def _home(tmp_path: Path, *, deck: bool = True) -> tuple[Path, sqlite3.Connection, float]:
    home = tmp_path / "home"
    home.mkdir()
    conn = hs.create_state_db(home / "state.db")
    hs.add_session(conn, "big", started_at=1)
    hs.add_session(conn, "other", started_at=2)
    t = _grow(conn, 30, 10.0)
    if deck:
        deckdb.connect(home).close()
    return home, conn, t


@pytest.fixture
def streamed(monkeypatch, tmp_path: Path) -> list[int]:
    """Ids of the rows every reader of this test's state.db streams (``_stream_batches`` wrapped;
    a reader of an earlier test's home still ending in this worker's threads is not counted)."""
    seen: list[int] = []
    orig = StateDB._stream_batches

    def counting(self, conn, session_id, from_id, progress=None, **kw):
        ours = Path(self.path).is_relative_to(tmp_path)
        for batch in orig(self, conn, session_id, from_id, progress, **kw):
            if ours:
                seen.extend(int(r[0]) for r in batch)
            yield batch
    monkeypatch.setattr(StateDB, "_stream_batches", counting)
    return seen


def _session_ids(p: Path, sid: str, from_id: int = 0) -> list[int]:
    c = sqlite3.connect(p)
    try:
        return [r[0] for r in c.execute("SELECT id FROM messages WHERE session_id = ? AND id >= ? ORDER BY id", (sid, from_id))]
    finally:
        c.close()


def _stored(home: Path) -> dict:
    rec = deckdb.load_session_track(home, "big")
    assert rec is not None
    return rec


def test_a_second_reader_resumes_from_the_stored_checkpoint(tmp_path: Path, streamed: list[int]) -> None:
    home, conn, t = _home(tmp_path)
    p = home / "state.db"
    ref = reference_compactions(p)
    assert len(ref) == 30
    assert StateDB(p).compactions() == ref          # first process: full stream, track stored
    assert streamed == _session_ids(p, "big")
    start = json.loads(_stored(home)["track"])["ckpt_start_id"]
    assert start > _session_ids(p, "big")[0]
    streamed.clear()
    second = StateDB(p)                             # a later process
    assert second.compactions() == ref
    assert second.compactions("big") == [e for e in ref if e.session_id == "big"]
    # the session is as the track was stored: no row of it is read (issue 23, gap 1)
    assert streamed == []
    # a row appended since: the later process reads from the checkpoint on
    t += 1.0
    hs.append_message(conn, "big", "user", "one more turn", timestamp=t)
    streamed.clear()
    third = StateDB(p)
    assert third.compactions() == reference_compactions(p)
    assert streamed and streamed[0] >= start and streamed[-1] == _session_ids(p, "big")[-1]
    assert len(streamed) < len(_session_ids(p, "big")) // 5
    # the history grows; a later process resumes from the track the one before stored
    _grow(conn, 3, t, start=30)
    ref = reference_compactions(p)
    assert len(ref) == 33
    assert second.compactions() == ref
    start2 = json.loads(_stored(home)["track"])["ckpt_start_id"]
    assert start2 > start
    streamed.clear()
    assert StateDB(p).compactions() == ref
    assert streamed == []  # stored with the session as it is now
    conn.close()


def test_a_copied_home_uses_its_stored_track(tmp_path: Path, streamed: list[int]) -> None:
    """state.db's identity is its rows, not its inode: a copied home still resumes."""
    import shutil

    home, conn, _ = _home(tmp_path)
    conn.close()
    ref = reference_compactions(home / "state.db")
    assert StateDB(home / "state.db").compactions() == ref
    copy = tmp_path / "copy"
    shutil.copytree(home, copy)
    streamed.clear()
    assert StateDB(copy / "state.db").compactions() == ref
    assert streamed == []  # the stored track applies: nothing of the session is read again


@pytest.mark.parametrize("change", ["edit_checkpoint", "delete_checkpoint", "rewind", "other_version", "garbage"])
def test_a_stored_track_that_no_longer_applies_is_ignored(tmp_path: Path, streamed: list[int], change: str) -> None:
    home, conn, _t = _home(tmp_path)
    p = home / "state.db"
    assert StateDB(p).compactions() == reference_compactions(p)
    rec = _stored(home)
    ckpt = int(rec["ckpt_id"])
    if change == "edit_checkpoint":
        conn.execute("UPDATE messages SET content = ? WHERE id = ?",
                     ("[CONTEXT COMPACTION] rewritten summary of the earlier turns", ckpt))
    elif change == "delete_checkpoint":
        conn.execute("DELETE FROM messages WHERE id = ?", (ckpt,))
    elif change == "rewind":
        live = conn.execute("SELECT id FROM messages WHERE session_id = 'big' AND active = 1 ORDER BY id").fetchall()
        hs.rewind(conn, "big", live[len(live) // 2][0])
    else:
        d = deckdb.connect(home)
        value = ("UPDATE session_tracks SET version = version + 1" if change == "other_version"
                 else "UPDATE session_tracks SET track = '{\"final\": 3}'")
        d.execute(value)
        d.close()
    streamed.clear()
    ref = reference_compactions(p)
    assert StateDB(p).compactions() == ref
    assert streamed == _session_ids(p, "big")       # rebuilt from the session's first row
    if change in ("edit_checkpoint", "rewind", "other_version", "garbage"):
        assert _stored(home)["ckpt_id"] is not None  # and stored again for the next process
        streamed.clear()
        assert StateDB(p).compactions() == ref
        assert len(streamed) < len(_session_ids(p, "big"))
    conn.close()


def test_without_memdeck_db_nothing_is_created(tmp_path: Path) -> None:
    home, conn, _ = _home(tmp_path, deck=False)
    p = home / "state.db"
    assert StateDB(p).compactions() == reference_compactions(p)
    assert StateDB(p).compactions() == reference_compactions(p)
    assert not (home / "memdeck").exists()
    conn.close()


def test_a_memdeck_db_before_migration_5(tmp_path: Path) -> None:
    home, conn, _ = _home(tmp_path, deck=False)
    (home / "memdeck").mkdir()
    c = sqlite3.connect(home / "memdeck" / "memdeck.db")
    for step in deckdb.MIGRATIONS[:4]:
        c.executescript(step)
    c.execute("PRAGMA user_version = 4")
    c.close()
    assert deckdb.load_session_track(home, "big") is None   # read-only: no table, no migration
    p = home / "state.db"
    assert StateDB(p).compactions() == reference_compactions(p)
    conn.close()
    # storing into the existing memdeck.db migrates it (as every writer does), then the track is there
    assert deckdb.load_session_track(home, "big") is not None


def test_a_new_session_beside_a_long_one_is_read_from_its_own_first_row(tmp_path: Path, monkeypatch) -> None:
    """After ``/new`` on a long-lived home, the new live session's rows are all near the end of
    the table: its reads must start at its first row, not at id 0 (each refresh walked the
    whole table through the primary key: 10 % of a core beside an agent at 1M rows)."""
    home, conn, t = _home(tmp_path)
    p = home / "state.db"
    asked: list[tuple[str, str, int]] = []  # (read, session, lowest id asked for)
    stream, sig = StateDB._stream_batches, StateDB._window_sig

    def recording_stream(self, c, session_id, from_id, progress=None, **kw):
        asked.append(("stream", session_id, int(from_id)))
        return stream(self, c, session_id, from_id, progress, **kw)

    def recording_sig(self, c, session_id, first_id, last_id):
        asked.append(("sig", session_id, int(first_id)))
        return sig(self, c, session_id, first_id, last_id)

    monkeypatch.setattr(StateDB, "_stream_batches", recording_stream)
    monkeypatch.setattr(StateDB, "_window_sig", recording_sig)

    def say(text: str, n: int = 1) -> None:
        nonlocal t
        for i in range(n):
            t += 1.0
            hs.append_message(conn, "new", "user" if i % 2 else "assistant", f"{text} {i}", timestamp=t)

    hs.add_session(conn, "new", started_at=t)   # Hermes creates the session before its first message
    db = StateDB(p)
    assert db.compactions("new") == []
    assert not [a for a in asked if a[1] == "new" and a[0] == "stream"]  # no rows: nothing walked
    say("hello", 3)
    assert db.compactions("new") == []
    say("appended", 3)                  # appended only: the window's signature is checked
    assert db.compactions("new") == []
    say("[looks like a summary")        # may be a summary: the window is read again
    assert db.compactions("new") == []
    say("more", 20)
    hs.compact_in_place(conn, "new", "summary of the new session", keep_head=2, keep_tail=4, now=t + 0.5)
    assert db.compactions("new") == [e for e in reference_compactions(p) if e.session_id == "new"]
    assert len(db.compactions("new")) == 1
    first = _session_ids(p, "new")[0]
    assert first > len(_session_ids(p, "big"))
    mine = [a for a in asked if a[1] == "new"]
    assert {read for read, _s, _id in mine} == {"stream", "sig"}
    assert all(low >= first for _r, _s, low in mine), mine
    conn.close()
