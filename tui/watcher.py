"""What the live watcher looks at and what it ignores.

Hermes replaces MEMORY.md by renaming a ``.mem_XXXXXXXX.tmp`` over it and keeps ``*.lock``
sidecars; MemLock writes ``<file>.json.tmp`` then renames; SQLite touches ``-shm`` and
``-journal`` files on every read. None of that noise should wake the dashboard: only the
files whose content it shows.
"""

from __future__ import annotations

import re
from pathlib import Path

from watchfiles import Change, DefaultFilter

#: Debounce for ``watchfiles.awatch`` in milliseconds (its default, 1,600 ms, feels dead).
DEBOUNCE_MS = 100
#: How often awatch checks for changes while a debounce window is open, in milliseconds.
STEP_MS = 25

_NOISE = re.compile(
    r"""(
        ^\.mem_.*\.tmp$        # Hermes / memdeck atomic-write temp files
      | \.tmp$                 # MemLock and pending-write temp files
      | \.lock$                # sidecar locks (never deleted, touched on every write)
      | \.bak\.\d+$ | \.bak-   # Hermes drift backups, MemLock setup backups
      | -shm$ | -journal$      # SQLite shared memory / rollback journal
      | ^\.\#  | ~$ | \.swp$   # editor droppings
    )""",
    re.VERBOSE,
)

#: The only names of the home directory itself that matter (non-recursive watch).
HOME_NAMES = frozenset({"state.db", "state.db-wal", "config.yaml", "memories", "memlock", "pending"})


class DeckFilter(DefaultFilter):
    """watchfiles filter for the recursive watch of ``memories/``, ``pending/memory/``, ``memlock/``."""

    def __call__(self, change: Change, path: str) -> bool:
        name = Path(path).name
        if _NOISE.search(name):
            return False
        return super().__call__(change, path)


class HomeFilter(DefaultFilter):
    """Filter for the non-recursive watch of the home: state.db, its WAL, config.yaml, new dirs."""

    def __call__(self, change: Change, path: str) -> bool:
        return Path(path).name in HOME_NAMES


def is_noise(name: str) -> bool:
    """True when a file name is write/lock/backup noise the dashboard never reacts to."""
    return bool(_NOISE.search(name))
