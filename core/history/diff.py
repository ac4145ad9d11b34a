"""Diffs between two observations of a watched file.

* memory: ``added`` / ``removed`` / ``replaced`` (``before`` = old entry text, ``after`` = new).
  A removal and an addition of the same observation are one ``replaced`` when the texts are
  similar (``difflib.SequenceMatcher.ratio() >= 0.5``, :data:`SIMILAR`) or when exactly one
  entry left and one arrived at the same index (Hermes' ``replace`` keeps the entry's place; 0.19
  ``tools/memory_tool.py`` ``replace`` :398-437). Otherwise they stay separate rows.
* anchor: ``anchor_added`` / ``anchor_removed`` / ``anchor_changed`` (before/after = the
  anchor's fields as JSON text), between two canonical contents (``core/history/watched.py``);
  :func:`anchor_field_lines` says such a change field by field, in words (never the JSON).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

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


#: The anchor fields a person reads, in the order they are shown (``core/history/watched.py`` ANCHOR_FIELDS).
SHOWN_FIELDS = ("text", "priority", "probes", "reminder")


def anchor_fields_of(value: str | None) -> dict[str, Any] | None:
    """The anchor fields a history row stores as JSON text (its ``before``/``after``), or None for
    the side that does not exist or cannot be read."""
    if value is None:
        return None
    try:
        d = json.loads(value)
    except (ValueError, TypeError):
        return None
    return d if isinstance(d, dict) else None


def probe_list(v: Any) -> list[str]:
    """An anchor's probes as a list of strings (a stored non-list becomes one probe, None none)."""
    if isinstance(v, list):
        return [str(p) for p in v]
    return [] if v in (None, "") else [str(v)]


def anchor_field_lines(before: str | None, after: str | None) -> list[str]:
    """An anchor change in plain words, one line per field (the CLI's ``history``; the dashboard
    renders the same fields with colours): for a change, each field that changed
    (``priority: 80 -> 90``, ``probes: added "push"; removed "tests"``, a text as
    ``text: "old" -> "new"``) then ``unchanged: ...``; for an addition or a removal, every field.
    ``before``/``after``: the JSON texts a history row stores (None: that side does not exist;
    a side that is not JSON is returned as it is)."""
    b, a = anchor_fields_of(before), anchor_fields_of(after)

    def val(key: str, v: Any) -> str:
        if key == "probes":
            probes = probe_list(v)
            return ", ".join(json.dumps(p, ensure_ascii=False) for p in probes) if probes else "none"
        if key in ("text", "reminder"):
            return json.dumps(str(v or ""), ensure_ascii=False)
        return "none" if v in (None, "") else str(v)

    if (b is None and before is not None) or (a is None and after is not None):
        return [x for x in (before, after) if x is not None]
    if b is None or a is None:
        fields = a if a is not None else b
        return [f"{key}: {val(key, fields.get(key))}" for key in SHOWN_FIELDS] if fields is not None else []
    out: list[str] = []
    same: list[str] = []
    for key in SHOWN_FIELDS:
        old, new = b.get(key), a.get(key)
        if old == new:
            same.append(key)
        elif key == "probes":
            o, n = probe_list(old), probe_list(new)
            came, gone = [p for p in n if p not in o], [p for p in o if p not in n]
            parts = ([f"added {val('probes', came)}"] if came else []) + ([f"removed {val('probes', gone)}"] if gone else [])
            out.append("probes: " + ("; ".join(parts) if parts else f"reordered: {val('probes', n)}"))
        else:
            out.append(f"{key}: {val(key, old)} -> {val(key, new)}")
    if same:
        out.append("unchanged: " + ", ".join(same))
    return out


__all__ = ["SHOWN_FIELDS", "SIMILAR", "anchor_field_lines", "anchor_fields_of", "diff_anchors", "diff_entries",
           "probe_list"]
