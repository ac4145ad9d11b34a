"""audit_session / integrity history / lifecycle / status section over a state.db built with
core.hermes_schema (the Hermes 0.19 shape)."""

from __future__ import annotations

import pytest

from memdeck.core.anchors.audit import audited_region
from memdeck.core.anchors.lifecycle import audit_session
from memdeck.core.anchors.model import Anchor
from memdeck.core.anchors.rules import REMINDER_MARKER
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.home import HermesHome
from memdeck.core.overview.status import anchors_section as status_section
from memdeck.core.sessions import hermes_schema as HS
from memdeck.core.sessions.statedb import StateDB

T0 = 1_800_000_000.0


def _db(home: HermesHome):
    conn = HS.create_state_db(home.state_db)
    HS.add_session(conn, "s1", started_at=T0, system_prompt="You are helpful. MEMORY: user likes kelvin")
    return conn


def _anchors(store: AnchorStore) -> None:
    def mutate(s):
        s.add(Anchor(id="a_metric", text="Use metric units", reminder="Use metric units", priority=80, probes=["metric", "units"]))
        s.add(Anchor(id="b_tabs", text="Indent with tabs", reminder="Indent with tabs", priority=50, probes=["indent", "tabs"]))
        s.add(Anchor(id="c_kelvin", text="Quote kelvin", reminder="Quote kelvin", priority=10, probes=["kelvin"]))
    store.update_session("s1", mutate)


@pytest.fixture
def setup(hermes_home: HermesHome):
    conn = _db(hermes_home)
    store = AnchorStore(hermes_home)
    _anchors(store)
    return hermes_home, conn, store


def test_no_compaction_all_pinned(setup) -> None:
    home, conn, store = setup
    HS.append_message(conn, "s1", "user", "use metric units and indent with tabs", timestamp=T0 + 1)
    with StateDB(home.state_db) as db:
        sa = audit_session(db, store, "s1")
    assert [a.state for a in sa.anchors] == ["pinned", "pinned", "pinned"]
    # MemLock has no score before its first audit (issue 8 #4): neither has memdeck, not 100, not 0
    assert sa.score is None and sa.compactions == 0 and sa.reminder_block == "" and sa.history == ()


def test_compaction_drifts_then_rehydrates_then_alive(setup) -> None:
    home, conn, store = setup
    for i in range(6):
        HS.append_message(conn, "s1", "user", f"turn {i}: use metric units, indent with tabs", timestamp=T0 + i)
    HS.append_message(conn, "s1", "assistant", "ok", timestamp=T0 + 10)
    HS.append_message(conn, "s1", "user", "what next?", timestamp=T0 + 11)
    HS.compact_in_place(conn, "s1", "The user asked for metric units and tabs.", keep_head=1, keep_tail=2, now=T0 + 100)
    with StateDB(home.state_db) as db:
        sa = audit_session(db, store, "s1")
        by = {a.anchor.id: a for a in sa.anchors}
        # head copy and summary are not the active region; system prompt is (kelvin stays alive)
        assert by["a_metric"].state == "drifted" and by["b_tabs"].state == "drifted"
        assert by["c_kelvin"].state == "alive"
        assert sa.score == 33  # round(100/3)
        assert sa.reminder_block == f"{REMINDER_MARKER}\n  - Use metric units\n  - Indent with tabs"
        assert [h["source"] for h in sa.history] == ["state.db"]
        assert sa.history[0]["score"] == 33 and sorted(sa.history[0]["casualties"]) == ["a_metric", "b_tabs"]
    # MemLock injects the block into the next user turn's api_content: rehydrated
    HS.append_message(conn, "s1", "user", "carry on", timestamp=T0 + 200,
                      api_content=f"carry on\n\n{REMINDER_MARKER}\n  - Use metric units\n  - Indent with tabs")
    with StateDB(home.state_db) as db:
        by = {a.anchor.id: a for a in audit_session(db, store, "s1").anchors}
    assert by["a_metric"].state == "rehydrated" and by["a_metric"].rehydrated_message_id is not None
    # the conversation picks the instruction up again: alive
    HS.append_message(conn, "s1", "assistant", "Sure, metric units it is.", timestamp=T0 + 201)
    with StateDB(home.state_db) as db:
        by = {a.anchor.id: a for a in audit_session(db, store, "s1").anchors}
    assert by["a_metric"].state == "alive" and by["b_tabs"].state == "rehydrated"


