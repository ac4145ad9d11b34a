"""The Integrity panel's text: the shown session's score, its facts, Hermes' health line,
the score sparkline and the anchor-state summary.

Pure functions of a :class:`memdeck.core.overview.snapshot.DeckSnapshot`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from ..safe_text import safe_text
from .anchors import anchor_rows
from .common import STATE_STYLES, ago, clock

if TYPE_CHECKING:
    from memdeck.core.overview.snapshot import DeckSnapshot

SPARK = "▁▂▃▄▅▆▇█"


def current_score(snap: DeckSnapshot) -> int | None:
    """The shown session's integrity score (0-100): the audit's
    (:attr:`core.anchors.lifecycle.SessionAudit.score`), else MemLock's stored one
    (:attr:`core.anchors.model.SessionAnchors.integrity_score`); None when neither has one."""
    score = snap.audit.score if snap.audit is not None else None
    if score is None and snap.session_anchors is not None:
        score = snap.session_anchors.integrity_score
    try:  # MemLock's file is hand-editable: a score that is not a number shows as none
        return None if score is None else int(score)
    except (TypeError, ValueError):
        return None


def last_compaction(snap: DeckSnapshot) -> float | None:
    """Epoch seconds of the shown session's last compaction (state.db, else MemLock's file)."""
    if snap.compactions:
        return max(float(c.time) for c in snap.compactions)
    return snap.session_anchors.last_compaction_at if snap.session_anchors is not None else None


def integrity_facts(snap: DeckSnapshot, now: float) -> Text:
    """The facts beside the score: session (live or not), floor, last compaction, detection."""
    floor = int(snap.config.memlock.alert_floor)
    score = current_score(snap)
    audit = snap.audit
    t = Text()
    t.append("session   ", "dim")
    if snap.partial:
        t.append("reading state.db and the anchors… (memory is shown already)", "bold cyan")
    elif snap.session_id:
        t.append_text(safe_text(snap.session_id, single_line=True, style="bold"))
        if snap.live_session is not None and snap.live_session.id == snap.session_id:
            t.append("  ● live", "green")
    else:
        t.append("none (no live session, no MemLock session file)", "dim")
    t.append("\nfloor     ", "dim")
    t.append(f"{floor}")
    if score is not None:
        if score < floor:
            t.append(f"  ▼ {floor - score} below the floor", "bold red")
        else:
            t.append("  ✓ at or above the floor", "green")
    elif snap.session_id:
        waiting = [str(r.anchor.id) for r in (audit.anchors if audit is not None else ()) if r.state == "pinned"]
        t.append("  no audit yet", "bold yellow")
        if waiting:
            shown = ", ".join(waiting[:4]) + (f" +{len(waiting) - 4}" if len(waiting) > 4 else "")
            t.append(" · waiting: ", "dim")
            t.append_text(safe_text(shown, single_line=True, max_chars=80))
    lc = last_compaction(snap)
    t.append("\ncompacted ", "dim")
    if lc:
        t.append(f"{clock(lc)}  ({ago(lc, now)})")
    else:
        t.append("never")
        if score is not None:  # MemLock scores at a compaction; this is the audit run now
            t.append(" · the score is what an audit would give now", "dim")
    n = len(snap.compactions) or (audit.compactions if audit is not None else 0)
    if n:
        t.append(f"  · {n} compaction{'s' if n != 1 else ''}", "dim")
    t.append("\ndetection ", "dim")
    method = audit.method if audit is not None else snap.config.memlock.detection
    det = getattr(audit, "detection", None) if audit is not None else None
    if det is not None and det.degraded:
        t.append(f"{det.configured} configured · {det.active} in use", "bold yellow")
        t.append(f" · inject {snap.config.memlock.inject}")
        t.append("\n  ! ", "bold yellow")
        t.append_text(safe_text(str(det.reason or ""), style="yellow"))
    else:
        t.append(f"{method} · inject {snap.config.memlock.inject}")
        if det is not None and det.active == "semantic":
            t.append(" · model sha256 verified", "green")
    pending = int(getattr(audit, "pending", 0) or 0) if audit is not None else 0
    if pending:
        t.append("\n  … ", "bold cyan")
        t.append(f"semantic history: {n - pending} of {n} compactions audited (newest first); "
                 "the rest follow, each embedded once", "cyan")
    if snap.db_status is None and not snap.partial and snap.session_id:
        t.append("\nstate.db  ", "dim")
        t.append("none in this home: MemLock's own score and drifted flags are shown, no audit of "
                 "the active region", "yellow")
    return t


def hermes_health(snap: DeckSnapshot) -> Text:
    """The health line of the Integrity panel: which Hermes wrote the home (version, schema,
    where the version came from), state.db's state, then every degradation spelled out (one
    line each, from :attr:`DeckSnapshot.hermes_profile`) and the notes, dim."""
    t = Text()
    prof = snap.hermes_profile
    st = snap.db_status.state if snap.db_status is not None else None
    t.append("hermes    ", "dim")
    if prof is None:
        t.append("not detected", "yellow")
    else:
        t.append_text(safe_text(f"Hermes {prof.version}" if prof.version else "Hermes version unknown", single_line=True))
        detail = [f"schema {prof.schema_version}" if prof.schema_version is not None else "no state.db schema"]
        if prof.version_source:
            detail.append(f"from {prof.version_source}")
        t.append_text(safe_text(" (" + ", ".join(detail) + ")", single_line=True, style="dim"))
    if snap.db_status is not None:
        t.append("\nstate.db  ", "dim")
        t.append_text(safe_text(str(st), single_line=True, style="green" if st == "ok" else "bold red"))
        if st != "ok":
            t.append_text(safe_text(" · " + snap.db_status.message, single_line=True, style="red"))
    degradations = tuple(prof.degradations) if prof is not None else ()
    if prof is not None:
        if degradations:
            t.append(f" · {len(degradations)} degradation{'s' if len(degradations) != 1 else ''}", "bold yellow")
        else:
            t.append(" · fully supported", "green")
    for d in degradations:
        t.append("\n  ! ", "bold yellow")
        t.append_text(safe_text(d, style="yellow"))
    for n in (prof.notes if prof is not None else ()):
        t.append("\n  · ", "dim")
        t.append_text(safe_text(n, style="dim"))
    t.append_text(memlock_health(snap))
    return t


def memlock_health(snap: DeckSnapshot) -> Text:
    """The MemLock line of the health block: which ``memlock/`` directory is in use and why
    (:attr:`DeckSnapshot.memlock_location`), and the warning when two places hold MemLock files.
    Empty when MemLock's state is the home's own ``memlock/`` and nothing else holds any (the
    ordinary case: nothing to say)."""
    t = Text()
    loc = snap.memlock_location
    if loc is None or (loc.in_home and not loc.warning):
        return t
    t.append("\nmemlock   ", "dim")
    t.append_text(safe_text(str(loc.path), single_line=True, style="bold"))
    t.append("\n  · ", "dim")
    t.append_text(safe_text(loc.reason, style="dim"))
    if loc.warning:
        t.append("\n  ! ", "bold yellow")
        t.append_text(safe_text(loc.warning, style="yellow"))
    return t


def sparkline(history: Sequence[tuple[float, int]], floor: int, width: int) -> Text:
    """Scores 0-100 as block characters (fixed scale), red below ``floor``; newest at right."""
    if not history:
        return Text("no audits yet: the score appears after the first compaction", style="dim")
    pts = list(history)[-max(1, width // 2):]
    t = Text()
    for _when, score in pts:
        s = max(0, min(100, int(score)))
        ch = SPARK[min(len(SPARK) - 1, s * len(SPARK) // 101)]
        t.append(ch + " ", "red" if s < floor else "green")
    t.append(f"  {pts[0][1]} → {pts[-1][1]}", "dim")
    return t


def anchor_summary(snap: DeckSnapshot) -> Text:
    """``anchors   3 alive · 2 drifted …``: how many anchors of the shown session are in each state."""
    rows = anchor_rows(snap)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.state] = counts.get(r.state, 0) + 1
    t = Text("anchors   ", style="dim")
    if not rows:
        t.append("none", "dim")
        return t
    first = True
    for state in ("pinned", "alive", "drifted", "rehydrated", "static", "archived"):
        if counts.get(state):
            if not first:
                t.append(" · ")
            t.append(f"{counts[state]} {state}", STATE_STYLES.get(state, ""))
            first = False
    return t
