"""Issue 34 against the real Hermes: the constraint ledger of compactions made by Hermes' own
compressor.

Each session is real turns of ``AIAgent.run_conversation`` (Hermes 0.19.0 from the main venv,
0.22.2.post1 from its interop venv) against an OpenAI-compatible server on a loopback port written
in the tests (``tests/interop/matrix/driver.py`` ``compress_turns``), then the agent's own
compaction (``AIAgent._compress_context(..., force=True)``, the entry point of ``/compress``): the
agent's ``ContextCompressor`` picks the head and the tail, serialises the compacted turns into its
summary template, asks the summariser and commits the compaction to state.db as that Hermes does.
Only the summariser's reply is scripted; it reproduces the shapes users reported:

* NousResearch/hermes-agent #113537: a one-off instruction ("just this once") promoted into a
  standing line of ``## Constraints & Preferences``;
* PR #96869: a binding rule weakened into narrative ("Force-pushing to main was discussed");
* a safety rule quoted verbatim (0.22's template asks for it);
* a rule the summary drops (#63278, #49307).

0.22 (its default ``lean`` tail) appends every compacted user message verbatim, newest first,
within 24,000 chars, after the model's summary: there a rule is kept by that quote unless newer
messages push it past the budget; ``compression.tail_mode: legacy`` has no such section. The legacy
``[CONTEXT SUMMARY]:`` form (no compressor of 0.19 or 0.22 writes it; both still read it) is
committed through that Hermes' own ``SessionDB.archive_and_compact``, as an older Hermes left it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.constraints.ledger import counts, session_ledger
from memdeck.core.home import HermesHome
from memdeck.core.sessions.statedb import StateDB
from tests.interop.matrix import run
from tests.interop.matrix.run import hermes_or_skip

pytestmark = pytest.mark.interop

HEAD = ["Hi, let's work on the linkhop release today.", "First look at the changelog."]
SAFETY = "Never run rm -rf on the home directory."
ONE_OFF = "Skip the linter just this once, we're in a hurry."
FORCE = "Never force-push to main."
UTC = "Always use UTC timestamps in logs."
RULES = [SAFETY, ONE_OFF, FORCE, UTC]
FILLER = ["Now bump the version number.", "Draft the release notes.", "Tag the release candidate.",
          "Check the CI run.", "Update the README badge.", "Thanks, continue.", "Go on.", "What is left?"]
#: the summariser's reply: the shapes of #113537, PR #96869, a verbatim safety rule, a dropped rule
SHAPES = """## Goal
Ship the linkhop release.

## Constraints & Preferences
- NEVER run rm -rf on the home directory.
- Skip the linter.
- Force-pushing to main was discussed.

## Progress
### Done
- Changelog reviewed, version bumped, release notes drafted.
### In Progress
- Tagging the release candidate."""
#: the same session's summary when nothing was scoped to one operation
PLAIN = """## Goal
Ship the linkhop release.

## Constraints & Preferences
- NEVER run rm -rf on the home directory.
- Never force-push to main.
- Always use UTC timestamps in logs.

