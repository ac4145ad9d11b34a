"""core.sessions.recall.iter_recall: newest-first pages, the same hits as the one-shot recall."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.recall import iter_recall, recall
from memdeck.core.sessions.statedb import StateDB


@pytest.fixture(scope="module")
def stream_db(tmp_path_factory: pytest.TempPathFactory) -> StateDB:
    """Twelve lineages mentioning 'kubernetes', timestamps growing with ids as Hermes writes
    them: a cron one (oldest), a rotation child, a compacted session, a hidden subagent one,
    tool rows, and a LIKE-only CJK word."""
    p = tmp_path_factory.mktemp("stream") / "state.db"
    conn = hs.create_state_db(p)
    t = [1000.0]

    def msg(sid: str, role: str, text: str) -> int:
        t[0] += 1
        return hs.append_message(conn, sid, role, text, timestamp=t[0])

    hs.add_session(conn, "cron1", source="cron", started_at=1)
    msg("cron1", "user", "kubernetes nightly report")
    for i in range(10):
        sid = f"s{i:02d}"
        hs.add_session(conn, sid, started_at=10 + i, title=f"work {i}")
        for k in range(6):
            msg(sid, "user" if k % 2 == 0 else "assistant", f"turn {k} of {sid} about kubernetes and 東京の天気")
        msg(sid, "tool", "kubernetes tool output")
        if i == 3:
            hs.compact_in_place(conn, sid, "summary of kubernetes work", now=t[0] + 0.5)
            t[0] += 1
    hs.add_session(conn, "child", parent_session_id="s05", started_at=50)
    msg("child", "user", "kubernetes in the rotated child")
    hs.add_session(conn, "sub", source="subagent", started_at=60)
    msg("sub", "user", "kubernetes from a subagent")
    conn.commit()
    conn.close()
    return StateDB(p)


def _ids(hits) -> list[tuple[str, int]]:
    return [(h.lineage_root, h.match_message_id) for h in hits]


@pytest.mark.parametrize("query", ["kubernetes", "kuber*", '"about kubernetes"', "東京の天気", "東京", "s07"])
@pytest.mark.parametrize("page_size", [1, 3, 10])
def test_pages_are_the_one_shot_newest_hits(stream_db: StateDB, query: str, page_size: int) -> None:
    pages = list(iter_recall(stream_db, query, 10, page_size=page_size, chunk_rows=4))
    assert all(1 <= len(p) <= page_size for p in pages)
    flat = [h for p in pages for h in p]
    assert flat, query
    assert [h.as_dict() for h in flat] == [h.as_dict() for h in recall(stream_db, query, 10, sort="newest")]


def test_pages_come_newest_first_with_cron_last(stream_db: StateDB) -> None:
    pages = list(iter_recall(stream_db, "kubernetes", 10, page_size=3, chunk_rows=2))
    flat = [h for p in pages for h in p]
    assert len(flat) == 10 and [len(p) for p in pages] == [3, 3, 3, 1]
    interactive = [h.match_message_id for h in flat if h.source != "cron"]
    assert interactive == sorted(interactive, reverse=True)
    assert flat[0].lineage_root == "s05" and flat[0].session_id == "child"  # the rotated child is the newest
    assert "sub" not in {h.session_id for h in flat}  # subagent sessions hidden, as Hermes hides them
    assert all(h.matched_role in ("user", "assistant") for h in flat)
    assert all(">>>" in h.snippet for h in flat)
    # with every lineage found, the cron one comes last, after the scan
    everything = [h for p in iter_recall(stream_db, "nightly OR kubernetes", 10, page_size=4) for h in p]
    assert everything == recall(stream_db, "nightly OR kubernetes", 10, sort="newest")


def test_limit_current_lineage_and_scan_limit(stream_db: StateDB) -> None:
    two = [h for p in iter_recall(stream_db, "kubernetes", 2, page_size=5) for h in p]
    assert _ids(two) == _ids(recall(stream_db, "kubernetes", 2, sort="newest"))
    assert len(two) == 2
    skipped = [h for p in iter_recall(stream_db, "kubernetes", 10, current_session_id="child") for h in p]
    assert "s05" not in {h.lineage_root for h in skipped}
    assert _ids(skipped) == _ids(recall(stream_db, "kubernetes", 10, current_session_id="child", sort="newest"))
    few = [h for p in iter_recall(stream_db, "kubernetes", 10, scan_limit=5) for h in p]
    # the 5 newest rows: the child's one and s09's four user/assistant turns -> 2 lineages
    assert _ids(few) == [("s05", few[0].match_message_id), ("s09", few[1].match_message_id)]


def test_no_hit_bad_query_and_missing_db(stream_db: StateDB, tmp_path: Path) -> None:
    assert list(iter_recall(stream_db, "xylophonequasar")) == []
    assert list(iter_recall(stream_db, '"") OR (')) == []
    assert list(iter_recall(stream_db, "   ")) == []
    assert list(iter_recall(StateDB(tmp_path / "missing.db"), "kubernetes")) == []


def test_cancelled_stops_between_chunks(stream_db: StateDB) -> None:
    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 1  # the first chunk runs, then the query is superseded

    pages = list(iter_recall(stream_db, "kubernetes", 10, page_size=1, chunk_rows=2, cancelled=cancelled))
    assert pages == [] and len(calls) == 2  # checked before and after the first chunk: nothing yielded
