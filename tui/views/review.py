"""The Review panel's rows and detail: pending writes and flagged entries, each with its
threat findings highlighted and, when they differ, memdeck's and the loading Hermes' verdicts.

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from rich.console import RenderableType
from rich.text import Text

from memdeck.core.home import TARGET_FILES
from memdeck.core.memory.review import DEFAULT_PENDING_AGE_S, staged_by_words
from memdeck.core.text import age_words

from ..safe_text import safe_text
from .capacity import entry_rows
from .common import findings_for, findings_legend, flag_text, highlighted

if TYPE_CHECKING:
    from memdeck.core.memory.entries import Entry
    from memdeck.core.memory.pending import PendingWrite
    from memdeck.core.memory.threats import Finding
    from memdeck.core.overview.snapshot import DeckSnapshot


@dataclass
class ReviewRow:
    """One pending write (``key`` = ``p:<pending id>``) or flagged entry (``f:<entry row key>``).

    Attributes:
        kind: ``"pending"`` or ``"flagged"``.
        ident: the pending id, or ``#<index>`` of the entry.
        findings: threat findings with their spans in :attr:`text`.
        unplaced: pattern ids the pending write's own scan found that have no span in
            :attr:`text` (empty for entries).
        obj: the :class:`core.memory.pending.PendingWrite` or :class:`core.memory.entries.Entry`.
        verdicts: memdeck's vs the loading Hermes' verdict, when they differ
            (:attr:`DeckSnapshot.threat_differences`).
    """

    key: str
    kind: str
    ident: str
    target: str | None
    action: str
    text: str
    findings: tuple[Finding, ...]
    obj: PendingWrite | Entry
    created_at: float | None = None
    cells: tuple[Text, ...] = ()
    verdicts: Mapping[str, Any] | None = None
    unplaced: tuple[str, ...] = ()

    @property
    def pattern_ids(self) -> tuple[str, ...]:
        """Every flagged pattern id (placed findings, then unplaced ones)."""
        return tuple(f.pattern_id for f in self.findings) + self.unplaced


def verdicts_for(snap: DeckSnapshot, where: str, texts: Sequence[str]) -> Mapping[str, Any] | None:
    """The threat verdict difference (memdeck vs the loading Hermes) for a place and its texts."""
    for d in snap.threat_differences:
        if d.get("where") == where and d.get("text") in texts:
            return d
    return None


def pending_text(p: PendingWrite) -> str:
    """The texts of a pending write's payload (``content``, ``old_text``, each operation of a
    batch), one per line; its summary when the payload has none."""
    payload = p.payload
    parts = []
    for key in ("content", "old_text"):
        v = payload.get(key)
        if v:
            parts.append(str(v))
    ops = payload.get("operations")
    if isinstance(ops, list):
        for op in ops:
            if isinstance(op, Mapping):
                parts.append(f"{op.get('action', '?')}: {op.get('content') or op.get('old_text') or ''}")
    if not parts:
        parts.append(p.summary)
    return "\n".join(parts)


#: How each review state is shown (the ``state`` column).
STATE_STYLES = {"clean": "green", "stale": "bold yellow", "refused": "bold red", "foreign": "cyan",
                "malformed": "bold red", "applying": "bold magenta"}


def queue_item(snap: DeckSnapshot, pending_id: str) -> Any:
    """The review-queue item (:class:`memdeck.core.memory.review.QueueItem`) of a pending id, or None."""
    return next((i for i in getattr(snap, "review", ()) if i.id == pending_id), None)


def review_rows(snap: DeckSnapshot, now: float, age_limit_s: float = DEFAULT_PENDING_AGE_S) -> list[ReviewRow]:
    """Pending writes (oldest first), each with its state (clean, stale, refused, or staged by
    another subsystem) and age (reverse yellow past ``age_limit_s`` seconds), then the entries with
    threat findings or with verdicts that differ between memdeck and the loading Hermes."""
    rows = []
    for p in snap.pending:
        pid = p.id
        target = p.target or p.payload.get("target")
        action = str(p.action or p.payload.get("action", "?"))
        text = p.text or pending_text(p)
        fnd = findings_for(snap, text)
        unplaced = () if fnd else tuple(p.threats)
        item = queue_item(snap, pid)
        state = item.state if item is not None else "?"
        age = now - p.created_at if p.created_at else None
        old = age is not None and age >= age_limit_s and p.staged_by is None
        cells = (
            Text("pending" if p.staged_by is None else "staged", style="yellow" if p.staged_by is None else "cyan"),
            safe_text(pid, single_line=True),
            Text(str(target or "?")),
            Text(action),
            Text(state, style=STATE_STYLES.get(state, "")),
            Text(age_words(age), style="bold reverse yellow" if old else "dim", justify="right"),
            flag_text([f.pattern_id for f in fnd] + list(unplaced)),
            safe_text(text, single_line=True, max_chars=200),
        )
        diff = None
        for d in snap.threat_differences:
            if d.get("where") == f"pending {pid}":
                diff = d
                break
        rows.append(ReviewRow(f"p:{pid}", "pending", pid, target, action, text, fnd, p, p.created_at, cells,
                              verdicts=diff, unplaced=unplaced))
    for er in entry_rows(snap):
        diff = verdicts_for(snap, er.target, (er.text,))
        if not er.findings and not diff:
            continue
        cells = (
            Text("flagged", style="bold red"),
            Text(f"#{er.index}"),
            Text(er.target),
            Text("entry"),
            Text(""),
            Text(""),
            flag_text(f.pattern_id for f in er.findings),
            safe_text(er.text, single_line=True, max_chars=200),
        )
        rows.append(ReviewRow(f"f:{er.key}", "flagged", f"#{er.index}", er.target, "entry", er.text, er.findings, er.entry,
                              None, cells, verdicts=diff))
    return rows


def review_detail(r: ReviewRow, snap: DeckSnapshot | None = None, now: float | None = None) -> RenderableType:
    """The row under the cursor: for a pending write what it does, who staged it, how old it is,
    its state (stale: Hermes' own reason) and what A would do; for a flagged entry what Hermes does
    with it; then the verdicts when they differ, the text with its findings highlighted, and the
    findings."""
    t = Text()
    if r.kind == "pending":
        p = cast("PendingWrite", r.obj)
        item = queue_item(snap, p.id) if snap is not None else None
        if p.malformed:
            t.append("malformed: ", "bold red")
            t.append_text(safe_text(p.malformed, single_line=True))
            t.append("\n")
        t.append("pending write ", "bold yellow")
        t.append_text(safe_text(r.ident, single_line=True, style="bold"))
        t.append(f" · {r.action} → {r.target or '?'}")
        t.append(" · ", "dim")
        t.append_text(safe_text(staged_by_words(p, item.provider if item is not None else None), single_line=True))
        if p.created_at and now is not None:
            t.append(f" · staged {age_words(now - p.created_at)} ago", "dim")
        if p.summary:
            t.append("\n")
            t.append_text(safe_text(p.summary, style="italic"))
        state = item.state if item is not None else None
        if state == "foreign":
            t.append("\nnot Hermes' memory tool's: memdeck never applies it to MEMORY.md/USER.md (A refuses); X "
                     "rejects it\n", "bold cyan")
        elif state == "stale":
            t.append("\nstale: ", "bold yellow")
            t.append_text(safe_text(item.reason or "", style="yellow"))
            t.append("\nA would be refused or change nothing; X rejects it (S rejects every stale one)\n", "dim")
        elif r.pattern_ids:
            t.append("\nA would be refused (the threat scan flags it, below); X rejects it\n", "bold red")
        elif state in ("refused", "malformed") and item is not None:
            t.append("\nA would be refused: ", "bold red")
            t.append_text(safe_text(item.reason or ""))
            t.append("\nX rejects it\n", "dim")
        elif state == "clean":
            t.append("\nclean: A approves, X rejects · e edits it before approving · C approves every clean one\n", "dim")
            from .context import cost_note

            cost = cost_note(snap, r.target, len(r.text or "") + 3) if snap is not None else None
            if cost:  # issue 37: what A costs in prompt cache, said before it writes
                t.append_text(safe_text(f"A's {cost}", style="dim"))
                t.append("\n")
        else:
            t.append("\nA approves, X rejects\n", "dim")
    else:
        t.append("flagged entry ", "bold red")
        t.append(f"{r.ident} in {TARGET_FILES.get(str(r.target), 'USER.md')}")
        v = r.verdicts
        if v is not None and not v.get("hermes"):
            t.append(" · the Hermes that loads it does not flag it: it goes into the next system prompt as is\n", "dim")
        else:
            t.append(" · Hermes replaces it with [BLOCKED: …] in the next system prompt\n", "dim")
    if r.verdicts is not None:
        v = r.verdicts
        t.append("verdicts differ: ", "bold yellow")
        t.append_text(safe_text("memdeck (strict) " + (", ".join(v.get("memdeck") or ()) or "clean") + " · Hermes "
                                + (", ".join(v.get("hermes") or ()) or "clean"), single_line=True))
        t.append("\nrules applied: ", "dim")
        t.append_text(safe_text(str(v.get("rules_text") or ""), style="dim"))
        t.append("\n")
    t.append_text(highlighted(r.text, r.findings))
    t.append_text(findings_legend(r.findings, r.unplaced))
    return t