## Progress
- Changelog reviewed, version bumped."""
LONG_REPLY = "Noted. " + "Working through the release checklist step by step. " * 60  # ~3,000 chars a turn


def new_home(tmp_path: Path, tail_mode: str | None = None) -> Path:
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    extra = f"compression:\n  tail_mode: {tail_mode}\n" if tail_mode else ""
    (home / "config.yaml").write_text("model:\n  default: test-model\n  provider: custom\n"
                                      "  base_url: http://127.0.0.1:9/v1\n" + extra, encoding="utf-8")
    return home


def compress(py: Path, home: Path, turns: list[str], summary: str, sid: str = "S1") -> dict[str, Any]:
    res = run.drive(py, home, [{"op": "compress_turns", "sid": sid, "turns": turns, "summary": summary,
                                "after": ["What now?"], "reply": LONG_REPLY}], timeout=600)[0]
    assert res["summariser"] == 1, res  # the compressor asked the summariser once
    assert res["summary_rows"] and res["messages_after"] < res["messages_before"], res  # it compacted
    return res


def ledger(home: Path, sid: str = "S1") -> dict[str, Any]:
    h = HermesHome(home)
    with StateDB(h.state_db) as db:
        return session_ledger(db, h, None, sid, semantic=False)


def verdicts(led: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    (comp,) = led["compactions"]
    assert comp["summary_found"]
    return {i["rule"]: (i["verdict"], i["summary_line"]) for i in comp["items"] if i["rule"] is not None}


def _assert_the_four_shapes(led: dict[str, Any]) -> None:
    v = verdicts(led)
    assert v[SAFETY] == ("kept", "NEVER run rm -rf on the home directory."), v
    assert v[ONE_OFF] == ("promoted", "Skip the linter."), v
    assert v[FORCE] == ("weakened", "Force-pushing to main was discussed."), v
    assert v[UTC] == ("lost", None), v
    (comp,) = led["compactions"]
    items = {i["rule"]: i for i in comp["items"] if i["rule"]}
    assert items[ONE_OFF]["scope"] == "once" and items[ONE_OFF]["evidence"]["scope_words"] == ["just this once"]
    assert items[FORCE]["evidence"]["prohibition_lost"] == ["never"]
    assert all(i["source_turn_id"] is not None and i["method"] == "keyword" for i in items.values())
    # the protected head was not compacted: its turns are not in the ledger
    assert not set(HEAD) & set(items)


@pytest.mark.parametrize(("version", "tail_mode"), [("0.19.0", None), ("0.22.2.post1", "legacy")])
def test_the_compressors_summary_shapes_get_their_verdicts(version: str, tail_mode: str | None, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = new_home(tmp_path, tail_mode)
    res = compress(py, home, HEAD + RULES + FILLER, SHAPES)
    # the compressor sent the user's rules to the summariser (they are in the compacted region)
    assert all(r in res["prompt"] for r in RULES), res["prompt"][:3000]
    led = ledger(home)
    _assert_the_four_shapes(led)
    assert counts(led) == {"kept": 1, "weakened": 1, "lost": 1, "promoted": 1, "orphan": 0}


def test_0_22_lean_tail_quotes_rules_verbatim_until_its_budget_runs_out(tmp_path: Path) -> None:
    """0.22's default: the compacted user messages quoted verbatim, newest first, 24,000 chars.
    Rules followed by long pastes run past the budget and get the verdicts of the model's lines."""
    py = hermes_or_skip("0.22.2.post1")
    home = new_home(tmp_path)
    pastes = [f"Here is build log {k}:\n" + "\n".join(f"[{k}:{n:04d}] step ok, 12 files compiled" for n in range(140))
              for k in range(14)]  # ~5,000 chars each: the compacted ones run past the 24,000-char budget
    res = compress(py, home, HEAD + RULES + pastes + FILLER, SHAPES)
    quoted = res["summary_rows"][0].split("## User Messages (verbatim, newest first)")[1]
    assert "Here is build log" in quoted and not any(r in quoted for r in RULES)
    _assert_the_four_shapes(ledger(home))


def test_0_22_lean_verbatim_quote_keeps_a_rule_the_model_weakened_but_not_a_promotion(tmp_path: Path) -> None:
    py = hermes_or_skip("0.22.2.post1")
    home = new_home(tmp_path)
    res = compress(py, home, HEAD + RULES + FILLER, SHAPES)
    assert all("> " + r in res["summary_rows"][0] for r in RULES)
    v = verdicts(ledger(home))
    assert v[FORCE] == ("kept", FORCE)  # quoted verbatim: "override any paraphrase of them above"
    assert v[UTC] == ("kept", UTC)
    assert v[ONE_OFF] == ("promoted", "Skip the linter.")  # a standing line is still in the summary


@pytest.mark.parametrize("version", ["0.19.0", "0.22.2.post1"])
def test_zero_promoted_when_no_instruction_was_scoped(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = new_home(tmp_path, "legacy" if version.startswith("0.22") else None)
    compress(py, home, HEAD + [SAFETY, FORCE, UTC] + FILLER, PLAIN)
    led = ledger(home)
    assert counts(led)["promoted"] == 0
    assert {r: v for r, (v, _line) in verdicts(led).items()} == {SAFETY: "kept", FORCE: "kept", UTC: "kept"}


@pytest.mark.parametrize("version", ["0.19.0", "0.22.2.post1"])
def test_the_legacy_context_summary_form(version: str, tmp_path: Path) -> None:
    py = hermes_or_skip(version)
    home = new_home(tmp_path)
    turns = HEAD + RULES + FILLER[:4]
    cmds: list[dict[str, Any]] = [{"op": "session", "id": "L1", "source": "cli"}]
    for t in turns:
        cmds += [{"op": "msg", "sid": "L1", "role": "user", "content": t},
                 {"op": "msg", "sid": "L1", "role": "assistant", "content": "Noted."}]
    legacy = ("The user is shipping the linkhop release. The user said: never run rm -rf on the home directory. "
              "Skip the linter. Force-pushing to main was discussed. The changelog was reviewed.")
    cmds.append({"op": "compact", "sid": "L1", "head": 2, "tail": 2, "summary": legacy, "legacy": True})
    res = run.drive(py, home, cmds)[-1]
    assert "error" not in res and "unsupported" not in res, res
    led = ledger(home, "L1")
    (comp,) = led["compactions"]
    assert comp["summary_found"], json.dumps(led)[:2000]
    v = {i["rule"]: i["verdict"] for i in comp["items"] if i["rule"]}
    assert v[SAFETY] == "kept" and v[ONE_OFF] == "promoted" and v[FORCE] == "weakened" and v[UTC] == "lost", v
