"""The change history of every writer: what changed in the watched files, who did it, and revert.

memdeck keeps, in memdeck.db (tables ``history_seen`` and ``history``, ``core/deck/db.py``
step 2; step 6: ``target`` is the memory target only, anchor rows carry MemLock's ``scope`` and
``session_id``), the last canonical content it saw of every watched file, and one row per change
it found since, with the best attribution it can make (memdeck's journal; a Hermes pending
write; a Hermes memory tool call in state.db; else ``external``).

One module per concept, each importing only those before it in this list:

``watched`` the watched files (MEMORY.md, USER.md, MemLock session files and global pins),
their stamps and canonical content; ``diff`` the diff rules (entries, anchors); ``changes`` the
:class:`Change` record and reading (``list_changes``, ``get_change``); ``attribution`` the
attribution of changes memdeck did not journal (pending writes, state.db tool calls);
``observation`` ``observe`` (record what changed) and ``reattribute``; ``reverting`` ``revert``
(reverse one change through the stores, journaled ``op="revert"``).

Hermes' ``memories/ARCHIVE.jsonl`` is not read: no Hermes 0.17-0.22 writes it
(docs/HERMES_VERSIONS.md §2), so there is no format to follow.

The public names are re-exported here (``from ..history import observe``), each module
imported on first use of one of its names (a CLI command that only observes never imports
``reverting``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .changes import ANCHOR_OPS, MEMORY_OPS, Change, get_change, list_changes
    from .diff import anchor_field_lines, diff_anchors, diff_entries
    from .observation import MAX_CHANGES, observe, reattribute
    from .reverting import revert
    from .watched import canonical_anchors, canonical_memory, watched_files

_HOME_OF = {
    "ANCHOR_OPS": "changes", "MEMORY_OPS": "changes", "Change": "changes", "get_change": "changes",
    "list_changes": "changes", "anchor_field_lines": "diff", "diff_anchors": "diff", "diff_entries": "diff", "MAX_CHANGES": "observation",
    "observe": "observation", "reattribute": "observation", "revert": "reverting",
    "canonical_anchors": "watched", "canonical_memory": "watched", "watched_files": "watched",
}


def __getattr__(name: str) -> Any:
    mod = _HOME_OF.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


__all__ = ["ANCHOR_OPS", "Change", "MAX_CHANGES", "MEMORY_OPS", "anchor_field_lines", "canonical_anchors", "canonical_memory",
           "diff_anchors", "diff_entries", "get_change", "list_changes", "observe", "reattribute", "revert",
           "watched_files"]
