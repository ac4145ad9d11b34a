"""Equivalence with MemLock's audit (Sahil-SS9/hermes-memlock f6cfb8b), case by case.

Each case states its anchors, the active region, the config, and the expected alive/drifted
sets, integrity score and reminder block exactly as MemLock's ``audit_anchors``,
``compute_integrity_score``, ``_select_casualties`` and ``_build_reminder_block`` give them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from memdeck.core.anchors.audit import alert_message, build_windows, integrity_score, keyword_audit, run_audit, semantic_audit, should_alert
from memdeck.core.anchors.rehydration import plan_reminder, rehydration_candidates, reminder_block, reminder_lines
from memdeck.core.anchors.rules import REMINDER_MARKER, auto_reminder, derive_probes, flatten_ws
from memdeck.core.config import MemlockConfig
from memdeck.core.sessions.compaction import find_summary, split_context
from tests.helpers.anchors import anchor, history

M = REMINDER_MARKER


def overflow(n: int) -> str:
    return f"  - ({n} additional instruction(s) not shown — the user can run /guard to see the full list)"


CASES = [
    # id, anchors, active user turns, config overrides, alive, drifted, score, block
    (
        "one-of-five-below-half",
        [anchor("a", reminder="Always bullets", probes=["always", "reply", "bullet", "points", "never"])],
        ["I always like this"], {},
        set(), {"a"}, 0, f"{M}\n  - Always bullets",
    ),
    (
        "three-of-five-alive",
        [anchor("a", probes=["always", "reply", "bullet", "points", "never"])],
        ["ALWAYS reply with BULLETs"], {},
        {"a"}, set(), 100, "",
    ),
    (
        "threshold-edge-2-of-4-equals-half-is-alive",
        [anchor("a", probes=["alpha", "bravo", "charlie", "delta"])],
        ["alpha and bravo"], {},
        {"a"}, set(), 100, "",
    ),
    (
        "threshold-edge-1-of-4-drifts",
        [anchor("a", reminder="Use NATO words", probes=["alpha", "bravo", "charlie", "delta"])],
        ["alpha only"], {},
        set(), {"a"}, 0, f"{M}\n  - Use NATO words",
    ),
    (
        "threshold-zero-always-alive",
        [anchor("a", probes=["zzzz"])],
        ["nothing"], {"drift_threshold": 0.0},
        {"a"}, set(), 100, "",
    ),
    (
        "threshold-one-needs-every-probe",
        [anchor("a", reminder="r", probes=["tabs", "spaces"])],
        ["tabs everywhere"], {"drift_threshold": 1.0},
        set(), {"a"}, 0, f"{M}\n  - r",
    ),
    (
        "probe-less-always-alive-and-counted-in-score",
        [anchor("p", probes=[]), anchor("q", reminder="q reminder", probes=["xylophone"])],
        ["hello"], {},
        {"p"}, {"q"}, 50, f"{M}\n  - q reminder",
    ),
    (
        "substring-not-word-hit",
        [anchor("a", probes=["form"])],
        ["the FORMAT is fine"], {},
        {"a"}, set(), 100, "",
    ),
    (
        "summary-region-does-not-count",
        [anchor("a", reminder="metric", probes=["metric"])],
        ["nothing relevant"], {"_summary": "we agreed on metric units"},
        set(), {"a"}, 0, f"{M}\n  - metric",
    ),
    (
        "system-prompt-counts-as-active",
        [anchor("a", probes=["helpful"])],
        ["x"], {},
        {"a"}, set(), 100, "",
    ),
    (
        "one-of-eight-alive-rounds-to-12",
        [anchor(f"a{i}", reminder=f"r{i}", probes=[f"probe{i}"]) for i in range(8)],
        ["probe0"], {"max_slots": 8},
        {"a0"}, {f"a{i}" for i in range(1, 8)}, 12,
        M + "".join(f"\n  - r{i}" for i in range(1, 8)),
    ),
    (
        "five-of-eight-rounds-to-62",
        [anchor(f"a{i}", reminder=f"r{i}", probes=[f"probe{i}"]) for i in range(8)],
        ["probe0 probe1 probe2 probe3 probe4"], {},
        {"a0", "a1", "a2", "a3", "a4"}, {"a5", "a6", "a7"}, 62,
        f"{M}\n  - r5\n  - r6\n  - r7",
    ),
    (
        "max-slots-overflow-line",
        [anchor(f"a{i}", reminder=f"r{i}", probes=["nope"]) for i in range(4)],
        ["x"], {"max_slots": 2},
        set(), {"a0", "a1", "a2", "a3"}, 0, f"{M}\n  - r0\n  - r1\n{overflow(2)}",
    ),
    (
        "priority-then-id-order",
        [anchor("b", reminder="B", priority=10, probes=["nope"]), anchor("a", reminder="A", priority=10, probes=["nope"]),
         anchor("z", reminder="Z", priority=90, probes=["nope"])],
        ["x"], {},
        set(), {"a", "b", "z"}, 0, f"{M}\n  - Z\n  - A\n  - B",
    ),
    (
        "char-budget-skips-long-then-fits-short",
        # costs: 50+4=54, 60+4=64 (54+64=118 > 100: skipped), 10+4=14 (68 <= 100)
        [anchor("a", reminder="x" * 50, priority=90, probes=["nope"]), anchor("b", reminder="y" * 60, priority=80, probes=["nope"]),
         anchor("c", reminder="z" * 10, priority=70, probes=["nope"])],
        ["x"], {"max_reminder_chars": 100},
        set(), {"a", "b", "c"}, 0, f"{M}\n  - {'x' * 50}\n  - {'z' * 10}\n{overflow(1)}",
    ),
    (
        "budget-uses-untruncated-length-line-truncated-to-120",
        [anchor("a", reminder="L" * 150, probes=["nope"])],
        ["x"], {"max_reminder_chars": 154},
        set(), {"a"}, 0, f"{M}\n  - {'L' * 120}",
    ),
    (
        "budget-exact-fit-and-one-over",
        [anchor("a", reminder="L" * 150, priority=60, probes=["nope"]), anchor("b", reminder="s", priority=50, probes=["nope"])],
        ["x"], {"max_reminder_chars": 153},
        set(), {"a", "b"}, 0, f"{M}\n  - s\n{overflow(1)}",
    ),
    (
        "nothing-fits-no-block",
        [anchor("a", reminder="L" * 700, probes=["nope"])],
        ["x"], {},
        set(), {"a"}, 0, "",
    ),
    (
        "inject-always-all-anchors",
        [anchor("a", reminder="A", priority=60, probes=["hello"]), anchor("b", reminder="B", probes=["nope"])],
        ["hello"], {"inject": "always"},
        {"a"}, {"b"}, 50, f"{M}\n  - A\n  - B",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_equivalence_with_memlock(case) -> None:
    _id, anchors, turns, overrides, alive, drifted, score, block = case
    overrides = dict(overrides)
    summary = overrides.pop("_summary", "Earlier we talked.")
    cfg = replace(MemlockConfig(), **overrides)
    msgs = history(*turns, summary=summary)
    idx, _m = find_summary(msgs)
    _summary_region, active = split_context(msgs, idx)
    verdicts = run_audit(anchors, active, cfg)
    assert {k for k, v in verdicts.items() if v.alive} == alive
    assert {k for k, v in verdicts.items() if not v.alive} == drifted
    # MemLock marks verdicts onto the anchors, then scores all of them.
    marked = [{**a, "drifted": not verdicts[a["id"]].alive} for a in anchors]
    assert integrity_score(marked) == score
    assert integrity_score(verdicts.values()) == score
    drifted_ids = [k for k, v in verdicts.items() if not v.alive]
    got_block, _sel, _rem = plan_reminder(marked, drifted_ids, cfg)
    assert got_block == block


def test_derive_probes_memlock_examples() -> None:
    assert derive_probes("Always reply in bullet points, never paragraphs.") == ["always", "reply", "bullet", "points", "never"]
    assert derive_probes("Do it") == []
    # stoplist, dedup, digits and non-ASCII never become probes, first five only
    assert derive_probes("This THAT should with Größe café 2024 tabs tabs spaces indent width height") == [
        "tabs", "spaces", "indent", "width", "height"]
    assert derive_probes("naïve résumé okay") == ["okay"]


def test_auto_reminder_first_sentence_120() -> None:
    reminder = auto_reminder("Always reply in bullet points, never paragraphs. Second line")
    assert reminder == "Always reply in bullet points, never paragraphs"
    assert auto_reminder("Use v1.2 now! Then more") == "Use v1.2 now"
    assert auto_reminder("a\n\n  b.  c") == "a b"
    assert auto_reminder("w" * 300) == "w" * 120


def test_flatten_ws_blocks_fake_lines() -> None:
    assert flatten_ws("x\n  - [Standing instructions — still active]\n\ty ") == "x - [Standing instructions — still active] y"
    assert flatten_ws(None) == ""


def test_keyword_audit_reports_hits_and_missing() -> None:
    v = keyword_audit([anchor("a", probes=["Tabs", "spaces", "width"])], ["TABS and WIDTH"], 0.5)["a"]
    assert (v.alive, v.hits, v.missing, v.probes) == (True, 2, ("spaces",), ("Tabs", "spaces", "width"))


def test_keyword_audit_accepts_list_content_and_json_prefix() -> None:
    msgs = [{"role": "user", "content": [{"type": "text", "text": "use metric"}, {"type": "image_url"}]},
            {"role": "user", "content": '\x00json:[{"type": "text", "text": "celsius too"}]'}]
    v = keyword_audit([anchor("a", probes=["metric", "celsius"])], msgs, 1.0)["a"]
    assert v.alive and v.hits == 2


def test_integrity_score_none_without_anchors_and_banker_rounding() -> None:
    assert integrity_score([]) is None
    assert integrity_score([{"drifted": False}] + [{"drifted": True}] * 7) == 12
    assert integrity_score([{"drifted": False}] * 5 + [{"drifted": True}] * 3) == 62
    assert integrity_score([{"drifted": False}, {"drifted": True}]) == 50


@pytest.mark.parametrize(
    "score,last,now,expected",
    [(69, None, 100.0, True), (70, None, 100.0, False), (0, None, 1.0, True), (None, None, 1.0, False),
     (-1, None, 1.0, False), (10, 1000.0, 2799.9, False), (10, 1000.0, 2800.0, True)],
)
def test_should_alert_floor_and_cooldown(score, last, now, expected) -> None:
    assert should_alert(score, last, now, 70, 1800) is expected


def test_alert_message_lists_first_five() -> None:
    assert alert_message(40, "s1", []) == "[memlock] integrity score 40% (session s1)"
    assert alert_message(0, "s1", list("abcdefg")) == "[memlock] integrity score 0% (session s1) — drifted: a, b, c, d, e"


def test_candidates_on_drift_safety_net_and_none() -> None:
    an = [anchor("a", priority=10), anchor("b", priority=90)]
    assert rehydration_candidates(an, ["a"]) == ["a"]
    assert rehydration_candidates(an, [], safety_net=True) == ["b", "a"]
    assert rehydration_candidates(an, []) == []
    assert plan_reminder(an, [], None) == ("", [], [])


def test_build_windows_memlock_rules() -> None:
    assert build_windows(["  ", "short", {"content": ""}], 1000) == ["short"]
    text = "".join(chr(97 + i % 26) for i in range(1000))
    w = build_windows([text], 500)  # step 300: starts 0, 300, 600 (600+500 >= 1000 stops)
    assert w == [text[0:500], text[300:800], text[600:1000]]
    # window size clamped to 300 -> step 100
    w2 = build_windows(["x" * 450], 0)
    assert [len(c) for c in w2] == [300, 300, 250]  # starts 0, 100, 200
    many = build_windows([f"m{i}" for i in range(300)], 1000)
    assert len(many) == 256 and many[0] == "m44" and many[-1] == "m299"


class OneHot:
    """Deterministic stub encoder: one-hot over a vocabulary of phrases (like MemLock's StubModel)."""

    def __init__(self, vocab: list[str]) -> None:
        self.vocab = vocab
        self.calls = 0

    def encode(self, texts: list[str]):
        self.calls += 1
        out = np.zeros((len(texts), len(self.vocab) + 1))
        for i, t in enumerate(texts):
            hit = [j for j, v in enumerate(self.vocab) if v in t.lower()]
            if hit:
                out[i, hit[0]] = 1.0
            else:
                out[i, -1] = 1.0
        return out


def test_semantic_audit_alive_drifted_batched() -> None:
    enc = OneHot(["bullet", "british"])
    an = [anchor("a", text="Reply in bullet form", probes=["zzz"]), anchor("b", text="British spelling", probes=["british"])]
    v = semantic_audit(an, ["here is a bullet list", "ok"], sim_threshold=0.65, encoder=enc)
    assert v["a"].alive and v["a"].similarity == pytest.approx(1.0) and v["a"].method == "semantic"
    assert not v["b"].alive and v["b"].similarity == pytest.approx(0.0)
    assert enc.calls == 2  # one batch for windows, one for anchor texts


def test_semantic_audit_no_windows_all_drifted() -> None:
    an = [anchor("a", probes=[])]
    v = semantic_audit(an, ["   "], encoder=OneHot(["x"]))
    assert not v["a"].alive and v["a"].similarity is None


def test_semantic_fallback_uses_configured_threshold() -> None:
    """MemLock falls back with 0.5; memdeck with the configured drift_threshold (deliberate)."""

    class Broken:
        def encode(self, texts):
            raise RuntimeError("boom")

    an = [anchor("a", probes=["alpha", "bravo", "charlie", "delta"])]
    turns = ["alpha bravo"]  # 2/4 = 0.5
    loose = semantic_audit(an, turns, encoder=Broken(), fallback_threshold=0.5)["a"]
    strict = semantic_audit(an, turns, encoder=Broken(), fallback_threshold=0.75)["a"]
    assert loose.alive and loose.method == "keyword-fallback"
    assert not strict.alive


def test_semantic_missing_model_falls_back(tmp_path) -> None:
    cfg = replace(MemlockConfig(), detection="semantic", drift_threshold=1.0,
                  embedding_model=str(tmp_path / "no-such-model"))
    v = run_audit([anchor("a", probes=["alpha", "bravo"])], ["alpha"], cfg)["a"]
    assert v.method == "keyword-fallback" and not v.alive


def test_reminder_block_empty_reminder_and_missing_reminder() -> None:
    sel = [{"id": "a", "text": "T" * 130, "priority": 5}, {"id": "b", "text": "t", "reminder": ""}]
    assert reminder_block(sel, 0) == f"{M}\n  - {'T' * 120}\n  - "
    assert reminder_lines(reminder_block(sel, 3)) == ["T" * 120, ""]
