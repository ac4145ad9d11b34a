"""Static anchors: config ``memlock.anchors`` validated as MemLock does.

:func:`validate_static_anchors` turns the anchors a person writes in ``config.yaml``
(``memlock.anchors``) into MemLock anchor dicts, with MemLock's rules (``_validate_anchors``,
``Sahil-SS9/hermes-memlock`` ``__init__.py:103-142``). ``Guard.on_session_start`` seeds them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..anchors import rules as _rules

logger = logging.getLogger("memdeck.guard")


def validate_static_anchors(anchors: Sequence[Any]) -> list[dict[str, Any]]:
    """Validate config ``memlock.anchors`` exactly as MemLock's ``_validate_anchors`` (``__init__.py:103-142``).

    Drops anchors missing ``id`` or ``text``; rejects a probe-less anchor unless exactly one
    structurally valid anchor is defined (counted over the whole list, so order does not
    matter); default ``reminder`` = ``text[:120]``, default ``priority`` 50, ``pinned`` False.
    Additionally the reminder is whitespace-flattened (it lands in the reminder block) and a
    probes value that is a string counts as one probe. Warnings are logged.

    Returns:
        MemLock anchor dicts ``{id, text, reminder, priority, probes, pinned}``.
    """
    items = [a for a in anchors if isinstance(a, dict)]
    total = sum(1 for a in items if a.get("id") and a.get("text"))
    out: list[dict[str, Any]] = []
    for a in items:
        aid, text = a.get("id", ""), a.get("text", "")
        if not aid or not text:
            logger.warning("memdeck: skipping config anchor missing id or text")
            continue
        probes = _rules.probes_of(a)
        if not probes and total > 1:
            logger.warning("memdeck: config anchor %r has 0 probes and %d anchors are defined; rejecting it", aid, total)
            continue
        if not probes:
            logger.warning("memdeck: config anchor %r has no probes; audits treat it as always alive", aid)
        reminder = a.get("reminder")
        reminder = _rules.flatten_ws(reminder) if reminder else ""
        try:
            priority = int(a.get("priority", 50))
        except (TypeError, ValueError):
            logger.warning("memdeck: config anchor %r has a non-integer priority; using 50", aid)
            priority = 50
        out.append({
            "id": str(aid),
            "text": str(text),
            "reminder": reminder or _rules.flatten_ws(str(text)[:_rules.REMINDER_LINE_CHARS]),
            "priority": priority,
            "probes": probes,
            "pinned": bool(a.get("pinned", False)),
        })
    return out


__all__ = ["validate_static_anchors"]
