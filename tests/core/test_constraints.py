"""The constraint ledger (issue 34): rules from user turns in six languages with their scope,
constraint lines from every summary layout, and the verdicts with their evidence, on labelled
pairs and on a compacted session in state.db."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from memdeck.core.cli import main
from memdeck.core.constraints.classify import classify
from memdeck.core.constraints.ledger import counts, session_ledger
from memdeck.core.constraints.markers import found, imperative_start
from memdeck.core.constraints.rules import Rule, rules_in, scope_of
from memdeck.core.constraints.summary import SummaryLine, constraint_lines, summary_lines
from memdeck.core.home import HermesHome
from memdeck.core.sessions import hermes_schema as HS
from memdeck.core.sessions.statedb import StateDB

CASES = yaml.safe_load((Path(__file__).parents[1] / "fixtures" / "constraints" / "pairs.yaml").read_text(encoding="utf-8"))["pairs"]


def _verdict(case: dict, cosine=None) -> str:
    rule = Rule(case["rule"], 1, scope_of(case["rule"]), tuple(found("binding", case["rule"])) or ("(imperative)",))
    lines = []
    if case.get("line"):
        t = case["line"]
        lines.append(SummaryLine(t, "Constraints & Preferences", bool(found("binding", t)) or imperative_start(t)))
    items = [i for i in classify([rule], lines, cosine=cosine) if i.rule is not None]
    return items[0].verdict if items else "dropped"


def test_the_labelled_pairs_cover_six_languages_and_four_verdicts() -> None:
    assert len(CASES) >= 60
    assert {c["lang"] for c in CASES} == {"en", "de", "es", "fr", "zh", "ja"}
    assert {c["label"] for c in CASES} == {"kept", "weakened", "lost", "promoted"}


def test_the_held_out_batch_is_a_separate_set_of_at_least_30_pairs_in_six_languages() -> None:
    """The held-out pairs (never used to tune the rule: bench/bench_constraints.py reports them
    apart); this checks their shape only, not a score."""
    held = yaml.safe_load((Path(__file__).parents[1] / "fixtures" / "constraints" / "heldout.yaml")
                          .read_text(encoding="utf-8"))["pairs"]
    assert len(held) >= 30
    assert {c["lang"] for c in held} == {"en", "de", "es", "fr", "zh", "ja"}
    assert {c["label"] for c in held} == {"kept", "weakened", "lost", "promoted"}
    assert not {(c["rule"], c.get("line")) for c in held} & {(c["rule"], c.get("line")) for c in CASES}


def test_keyword_verdicts_meet_precision_and_recall_per_class() -> None:
    pred = [_verdict(c) for c in CASES]
    for cls in ("lost", "weakened", "promoted"):
        tp = sum(1 for c, p in zip(CASES, pred) if p == cls and c["label"] == cls)
        fp = sum(1 for c, p in zip(CASES, pred) if p == cls and c["label"] != cls)
        n = sum(1 for c in CASES if c["label"] == cls)
        assert tp / max(1, tp + fp) >= 0.9, (cls, tp, fp)
        assert tp / n >= 0.8, (cls, tp, n)


@pytest.mark.parametrize(("text", "n", "scope"), [
    ("Never force-push to main. Thanks!", 1, None),
    ("Skip the linter just this once, please.", 1, "once"),
    ("Use tabs until the migration is done.", 1, "until"),
    ("Pushe niemals direkt auf main.", 1, None),
    ("Por ahora, no ejecutes los tests.", 1, "once"),
    ("Ne pousse jamais sur main. Merci.", 1, None),
    ("这次先跳过 lint 检查。", 1, "once"),
    ("必ず日本語で回答してください。", 1, None),
    ("What time is it in Berlin?", 0, None),
    ("Where should we start? Never force-push.", 1, None),  # a question binds nothing (the demo's turn)
    ("这个应该怎么做？", 0, None),
])
def test_rules_are_found_with_their_scope_in_six_languages(text: str, n: int, scope: str | None) -> None:
    rules = rules_in(text, 7)
    assert len(rules) == n
    if n:
        assert rules[0].scope == scope and rules[0].turn_id == 7


SUMMARY_0_22 = """[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below.
## Goal
Ship the release.
## Constraints & Preferences
- NEVER run rm -rf on the home directory.
- Commit messages in English.
- Force-pushing to main was discussed.
## Progress
- Always keep the changelog current.
- Tests pass on CI.

--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"""


def test_summary_lines_read_the_constraints_section_and_binding_lines_elsewhere() -> None:
    lines = summary_lines(SUMMARY_0_22)
    assert [ln.text for ln in lines if ln.in_constraints] == [
        "NEVER run rm -rf on the home directory.", "Commit messages in English.", "Force-pushing to main was discussed."]
    assert [ln.text for ln in constraint_lines(SUMMARY_0_22) if not ln.in_constraints] == ["Always keep the changelog current."]
    legacy = summary_lines("[CONTEXT SUMMARY]: The user said: never log API keys. We fixed the build.")
    assert legacy and legacy[0].binding


def _session(home: HermesHome, turns: list[str], summary: str) -> None:
    conn = HS.create_state_db(home.state_db)
    HS.add_session(conn, "s1", started_at=1_800_000_000.0)
    for i, t in enumerate(turns):
        HS.append_message(conn, "s1", "user", t, timestamp=1_800_000_000.0 + 2 * i)
        HS.append_message(conn, "s1", "assistant", "ok", timestamp=1_800_000_001.0 + 2 * i)
    HS.compact_in_place(conn, "s1", summary, keep_head=1, keep_tail=2, now=1_800_000_100.0)
    HS.append_message(conn, "s1", "user", "next", timestamp=1_800_000_200.0)
    conn.close()


TURNS = ["Hi, let's work on the release.",
         "Never run rm -rf on the home directory.",
         "Never force-push to main.",
         "Skip the linter just this once.",
         "Never log API keys.",
         "Let me know when it is done.",
         "Thanks, continue.",
         "And the docs?"]
SUMMARY = """## Constraints & Preferences
- NEVER run rm -rf on the home directory.
- Force-pushing to main was discussed.
- Skip the linter.
- Always deploy on Tuesdays.
## Progress
- Release notes drafted."""


def test_a_compaction_ledger_has_each_verdict_with_its_evidence(hermes_home: HermesHome) -> None:
    _session(hermes_home, TURNS, SUMMARY)
    with StateDB(hermes_home.state_db) as db:
        ledger = session_ledger(db, hermes_home, None, "s1", semantic=False)
    (comp,) = ledger["compactions"]
    by = {(i["verdict"], i["rule"] or i["summary_line"]) for i in comp["items"]}
    assert ("kept", "Never run rm -rf on the home directory.") in by
    assert ("weakened", "Never force-push to main.") in by
    assert ("promoted", "Skip the linter just this once.") in by
    assert ("lost", "Never log API keys.") in by
    assert ("orphan", "Always deploy on Tuesdays.") in by
    weak = next(i for i in comp["items"] if i["verdict"] == "weakened")
    assert weak["summary_line"] == "Force-pushing to main was discussed." and weak["evidence"]["prohibition_lost"]
    assert weak["source_turn_id"] is not None and weak["method"] == "keyword"
    assert counts(ledger)["promoted"] == 1


def test_no_promotion_where_no_instruction_was_scoped(hermes_home: HermesHome) -> None:
    _session(hermes_home, [t for t in TURNS if "once" not in t], SUMMARY.replace("- Skip the linter.\n", ""))
    with StateDB(hermes_home.state_db) as db:
        assert counts(session_ledger(db, hermes_home, None, "s1", semantic=False))["promoted"] == 0


def test_the_cli_prints_the_ledger_as_json(hermes_home: HermesHome, capsys) -> None:
    _session(hermes_home, TURNS, SUMMARY)
    assert main(["--home", str(hermes_home.path), "constraints", "--session", "s1", "--keyword", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["session_id"] == "s1" and len(out["compactions"]) == 1
    item = out["compactions"][0]["items"][0]
    assert set(item) == {"verdict", "rule", "source_turn_id", "summary_line", "scope", "evidence", "method"}
    assert main(["--home", str(hermes_home.path), "constraints", "--session", "s1", "--keyword"]) == 0
    assert "LOST" in capsys.readouterr().out


def test_watch_reports_each_new_compaction_of_the_live_session_once(hermes_home: HermesHome) -> None:
    """issue 34: ``watch`` prints constraint_lost / _weakened / _promoted for a compaction of the live
    session that happens while it runs (one event per verdict present), never again, and none for the
    compactions that were already there when it started."""
    from memdeck.core.cli.common import CliContext
    from memdeck.core.cli.history_cmds import _Watch
    from memdeck.core.config import load_config

    conn = HS.create_state_db(hermes_home.state_db)
    HS.add_session(conn, "s1", started_at=1_800_000_000.0)
    for i, t in enumerate(TURNS):
        HS.append_message(conn, "s1", "user", t, timestamp=1_800_000_000.0 + 2 * i)
        HS.append_message(conn, "s1", "assistant", "ok", timestamp=1_800_000_001.0 + 2 * i)
    conn.close()
    w = _Watch(CliContext(home=hermes_home, config=load_config(hermes_home)))
    try:
        assert w.constraint_events() == []  # no compaction yet
        conn = HS.connect(hermes_home.state_db)
        HS.compact_in_place(conn, "s1", SUMMARY, keep_head=1, keep_tail=2, now=1_800_000_100.0)
        HS.append_message(conn, "s1", "user", "next", timestamp=1_800_000_200.0)
        conn.close()
        events = [e for e in w.events(frozenset({"statedb"})) if e["event"].startswith("constraint_")]
        by = {e["event"]: e for e in events}
        assert set(by) == {"constraint_lost", "constraint_weakened", "constraint_promoted"}
        assert by["constraint_lost"]["items"][0]["rule"] == "Never log API keys."
        assert by["constraint_weakened"]["items"][0]["summary_line"] == "Force-pushing to main was discussed."
        assert by["constraint_promoted"]["items"][0]["scope"] == "once"
        assert all(e["session_id"] == "s1" and e["compaction_id"] == 1 and e["count"] == 1 for e in events)
        assert not [e for e in w.events(frozenset({"statedb"})) if e["event"].startswith("constraint_")]  # once
    finally:
        w.close()
    w2 = _Watch(CliContext(home=hermes_home, config=load_config(hermes_home)))
    try:  # a compaction older than the watch is a state, not an event
        assert w2.constraint_events() == []
    finally:
        w2.close()


def _compactions(home: HermesHome, n: int) -> None:
    """A session compacted ``n`` times in place, each compaction's turns holding a rule it loses."""
    conn = HS.create_state_db(home.state_db)
    HS.add_session(conn, "s1", started_at=1_800_000_000.0)
    t = 1_800_000_000.0
    for k in range(n):
        for text in (f"Step {k}.", f"Never delete archive{k}.", "ok", "go on"):
            HS.append_message(conn, "s1", "user", text, timestamp=t)
            HS.append_message(conn, "s1", "assistant", "ok", timestamp=t + 0.5)
            t += 1
        HS.compact_in_place(conn, "s1", f"## Constraints & Preferences\n- Work on step {k}.", keep_head=1,
                            keep_tail=2, now=t)
        t += 1
    HS.append_message(conn, "s1", "user", "next", timestamp=t)
    conn.close()


def test_each_compactions_ledger_is_computed_once_and_kept_in_memdeck_db(hermes_home: HermesHome, monkeypatch) -> None:
    from memdeck.core.constraints import ledger as L
    from memdeck.core.deck import db as deckdb

    _compactions(hermes_home, 3)
    deckdb.connect(hermes_home).close()
    calls: list[int] = []
    real = L._compute
    monkeypatch.setattr(L, "_compute", lambda db, ev, *a: calls.append(ev.index) or real(db, ev, *a))
    with StateDB(hermes_home.state_db) as db:
        assert L.pending_ledgers(db, hermes_home, "s1") == 3
        first = session_ledger(db, hermes_home, None, "s1", semantic=False)
        assert sorted(calls) == [1, 2, 3] and first["pending"] == 0
        assert L.pending_ledgers(db, hermes_home, "s1") == 0
        L.clear_process_cache()  # another process: memdeck.db has them
        again = session_ledger(db, hermes_home, None, "s1", semantic=False)
    assert sorted(calls) == [1, 2, 3] and again == first
    assert [c["compaction_id"] for c in first["compactions"]] == [1, 2, 3]
    assert {(i["verdict"], i["rule"]) for c in first["compactions"] for i in c["items"] if i["rule"]} >= {
        ("lost", "Never delete archive0."), ("lost", "Never delete archive1.")}
    c = sqlite3.connect(str(deckdb.db_path(hermes_home)))
    try:
        rows = c.execute("SELECT compaction_id, method, rule_version, counts FROM constraint_ledgers ORDER BY 1").fetchall()
    finally:
        c.close()
    assert [(r[0], r[1], r[2]) for r in rows] == [(k, "keyword", L.RULE_VERSION) for k in (1, 2, 3)]
    assert json.loads(rows[0][3])["lost"] >= 1


def test_a_memory_entry_keeps_a_lost_rule_without_computing_the_ledger_again(hermes_home: HermesHome,
                                                                            monkeypatch) -> None:
    from memdeck.core.constraints import ledger as L

    _compactions(hermes_home, 1)
    with StateDB(hermes_home.state_db) as db:
        before = session_ledger(db, hermes_home, None, "s1", semantic=False)
        monkeypatch.setattr(L, "_compute", lambda *a: pytest.fail("computed again"))
        (hermes_home.path / "memories" / "MEMORY.md").write_text("Never delete archive0 (user rule).", encoding="utf-8")
        after = session_ledger(db, hermes_home, None, "s1", semantic=False)
    lost = next(i for i in before["compactions"][0]["items"] if i["rule"] == "Never delete archive0.")
    kept = next(i for i in after["compactions"][0]["items"] if i["rule"] == "Never delete archive0.")
    assert lost["verdict"] == "lost" and kept["verdict"] == "kept" and kept["evidence"]["carried_by"] == "memory"


def test_a_bounded_ledger_computes_the_newest_first_and_fill_finishes_it(hermes_home: HermesHome) -> None:
    from memdeck.core.constraints.ledger import fill_ledgers, pending_ledgers
    from memdeck.core.deck import db as deckdb

    _compactions(hermes_home, 4)
    deckdb.connect(hermes_home).close()
    with StateDB(hermes_home.state_db) as db:
        part = session_ledger(db, hermes_home, None, "s1", semantic=False, budget_s=0.0)
        assert part["pending"] == 3 and [c["compaction_id"] for c in part["compactions"]] == [4]
        seen: list[tuple[int, int]] = []
        left = fill_ledgers(db, hermes_home, "s1", budget_s=0.0, progress=lambda d, t: seen.append((d, t)))
        assert left == 2 and seen == [(1, 3)]
        while left:
            nxt = fill_ledgers(db, hermes_home, "s1", budget_s=0.0)
            assert nxt < left
            left = nxt
        assert pending_ledgers(db, hermes_home, "s1") == 0
        assert session_ledger(db, hermes_home, None, "s1", semantic=False, budget_s=0.0)["pending"] == 0


def test_status_json_counts_the_live_sessions_ledger(hermes_home: HermesHome, capsys) -> None:
    _session(hermes_home, TURNS, SUMMARY)
    assert main(["--home", str(hermes_home.path), "status", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)["constraints"]
    assert c["session_id"] == "s1" and c["method"] == "keyword" and c["compactions"] == 1 and c["pending"] == 0
    assert c["counts"] == {"kept": 1, "weakened": 1, "lost": 1, "promoted": 1, "orphan": 1}
    assert c["newest"]["compaction_id"] == 1
    assert sorted(i["verdict"] for i in c["newest"]["changed"]) == ["lost", "promoted", "weakened"]
    assert {i["rule"] for i in c["newest"]["changed"]} == {"Never force-push to main.", "Skip the linter just this once.",
                                                          "Never log API keys."}


def test_the_counts_of_a_complete_ledger_are_not_checked_again_until_a_compaction_or_a_carrier_changes(
        hermes_home: HermesHome, monkeypatch) -> None:
    """The dashboard reads the ledger's counts after every appended message (state.db changed): with
    the same compactions and the same memory/anchors, nothing is checked again (a 200k home's 154
    compactions cost a tenth of a core beside an agent before); a new carrier is checked at once."""
    from memdeck.core.constraints import ledger as L

    _compactions(hermes_home, 2)
    L.clear_process_cache()
    carried = [("memory", "Prefer tabs.")]
    with StateDB(hermes_home.state_db) as db:
        first = L.ledger_counts(db, hermes_home, None, "s1", budget_s=None, carried=carried)
        assert first["pending"] == 0 and first["counts"]["lost"] >= 2
        calls: list[int] = []
        real = L.apply_carried
        monkeypatch.setattr(L, "apply_carried", lambda items, c: calls.append(1) or real(items, c))
        again = L.ledger_counts(db, hermes_home, None, "s1", budget_s=None, carried=list(carried))
        assert again == first and calls == []
        again["counts"]["lost"] = -1  # a caller's copy: the kept counts are untouched
        kept = L.ledger_counts(db, hermes_home, None, "s1", budget_s=None,
                               carried=[*carried, ("memory", "Never delete archive0.")])
        assert calls and kept["counts"]["lost"] < first["counts"]["lost"]  # the new carrier keeps a rule at once
        assert L.ledger_counts(db, hermes_home, None, "s1", budget_s=None, carried=carried) == first
