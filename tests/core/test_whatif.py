"""The what-if before you pin (issue 28 #5): ``memdeck audit --what-if TEXT`` and
``core/anchors/whatif.py``, keyword detection on a Hermes-shaped state.db (the semantic replay
and its fidelity to recorded verdicts are in tests/interop/test_whatif_fidelity.py)."""

from __future__ import annotations

import json

import pytest

from memdeck.core.anchors.rules import REMINDER_MARKER
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.anchors.whatif import candidate_words, what_if
from memdeck.core.cli import main
from memdeck.core.config import parse_config
from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.sessions import hermes_schema as HS
from memdeck.core.sessions.statedb import StateDB

T0 = 1_800_000_000.0


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def home(hermes_home: HermesHome) -> HermesHome:
    """Session ``live``: three in-place compactions. The tail after #1 mentions tabs, after #2
    metric units, after #3 neither; every summary mentions tabs and indentation."""
    conn = HS.create_state_db(hermes_home.state_db)
    HS.add_session(conn, "live", started_at=T0)
    tails = ["please indent with tabs", "metric units only", "what is the weather"]
    for k, tail in enumerate(tails):
        for i in range(3):
            HS.append_message(conn, "live", "user", f"filler {k}.{i}", timestamp=T0 + 100 * k + i)
        HS.append_message(conn, "live", "user", tail, timestamp=T0 + 100 * k + 9)
        HS.compact_in_place(conn, "live", f"summary {k}: the user indents with tabs (indentation matters)",
                            keep_head=1, keep_tail=1, now=T0 + 100 * k + 10)
    conn.close()
    store = AnchorStore(hermes_home)
    store.pin("Use metric units", priority=80, probes=["metric", "units"], session_id="live")
    return hermes_home


def test_replay_through_each_compaction(home: HermesHome) -> None:
    store = AnchorStore(home)
    with StateDB(home.state_db) as db:
        wi = what_if(db, store, "live", "Indent with tabs, never spaces.", probes=["indent", "tabs"], priority=70)
    assert wi.compactions == 3 and wi.pending == 0 and wi.replaces is None and wi.method == "keyword"
    assert [p.compaction_id for p in wi.points] == [1, 2, 3]
    assert [p.to_dict()["verdict"] for p in wi.points] == ["alive", "drifted", "drifted"]
    # with the metric pin: #1 metric drifted + tabs alive = 50; #2 metric alive + tabs drifted = 50; #3 both drifted
    assert [p.score for p in wi.points] == [50, 50, 0]
    assert wi.points[0].reminder_block == f"{REMINDER_MARKER}\n  - Use metric units"  # metric drifted, not ours
    assert wi.points[1].reminder_block == f"{REMINDER_MARKER}\n  - Indent with tabs, never spaces."  # MemLock keeps a final period
    assert wi.points[1].in_reminder_block and not wi.points[0].in_reminder_block
    assert wi.points[2].reminder_block.splitlines()[1:] == ["  - Use metric units", "  - Indent with tabs, never spaces."]
    # words of the text that survive in every compacted summary
    assert wi.suggested_probes == (("indent", 3), ("tabs", 3))
    assert all(p.summary_words == ("indent", "tabs") for p in wi.points)
    d = wi.points[1].to_dict()
    assert {"compaction_id", "at", "verdict", "score"} <= set(d) and d["at"] == pytest.approx(T0 + 110, abs=1)


def test_inject_always_and_the_budgets_are_respected(home: HermesHome) -> None:
    cfg = parse_config({"memlock": {"inject": "always", "max_slots": 1}})
    store = AnchorStore(home, cfg)
    with StateDB(home.state_db) as db:
        wi = what_if(db, store, "live", "Indent with tabs.", probes=["tabs"], priority=90, config=cfg)
    # always: every anchor is a candidate; one slot: the higher priority (ours, 90) only, then the overflow line
    for p in wi.points:
        lines = p.reminder_block.splitlines()
        assert lines[:2] == [REMINDER_MARKER, "  - Indent with tabs."] and "1 additional instruction" in lines[2]
    cfg2 = parse_config({"memlock": {"max_reminder_chars": 20}})
    with StateDB(home.state_db) as db:
        wi2 = what_if(db, AnchorStore(home, cfg2), "live", "Indent with tabs, never spaces at all.", probes=["nope"],
                      config=cfg2)
    assert all(not p.in_reminder_block for p in wi2.points)  # too long for the budget: left out, said
    assert all(p.to_dict()["verdict"] == "drifted" for p in wi2.points)


