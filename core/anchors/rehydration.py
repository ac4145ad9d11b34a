"""Rehydration: which drifted anchors come back, and the reminder block that carries them.

One concept: MemLock's re-injection of drifted anchors (``_select_casualties``,
``_build_reminder_block``): candidate selection within ``max_reminder_chars``, the block text,
and reading a block back. Pure functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .rules import (
    REMINDER_LINE_CHARS,
    REMINDER_LINE_OVERHEAD,
    REMINDER_MARKER,
    anchor_id_of,
    field_of,
    memlock_cfg,
    reminder_of,
    sorted_anchors,
)


def rehydration_candidates(
    anchors: Iterable[Any], drifted_ids: Sequence[str], *, inject: str = "on-drift", safety_net: bool = False
) -> list[str]:
    """The anchor ids MemLock would try to re-inject (``__init__.py:391-399``).

    ``inject: always`` -> every anchor; else the drifted ids; else, on a safety-net turn,
    every anchor; else none.
    """
    all_ids = [anchor_id_of(a) for a in sorted_anchors(anchors)]
    if inject == "always":
        return all_ids
    if drifted_ids:
        return list(drifted_ids)
    if safety_net:
        return all_ids
    return []


def select_casualties(
    anchors: Iterable[Any], candidate_ids: Iterable[str], max_slots: int = 8, max_reminder_chars: int = 600
) -> tuple[list[Any], list[str]]:
    """Pack candidates into the reminder budget (MemLock ``_select_casualties``, ``__init__.py:148-174``).

    Candidates are the anchors whose id is in ``candidate_ids``, ordered priority descending
    then id. Selection stops once ``max_slots`` are chosen; an anchor costing
    ``len(reminder) + 4`` chars that would push the total past ``max_reminder_chars`` is
    skipped and a later, shorter one may still fit. The budget uses the untruncated reminder.

    Returns:
        ``(selected anchors in order, remaining candidate ids)``; remaining holds the skipped
        and the overflow candidates, in order.
    """
    wanted = set(candidate_ids)
    casualties = [a for a in sorted_anchors(anchors) if anchor_id_of(a) in wanted]
    selected: list[Any] = []
    chosen: set[int] = set()
    total = 0
    for i, anchor in enumerate(casualties):
        if len(selected) >= max_slots:
            break
        cost = len(reminder_of(anchor)) + REMINDER_LINE_OVERHEAD
        if total + cost > max_reminder_chars:
            continue
        selected.append(anchor)
        chosen.add(i)
        total += cost
    remaining = [anchor_id_of(a) for i, a in enumerate(casualties) if i not in chosen]
    return selected, remaining


def overflow_line(remaining_count: int) -> str:
    """The last line of a block when candidates were left out (MemLock ``_build_reminder_block``)."""
    return (
        f"  - ({remaining_count} additional instruction(s) not shown — "
        f"the user can run /guard to see the full list)"
    )


def reminder_block(selected: Sequence[Any], remaining_count: int = 0, marker: str = REMINDER_MARKER) -> str:
    """The reminder block MemLock injects (``_build_reminder_block``, ``__init__.py:177-193``).

    Line 1 is :data:`REMINDER_MARKER`; then ``"  - " + reminder[:120]`` per selected anchor;
    then, if ``remaining_count > 0``, :func:`overflow_line`; joined with ``\\n``.

    Returns:
        the block, or ``""`` when nothing is selected (MemLock injects nothing: ``None``).
    """
    if not selected:
        return ""
    lines = [marker]
    for anchor in selected:
        value = field_of(anchor, "reminder", None)
        text = str(field_of(anchor, "text", "") or "") if value is None else str(value)
        lines.append(f"  - {text[:REMINDER_LINE_CHARS]}")
    if remaining_count:
        lines.append(overflow_line(remaining_count))
    return "\n".join(lines)


def plan_reminder(
    anchors: Iterable[Any],
    drifted_ids: Sequence[str],
    config: Any = None,
    *,
    safety_net: bool = False,
) -> tuple[str, list[str], list[str]]:
    """Candidates -> selection -> block, with ``config``'s inject mode and budgets.

    Returns:
        ``(block, selected_ids, remaining_ids)``; ``block`` is ``""`` when nothing is injected.
    """
    cfg = memlock_cfg(config)
    anchors = list(anchors)
    candidates = rehydration_candidates(anchors, drifted_ids, inject=str(cfg.inject), safety_net=safety_net)
    if not candidates:
        return "", [], []
    selected, remaining = select_casualties(anchors, candidates, int(cfg.max_slots), int(cfg.max_reminder_chars))
    return reminder_block(selected, len(remaining)), [anchor_id_of(a) for a in selected], remaining


_OVERFLOW_RE = re.compile(r"^  - \(\d+ additional instruction\(s\) not shown")


def reminder_lines(block: str) -> list[str]:
    """The reminder texts of a block: lines after the marker without ``"  - "``, minus the overflow line."""
    out = []
    for line in block.split("\n")[1:]:
        if line.startswith("  - ") and not _OVERFLOW_RE.match(line):
            out.append(line[4:])
    return out

