"""core.overview: one frozen snapshot from every core reader (read by a HomeReader over the parts);
a failing source is a banner."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memdeck.core.config import load_config
from memdeck.core.demo import DEMO_NOW, build_demo_home
from memdeck.core.home import HermesHome
from memdeck.core.overview.reader import HomeReader
from memdeck.core.overview.recall_preview import run_recall
from memdeck.core.overview.snapshot import DeckSnapshot, open_statedb


@pytest.fixture
def demo(tmp_path: Path) -> HermesHome:
    return build_demo_home(tmp_path / "demo", seed=7, now=DEMO_NOW)


def _build(home: HermesHome, **kw):
    reader = HomeReader(home, load_config(home))
    return reader.read(now=DEMO_NOW, **kw), reader


def test_demo_snapshot_has_every_section(demo: HermesHome) -> None:
    snap, _db = _build(demo)
    assert isinstance(snap, DeckSnapshot)
    assert snap.taken_at == DEMO_NOW
    assert snap.sessions and snap.live_session is not None
    assert snap.session_id == snap.live_session.id
    assert snap.session_anchors is not None and snap.session_anchors.anchors
    assert snap.audit is not None and snap.audit.score is not None
    assert len(snap.compactions) == 2
    assert snap.integrity_history and all(0 <= s <= 100 for _t, s in snap.integrity_history)
    times = [e["time"] for e in snap.drift_log]
    assert times == sorted(times, reverse=True)  # newest first
    assert snap.reminder_block.startswith("[Standing instructions")
    assert "MEMORY (your personal notes)" in snap.prompt_blocks
    assert snap.db_status is not None and snap.db_status.state == "ok"


def test_snapshot_is_frozen(demo: HermesHome) -> None:
    snap, _db = _build(demo)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.session_id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        snap.errors["anchors"] = "x"  # type: ignore[index]


def test_unchanged_database_reuses_session_data(demo: HermesHome) -> None:
    snap, reader = _build(demo)
    again = reader.read(now=DEMO_NOW)
    assert again.sessions is snap.sessions
    assert again.audit is snap.audit


def test_an_appended_message_keeps_the_drift_log_and_a_compaction_renews_it(demo: HermesHome) -> None:
    """The drift log is one frozen point per compaction (1,250 at 1M rows): an appended message
    leaves the history as it was, so the points are kept, not copied again."""
    import sqlite3

    from memdeck.core.sessions import hermes_schema as hs

    snap, reader = _build(demo)
    assert snap.drift_log
    conn = sqlite3.connect(demo.state_db)
    hs.append_message(conn, snap.session_id, "user", "one more message")
    conn.commit()
    again = reader.read(now=DEMO_NOW + 1)
    assert again.audit is not snap.audit  # the database changed: audited again
    assert again.drift_log is snap.drift_log and again.integrity_history is snap.integrity_history
    hs.compact_in_place(conn, snap.session_id, "a new summary", keep_head=2, keep_tail=2, now=DEMO_NOW + 2)
    conn.commit()
    conn.close()
    third = reader.read(now=DEMO_NOW + 3)
    assert len(third.drift_log) == len(snap.drift_log) + 1


def test_corrupt_memlock_file_is_a_banner_not_a_crash(demo: HermesHome) -> None:
    snap, _db = _build(demo)
    path = snap.session_anchors.path
    path.write_text("{ not json", encoding="utf-8")
    bad, _reader = _build(demo)
    assert bad.session_anchors is None
    assert "anchors" in bad.errors and "not valid JSON" in bad.errors["anchors"]
    assert bad.sessions  # the rest still works
    assert bad.prompt_blocks


def test_garbage_state_db_is_a_banner(demo: HermesHome) -> None:
    demo.state_db.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        p = demo.path / f"state.db{suffix}"
        if p.exists():
            p.unlink()
    snap, _db = _build(demo)
    assert "integrity" in snap.errors
    assert snap.sessions == ()
    assert snap.prompt_blocks  # memory blocks do not depend on state.db


def test_empty_home_never_raises(hermes_home: HermesHome) -> None:
    snap = HomeReader(hermes_home, load_config(hermes_home)).read(now=1.0)
    assert snap.sessions == () and snap.session_id is None and snap.audit is None


def test_pending_texts_get_findings(demo: HermesHome) -> None:
    snap, _db = _build(demo)
    if not snap.pending:
        pytest.skip("core.pending not available yet")
    flagged = [t for t in snap.findings]
    assert flagged, "the demo's hostile pending writes must carry findings"


def test_recall_preview_fences_hits(demo: HermesHome) -> None:
    db = open_statedb(demo)
    preview, err = run_recall(db, "pathlib", demo, load_config(demo))
    assert err is None and preview is not None
    assert preview.hits
    assert preview.fence.startswith("<memory-context>") and preview.fence.endswith("</memory-context>")
    none, err2 = run_recall(None, "x", demo, load_config(demo))
    assert none is None and "no state.db" in (err2 or "")


def test_an_unreadable_memory_file_keeps_its_banner_after_the_first_paint(demo: HermesHome) -> None:
    """The memory-only first paint carried no banner for a MEMORY.md that is not UTF-8, and the full
    build reused that memory part unchanged: Capacity showed an empty file, no banner (found by the
    hostile homes, tests/tui/test_hostile_panels.py)."""
    demo.memory_file("memory").write_bytes(b"caf\xe9\n\xc2\xa7\nsecond")
    reader = HomeReader(demo, load_config(demo))
    first = reader.first_paint()
    assert "not valid UTF-8" in (first.error_for("capacity") or "")
    try:
        full = reader.read()
    finally:
        reader.close()
    assert "not valid UTF-8" in (full.error_for("capacity") or "")


@pytest.mark.parametrize("config_text,panels", [
    (b"memory: \xff\n", ("capacity", "integrity", "anchors")),            # not UTF-8: every default applies
    ("memory:\n  memory_char_limit: lots\n", ("capacity", "integrity", "anchors")),
])
def test_a_config_that_cannot_be_used_is_a_banner_where_its_numbers_show(demo: HermesHome, config_text, panels) -> None:
    """config.yaml's problems were only in ``warnings``, which no panel showed: the char limits of
    Capacity were the defaults with nothing on screen saying so."""
    (demo.path / "config.yaml").write_bytes(config_text if isinstance(config_text, bytes) else config_text.encode())
    snap, _reader = _build(demo)
    for p in panels:
        assert "config" in (snap.error_for(p) or "") or "memory_char_limit" in (snap.error_for(p) or ""), p
    assert not snap.errors.get("capacity")  # a notice, not a failed source: the next build stays incremental
