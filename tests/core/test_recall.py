"""core.sessions.recall: sanitiser, discover-mode recall."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdeck.core.sessions import hermes_schema as hs
from memdeck.core.sessions.recall import recall, sanitize_fts5_query, search_messages
from memdeck.core.sessions.statedb import StateDB
from tests.helpers.statedb import build_history


@pytest.mark.parametrize("raw,expected", [
    ("docker deployment", "docker deployment"),
    ('"exact phrase" rest', '"exact phrase" rest'),
    ('unbalanced "quote', "unbalanced  quote"),
    ("chat-send", '"chat-send"'),
    ("P2.2 my_var", '"P2.2" "my_var"'),
    ("TODO: fix (this)", "TODO  fix  this"),
    ("hello AND", "hello"),
    ("OR world", "world"),
    ("***deploy", "deploy"),
    ("dep***", "dep*"),
    ("a^b{c}+d", "a b c  d"),
    ("x" * 3000, "x" * 2048),
])
def test_sanitiser_rules(raw: str, expected: str) -> None:
    assert sanitize_fts5_query(raw) == expected


@pytest.fixture(scope="module")
def hist_db(tmp_path_factory: pytest.TempPathFactory) -> StateDB:
    p = tmp_path_factory.mktemp("recall") / "state.db"
    build_history(p)
    return StateDB(p)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80) | st.lists(
    st.sampled_from(['"', "(", ")", "*", "AND", "OR", "NOT", "NEAR", ":", "^", "-", ".", "_", "{", "}", "+", "kubernetes",
                     "大别山", "項目", " ", "\x00", "'", "%", "\\"]), max_size=12).map("".join))
def test_any_query_never_raises(hist_db: StateDB, query: str) -> None:
    out = sanitize_fts5_query(query)
    assert isinstance(out, str) and len(out) <= 2048 + 2 * out.count('"') + 2
    hits = recall(hist_db, query)
    assert isinstance(hits, list)
    assert hist_db.status().state == "ok"  # a bad query never marks the database broken


def test_recall_groups_by_lineage_and_includes_compacted(hist_db: StateDB) -> None:
    hits = recall(hist_db, "kubernetes", limit=5)
    roots = [h.lineage_root for h in hits]
    assert len(roots) == len(set(roots))
    assert set(roots) == {"s1", "s3", "s4"}
    assert roots[-1] == "s4"  # cron demoted below interactive sessions
    s1 = next(h for h in hits if h.lineage_root == "s1")
    assert s1.compacted  # the matching turns were compacted away, still recalled
    assert ">>>kubernetes<<<" in s1.snippet
    assert any(m["id"] == s1.match_message_id for m in s1.window)
    assert s1.context and all(len(c["content"]) <= 200 for c in s1.context)


def test_recall_hides_rewound_and_current_lineage(hist_db: StateDB) -> None:
    assert recall(hist_db, "secretword") == []
    hits = recall(hist_db, "kubernetes", limit=5, current_session_id="s2")
    assert "s1" not in {h.lineage_root for h in hits}
    assert len(recall(hist_db, "kubernetes", limit=1)) == 1


def test_rotation_child_hit_reports_lineage_root(hist_db: StateDB) -> None:
    (hit,) = recall(hist_db, "child session")
    assert hit.session_id == "s2" and hit.lineage_root == "s1" and hit.title == "deploy work"


def test_cjk_trigram_and_like(tmp_path: Path) -> None:
    conn = hs.create_state_db(tmp_path / "state.db")
    hs.add_session(conn, "c", started_at=1)
    hs.append_message(conn, "c", "user", "我们讨论了大别山项目的进度", timestamp=2)
    hs.append_message(conn, "c", "assistant", "広西の話", timestamp=3)
    db = StateDB(tmp_path / "state.db")
    (hit,) = search_messages(db, "大别山项目")
    assert ">>>" in hit["snippet"]
    (hit2,) = search_messages(db, "広西")  # 2 CJK chars: LIKE fallback
    assert "広西" in hit2["snippet"]
    assert [h.session_id for h in recall(db, "大别山")] == ["c"]


def test_like_fallback_without_fts(tmp_path: Path) -> None:
    conn = hs.create_state_db(tmp_path / "state.db", fts=False)
    hs.add_session(conn, "f", started_at=1)
    hs.append_message(conn, "f", "user", "the quarterly report is due", timestamp=2)
    db = StateDB(tmp_path / "state.db")
    assert "no_fts" in db.status().degraded
    (hit,) = recall(db, "quarterly")
    assert "quarterly" in hit.snippet
    assert recall(db, '"") OR (') == []


def test_recall_on_unavailable_db(tmp_path: Path) -> None:
    assert recall(StateDB(tmp_path / "missing.db"), "x") == []
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 10)
    assert recall(StateDB(tmp_path / "junk.db"), "x") == []
