"""The values of a memory write: ``PlannedWrite`` (one file's part of a change, as the write
protocol journals and makes it) and ``WriteResult`` (the outcome every ``MemoryStore`` method
returns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .entries import Entry


@dataclass(frozen=True)
class PlannedWrite:
    """One file's part of a change, as ``MemoryStore._write_ahead`` journals and makes it: the
    journal ``op``, the ``target`` (``memory``/``user``), its whole text ``before`` (as read
    under the lock; None: no file), ``after`` (what is written), and the row's ``detail``."""

    op: str
    target: str
    before: str | None
    after: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class WriteResult:
    """The outcome of a successful (or no-op) write.

    Attributes:
        op: the operation; target: the file written (for ``move``: the destination).
        message: one human sentence (Hermes' wording where one exists).
        changed: False for a no-op (e.g. adding an entry that already exists).
        entries: the target's entries after the write; chars/limit: usage after, in chars.
        entry_id: the entry concerned (new id for add/replace/edit/move), if any.
        journal_id: the journal row (last row for multi-file operations), if written.
        archive_id: for archive/restore. backup: a ``.bak`` path written by ``normalize``.
        details: anything else (e.g. ``source`` for ``move``).
    """

    op: str
    target: str
    message: str
    changed: bool = True
    entries: tuple[Entry, ...] = ()
    chars: int = 0
    limit: int = 0
    entry_id: str | None = None
    journal_id: int | None = None
    archive_id: int | None = None
    backup: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def usage(self) -> str:
        return f"{self.chars:,}/{self.limit:,}"

    @property
    def success(self) -> bool:
        return True

    def get(self, key: str, default: Any = None) -> Any:
        """dict-style access (``result.get("message")``) for callers that treat results as dicts."""
        return self.to_dict().get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": True, "op": self.op, "target": self.target, "message": self.message, "changed": self.changed,
            "usage": self.usage, "chars": self.chars, "limit": self.limit, "entry_id": self.entry_id,
            "journal_id": self.journal_id, "archive_id": self.archive_id, "backup": self.backup,
            "entry_count": len(self.entries), "details": self.details,
        }


__all__ = ["WriteResult"]
