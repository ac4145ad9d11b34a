"""Diffs between two observations of a watched file.

* memory: ``added`` / ``removed`` / ``replaced`` (``before`` = old entry text, ``after`` = new).
  A removal and an addition of the same observation are one ``replaced`` when the texts are
  similar (``difflib.SequenceMatcher.ratio() >= 0.5``, :data:`SIMILAR`) or when exactly one
  entry left and one arrived at the same index (Hermes' ``replace`` keeps the entry's place; 0.19
  ``tools/memory_tool.py`` ``replace`` :398-437). Otherwise they stay separate rows.
* anchor: ``anchor_added`` / ``anchor_removed`` / ``anchor_changed`` (before/after = the
  anchor's fields as JSON text), between two canonical contents (``core/history/watched.py``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence

#: similarity at or above which a removal + addition is one ``replaced`` change
SIMILAR = 0.5


def diff_entries(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, str | None, str | None]]:
    """``[(op, before, after)]`` turning entry list ``old`` into ``new`` (see the module docstring
    for when a removal and an addition are one ``replaced``). Order: replaced, removed, added."""
    oldset, newset = set(old), set(new)
    removed = [e for e in old if e not in newset]
    added = [e for e in new if e not in oldset]
    pairs: list[tuple[str, str | None, str | None]] = []
    if len(removed) == 1 and len(added) == 1 and list(old).index(removed[0]) == list(new).index(added[0]):
        return [("replaced", removed[0], added[0])]
    scored = []
    for i, r in enumerate(removed):
        for j, a in enumerate(added):
            sm = difflib.SequenceMatcher(None, r, a, autojunk=False)
            if sm.real_quick_ratio() >= SIMILAR and sm.quick_ratio() >= SIMILAR:
                ratio = sm.ratio()
                if ratio >= SIMILAR:
                    scored.append((-ratio, i, j))
    used_r: set[int] = set()
    used_a: set[int] = set()
    for _neg, i, j in sorted(scored):
        if i in used_r or j in used_a:
            continue
        used_r.add(i)
        used_a.add(j)
        pairs.append(("replaced", removed[i], added[j]))
    pairs += [("removed", r, None) for i, r in enumerate(removed) if i not in used_r]
    pairs += [("added", None, a) for j, a in enumerate(added) if j not in used_a]
    return pairs


def diff_anchors(old: str, new: str) -> list[tuple[str, str | None, str | None, str]]:
    """``[(op, before, after, anchor_id)]`` between two canonical anchor contents."""
    a = json.loads(old).get("anchors") or {}
    b = json.loads(new).get("anchors") or {}
    out: list[tuple[str, str | None, str | None, str]] = []
    for aid in a:
        if aid not in b:
            out.append(("anchor_removed", json.dumps(a[aid], sort_keys=True), None, aid))
        elif a[aid] != b[aid]:
            out.append(("anchor_changed", json.dumps(a[aid], sort_keys=True), json.dumps(b[aid], sort_keys=True), aid))
    for aid in b:
        if aid not in a:
            out.append(("anchor_added", None, json.dumps(b[aid], sort_keys=True), aid))
    return out


__all__ = ["SIMILAR", "diff_anchors", "diff_entries"]
