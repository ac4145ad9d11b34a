"""Guard: MemLock's per-turn behaviour on the locked anchor store (no Hermes needed)."""

from __future__ import annotations

import stat
import time

import pytest

from memdeck.core.anchors.rules import REMINDER_MARKER
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import Config
from memdeck.core.errors import UnreadableFile
from memdeck.core.plugin.guard import DASHBOARD_HINT, Guard
from memdeck.core.plugin.static_anchors import validate_static_anchors
from tests.helpers.plugin import (
    BRITISH,
    BULLETS,
    config_with,
    history,
    read_session,
    seed,
    summary_message,
)

SID = "20260701_090000_abc123"
BLOCK_BULLETS = f"{REMINDER_MARKER}\n  - Always reply in bullet points, never paragraphs"


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def make(home, cfg: Config | None = None, **kw) -> Guard:
    return Guard(home, cfg or Config(), clock=kw.pop("clock", Clock()), **kw)


def test_quiet_turns_do_not_audit_or_write_and_end_persists_turn(hermes_home):
    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home)
    path = AnchorStore(hermes_home, Config()).session_path(SID)
    before = path.stat().st_mtime_ns, path.read_bytes()
    for _ in range(3):
        assert g.pre_llm_call(session_id=SID, conversation_history=history(["hi"], body=None), user_message="hi") is None
        assert not g.last_outcome.audited and not g.last_outcome.wrote
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before
    assert g.turn_of(SID) == 3
    assert g.on_session_end(session_id=SID) is True
    assert read_session(hermes_home, SID)["turn_count"] == 3
    assert g.on_session_end(session_id=SID) is False  # nothing new
    # a new process continues from the persisted counter (MemLock >= 694ec32: not reset)
    g2 = make(hermes_home)
    g2.on_session_start(session_id=SID)
    g2.pre_llm_call(session_id=SID, conversation_history=[], user_message="x")
    assert g2.turn_of(SID) == 4


def test_compaction_reinjects_drifted_in_memlock_format_not_alive(hermes_home):
    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home)
    h = history(["Please use British English spelling everywhere.", "Sure, colour and favour."])
    res = g.pre_llm_call(session_id=SID, conversation_history=h, user_message="next")
    assert res == {"context": BLOCK_BULLETS}
    out = g.last_outcome
    assert out.compaction and out.audited and out.score == 50 and out.drifted == ("pin_bullets",)
    data = read_session(hermes_home, SID)
    assert data["anchors"]["pin_bullets"]["drifted"] is True
    assert data["anchors"]["pin_british"]["drifted"] is False
    assert data["anchors"]["pin_british"]["last_alive_turn"] == 1
    assert data["integrity_score"] == 50
    assert data["drift_log"][-1]["casualties"] == ["pin_bullets"] and data["drift_log"][-1]["score"] == 50
    assert data["last_reinject_turn"] == 1 and data["last_summary_hash"]
    assert data["last_compaction_at"] == pytest.approx(1_800_000_000.0)
    # the same summary again is not a new compaction: no audit, no injection
    assert g.pre_llm_call(session_id=SID, conversation_history=h + [{"role": "user", "content": "more"}]) is None
    assert not g.last_outcome.compaction
    # a new summary body is a new compaction
    h2 = history(["bullet points always, never reply in paragraphs"], body="A second summary.")
    assert g.pre_llm_call(session_id=SID, conversation_history=h2) == {
        "context": f"{REMINDER_MARKER}\n  - Use British English spelling everywhere"}
    assert len(read_session(hermes_home, SID)["drift_log"]) == 2


def test_all_alive_injects_nothing_but_logs_the_audit(hermes_home):
    seed(hermes_home, SID, BULLETS)
    g = make(hermes_home)
    h = history(["Always reply in bullet points and never in paragraphs."])
    assert g.pre_llm_call(session_id=SID, conversation_history=h) is None
    data = read_session(hermes_home, SID)
    assert data["integrity_score"] == 100 and data["drift_log"][-1]["casualties"] == []
    assert data["last_reinject_turn"] == 0


def test_merge_into_tail_and_legacy_prefix_are_compactions(hermes_home):
    seed(hermes_home, SID, BULLETS)
    g = make(hermes_home)
    assert g.pre_llm_call(session_id=SID, conversation_history=history(["hello"], merged=True)) == {"context": BLOCK_BULLETS}
    assert g.last_outcome.compaction
    h = [{"role": "system", "content": "s"}, summary_message("legacy body", prefix="[CONTEXT SUMMARY]:"),
         {"role": "user", "content": "hello"}]
    assert g.pre_llm_call(session_id=SID, conversation_history=h) == {"context": BLOCK_BULLETS}