def test_history_every_event_merged_with_drift_log(setup) -> None:
    home, conn, store = setup
    for k in range(3):
        for i in range(4):
            HS.append_message(conn, "s1", "user", f"round {k} msg {i} metric units" if k == 1 else f"round {k} msg {i}",
                              timestamp=T0 + 1000 * k + i)
        HS.compact_in_place(conn, "s1", f"summary {k}", keep_head=1, keep_tail=2 if k != 1 else 3, now=T0 + 1000 * k + 500)
    # MemLock logged its audits of the 2nd and 3rd events, plus a safety-net audit later
    store.update_session("s1", lambda s: s.drift_log.extend([
        {"time": T0 + 1000 + 501, "score": 66, "casualties": ["b_tabs"]},
        {"time": T0 + 2000 + 501, "score": 33, "casualties": ["a_metric", "b_tabs"]},
        {"time": T0 + 9000, "score": 100, "casualties": []},
    ]))
    with StateDB(home.state_db) as db:
        sa = audit_session(db, store, "s1")
    srcs = [(h["source"], h["score"]) for h in sa.history]
    assert len([s for s in srcs if "state.db" in s[0]]) == 3
    assert srcs[1] == ("memlock+state.db", 66) and sa.history[1]["computed_score"] == 67
    assert srcs[2] == ("memlock+state.db", 33) and srcs[0][0] == "state.db"
    assert srcs[-1] == ("memlock", 100) and len(srcs) == 4
    assert [h["time"] for h in sa.history] == sorted(h["time"] for h in sa.history)


def test_merged_shape_prior_context_counts_as_active(setup) -> None:
    home, conn, store = setup
    for i in range(4):
        HS.append_message(conn, "s1", "user", f"msg {i}", timestamp=T0 + i)
    HS.append_message(conn, "s1", "user", "please indent with tabs", timestamp=T0 + 5)
    HS.compact_in_place(conn, "s1", "metric units were discussed", keep_head=1, keep_tail=1, merge_into_tail=True, now=T0 + 50)
    with StateDB(home.state_db) as db:
        region = audited_region(db.active_region("s1"))
        sa = audit_session(db, store, "s1")
    texts = " ".join(str(m["content"]) for m in region)
    assert "indent with tabs" in texts and "metric units were discussed" not in texts
    by = {a.anchor.id: a.state for a in sa.anchors}
    assert by == {"a_metric": "drifted", "b_tabs": "alive", "c_kelvin": "alive"}  # kelvin: system prompt


def test_rotation_event_audited_in_child(setup) -> None:
    home, conn, store = setup
    for i in range(4):
        HS.append_message(conn, "s1", "user", f"msg {i} metric units", timestamp=T0 + i)
    HS.rotate(conn, "s1", "s2", "we used metric", keep_head=1, keep_tail=2, now=T0 + 100)
    metric = Anchor(id="a_metric", text="Use metric units", reminder="Use metric units", probes=["metric", "units"])
    store.update_session("s2", lambda s: s.add(metric))
    with StateDB(home.state_db) as db:
        sa = audit_session(db, store, "s2")
    assert sa.compactions == 1
    assert sa.anchors[0].state == "alive"


def test_status_section_shapes(setup) -> None:
    home, conn, store = setup
    HS.append_message(conn, "s1", "user", "metric units please", timestamp=T0 + 1)
    store.save_pin({"id": "pin_glob", "text": "Global rule", "probes": ["global"], "scope": "global"})
    store.update_session("s1", lambda s: s.drift_log.append({"time": T0 + 5, "score": 50, "casualties": ["b_tabs"]}))
    st = status_section(home)
    assert st["integrity"]["session_id"] == "s1"
    assert set(st["integrity"]) == {"session_id", "score", "history", "pending"} and st["integrity"]["pending"] == 0
    assert st["detection"]["configured"] == st["detection"]["active"] == "keyword"
    ids = [a["id"] for a in st["anchors"]]
    assert ids == ["a_metric", "b_tabs", "c_kelvin", "pin_glob"]
    for a in st["anchors"]:
        assert set(a) == {"id", "text", "reminder", "priority", "probes", "scope", "session_id", "state"}
    assert st["anchors"][-1]["scope"] == "global" and st["anchors"][-1]["session_id"] is None
    assert st["drift_log"] == [{"time": T0 + 5, "session_id": "s1", "score": 50, "casualties": ["b_tabs"]}]


def test_status_section_without_anything(hermes_home: HermesHome) -> None:
    st = status_section(hermes_home)
    assert st["anchors"] == [] and st["drift_log"] == [] and st["integrity"]["score"] is None


