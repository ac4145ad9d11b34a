"""What differs per session, as live memory delivers it: each difference between a session's frozen
MEMORY/USER block and the files (:func:`memdeck.core.context.frozen.compare`) with the key it is
remembered by and the text the agent may be shown.

An entry the loading Hermes' threat scan blocks is never shown as text: its ``[BLOCKED: ...]``
placeholder is, exactly as a fresh prompt would carry it (Hermes 0.19
``MemoryStore._sanitize_entries_for_snapshot``; 0.22 ``tools/memory_tool_store.py`` ``load_from_disk``
adds the target to its advice), rendered by the ``marker`` the caller passes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..context.frozen import MemoryChange

#: entry text, file name (``MEMORY.md``/``USER.md``) -> the placeholder Hermes puts in a prompt
Marker = Callable[[str, str], str]

FILENAMES = {"memory": "MEMORY.md", "user": "USER.md"}


def entry_hash(change: MemoryChange) -> str:
    """The key a change is remembered by per session: hex sha256 (32 chars) of its target, kind and
    both texts (so the same edit is one key in every process, and an edit undone then made again
    with other text is a new key)."""
    h = hashlib.sha256()
    for part in (change.target, change.change, change.before or "", change.after or ""):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:32]


@dataclass(frozen=True)
class LiveChange:
    """One difference, ready to deliver.

    Attributes:
        key: :func:`entry_hash`.
        target: ``memory`` / ``user``; change: ``added`` / ``replaced`` / ``removed``.
        before: what the session sees (None for ``added``); after: the file's entry as the agent may
            see it (the ``[BLOCKED: ...]`` placeholder for a blocked entry; None for ``removed``).
        blocked: the file's side is blocked by the loading Hermes' threat scan.
        order: the difference's place in the diff (file order, MEMORY first): higher is newer, as
            Hermes appends new entries at the end (0.19 ``MemoryStore.add``).
    """

    key: str
    target: str
    change: str
    before: str | None
    after: str | None
    blocked: bool
    order: int

    @property
    def entry(self) -> str:
        """The entry's text as ``memory.delivery[].entry`` says it (the new text, else the old)."""
        return self.after if self.after is not None else (self.before or "")

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "target": self.target, "change": self.change, "before": self.before,
                "after": self.after, "blocked": self.blocked}


def live_changes(changes: Iterable[MemoryChange], marker: Marker, blocked: Callable[[str], bool]) -> list[LiveChange]:
    """The :class:`LiveChange` of each diff change, in diff order.

    Args:
        changes: :attr:`memdeck.core.context.frozen.FrozenMemory.changes`.
        marker: (text, file name) -> Hermes' placeholder for a blocked entry.
        blocked: text -> whether the loading Hermes blocks it.
    """
    out: list[LiveChange] = []
    for i, c in enumerate(changes):
        after = c.after
        is_blocked = after is not None and not after.startswith("[BLOCKED:") and blocked(after)
        if is_blocked and after is not None:
            after = marker(after, FILENAMES.get(c.target, "MEMORY.md"))
        out.append(LiveChange(entry_hash(c), c.target, c.change, c.before, after, is_blocked, i))
    return out


__all__ = ["FILENAMES", "LiveChange", "Marker", "entry_hash", "live_changes"]