def test_summary_region_does_not_count_and_user_message_does(hermes_home):
    seed(hermes_home, SID, BULLETS)
    g = make(hermes_home)
    h = history(["hello"], body="Always reply in bullet points, never paragraphs.")  # only in the summary
    assert g.pre_llm_call(session_id=SID, conversation_history=h) == {"context": BLOCK_BULLETS}
    h2 = history(["hello"], body="another summary")
    assert g.pre_llm_call(session_id=SID, conversation_history=h2,
                          user_message="always reply with bullet points never prose") is None


def test_inject_always_every_turn_audit_only_on_compaction(hermes_home):
    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home, config_with(inject="always"))
    r1 = g.pre_llm_call(session_id=SID, conversation_history=history(["x"], body=None))
    assert r1["context"].splitlines() == [REMINDER_MARKER, "  - Always reply in bullet points, never paragraphs",
                                          "  - Use British English spelling everywhere"]
    assert not g.last_outcome.audited
    assert read_session(hermes_home, SID)["integrity_score"] is None
    g.pre_llm_call(session_id=SID, conversation_history=history(["british english spelling everywhere"]))
    assert g.last_outcome.audited and read_session(hermes_home, SID)["integrity_score"] == 50


def test_budgets_max_slots_and_chars_with_overflow_line(hermes_home):
    anchors = [dict(id=f"a{i}", text=f"rule number {i} zebra{i}", reminder=f"rule {i}", priority=90 - i,
                    probes=[f"zebra{i}"]) for i in range(4)]
    anchors.append(dict(id="long", text="x " * 300, reminder="L" * 700, priority=99, probes=["quokka"]))
    seed(hermes_home, SID, *anchors)
    g = make(hermes_home, config_with(max_slots=2))
    res = g.pre_llm_call(session_id=SID, conversation_history=history(["nothing relevant"]))
    lines = res["context"].split("\n")
    # 'long' (p=99) costs 704 > 600 chars: skipped; then the two best that fit
    assert lines == [REMINDER_MARKER, "  - rule 0", "  - rule 1",
                     "  - (3 additional instruction(s) not shown — the user can run /guard to see the full list)"]


def test_safety_net_fires_after_hard_reinject_turns(hermes_home):
    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home, config_with(hard_reinject_turns=4))
    quiet = history(["Always reply in bullet points, never paragraphs; British English spelling everywhere."], body=None)
    results = [g.pre_llm_call(session_id=SID, conversation_history=quiet) for _ in range(5)]
    assert results[:3] == [None, None, None]
    # turn 4: 4 - last_reinject_turn(0) >= 4 -> audit + every anchor re-injected even though alive
    assert results[3] is not None and g.turn_of(SID) == 5
    assert results[3]["context"].count("\n  - ") == 2
    data = read_session(hermes_home, SID)
    assert data["last_reinject_turn"] == 4 and data["integrity_score"] == 100
    assert results[4] is None


def test_hard_reinject_zero_disables_safety_net(hermes_home):
    seed(hermes_home, SID, BULLETS)
    g = make(hermes_home, config_with(hard_reinject_turns=0))
    assert all(g.pre_llm_call(session_id=SID, conversation_history=[]) is None for _ in range(60))


def test_alert_floor_cooldown_and_script(hermes_home, tmp_path):
    seed(hermes_home, SID, BULLETS, BRITISH)
    out = tmp_path / "alerts.txt"
    script = tmp_path / "alert.sh"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$1\" >> {out}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    clock = Clock()
    g = make(hermes_home, config_with(alert_script=str(script), alert_cooldown_s=100), clock=clock)
    g.pre_llm_call(session_id=SID, conversation_history=history(["nothing"], body="s1"))
    assert g.last_outcome.score == 0
    assert g.last_outcome.alert == f"[memlock] integrity score 0% (session {SID}) — drifted: pin_bullets, pin_british"
    clock.t += 50
    g.pre_llm_call(session_id=SID, conversation_history=history(["nothing"], body="s2"))
    assert g.last_outcome.audited and g.last_outcome.alert == ""  # cooldown
    clock.t += 60
    g.pre_llm_call(session_id=SID, conversation_history=history(["nothing"], body="s3"))
    assert g.last_outcome.alert.startswith("[memlock] integrity score 0%")
    assert read_session(hermes_home, SID)["last_alert_at"] == pytest.approx(clock.t)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (not out.exists() or out.read_text().count("\n") < 2):
        time.sleep(0.02)
    assert out.read_text().splitlines() == [g.last_outcome.alert] * 2


