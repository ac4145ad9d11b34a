"""Reading a memory file without the lock: ``MemoryFileState``, ``read_memory``, ``scan_memory``.

One concept: what a reader (the overview, ``status``, the TUI) sees in MEMORY.md / USER.md. Reads
take no lock: Hermes and memdeck write by atomic rename, so a reader sees a whole old or a whole
new file. Never raises: an unreadable file is a state with ``error`` set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..errors import UnreadableFile
from ..fsio import read_text_strict
from ..home import TARGETS, HermesHome
from .entries import Entry, entries_of, noncanonical_reason, parse_entries, usage_chars, usage_pct
from .threats import scan

#: How many entries of one file a listing for a person shows (the dashboard's Capacity table,
#: plain ``memdeck status``); the rest are counted. A file within its char limit holds far
#: fewer (2,200 chars); only a file far over its limit has more (issue 13 #4).
LISTED_ENTRIES = 2_000


@dataclass(frozen=True)
class MemoryFileState:
    """What a reader sees in one memory file (never raises to build).

    Attributes:
        target: ``"memory"`` or ``"user"``; path: the file.
        exists: the file exists. entries: parsed entries (empty when unreadable).
        chars: usage in chars; limit: char limit; pct: percent 0-100 (Hermes' rounding).
        drift: :func:`noncanonical_reason` or None. error: why the file is unreadable, or None.
        mtime: epoch seconds of the file, or None.
    """

    target: str
    path: Path
    exists: bool
    entries: tuple[Entry, ...]
    chars: int
    limit: int
    pct: int
    drift: str | None = None
    error: str | None = None
    mtime: float | None = None

    @property
    def usage(self) -> str:
        return f"{self.chars:,}/{self.limit:,}"

    @property
    def unscanned(self) -> int:
        """How many entries the threat scan did not reach (a file far over its limit)."""
        return sum(1 for e in self.entries if not e.scanned)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "path": str(self.path), "exists": self.exists, "chars": self.chars,
            "limit": self.limit, "pct": self.pct, "drift": self.drift, "error": self.error,
            "entries": [e.to_dict() for e in self.entries], "unscanned": self.unscanned,
        }


def read_memory(home: HermesHome, config: Config | None, target: str) -> MemoryFileState:
    """Read one target without locking (writes are atomic renames). Never raises.

    Args:
        home: the Hermes home; config: its config (None -> loaded); target: memory|user.
    """
    config = config or load_config(home)
    limit = config.char_limit(target)
    path = home.memory_file(target)
    try:
        raw = read_text_strict(path)
    except UnreadableFile as exc:
        return MemoryFileState(target, path, True, (), 0, limit, 0, None, str(exc), None)
    if raw is None:
        return MemoryFileState(target, path, False, (), 0, limit, 0)
    texts = parse_entries(raw)
    chars = usage_chars(texts)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = None
    return MemoryFileState(target, path, True, entries_of(texts), chars, limit, usage_pct(chars, limit),
                           noncanonical_reason(raw, limit), None, mtime)


def scan_memory(home: HermesHome, config: Config | None = None) -> dict[str, list[dict[str, Any]]]:
    """Findings for every entry on disk: ``{target: [{"id", "text", "chars", "findings": [...]}]}``.

    Only flagged entries are listed. Never raises (unreadable files give no rows).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for t in TARGETS:
        state = read_memory(home, config, t)
        rows = []
        for e in state.entries:
            if e.threats:
                rows.append({**e.to_dict(), "findings": [f.to_dict() for f in scan(e.text)]})
        out[t] = rows
    return out


__all__ = ["MemoryFileState", "read_memory", "scan_memory"]