def test_a_pinned_anchor_is_replayed_in_its_place(home: HermesHome) -> None:
    store = AnchorStore(home)
    pid = next(iter(store.load_session("live").anchors))
    with StateDB(home.state_db) as db:
        wi = what_if(db, store, "live", "Use metric units", probes=["metric", "units"], priority=80)
    assert wi.replaces == pid and wi.anchor["id"] == pid
    assert [p.to_dict()["verdict"] for p in wi.points] == ["drifted", "alive", "drifted"]
    assert [p.score for p in wi.points] == [0, 100, 0]  # the session's own scores: one anchor, not two


def test_bad_input_is_refused(home: HermesHome) -> None:
    store = AnchorStore(home)
    with StateDB(home.state_db) as db:
        with pytest.raises(Refused, match="text"):
            what_if(db, store, "live", "   ")
        with pytest.raises(Refused, match="priority"):
            what_if(db, store, "live", "x y", priority=500)


def test_budget_replays_newest_first(home: HermesHome) -> None:
    with StateDB(home.state_db) as db:
        seen = []
        wi = what_if(db, AnchorStore(home), "live", "Indent with tabs", budget_s=0.0,
                     progress=lambda done, total: seen.append((done, total)))
    assert [p.compaction_id for p in wi.points] == [3] and wi.pending == 2 and seen == [(0, 3)]


def test_candidate_words_follow_memlock_probe_tokens() -> None:
    assert candidate_words("Always reply in bullet points, never paragraphs; always with café 2024 data.") == [
        "always", "reply", "bullet", "points", "never", "paragraphs", "data"]


def test_cli_what_if_json_and_text(home: HermesHome, capsys) -> None:
    h = ["--home", str(home.path)]
    rc, out, err = _run(capsys, *h, "audit", "--what-if", "Indent with tabs", "--probe", "indent", "--probe", "tabs",
                        "--priority", "70", "--json")
    assert rc == 0, err
    points = json.loads(out)
    assert isinstance(points, list) and [p["compaction_id"] for p in points] == [1, 2, 3]
    assert [(p["verdict"], p["score"]) for p in points] == [("alive", 50), ("drifted", 50), ("drifted", 0)]
    assert all(set(p) >= {"compaction_id", "at", "verdict", "score"} for p in points)
    rc, out, _ = _run(capsys, *h, "audit", "--what-if", "Indent with tabs, never spaces.")
    assert rc == 0
    assert "1 of 3 compaction(s) alive (keyword)" in out and "suggested probes" in out and "indent (3/3)" in out
    assert "nothing is pinned" not in out and len(AnchorStore(home).load_session("live").anchors) == 1  # nothing pinned
    rc, _out, err = _run(capsys, *h, "audit", "--what-if", "x", "--priority", "0")
    assert rc == 1 and "priority" in err
    rc, _out, err = _run(capsys, *h, "audit", "--probe", "x")
    assert rc == 2 and "--what-if" in err


def test_an_anchor_memory_md_carries_is_said_alive_because_of_it_and_stop_words_are_not_suggested(
        hermes_home: HermesHome, capsys) -> None:
    """Issue 39 item 10: an anchor whose text sits in MEMORY.md is "hits 5/5" at every compaction
    because MemLock audits the system prompt too: say so. Suggested probes never include English
    function words ("always", "instead"), which any conversation holds."""
    from memdeck.core.memory.prompt_block import render_block

    text = "Always format Python with black instead of autopep8."
    prompt = "You are Hermes Agent.\n\n" + render_block("memory", ["Deploys go out on Fridays.", text], 2200)
    conn = HS.create_state_db(hermes_home.state_db)
    HS.add_session(conn, "live", started_at=T0, system_prompt=prompt)
    for k in range(2):
        HS.append_message(conn, "live", "user", f"what is the weather {k}", timestamp=T0 + 100 * k)
        HS.compact_in_place(conn, "live", f"summary {k}: the user always wants black used instead of other tools",
                            keep_head=1, keep_tail=1, now=T0 + 100 * k + 10)
    conn.close()
    store = AnchorStore(hermes_home)
    with StateDB(hermes_home.state_db) as db:
        wi = what_if(db, store, "live", text)
        other = what_if(db, store, "live", "Use metric units only.")
    assert wi.carried_by == "MEMORY.md" and wi.alive_count == len(wi.points) == 2
    assert other.carried_by is None
    words = [w for w, _n in wi.suggested_probes]
    assert "black" in words and "always" not in words and "instead" not in words
    rc, out, _ = _run(capsys, "--home", str(hermes_home.path), "audit", "--session", "live", "--what-if", text)
    assert rc == 0 and "alive because MEMORY.md carries it" in out
    from memdeck.tui.views.whatif import whatif_text  # the pin dialog says it too

    assert "alive because MEMORY.md carries it" in whatif_text(wi).plain
    assert "carries" not in whatif_text(other).plain