def test_no_alert_at_or_above_floor(hermes_home):
    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home, config_with(alert_floor=50))
    g.pre_llm_call(session_id=SID, conversation_history=history(["british english spelling everywhere"]))
    assert g.last_outcome.score == 50 and g.last_outcome.alert == ""


def test_another_writer_between_turns_takes_effect_and_is_kept(hermes_home):
    seed(hermes_home, SID, BULLETS)
    g = make(hermes_home, config_with(inject="always"))
    r1 = g.pre_llm_call(session_id=SID, conversation_history=[])
    assert "British" not in r1["context"]
    seed(hermes_home, SID, BRITISH)  # e.g. the dashboard, another AnchorStore
    r2 = g.pre_llm_call(session_id=SID, conversation_history=[])
    assert "  - Use British English spelling everywhere" in r2["context"]
    g.pre_llm_call(session_id=SID, conversation_history=history(["nothing"]))  # audit writes the file
    data = read_session(hermes_home, SID)
    assert set(data["anchors"]) == {"pin_bullets", "pin_british"}
    # and removing it elsewhere removes it from the next injection
    store = AnchorStore(hermes_home, Config(), actor="test")
    store.update_session(SID, lambda s: s.anchors.pop("pin_british"))
    r3 = g.pre_llm_call(session_id=SID, conversation_history=[])
    assert "British" not in r3["context"]


def test_static_anchor_validation_matches_memlock():
    two = [{"id": "a", "text": "Use tabs", "probes": ["tabs"]}, {"id": "b", "text": "No probes"},
           {"id": "", "text": "no id"}, {"id": "c"}]
    assert [a["id"] for a in validate_static_anchors(two)] == ["a"]
    # order independence: the probe-less one is rejected in either order
    assert [a["id"] for a in validate_static_anchors(list(reversed(two)))] == ["a"]
    one = validate_static_anchors([{"id": "solo", "text": "Do it. Now."}])
    assert one == [{"id": "solo", "text": "Do it. Now.", "reminder": "Do it. Now.", "priority": 50, "probes": [],
                    "pinned": False}]


def test_session_start_seeds_static_then_global_without_overwriting(hermes_home):
    cfg = config_with(anchors=[{"id": "format-bullets", "text": "Use bullets", "probes": ["bullets"], "priority": 30},
                               {"id": "pinned-static", "text": "Never use emoji", "probes": ["emoji"], "pinned": True}])
    store = AnchorStore(hermes_home, cfg, actor="test")
    store.save_pin({"id": "pin_glob0001", "text": "Cite sources", "probes": ["cite"], "scope": "global"})
    store.save_pin({"id": "pin_sess0001", "text": "Not global", "probes": ["x"], "scope": "session"})
    g = make(hermes_home, cfg)
    added = g.on_session_start(session_id=SID)
    assert added == ["format-bullets", "pinned-static", "pin_glob0001"]
    data = read_session(hermes_home, SID)
    assert data["static_anchor_ids"] == ["format-bullets"]
    assert data["anchors"]["pin_glob0001"]["pinned"] is True and data["pinned_count"] == 2
    # an edit made meanwhile (dashboard) survives the next session start
    store.update_session(SID, lambda s: setattr(s.anchors["format-bullets"], "reminder", "Bullets please"))
    assert g.on_session_start(session_id=SID) == []
    assert read_session(hermes_home, SID)["anchors"]["format-bullets"]["reminder"] == "Bullets please"


def test_status_text_layout(hermes_home):
    seed(hermes_home, SID, BULLETS, dict(BRITISH, pinned=False, id="static_brit"))
    g = make(hermes_home)
    assert g.status_text() == "MemLock: no active session yet\n" + DASHBOARD_HINT
    g.pre_llm_call(session_id=SID, conversation_history=history(["british english spelling everywhere"]))
    lines = g.status_text().split("\n")
    assert lines[:6] == [f"MemLock — session {SID}", "  integrity_score: 50% (anchors: 2)", "  pins: 1",
                         "  static: 1", "  last compaction: 1800000000.0", ""]
    assert lines[6:9] == ["Anchors:", "  [pin] [DRIFTED] pin_bullets (p=80) — Always reply in bullet points, never paragraphs",
                          "  [static] [ALIVE] static_brit (p=50) — Use British English spelling everywhere"]
    assert lines[9] == ""
    assert lines[10] == "Drift events: 1 (most recent first)"
    assert lines[11].endswith(" score=50% casualties=1")
    assert lines[-1] == DASHBOARD_HINT


