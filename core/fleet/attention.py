"""What needs attention first: the order of the fleet's rows.

Each row gets reasons, each with a level; the row's level is its highest reason's. Rows are
sorted by level (high first), then by the sum of their reasons' levels, then by the fullest
store, then by label. The levels:

=====  ==============================================================================
3      **act now**: a store at or past :data:`NEAR_LIMIT_PCT` % of its char limit (the next
       write may be refused; the same threshold as the dashboard's toast and the shipped
       ``MemdeckMemoryNearLimit`` alert); the integrity score below MemLock's ``alert_floor``;
       a home memdeck has no figures for at all (unreachable host without earlier data, not a
       Hermes home, unreadable).
2      **look soon**: a pending write older than :data:`PENDING_OLD_S` (a day); drifted
       anchors; live sessions out of date with their memory; a remote home whose figures are
       stale (its host did not answer: the last data is shown); a source that could not be read.
1      **notice**: pending writes waiting; a store at or past :data:`FILLING_PCT` %.
0      nothing to do.
=====  ==============================================================================

The same thresholds are the shipped Prometheus rules (docs/prometheus-rules.yml), so the screen
and the alerts agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..overview.alerts import CAPACITY_ALERT_PCT
from ..text import age_words
from .figures import HomeFigures

#: A store at or past this percent of its char limit is near its limit (level 3).
NEAR_LIMIT_PCT = CAPACITY_ALERT_PCT
#: A store at or past this percent is filling (level 1).
FILLING_PCT = 75
#: A pending write older than this many seconds is old (level 2).
PENDING_OLD_S = 86_400.0


@dataclass(frozen=True)
class Reason:
    """One thing that needs attention: ``level`` 1-3 (module docstring), ``text`` a few words."""

    level: int
    text: str


@dataclass(frozen=True)
class Attention:
    """A row's reasons, most urgent first; ``level`` is the highest (0 without reasons)."""

    reasons: tuple[Reason, ...] = ()

    @property
    def level(self) -> int:
        return max((r.level for r in self.reasons), default=0)

    @property
    def weight(self) -> int:
        return sum(r.level for r in self.reasons)

    def to_dict(self) -> dict[str, object]:
        return {"level": self.level, "reasons": [r.text for r in self.reasons]}


def attention_of(figures: HomeFigures | None, *, now: float, stale: bool = False, error: str | None = None) -> Attention:
    """The reasons a row needs attention (module docstring).

    Args:
        figures: the row's figures, or None when memdeck has none (then ``error`` says why).
        now: epoch seconds (the age of the oldest pending write is measured from it).
        stale: True when ``figures`` are the last data of a host that did not answer.
        error: why the row could not be read now, or None.
    """
    if figures is None:
        return Attention((Reason(3, f"no figures: {error or 'not read'}"),))
    out: list[Reason] = []
    for target, st in figures.memory.items():
        if st.pct >= NEAR_LIMIT_PCT:
            out.append(Reason(3, f"{target} at {st.pct} % of its limit"))
        elif st.pct >= FILLING_PCT:
            out.append(Reason(1, f"{target} at {st.pct} %"))
    score, floor = figures.integrity_score, figures.alert_floor
    if score is not None and floor is not None and score < floor:
        out.append(Reason(3, f"integrity {score} below the floor {floor}"))
    age = figures.oldest_pending_age(now)
    if age is not None and age > PENDING_OLD_S:
        out.append(Reason(2, f"a pending write waits for {age_words(age)}"))
    elif figures.pending:
        out.append(Reason(1, f"{figures.pending} pending"))
    if figures.drifted_anchors:
        out.append(Reason(2, f"{figures.drifted_anchors} drifted anchor{'s' if figures.drifted_anchors != 1 else ''}"))
    if figures.stale_sessions.count:
        out.append(Reason(2, f"{figures.stale_sessions.count} live session(s) out of date"))
    if stale:
        out.append(Reason(2, f"stale: {error or 'the host did not answer'}"))
    for p in figures.problems:
        out.append(Reason(2, p))
    out.sort(key=lambda r: -r.level)
    return Attention(tuple(out))


def sort_key(attention: Attention, figures: HomeFigures | None, label: str) -> tuple[int, int, int, str]:
    """The row order: level, weight, fullest store (all high first), then the label."""
    fullest = max((s.pct for s in figures.memory.values()), default=0) if figures is not None else 0
    return (-attention.level, -attention.weight, -fullest, label)
