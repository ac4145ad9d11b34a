"""What changed between two snapshots that a person watching should be told about.

:func:`alerts_between` compares the previous and the new :class:`DeckSnapshot` of one home and
returns an :class:`Alert` for each event worth a toast (the dashboard) or a JSON line
(``memdeck watch``): Hermes staged a new pending write; a memory file crossed
:data:`CAPACITY_ALERT_PCT` of its char limit; the shown session's integrity score fell below
MemLock's ``alert_floor``. Transitions only: a state that persists is not repeated, and the
first snapshot of a run raises nothing (there is no "before").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..home import TARGET_FILES, TARGETS

#: Usage (percent 0-100 of the char limit) at which a memory file raises an alert.
CAPACITY_ALERT_PCT = 90


@dataclass(frozen=True)
class Alert:
    """One event for a person.

    Attributes:
        kind: ``pending`` (a new pending write), ``capacity`` (a file crossed 90 %) or
            ``integrity`` (the score fell below the floor).
        severity: ``information``, ``warning`` or ``error`` (Textual's toast severities).
        title: a few words. message: one or two lines; raw data (ids, texts) is not escaped
            here: the caller escapes it for its medium.
        data: the facts behind it, for JSON consumers.
    """

    kind: str
    severity: str
    title: str
    message: str
    data: dict[str, Any]


def _pct(state: Any) -> int | None:
    if state is None or getattr(state, "error", None):
        return None
    limit = int(getattr(state, "limit", 0) or 0)
    return None if limit <= 0 else int(getattr(state, "chars", 0)) * 100 // limit


def alerts_between(prev: Any, snap: Any) -> list[Alert]:
    """Alerts for what changed from ``prev`` to ``snap`` (two :class:`DeckSnapshot` of one home).

    Returns ``[]`` when ``prev`` is None or either is None.
    """
    if prev is None or snap is None:
        return []
    out: list[Alert] = []
    seen = {p.id for p in prev.pending}
    for p in snap.pending:
        if p.id in seen:
            continue
        flagged = f" · threat scan: {', '.join(p.threats)}" if getattr(p, "threats", ()) else ""
        out.append(Alert("pending", "warning" if flagged else "information", "new pending write",
                         f"{p.origin or 'Hermes'} staged {p.action or 'a write'} on {TARGET_FILES.get(p.target, p.target)} "
                         f"({p.id}): review it in Review{flagged}",
                         {"id": p.id, "action": p.action, "target": p.target, "origin": p.origin,
                          "threats": list(getattr(p, "threats", ()))}))
    for t in TARGETS:
        before, now = _pct(prev.memory.get(t)), _pct(snap.memory.get(t))
        if now is not None and now >= CAPACITY_ALERT_PCT and (before is None or before < CAPACITY_ALERT_PCT):
            st = snap.memory[t]
            out.append(Alert("capacity", "warning", f"{TARGET_FILES[t]} at {now} %",
                             f"{TARGET_FILES[t]} uses {st.chars:,} of {st.limit:,} chars: the next write may be "
                             "refused; archive or shorten entries in Capacity",
                             {"target": t, "pct": now, "chars": st.chars, "limit": st.limit}))
    floor = int(snap.config.memlock.alert_floor)
    score = getattr(snap.audit, "score", None)
    old = getattr(prev.audit, "score", None)
    same = prev.session_id == snap.session_id  # switching the shown session is not an event
    if same and score is not None and score < floor and (old is None or old >= floor):
        drifted = [r.anchor.id for r in getattr(snap.audit, "anchors", ()) if r.state == "drifted"]
        out.append(Alert("integrity", "error", f"integrity {score} below the floor {floor}",
                         f"session {snap.session_id}: {len(drifted)} drifted anchor(s)"
                         + (f": {', '.join(drifted[:5])}" if drifted else ""),
                         {"session_id": snap.session_id, "score": score, "floor": floor, "drifted": drifted}))
    return out