def test_unreadable_session_file_raises_in_guard_and_is_untouched(hermes_home):
    path = AnchorStore(hermes_home, Config()).session_path(SID)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    g = make(hermes_home)
    with pytest.raises(UnreadableFile):
        g.pre_llm_call(session_id=SID, conversation_history=history(["x"]))
    assert path.read_text(encoding="utf-8") == "{not json"


def test_empty_session_id_is_a_noop(hermes_home):
    g = make(hermes_home)
    assert g.pre_llm_call(session_id="", conversation_history=history(["x"])) is None
    assert g.on_session_start(session_id="") == []
    assert not (hermes_home.path / "memlock").exists()


def test_semantic_mode_with_a_deterministic_encoder(hermes_home):
    import numpy as np

    class Encoder:
        """One-hot per known phrase (as MemLock's StubModel); unknown text -> zero vector."""

        vocab = ["bullet", "british"]

        def encode(self, texts):
            return np.array([[1.0 if w in t.lower() else 0.0 for w in self.vocab] for t in texts])

    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home, config_with(detection="semantic"), encoder=Encoder())
    res = g.pre_llm_call(session_id=SID, conversation_history=history(["we speak british here"]))
    assert res == {"context": BLOCK_BULLETS}
    assert g.last_outcome.score == 50


def test_status_text_with_hostile_drift_log(hermes_home):
    """/guard on a hand-edited drift log: no crash, unknown values shown as unknown."""
    seed(hermes_home, SID, BULLETS)
    store = AnchorStore(hermes_home, Config())
    store.update_session(SID, lambda s: s.drift_log.extend([
        {"time": "yesterday", "score": 40, "casualties": 5.0},
        {"time": 1_800_000_000.0, "score": float("nan"), "casualties": ["pin_bullets"]},
    ]))
    g = make(hermes_home)
    lines = g.status_text(session_id=SID).split("\n")
    i = lines.index("Drift events: 2 (most recent first)")
    assert lines[i + 1].endswith(" score=n/a casualties=1") and not lines[i + 1].startswith("  ??")
    assert lines[i + 2] == "  ??:??:?? score=n/a casualties=0"


def test_a_lone_surrogate_in_the_summary_does_not_disable_reminders(hermes_home):
    """Issue 13 #15: Hermes can persist a lone surrogate (it keeps them, see hermes-agent
    TestLoneSurrogatePersistence); the summary hash must not fail on it, turn after turn."""
    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home)
    h = history(["Please use British English spelling everywhere.", "Sure, colour and favour."],
                body="We spoke about \ud83d the deploy.")
    assert g.pre_llm_call(session_id=SID, conversation_history=h, user_message="next") == {"context": BLOCK_BULLETS}
    assert read_session(hermes_home, SID)["last_summary_hash"]


def test_a_held_lock_does_not_hold_the_turn(hermes_home):
    """Issue 13 #15: another process holding the session file's lock costs the hook at most
    HOOK_LOCK_TIMEOUT, not the 10 s a CLI write waits; the hook returns while the lock is held."""
    from memdeck.core.plugin.guard import HOOK_LOCK_TIMEOUT
    from tests.core.test_fsio import held_by_other_process

    seed(hermes_home, SID, BULLETS, BRITISH)
    g = make(hermes_home)
    h = history(["Please use British English spelling everywhere.", "Sure, colour and favour."])
    with held_by_other_process(g.store.session_path(SID)) as release:
        g.pre_llm_call(session_id=SID, conversation_history=h, user_message="next")  # needs a write
        assert not release.is_set()  # returned while the other process still held the lock
    assert g.store.lock_timeout == HOOK_LOCK_TIMEOUT <= 1.0
    # the next turn, with the lock free, audits and re-injects as usual
    assert g.pre_llm_call(session_id=SID, conversation_history=h, user_message="again") == {"context": BLOCK_BULLETS}
