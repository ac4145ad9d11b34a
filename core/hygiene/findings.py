"""The values of memory hygiene: a :class:`Finding` (what is wrong, with its evidence), the
:class:`Proposal` that would fix it, and the :class:`HygieneReport` of a home.

Shapes are those of ``memdeck hygiene --json`` (docs/STATUS_JSON.md): a finding is
``{"id", "kind": "duplicate" | "contradiction" | "stale" | "wasteful", "entries": [{"target",
"text", ...}], "evidence", "chars_saved", "proposal"}``; ``chars_saved`` is what the next
session's frozen block would shrink by, in chars (delimiters count, as Hermes counts usage).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

KINDS = ("duplicate", "contradiction", "stale", "wasteful")


@dataclass(frozen=True)
class EntryRef:
    """One entry a finding names: ``target`` (memory | user, or ``archive`` for an archived
    entry, with ``archive_id``), its ``text``, and what the change history knows of it
    (``written_at`` epoch s, ``actor``, ``session_id``; None when memdeck does not know)."""

    target: str
    text: str
    written_at: float | None = None
    actor: str | None = None
    session_id: str | None = None
    archive_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target, "text": self.text, "written_at": self.written_at,
                               "actor": self.actor, "session_id": self.session_id}
        if self.archive_id is not None:
            out["archive_id"] = self.archive_id
        return out


@dataclass(frozen=True)
class Proposal:
    """What would fix a finding: ``action`` ``merge`` (replace ``keep`` with ``text`` and archive
    the rest of ``entries``) or ``archive`` (archive ``entries``), or ``none`` (a contradiction:
    the person picks a side, ``memdeck hygiene apply ID --keep N``)."""

    action: str
    entries: tuple[EntryRef, ...] = ()
    keep: EntryRef | None = None
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "entries": [e.to_dict() for e in self.entries],
                "keep": self.keep.to_dict() if self.keep is not None else None, "text": self.text}


@dataclass(frozen=True)
class Finding:
    """One hygiene finding (see the module docstring for the JSON shape). ``id`` is stable for
    the same kind and entries (8 hex), so ``memdeck hygiene apply ID`` names what was shown."""

    id: str
    kind: str
    entries: tuple[EntryRef, ...]
    evidence: dict[str, Any]
    chars_saved: int
    proposal: Proposal

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "entries": [e.to_dict() for e in self.entries],
                "evidence": self.evidence, "chars_saved": self.chars_saved, "proposal": self.proposal.to_dict()}


def finding_id(kind: str, entries: tuple[EntryRef, ...]) -> str:
    """8 hex of sha256 over the kind and the entries' targets and texts (order-free)."""
    key = kind + "\0" + "\0".join(sorted(f"{e.target}\0{e.text}" for e in entries))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True)
class HygieneReport:
    """Every finding of a home, ranked by ``chars_saved`` (largest first). ``method`` is
    ``semantic`` or ``lexical``; ``note`` says why the lexical method runs, when it does;
    ``unknown`` lists what memdeck could not judge and why (e.g. no change history yet)."""

    method: str
    findings: tuple[Finding, ...] = ()
    note: str | None = None
    unknown: tuple[str, ...] = field(default_factory=tuple)

    def counts(self) -> dict[str, int]:
        return {k: sum(1 for f in self.findings if f.kind == k) for k in KINDS}

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "note": self.note, "counts": self.counts(),
                "findings": [f.to_dict() for f in self.findings], "unknown": list(self.unknown)}
