"""The Anchors panel's rows and detail: live anchors of the shown session, then archived ones.

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from ..safe_text import safe_text
from .common import STATE_STYLES

if TYPE_CHECKING:
    from memdeck.core.anchors.audit import AnchorVerdict
    from memdeck.core.anchors.model import Anchor
    from memdeck.core.deck.archive import ArchivedItem
    from memdeck.core.overview.snapshot import DeckSnapshot


@dataclass
class AnchorRow:
    """One anchor as a table row.

    Attributes:
        key: ``a:<anchor id>`` for a live anchor, ``x:<archive id>`` for an archived one.
        state: ``pinned``/``alive``/``drifted``/``rehydrated`` (the audit's), or ``archived``.
        hits: probes found in the active region (None without an audit).
        missing: probes not found in the active region.
        scope: ``global``/``session``, ``·static`` appended for a static anchor.
        obj: the :class:`core.anchors.model.Anchor`, or the :class:`core.deck.archive.ArchivedItem`.
        history: how many earlier versions the anchor has.
        at_last: the anchor's verdict at the last compaction (None without one).
        rehydrated_by: the message id that re-injected the anchor's reminder (None when not).
    """

    key: str
    anchor_id: str
    session_id: str | None
    state: str
    priority: int
    hits: int | None
    probes: tuple[str, ...]
    missing: tuple[str, ...]
    scope: str
    reminder: str
    text: str
    obj: Anchor | ArchivedItem | None = None
    history: int = 0
    at_last: AnchorVerdict | None = None
    rehydrated_by: int | None = None

    @property
    def cells(self) -> tuple[Text, ...]:
        probes = f"{self.hits}/{len(self.probes)}" if self.hits is not None else f"–/{len(self.probes)}"
        return (
            Text(self.state, style=STATE_STYLES.get(self.state, "")),
            Text(str(self.priority), justify="right"),
            Text(probes, justify="right"),
            Text(self.scope),
            safe_text(self.anchor_id, single_line=True),
            safe_text(self.reminder, single_line=True, max_chars=200),
        )


def anchor_rows(snap: DeckSnapshot) -> list[AnchorRow]:
    """Live anchors sorted as MemLock re-injects them (priority desc, id asc), then archived."""
    sa = snap.session_anchors
    rows: list[AnchorRow] = []
    if sa is not None:
        audited = {str(aa.anchor.id): aa for aa in snap.audit.anchors} if snap.audit is not None else {}
        anchors = [aa.anchor for aa in audited.values()] if audited else sa.sorted_anchors()
        for a in anchors:
            aa = audited.get(a.id)
            scope = "global" if a.id in snap.global_ids else "session"
            if aa is not None:
                state, v = aa.state, aa.verdict
                hits, missing, probes = v.hits, tuple(v.missing), tuple(v.probes or a.probes)
                scope = aa.scope or scope
            else:  # no audit (no state.db): MemLock's own flag is all there is
                state = "drifted" if a.drifted else "pinned"
                hits, missing, probes = None, (), tuple(a.probes)
            if not a.pinned:
                scope = f"{scope}·static"
            rows.append(
                AnchorRow(
                    key=f"a:{a.id}",
                    anchor_id=a.id,
                    session_id=sa.session_id,
                    state=str(state),
                    priority=int(a.priority),
                    hits=None if hits is None else int(hits),
                    probes=probes,
                    missing=missing,
                    scope=scope,
                    reminder=a.reminder,
                    text=a.text,
                    obj=a,
                    history=len(a.history or ()),
                    at_last=aa.at_last_compaction if aa is not None else None,
                    rehydrated_by=aa.rehydrated_message_id if aa is not None else None,
                )
            )
    for rec in snap.archived:
        if rec.kind != "anchor":
            continue
        payload = rec.payload
        if snap.session_id and str(payload.get("session_id", "")) != snap.session_id:
            continue
        a = payload.get("anchor") or {}
        aid = str(a.get("id", rec.anchor_id))  # else the archive row's anchor_id column
        rows.append(
            AnchorRow(
                key=f"x:{rec.archive_id}",
                anchor_id=aid,
                session_id=str(payload.get("session_id", "")) or None,
                state="archived",
                priority=int(a.get("priority", 0) or 0),
                hits=None,
                probes=tuple(str(p) for p in a.get("probes", []) or []),
                missing=(),
                scope=str(payload.get("scope", "session")),
                reminder=str(a.get("reminder", "")),
                text=str(a.get("text", "")),
                obj=rec,
            )
        )
    return rows


def anchor_detail(r: AnchorRow) -> RenderableType:
    """The anchor under the cursor: state, id, priority, scope, text, reminder, probes (missing
    ones red and struck), and the message that re-injected it."""
    t = Text()
    t.append(r.state.upper(), STATE_STYLES.get(r.state, "bold"))
    t.append("  ")
    t.append_text(safe_text(r.anchor_id, single_line=True, style="bold"))
    t.append(f"  priority {r.priority} · {r.scope}")
    if r.history:
        t.append(f" · {r.history} earlier version{'s' if r.history != 1 else ''}", "dim")
    t.append("\n")
    t.append_text(safe_text(r.text))
    t.append("\nreminder: ", "dim")
    t.append_text(safe_text(r.reminder))
    t.append("\nprobes:   ", "dim")
    missing = set(r.missing)
    for i, p in enumerate(r.probes):
        if i:
            t.append(" ")
        t.append_text(safe_text(p, single_line=True, style="red strike" if p in missing else "green"))
    if r.missing:
        t.append("\nmissing from the active region: ", "dim")
        t.append_text(safe_text(", ".join(r.missing), style="red"))
    if r.rehydrated_by is not None:
        t.append(f"\nreminder re-injected in message {r.rehydrated_by}", "yellow")
    return t
