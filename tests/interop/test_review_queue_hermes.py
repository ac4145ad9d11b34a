"""Issue 25, the review queue, against the real Hermes: stale records and the bulk approval.

Each Hermes runs in its own venv through ``tests/interop/matrix/driver.py`` on the same home as
memdeck. Records are staged by Hermes' own write gate (``memory_tool`` with
``memory.write_approval: true``), then Hermes' own ``MemoryStore`` changes the file under some of
them. memdeck's verdict on each record (``core/memory/staleness.py``) must equal what that Hermes'
own approval does (``apply_memory_pending``, run on the same home and put back): stale exactly
when Hermes refuses it for its entry (0.19's replay: no entry matched / several matched; 0.21.5 and
0.22: "Entry changed since it was staged") or applies it without changing a byte; clean exactly
when Hermes' approval changes the file. A bulk approval of 50 records, 5 of them stale, applies
exactly the 45 others, and the files equal that Hermes approving the same 45 in the same order.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.config import load_config
from memdeck.core.deck import journal
from memdeck.core.home import HermesHome
from memdeck.core.memory.pending import list_pending
from memdeck.core.memory.review import approve_all_clean, reject_all_stale, review_queue
from memdeck.core.undo import undo
from tests.interop.matrix import run
from tests.interop.matrix.run import hermes_or_skip
from tests.interop.matrix.run import version_tuple as _vt
from tests.interop.matrix.venvs import versions_to_run

pytestmark = pytest.mark.interop

#: each stages through its own gate (0.17-0.21.4 by old_text, 0.21.5+ pinned): 0.19 and 0.22 by default,
#: every version of the matrix with MEMDECK_INTEROP_FULL=1 (venvs.versions_to_run)
VERSIONS = versions_to_run(("0.19.0", "0.22.2.post1"))
#: the versions the issue names for the bulk approval
BULK_VERSIONS = ["0.19.0", "0.22.2.post1"]


def hermes(version: str) -> Path:
    return hermes_or_skip(version)


def drive(py: Path, home: Path, commands: list[dict[str, Any]]) -> list[Any]:
    """Answers with an ``error`` are Hermes' refusals (what these tests compare); only a driver
    traceback or an unsupported op fails the test."""
    return run.drive(py, home, commands, timeout=900,
                     failed=lambda res: isinstance(res, dict) and (("error" in res and "trace" in res) or "unsupported" in res))


def new_home(tmp_path: Path, name: str) -> Path:
    home = tmp_path / name / "home"
    (home / "memories").mkdir(parents=True)
    return home


def gate(on: bool, limit: int = 2200) -> dict[str, Any]:
    return {"op": "config", "text": f"memory:\n  write_approval: {'true' if on else 'false'}\n"
                                    f"  memory_char_limit: {limit}\n"}


def edit_op(version: str, old: str, entry_after: str, span_new: str) -> dict[str, Any]:
    """A staged edit as this Hermes stages one: ``patch`` of a span on 0.22, else ``replace`` of
    the whole entry."""
    if _vt(version) >= (0, 22):
        return {"action": "patch", "old_text": old, "content": span_new}
    return {"action": "replace", "old_text": old, "content": entry_after}


def hermes_class(r: dict[str, Any]) -> str:
    """Hermes' own approval, in the queue's words: ``clean`` (applied, the file changed), ``stale``
    (refused for its entry, or applied with no change), ``refused`` (refused for another reason)."""
    if r["success"]:
        return "clean" if r["changed"] else "stale"
    err = str(r.get("error") or "")
    if ("Entry changed since it was staged" in err or "No entry matched" in err or "no entry matched" in err
            or "matched multiple" in err or "Multiple entries matched" in err):
        return "stale"
    return "refused"


ENTRIES = ["Use imperial units", "Indent with tabs", "Deploy on fridays", "Editor is vim", "Coffee black",
           "Name the branch after the ticket", "Prefers dark mode"]


@pytest.mark.parametrize("version", VERSIONS)
def test_stale_detection_equals_what_hermes_apply_would_do(version: str, tmp_path: Path) -> None:
    py = hermes(version)
    home = new_home(tmp_path, "stale")
    stage = [
        {"action": "add", "content": "Cite sources"},                                      # clean
        {"action": "add", "content": "Coffee black"},                                      # already there: no-op
        edit_op(version, "imperial", "Use metric units", "metric"),                       # its entry removed below
        {"action": "remove", "old_text": "tabs"},                                          # its entry rewritten below
        {"action": "remove", "old_text": "fridays"},                                       # clean
        edit_op(version, "vim", "Editor is helix", "helix"),                               # clean
        edit_op(version, "Coffee", "Coffee with oat milk", "with oat milk"),                # a second Coffee below
        {"operations": [{"action": "add", "content": "Batch fact"}, {"action": "remove", "old_text": "branch"}]},
        {"operations": [{"action": "add", "content": "Another fact"},
                        edit_op(version, "dark mode", "Prefers light mode", "light mode")]},  # entry removed below
        {"action": "add", "content": "x" * 2300},                                          # over the limit
    ]
    cmds: list[dict[str, Any]] = [gate(False)] + [{"op": "mem", "action": "add", "target": "memory", "content": e}
                                                  for e in ENTRIES] + [gate(True)]
    for s in stage:
        cmds.append({"op": "stage", "target": "memory", **s})
    cmds += [gate(False),
             {"op": "mem", "action": "remove", "target": "memory", "old_text": "Use imperial units"},
             {"op": "mem", "action": "replace", "target": "memory", "old_text": "Indent with tabs",
              "content": "Indent with two spaces"},
             {"op": "mem", "action": "add", "target": "memory", "content": "Coffee, second cup"},
             {"op": "mem", "action": "remove", "target": "memory", "old_text": "Prefers dark mode"}]
    res = drive(py, home, cmds)
    staged = [r["result"]["pending_id"] for r in res if isinstance(r, dict) and (r.get("result") or {}).get("staged")]
    assert len(staged) >= 9, [r for r in res if isinstance(r, dict) and "result" in r]
    dry = drive(py, home, [{"op": "approve_dry", "ids": staged}])[0]["results"]
    theirs = {pid: hermes_class(r) for pid, r in dry.items()}
    h = HermesHome(home)
    ours = {i.id: i.state for i in review_queue(h, load_config(h))}
    assert ours == theirs, {pid: (ours.get(pid), dry[pid]) for pid in staged if ours.get(pid) != theirs[pid]}
    # the issue's rule, word for word: stale exactly when Hermes' apply is refused for its entry or a no-op
    assert {p for p, s in ours.items() if s == "stale"} == {p for p, r in dry.items() if hermes_class(r) == "stale"}
    assert sum(s == "stale" for s in ours.values()) >= 4 and sum(s == "clean" for s in ours.values()) >= 3
    # the reason is Hermes' own words
    for item in review_queue(h, load_config(h)):
        r = dry[item.id]
        if item.state == "stale" and not r["success"]:
            words = "Entry changed since it was staged" if _vt(version) >= (0, 21, 5) else "matched"
            assert words in (item.reason or ""), (item.reason, r)
    # listing wrote nothing: the files and records are as Hermes left them
    assert set(p.id for p in list_pending(h)) == set(staged)


def _bulk_home(py: Path, version: str, home: Path) -> tuple[list[str], set[str]]:
    """60 entries, 50 records staged through Hermes' gate (adds, edits, removes, batches), then 5
    records made stale by Hermes' own writes. Returns (every staged id, the 5 stale ids)."""
    facts = [f"fact {i:02d}: the service number {i} runs on port {8000 + i}" for i in range(60)]
    cmds: list[dict[str, Any]] = [gate(False, 20000)]
    cmds += [{"op": "mem", "action": "add", "target": "memory", "content": f} for f in facts]
    cmds.append(gate(True, 20000))
    kinds: list[str] = []
    for i in range(50):
        if i < 20:
            cmds.append({"op": "stage", "target": "memory", "action": "add", "content": f"new fact {i:02d}: staged by review"})
            kinds.append("add")
        elif i < 35:
            n = i  # entries 20..34
            cmds.append({"op": "stage", "target": "memory", **edit_op(version, f"port {8000 + n}",
                         f"fact {n:02d}: the service number {n} moved to port {9000 + n}", f"moved to port {9000 + n}")})
            kinds.append("edit")
        elif i < 45:
            n = i  # entries 35..44
            cmds.append({"op": "stage", "target": "memory", "action": "remove", "old_text": f"port {8000 + n}"})
            kinds.append("remove")
        else:
            n = i + 10  # entries 55..59
            cmds.append({"op": "stage", "target": "memory", "operations": [
                {"action": "add", "content": f"batch fact {i:02d}"}, {"action": "remove", "old_text": f"port {8000 + n}"}]})
            kinds.append("batch")
    cmds.append(gate(False, 20000))
    # Hermes' own writes make five records stale: two edits, two removes, one batch lose their entry
    for n in (21, 22, 36, 37, 56):
        cmds.append({"op": "mem", "action": "replace", "target": "memory", "old_text": f"port {8000 + n}",
                     "content": f"fact {n:02d}: rewritten by hand"})
    res = drive(py, home, cmds)
    staged = [r["result"]["pending_id"] for r in res if isinstance(r, dict) and (r.get("result") or {}).get("staged")]
    assert len(staged) == 50
    stale = {staged[i] for i in (21, 22, 36, 37, 46)}
    return staged, stale


