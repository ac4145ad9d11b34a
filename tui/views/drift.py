"""The Drift log panel's rows and detail: every audit point of the shown session, newest
first, with the compaction it belongs to and the anchors it lost.

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot`. An audit point is
one of :attr:`DeckSnapshot.drift_log`: a mapping ``{time, score, casualties, source,
[event_index, mode, computed_score]}`` (state.db compaction events merged with MemLock's drift
log, whose hand-editable entries may lack keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.text import Text

from ..safe_text import safe_text
from .anchors import anchor_rows
from .common import ago, clock, short_clock

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot
    from memdeck.core.sessions.records import CompactionEvent


@dataclass
class DriftRow:
    """One audit point as a table row (``key`` = ``e:<time>:<event index>``)."""

    key: str
    when: str
    time: float
    score: int | None
    casualties: tuple[str, ...]
    event: Mapping[str, Any]
    cells: tuple[Text, ...] = ()


def drift_rows(snap: DeckSnapshot, now: float) -> list[DriftRow]:
    """The audit points of the shown session as rows (time, score red below the floor, how
    many anchors were lost, which)."""
    floor = int(snap.config.memlock.alert_floor)
    rows = []
    for ev in snap.drift_log:
        when = float(ev.get("time") or 0.0)
        score = ev.get("score")
        cas = tuple(str(c) for c in ev.get("casualties") or ())
        stext = Text("—" if score is None else str(score), justify="right",
                     style="bold red" if isinstance(score, (int, float)) and score < floor else "green")
        cells = (
            Text(short_clock(when, now)),
            stext,
            Text(str(len(cas)), justify="right", style="red" if cas else "dim"),
            safe_text(", ".join(cas) if cas else "—", single_line=True, max_chars=200),
        )
        rows.append(DriftRow(f"e:{when!r}:{ev.get('event_index', '')}", short_clock(when, now), when, score, cas, ev, cells))
    return rows


def drift_detail(snap: DeckSnapshot, r: DriftRow, now: float) -> RenderableType:
    """The audit point under the cursor: its score, the compaction cut it belongs to (mode,
    messages summarised away, the active region after it, the summary message, the child
    session), then each lost anchor with the probes it missed."""
    t = Text()
    t.append(f"audit at {clock(r.time)} ({ago(r.time, now)}) · score ", "")
    t.append("—" if r.score is None else str(r.score), "bold")
    src = r.event.get("source")
    if src:
        t.append(f" · from {src}", "dim")
    comp = event_compaction(snap, r.event)
    t.append("\ncompaction cut: ", "dim")
    if comp is None:
        t.append("no compaction in state.db matches this audit (a safety-net audit, or an older event)", "dim")
    else:
        mode = str(comp.mode).replace("_", "-")
        t.append(f"#{comp.index} {mode} at {clock(comp.time)}")
        t.append(f" · {comp.archived_count} messages summarised away")
        first, last = comp.region_first_id, comp.region_last_id
        if first is not None:
            t.append(f"\n   the active region after it starts at message id {first}")
            if last is not None and last != first:
                t.append(f" (head + summary + kept tail: ids {first}-{last})")
        if comp.summary_message_id is not None:
            t.append(f"\n   summary in message {comp.summary_message_id}")
        if comp.child_session_id:
            t.append("\n   continued in session ")
            t.append_text(safe_text(comp.child_session_id, single_line=True))
    if not r.casualties:
        t.append("\nno casualties: every anchor was alive", "green")
        return t
    rows = {ar.anchor_id: ar for ar in anchor_rows(snap)}
    is_last = comp is not None and bool(snap.compactions) and comp is snap.compactions[-1]
    for aid in r.casualties:
        t.append("\n✗ ", "red")
        t.append_text(safe_text(aid, single_line=True, style="bold"))
        ar = rows.get(aid)
        if ar is None:
            t.append("  (no longer in this session)", "dim")
            continue
        t.append("  ")
        t.append_text(safe_text(ar.reminder, single_line=True, max_chars=120))
        if ar.at_last is not None and is_last:
            missing, label = tuple(ar.at_last.missing), "missing after this compaction"
        else:
            missing, label = ar.missing, "missing now"
        if missing:
            t.append(f"\n   {label}: ", "dim")
            t.append_text(safe_text(", ".join(missing), style="red"))
        elif ar.probes:
            t.append("\n   probes: ", "dim")
            t.append_text(safe_text(", ".join(ar.probes)))
    return t


def event_compaction(snap: DeckSnapshot, event: Mapping[str, Any]) -> CompactionEvent | None:
    """The state.db compaction event an audit point belongs to (by ``event_index``, else the
    last compaction at or before its time); None when no compaction matches."""
    idx = event.get("event_index")
    if idx is not None:
        for c in snap.compactions:
            if c.index == idx:
                return c
    when = float(event.get("time") or 0.0)
    before = [c for c in snap.compactions if float(c.time) <= when + 1e-6]
    if before:
        return max(before, key=lambda c: float(c.time))
    return None
