"""What changed between two snapshots that a person watching should be told about.

:func:`alerts_between` compares the previous and the new :class:`DeckSnapshot` of one home and
returns an :class:`Alert` for each event worth a toast (the dashboard) or a JSON line
(``memdeck watch``): Hermes staged a new pending write; a memory file crossed
:data:`CAPACITY_ALERT_PCT` of its char limit; the shown session's integrity score fell below
MemLock's ``alert_floor``; a configured memory provider injected nothing for
:attr:`AlertSettings.provider_quiet_turns` user turns in a row; the provider's fences took more
than :attr:`AlertSettings.provider_budget_pct` of the compaction budget; the oldest unreviewed
pending write passed :attr:`AlertSettings.pending_age_hours`. Transitions only: a state that
persists is not repeated, and the first snapshot of a run raises nothing (there is no "before").

The thresholds are the person's: the ``alerts`` table of the dashboard's settings file
(``memdeck.tui.settings``; parsed here, :func:`parse_alert_settings`, so ``watch`` reads the same)::

    [alerts]
    provider_quiet_turns = 3      # user turns in a row with no <memory-context> from the provider
    provider_budget_pct = 20      # percent of the tokens Hermes compacts at
    pending_age_hours = 24        # hours the oldest unreviewed pending write may wait

The provider's share of the budget: Hermes stores each turn's ``<memory-context>`` fence in that
user row's ``api_content`` and replays it on every later request until a compaction drops the row,
so the fences of the active region are all in the next request. Their tokens (Hermes' own
estimate) are set against the threshold the context package computes for the followed session
(``core/context/budget.py`` ``threshold_tokens``: the tokens at which Hermes compacts next), not
against the whole context length: that threshold is what the fences bring closer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..home import TARGET_FILES, TARGETS
from ..text import percent, percent_text

#: Usage (percent 0-100 of the char limit) at which a memory file raises an alert.
CAPACITY_ALERT_PCT = 90


@dataclass(frozen=True)
class AlertSettings:
    """The thresholds of the provider and review alerts (the settings file's ``alerts`` table).

    Attributes:
        provider_quiet_turns: user turns in a row with no provider fence before the provider alert
            (at least 1; default 3).
        provider_budget_pct: percent 0-100 of the compaction threshold the provider's fences may
            take (default 20).
        pending_age_hours: hours the oldest unreviewed pending write may wait (default 24).
        warnings: problems met while parsing (each value that was not usable).
    """

    provider_quiet_turns: int = 3
    provider_budget_pct: float = 20.0
    pending_age_hours: float = 24.0
    warnings: tuple[str, ...] = ()

    @property
    def pending_age_s(self) -> float:
        return self.pending_age_hours * 3600.0


def parse_alert_settings(raw: Any, where: str = "settings") -> AlertSettings:
    """The ``alerts`` table of the settings file (None: the defaults). Never raises: an unusable
    value keeps its default and adds a warning naming ``where``."""
    d = AlertSettings()
    if raw is None:
        return d
    if not isinstance(raw, dict):
        return AlertSettings(warnings=(f"{where}: alerts must be a table; using the defaults",))
    warnings = [f"{where}: unknown setting alerts.{k} ignored" for k in raw
                if k not in ("provider_quiet_turns", "provider_budget_pct", "pending_age_hours")]
    out: dict[str, Any] = {}
    for key, lo, hi, kind in (("provider_quiet_turns", 1, 10_000, int), ("provider_budget_pct", 0.1, 100, float),
                              ("pending_age_hours", 0.01, 24 * 365, float)):
        if key not in raw:
            continue
        v = raw[key]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi
        if kind is int and ok and v != int(v):
            ok = False
        if ok:
            out[key] = kind(v)
        else:
            warnings.append(f"{where}: alerts.{key} = {v!r} is not a number from {lo} to {hi}; using {getattr(d, key)}")
    return AlertSettings(**out, warnings=tuple(warnings))


@dataclass(frozen=True)
class ProviderWatch:
    """What the provider alerts compare between two moments (a snapshot, or ``watch``'s read).

    Attributes:
        session_id: the followed session (None without one).
        provider: the configured memory provider (None: the built-in stores alone).
        quiet: the followed session's newest user turns in a row without a provider fence (None
            when nothing is recorded: Hermes 0.17 / 0.18).
        share: ``{tokens, threshold_tokens, percent}`` of its fences against the compaction
            threshold (:func:`memdeck.core.context.report.provider_share`), or None.
    """

    session_id: str | None = None
    provider: str | None = None
    quiet: int | None = None
    share: Any = None


def provider_watch(snap: Any) -> ProviderWatch:
    """The :class:`ProviderWatch` of a snapshot (its ``provider`` and ``agent_view``)."""
    prov = getattr(snap, "provider", None)
    view = getattr(snap, "agent_view", None)
    inj = getattr(view, "injected", None)
    return ProviderWatch(getattr(view, "followed", None), getattr(prov, "name", None),
                         inj.quiet_turns() if inj is not None else None, getattr(view, "provider_share", None))


def provider_quiet(snap: Any) -> tuple[int, str] | None:
    """``(turns, provider)`` when the home configures a provider and the followed session's newest
    user turns carry no fence from it (``turns`` in a row, at least 1), else None (no provider,
    nothing recorded, or the last turn was injected)."""
    w = provider_watch(snap)
    return (w.quiet, w.provider) if w.provider is not None and w.quiet else None


def oldest_pending_age(snap: Any, now: float | None = None) -> tuple[float, Any] | None:
    """``(seconds, QueueItem)`` of the oldest unreviewed pending write at ``now`` (default the
    snapshot's time), or None (:func:`memdeck.core.memory.review.oldest_unreviewed`)."""
    from ..memory.review import oldest_unreviewed

    now = snap.taken_at if now is None else now
    item = oldest_unreviewed(getattr(snap, "review", ()), now)
    if item is None:
        return None
    return item.age(now) or 0.0, item


def _hours(seconds: float) -> str:
    """``45 min``, ``1.5 h``, ``30 h``, ``3 days``: a duration in a person's words (never ``1.51417 h``)."""
    h = seconds / 3600
    if h < 1:
        return f"{max(1, round(seconds / 60))} min"
    if h < 10:
        return f"{round(h, 1):g} h"
    return f"{h:.0f} h" if h < 48 else f"{h / 24:.0f} days"


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


def alerts_between(prev: Any, snap: Any, settings: AlertSettings | None = None) -> list[Alert]:
    """Alerts for what changed from ``prev`` to ``snap`` (two :class:`DeckSnapshot` of one home),
    with the thresholds of ``settings`` (default :class:`AlertSettings`).

    Returns ``[]`` when ``prev`` is None or either is None.
    """
    if prev is None or snap is None:
        return []
    settings = settings or AlertSettings()
    out: list[Alert] = []
    out += provider_alerts(prev, snap, settings)
    age = pending_age_alert(prev, snap, settings)
    if age is not None:
        out.append(age)
    seen = {p.id for p in prev.pending}
    fresh = [p for p in snap.pending if p.id not in seen]
    again = _staged_again(snap, [p.id for p in fresh])
    for p in fresh:
        flagged = f" · threat scan: {', '.join(p.threats)}" if getattr(p, "threats", ()) else ""
        where = TARGET_FILES.get(p.target, p.target)
        data = {"id": p.id, "action": p.action, "target": p.target, "origin": p.origin,
                "threats": list(getattr(p, "threats", ()))}
        if p.id in again:  # memdeck put it back: the undo of its approval or reject, not a new staging
            undone = "reject" if again[p.id] == "reject" else "approval"
            out.append(Alert("pending", "warning" if flagged else "information", "pending write staged again",
                             f"memdeck staged {p.action or 'a write'} on {where} ({p.id}) again: its {undone} was "
                             f"undone; review it in Review{flagged}", {**data, "staged_again": True}))
            continue
        out.append(Alert("pending", "warning" if flagged else "information", "new pending write",
                         f"{p.origin or 'Hermes'} staged {p.action or 'a write'} on {where} ({p.id}): review it in "
                         f"Review{flagged}", data))
    for t in TARGETS:
        before, now = _pct(prev.memory.get(t)), _pct(snap.memory.get(t))
        if now is not None and now >= CAPACITY_ALERT_PCT and (before is None or before < CAPACITY_ALERT_PCT):
            st = snap.memory[t]
            out.append(Alert("capacity", "warning", f"{TARGET_FILES[t]} at {now}%",
                             f"{TARGET_FILES[t]} uses {st.chars:,} of {st.limit:,} chars: the next write may be "
                             "refused; archive or shorten entries in Capacity",
                             {"target": t, "pct": now, "chars": st.chars, "limit": st.limit}))
    floor = int(snap.config.memlock.alert_floor)
    score = getattr(snap.audit, "score", None)
    old = getattr(prev.audit, "score", None)
    same = prev.session_id == snap.session_id  # switching the shown session is not an event
    if same and score is not None and score < floor and (old is None or old >= floor):
        drifted = [r.anchor.id for r in getattr(snap.audit, "anchors", ()) if r.state == "drifted"]
        out.append(Alert("integrity", "error", f"integrity {score} under the floor of {floor}",
                         f"session {snap.session_id}: {len(drifted)} drifted anchor(s)"
                         + (f": {', '.join(drifted[:5])}" if drifted else ""),
                         {"session_id": snap.session_id, "score": score, "floor": floor, "drifted": drifted}))
    return out


def provider_alerts(prev: Any, snap: Any, settings: AlertSettings) -> list[Alert]:
    """The provider's two alerts between two snapshots (:func:`provider_changes`)."""
    return provider_changes(provider_watch(prev), provider_watch(snap), settings)


def provider_changes(before: ProviderWatch, now: ProviderWatch, settings: AlertSettings) -> list[Alert]:
    """The provider's two alerts (module docstring): quiet for ``provider_quiet_turns`` turns, and
    over ``provider_budget_pct`` of the compaction threshold. Only for the same followed session at
    both moments (switching sessions is not an event) and a provider configured now."""
    if now.session_id is None or before.session_id != now.session_id or now.provider is None:
        return []
    out: list[Alert] = []
    n, name, sid = settings.provider_quiet_turns, now.provider, now.session_id
    if now.quiet is not None and now.quiet >= n and (before.quiet is None or before.quiet < n
                                                      or before.provider != name):
        out.append(Alert("provider_quiet", "warning", f"{name} injected nothing",
                         f"memory provider {name} is configured but injected nothing into the last {now.quiet} user "
                         f"turn{'s' if now.quiet != 1 else ''} of session {sid}: its recall never reached the model "
                         "(Context shows each turn)",
                         {"provider": name, "turns": now.quiet, "threshold": n, "session_id": sid}))
    pct, share, old = settings.provider_budget_pct, now.share, before.share
    def share_pct(s: dict[str, Any]) -> int:  # memdeck's one percent, as the alert's text says it
        return percent(s["tokens"], s["threshold_tokens"])

    if share is not None and share_pct(share) >= pct and (old is None or share_pct(old) < pct):
        out.append(Alert("provider_budget", "warning", f"{name} over {pct:g}% of the budget",
                         f"the <memory-context> fences of {name} in session {sid} take ~{share['tokens']:,} tokens, "
                         f"{percent_text(share['tokens'], share['threshold_tokens'])} of the {share['threshold_tokens']:,} "
                         "at which Hermes compacts (each is replayed with its turn until a compaction)",
                         {"provider": name, "session_id": sid, **share, "threshold_pct": pct}))
    return out


def _staged_again(snap: Any, ids: list[str]) -> dict[str, str]:
    """``{id: op}`` of the new pending records memdeck decided before (so memdeck staged them
    again: :func:`memdeck.core.deck.db.load_decided_pending`); ``{}`` without a home."""
    home = getattr(snap, "home", None)
    if not ids or home is None:
        return {}
    from ..deck.db import load_decided_pending

    return load_decided_pending(home, ids)


def pending_age_of(item: Any, age: float, settings: AlertSettings) -> Alert:
    """The alert for review-queue item ``item`` (:class:`memdeck.core.memory.review.QueueItem`)
    waiting ``age`` seconds, over ``pending_age_hours``."""
    return Alert("pending_age", "warning", f"pending write waiting {_hours(age)}",
                 f"pending write {item.id} ({item.record.action or 'write'} on "
                 f"{TARGET_FILES.get(item.record.target, item.record.target)}) has waited {_hours(age)} for a review "
                 f"(more than {_hours(settings.pending_age_s)}): review it in Review",
                 {"id": item.id, "age_s": round(age), "threshold_h": settings.pending_age_hours,
                  "state": item.state})


def pending_age_alert(prev: Any, snap: Any, settings: AlertSettings, now: float | None = None) -> Alert | None:
    """The alert when the oldest unreviewed pending write passed ``pending_age_hours`` between
    ``prev`` and ``snap`` (at ``now``, default the new snapshot's time; the previous one's age is
    taken at its own time), else None."""
    limit = settings.pending_age_s
    now_age = oldest_pending_age(snap, now)
    if now_age is None or now_age[0] < limit:
        return None
    before = oldest_pending_age(prev)
    if before is not None and before[0] >= limit and before[1].id == now_age[1].id:
        return None
    age, item = now_age
    return pending_age_of(item, age, settings)
