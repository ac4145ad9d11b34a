"""The per-panel view modules read the core types' own fields: the cases the demo home does not
reach (a pending write flagged only by its own scan, a recall preview, a missing memory file,
an archived anchor), built from real core values, no Textual."""

from __future__ import annotations

from pathlib import Path

from memdeck.core.config import Config
from memdeck.core.deck.archive import ArchivedItem
from memdeck.core.home import HermesHome
from memdeck.core.memory.pending import PendingWrite
from memdeck.core.overview.recall_preview import RecallPreview
from memdeck.core.overview.snapshot import DeckSnapshot
from memdeck.core.sessions.recall import RecallHit
from memdeck.tui.views.anchors import anchor_rows
from memdeck.tui.views.capacity import usage_bar, usage_of
from memdeck.tui.views.common import badge_counts
from memdeck.tui.views.recall import fence_preview, recall_results
from memdeck.tui.views.review import review_detail, review_rows


def _snap(tmp_path: Path, **fields) -> DeckSnapshot:
    return DeckSnapshot(taken_at=0.0, home=HermesHome(tmp_path), config=Config(), **fields)


def test_a_pending_write_flagged_only_by_its_own_scan_shows_the_pattern_and_would_be_refused(tmp_path) -> None:
    # the snapshot's findings hold no span in the shown text: the write's own scan ids still count
    p = PendingWrite(id="abcd0001", path=tmp_path / "abcd0001.json", action="add", target="memory",
                     payload={"content": "x"}, threats=("exfil_curl",), text="run the hook")
    (row,) = review_rows(_snap(tmp_path, pending=(p,)), 0.0)
    assert row.cells[6].plain == "⚠ exfil_curl" and row.pattern_ids == ("exfil_curl",)
    detail = review_detail(row).plain
    assert "A would be refused" in detail and detail.rstrip().endswith("⚠ exfil_curl")
    assert badge_counts(_snap(tmp_path, pending=(p,))) == {"review": 1}


def test_a_clean_pending_write_is_approvable(tmp_path) -> None:
    p = PendingWrite(id="abcd0002", path=tmp_path / "abcd0002.json", action="add", summary="add a fact",
                     payload={"content": "a plain fact"})
    (row,) = review_rows(_snap(tmp_path, pending=(p,)), 0.0)
    assert row.text == "a plain fact" and row.cells[6].plain == "ok"  # p.text empty: the payload's content
    assert "A approves, X rejects" in review_detail(row).plain


def test_recall_results_and_fence_come_from_the_preview(tmp_path) -> None:
    hit = RecallHit(session_id="s2", lineage_root="s1", title="Rate limiter", source="cli", model=None,
                    started_at=None, matched_role="user", match_message_id=7, snippet="is >>>Redis<<< down?",
                    compacted=True, context=({"role": "user", "content": "is Redis down?"},))
    preview = RecallPreview("redis", (hit,), "<memory-context>\n- Rate limiter: is Redis down?", "live1")
    text = recall_results(preview, "redis", 0.0).plain
    assert "the live session live1 is left out" in text
    assert "▌ Rate limiter  s1  cli" in text and "  in s2" in text and "▸ user: is Redis down?" in text
    assert "compacted away" in text
    assert "- Rate limiter: is Redis down?" in fence_preview(preview).plain
    assert "run a query to preview the fenced block" in fence_preview(None).plain
    assert recall_results(None, "redis", 0.0).plain == "no matches"


def test_a_missing_memory_state_uses_the_config_char_limit(tmp_path) -> None:
    snap = _snap(tmp_path)
    assert usage_of(snap, "user") == (0, Config().user_char_limit)
    assert usage_bar(snap, "memory", 80).plain == "MEMORY.md unavailable"


def test_an_archived_anchor_row_keeps_its_id_from_the_payload_else_the_archive_anchor_id(tmp_path) -> None:
    with_id = ArchivedItem(3, "anchor", None, "t", {"session_id": "s1", "scope": "global",
                                                     "anchor": {"id": "pin_1", "priority": 9, "probes": ["a"]}},
                           anchor_id="pin_1", scope="global", session_id="s1")
    without = ArchivedItem(4, "anchor", None, "t", {"session_id": "s1", "anchor": {}}, anchor_id="pin_2",
                           scope="session", session_id="s1")
    entry = ArchivedItem(5, "memory", "memory", "an entry")
    rows = anchor_rows(_snap(tmp_path, archived=(with_id, without, entry), session_id="s1"))
    assert [(r.key, r.anchor_id, r.priority, r.scope, r.state) for r in rows] == [
        ("x:3", "pin_1", 9, "global", "archived"), ("x:4", "pin_2", 0, "session", "archived")]