def test_seeded_when_no_session_file(hermes_home: HermesHome) -> None:
    conn = _db(hermes_home)
    HS.append_message(conn, "s1", "user", "hello", timestamp=T0 + 1)
    store = AnchorStore(hermes_home)
    store.save_pin({"id": "pin_glob", "text": "Always cite sources", "probes": ["cite", "sources"], "scope": "global"})
    with StateDB(hermes_home.state_db) as db:
        sa = audit_session(db, store, "s1")
    assert [(a.anchor.id, a.scope) for a in sa.anchors] == [("pin_glob", "global")]


def test_reminder_on_turn_reinserted_in_compacted_tail_counts_as_rehydrated(setup) -> None:
    """Hermes' preflight compaction re-inserts the triggering user turn in the batch's tail;
    the reminder MemLock injected into that turn's api_content must count."""
    home, conn, store = setup
    for i in range(5):
        HS.append_message(conn, "s1", "user", f"turn {i}: use metric units, indent with tabs", timestamp=T0 + i)
    reminder_turn = {"role": "user", "content": "what next?",
                     "api_content": f"what next?\n\n{REMINDER_MARKER}\n  - Use metric units"}
    HS.compact_in_place(conn, "s1", "Earlier: units and indentation.", keep_head=1, keep_tail=0,
                        now=T0 + 100, extra_tail=[reminder_turn])
    with StateDB(home.state_db) as db:
        by = {a.anchor.id: a for a in audit_session(db, store, "s1").anchors}
    assert by["a_metric"].state == "rehydrated"
    assert by["b_tabs"].state == "drifted"


def test_hostile_drift_log_events_are_normalised(setup) -> None:
    """Hand-edited drift-log events: the audit history and status use only finite times,
    scores 0-100 (else None) and lists of ids, so ``--json`` output stays strict JSON."""
    import json

    home, conn, store = setup
    HS.append_message(conn, "s1", "user", "metric units please", timestamp=T0 + 1)
    store.update_session("s1", lambda s: s.drift_log.extend([
        {"time": T0 + 5, "score": 50, "casualties": 5.0},
        {"time": T0 + 6, "score": "abc", "casualties": "b_tabs"},
        {"time": T0 + 7, "score": float("nan"), "casualties": ["a_metric", 3, None]},
        {"time": float("nan"), "score": 10, "casualties": []},
        {"time": float("inf"), "score": 10, "casualties": []},
        {"time": True, "score": 10, "casualties": []},
        {"time": T0 + 8, "score": 1e999, "casualties": [{"x": 1}]},
    ]))
    with StateDB(home.state_db) as db:
        sa = audit_session(db, store, "s1")
    hist = [(h["time"], h["score"], h["casualties"]) for h in sa.history]
    assert hist == [(T0 + 5, 50, []), (T0 + 6, None, []), (T0 + 7, None, ["a_metric", "3"]), (T0 + 8, None, [])]
    json.dumps(sa.to_dict(), allow_nan=False)
    st = status_section(home)
    assert [(e["time"], e["score"], e["casualties"]) for e in st["drift_log"]] == hist
    assert not st["anchors_warnings"]
    json.dumps(st, allow_nan=False)


def test_pin_made_after_the_last_compaction_is_pinned_not_drifted(setup) -> None:
    import time

    home, conn, store = setup
    t = time.time() - 3600  # the compaction happened an hour ago; the pins are made now
    for i in range(4):
        HS.append_message(conn, "s1", "user", f"turn {i}: use metric units", timestamp=t + i)
    HS.compact_in_place(conn, "s1", "Earlier: units.", keep_head=1, keep_tail=1, now=t + 100)
    fresh = store.pin("Write docstrings for every public function", session_id="s1")
    stated = store.pin("Use metric units everywhere", session_id="s1")
    HS.append_message(conn, "s1", "user", "again: metric units everywhere please", timestamp=t + 300)
    with StateDB(home.state_db) as db:
        by = {a.anchor.id: a for a in audit_session(db, store, "s1").anchors}
    assert by[fresh.id].state == "pinned"
    assert by[stated.id].state == "alive"
    assert by["b_tabs"].state == "drifted"  # pinned before the compaction: audited as before


def test_legacy_pin_id_encodes_pin_time() -> None:
    from memdeck.core.anchors.lifecycle import anchor_pinned_at

    assert anchor_pinned_at(Anchor(id="pin_1795349762_0", text="t", reminder="t")) == 1795349762.0
    assert anchor_pinned_at(Anchor(id="pin_1a2b3c4d", text="t", reminder="t")) is None
    assert anchor_pinned_at(Anchor(id="x", text="t", reminder="t", extra={"pinned_at": float("nan")})) is None