@pytest.mark.parametrize("version", BULK_VERSIONS)
def test_bulk_approve_of_50_with_5_stale_applies_exactly_45_like_hermes(version: str, tmp_path: Path) -> None:
    py = hermes(version)
    home = new_home(tmp_path, "bulk")
    staged, stale = _bulk_home(py, version, home)
    twin = tmp_path / "twin" / "home"
    shutil.copytree(home, twin)
    h = HermesHome(home)
    queue = review_queue(h, load_config(h))
    assert {i.id for i in queue if i.state == "stale"} == stale
    assert {i.id for i in queue if i.state == "clean"} == set(staged) - stale
    seen: list[str] = []
    summary = approve_all_clean(h, load_config(h), actor="test", on_outcome=lambda o: seen.append(o.id))
    applied = [o.id for o in summary.outcomes if o.outcome == "applied"]
    assert len(applied) == 45 and set(applied) == set(staged) - stale, summary.message()
    assert {o.id for o in summary.outcomes if o.outcome == "skipped"} == stale
    assert summary.count("refused") == 0 and seen == [o.id for o in summary.outcomes]
    assert "approved 45 of 50" in summary.message() and "stale 5" in summary.message()
    # each applied record is its own journaled write, with the bulk's id
    with_bulk = [r for r in journal.entries(h, limit=200) if r.detail.get("bulk") == summary.bulk_id]
    assert sorted(r.detail["pending_id"] for r in with_bulk) == sorted(applied)
    # the stale five are still staged; Hermes approving the same 45 in the same order gives the same files
    assert {p.id for p in list_pending(h)} == stale
    theirs = drive(py, twin, [{"op": "approve_all", "ids": applied}])[0]["results"]
    assert all(r["result"]["success"] for r in theirs), theirs
    for name in ("MEMORY.md", "USER.md"):
        a, b = home / "memories" / name, twin / "memories" / name
        assert (a.read_bytes() if a.exists() else None) == (b.read_bytes() if b.exists() else None), name
    # reject the stale ones: each journaled; undo stages the last one again
    rej = reject_all_stale(h, load_config(h), actor="test")
    assert {o.id for o in rej.outcomes if o.outcome == "rejected"} == stale and not list_pending(h)
    last = [o for o in rej.outcomes if o.outcome == "rejected"][-1]
    out = undo(h, load_config(h), actor="test")
    assert out["id"] == last.id and {p.id for p in list_pending(h)} == {last.id}


