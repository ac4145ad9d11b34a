"""Pinned pending writes (Hermes 0.22 ``patch`` / ``matched_entry``) without a Hermes install.

The matrix (tests/interop/test_matrix_smoke.py) checks byte parity with the real 0.22; these
pin the rules on a bare home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdeck.core.errors import Refused
from memdeck.core.home import HermesHome
from memdeck.core.memory import staged
from memdeck.core.memory.pending import approve, list_pending


def _home(tmp_path: Path, entries: list[str]) -> HermesHome:
    h = HermesHome(tmp_path / "h")
    (h.path / "memories").mkdir(parents=True)
    (h.path / "memories" / "MEMORY.md").write_text("\n§\n".join(entries), encoding="utf-8")
    return h


def _stage(h: HermesHome, pid: str, payload: dict) -> None:
    d = h.path / "pending" / "memory"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{pid}.json").write_text(json.dumps({"id": pid, "subsystem": "memory", "action": payload["action"],
                                               "summary": "s", "origin": "foreground", "created_at": 1.0,
                                               "payload": payload}), encoding="utf-8")


def test_patch_record_is_listed_and_applied_to_its_pinned_entry(tmp_path: Path) -> None:
    h = _home(tmp_path, ["Use imperial units", "imperial is old"])
    _stage(h, "aaaa0001", {"action": "patch", "target": "memory", "old_text": "imperial", "content": "metric",
                           "matched_entry": "Use imperial units"})
    (rec,) = list_pending(h)
    assert rec.malformed is None and rec.action == "patch" and "entry reviewed: Use imperial units" in rec.text
    approve(h, None, "aaaa0001")
    # substring matching would have been ambiguous; the pin picks exactly the reviewed entry
    assert (h.path / "memories" / "MEMORY.md").read_text() == "Use metric units\n§\nimperial is old"


def test_stale_pin_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    h = _home(tmp_path, ["alpha new fact"])
    _stage(h, "aaaa0002", {"action": "remove", "target": "memory", "old_text": "alpha",
                           "matched_entry": "alpha old fact"})
    with pytest.raises(Refused) as exc:
        approve(h, None, "aaaa0002")
    assert exc.value.code == "stale" and "Entry changed since it was staged" in str(exc.value)
    assert (h.path / "memories" / "MEMORY.md").read_text() == "alpha new fact"
    assert (h.path / "pending" / "memory" / "aaaa0002.json").exists()


def test_unpinned_record_keeps_019_substring_replay(tmp_path: Path) -> None:
    h = _home(tmp_path, ["alpha new fact"])
    _stage(h, "aaaa0003", {"action": "remove", "target": "memory", "old_text": "alpha"})
    approve(h, None, "aaaa0003")
    assert (h.path / "memories" / "MEMORY.md").read_text() == ""


def test_batch_is_all_or_nothing_and_may_not_empty_the_store() -> None:
    pinned = {"action": "batch", "target": "memory", "operations": [
        {"action": "add", "content": "c"}, {"action": "remove", "old_text": "a", "matched_entry": "a"},
        {"action": "patch", "old_text": "b", "content": "B", "matched_entry": "gone"}]}
    with pytest.raises(Refused) as exc:
        staged.compute(pinned, ["a", "b"], 2200)
    assert exc.value.code == "stale" and str(exc.value).startswith("Operation 3 (patch): Entry changed")
    with pytest.raises(Refused) as exc:
        staged.compute({"action": "batch", "target": "memory", "operations": [
            {"action": "remove", "old_text": "a", "matched_entry": "a"}]}, ["a"], 2200)
    assert exc.value.code == "would_empty"


def test_patch_span_twice_and_unpinned_destructive_op_refused() -> None:
    with pytest.raises(Refused) as exc:
        staged.compute({"action": "patch", "old_text": "00", "content": "1", "matched_entry": "1000"}, ["1000"], 99)
    assert exc.value.code == "ambiguous"  # overlapping occurrences count, as in 0.22
    with pytest.raises(Refused) as exc:
        staged.compute({"action": "batch", "operations": [
            {"action": "patch", "old_text": "a", "content": "b", "matched_entry": "a"},
            {"action": "remove", "old_text": "c"}]}, ["a", "c"], 99)
    assert exc.value.code == "unpinned" and "predates entry pinning" in str(exc.value)
