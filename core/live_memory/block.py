"""The text live memory appends to a user turn: ``notice`` one line, ``delta`` a fenced block.

The fence is named as Hermes names its own (``<memory-context>`` of 0.19
``agent/memory_manager.py`` ``build_memory_context_block``: an opening tag line, a ``[System note:
...]`` line, a blank line, the content, the closing tag line): ``<memory-update>``. Fence tags inside
entry text are removed, as Hermes' ``sanitize_context`` removes ``<memory-context>`` tags from a
provider's text (``_FENCE_TAG_RE``), so an entry cannot close the fence early.

Pure functions of text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..memory.prompt_block import MEMORY_BLOCK_HEADERS
from .changes import LiveChange

FENCE_OPEN = "<memory-update>"
FENCE_CLOSE = "</memory-update>"
SYSTEM_NOTE = ("[System note: The following is an update to your persistent memory (MEMORY.md / USER.md) made since "
               "this session's system prompt was built, NOT new user input. The memory files are authoritative: where "
               "this update differs from the MEMORY or USER block of your system prompt, this update wins.]")
_FENCE_TAG_RE = re.compile(r"</?\s*memory-(?:update|context)\s*>", re.IGNORECASE)
_MARK = {"added": "+ added: ", "replaced": "~ replaced: ", "removed": "- removed: "}


def clean(text: str) -> str:
    """``text`` without ``<memory-update>`` / ``<memory-context>`` fence tags (any case, inner spaces)."""
    return _FENCE_TAG_RE.sub("", text)


def counts(changes: Sequence[LiveChange]) -> dict[str, int]:
    """``{"added": n, "replaced": n, "removed": n}`` of ``changes``."""
    out = {"added": 0, "replaced": 0, "removed": 0}
    for c in changes:
        out[c.change] = out.get(c.change, 0) + 1
    return out


def notice_line(changes: Sequence[LiveChange]) -> str:
    """The ``notice`` mode's one line (no newline; under 200 chars): how many entries were added,
    replaced and removed, and that the files are authoritative. ``""`` for no change."""
    if not changes:
        return ""
    n = counts(changes)
    parts = ", ".join(f"{v} {k}" for k, v in n.items() if v)
    return (f"[memdeck: your memory changed since this session started ({parts}). MEMORY.md and USER.md are "
            "authoritative over the memory blocks of your system prompt.]")


def _more_line(more: int) -> str:
    return f"({more} more memory change{'s' if more != 1 else ''} wait{'s' if more == 1 else ''} for /new)"


def delta_block(changes: Sequence[LiveChange], more: int = 0) -> str:
    """The ``delta`` mode's block: per target (MEMORY then USER, each under Hermes' block header),
    each change in diff order as ``+ added: <entry>``, ``~ replaced: <old>`` + ``  now: <new>``,
    ``- removed: <entry>``; then ``(N more memory changes wait for /new)`` when ``more`` > 0.

    ``""`` when there is nothing to say (no change and ``more`` == 0).
    """
    if not changes and more <= 0:
        return ""
    lines = [FENCE_OPEN, SYSTEM_NOTE]
    for target in ("memory", "user"):
        mine = sorted((c for c in changes if c.target == target), key=lambda c: c.order)
        if not mine:
            continue
        lines.append("")
        lines.append(MEMORY_BLOCK_HEADERS[target])
        for c in mine:
            if c.change == "replaced":
                lines.append(_MARK["replaced"] + clean(c.before or ""))
                lines.append("  now: " + clean(c.after or ""))
            elif c.change == "added":
                lines.append(_MARK["added"] + clean(c.after or ""))
            else:
                lines.append(_MARK["removed"] + clean(c.before or ""))
    if more > 0:
        lines.append("")
        lines.append(_more_line(more))
    lines.append(FENCE_CLOSE)
    return "\n".join(lines)


__all__ = ["FENCE_CLOSE", "FENCE_OPEN", "SYSTEM_NOTE", "clean", "counts", "delta_block", "notice_line"]