@pytest.mark.parametrize("version", BULK_VERSIONS)
def test_a_record_that_turns_stale_during_the_bulk_is_refused_not_applied(version: str, tmp_path: Path) -> None:
    """Two records edit the same entry: both are clean when listed; the first applied makes the
    second stale, which the bulk refuses (kept, nothing written), as Hermes' own apply refuses it."""
    py = hermes(version)
    home = new_home(tmp_path, "race")
    res = drive(py, home, [gate(False), {"op": "mem", "action": "add", "target": "memory", "content": "Use imperial units"},
                           gate(True),
                           {"op": "stage", "target": "memory", "action": "remove", "old_text": "imperial"},
                           {"op": "stage", "target": "memory", **edit_op(version, "imperial", "Use metric units", "metric")}])
    first, second = (r["result"]["pending_id"] for r in res[3:])
    h = HermesHome(home)
    assert [i.state for i in review_queue(h, load_config(h))] == ["clean", "clean"]
    summary = approve_all_clean(h, load_config(h), actor="test")
    assert [(o.id, o.outcome) for o in summary.outcomes] == [(first, "applied"), (second, "refused")]
    refused = summary.outcomes[1]
    dry = drive(py, home, [{"op": "approve_dry", "ids": [second]}])[0]["results"][second]
    assert hermes_class(dry) == "stale" and refused.code in ("stale", "no_match")
    assert [p.id for p in list_pending(h)] == [second]
