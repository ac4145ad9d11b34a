"""The figures of one home that the fleet view and ``memdeck metrics`` show.

One typed value, :class:`HomeFigures`, built one way: :func:`figures_from_status` from a
``status --json`` dict: this memdeck's (:func:`memdeck.core.overview.status.build_status` for
``fleet --json``; :func:`memdeck.core.overview.status.status_of` of a local home's kept
:class:`~memdeck.core.overview.reader.HomeReader` for the fleet screen and each scrape of
``memdeck metrics``, :mod:`.local`) or a remote host's ``memdeck status --json`` read over SSH.

A figure memdeck cannot know is None (an older remote memdeck whose ``status --json`` lacks the
key, a store that could not be read), never a guessed 0.

Units: chars (Python ``len``), percent 0-100 (Hermes' rounding, ``core/memory/entries.py``
``usage_pct``), epoch seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..home import TARGETS
from .stale_sessions import StaleSessions, stale_sessions_from_status


@dataclass(frozen=True)
class StoreFigures:
    """One memory target (``memory`` = MEMORY.md, ``user`` = USER.md).

    Attributes:
        chars: usage in chars; limit: char limit in chars; pct: percent 0-100 (Hermes' rounding).
        entries: entries in the file. flagged: entries the threat scan flags (any pattern id).
        exists: the file exists. error: why it could not be read, or None.
    """

    chars: int
    limit: int
    pct: int
    entries: int
    flagged: int
    exists: bool = True
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"chars": self.chars, "limit": self.limit, "pct": self.pct, "entries": self.entries,
                "flagged": self.flagged, "exists": self.exists, "error": self.error}


@dataclass(frozen=True)
class LastChange:
    """The newest change of the change history: ``time`` (epoch s), ``actor`` (``cli``, ``tui``,
    ``plugin``, ``pending``, ``hermes``, ``external``...), ``where`` (``memory``/``user`` or the
    anchor's session / ``global``), ``op`` (``added``, ``removed``, ``replaced``, ``anchor_*``)."""

    time: float
    actor: str
    where: str
    op: str


@dataclass(frozen=True)
class HomeFigures:
    """What the fleet view and the metrics show about one home.

    Attributes:
        home: the home's path (for a remote home, the path on that host). profile: its profile.
        memory: target -> :class:`StoreFigures` (a target that could not be read is absent).
        pending: pending writes waiting for approval. oldest_pending_at: ``created_at`` of the
            oldest (epoch s; None without pending writes or when Hermes recorded none).
        integrity_session: the session the audit follows (the live one, else the newest MemLock
            session file; None when there is none). integrity_score: its integrity score (0-100)
            or None. alert_floor: MemLock's ``memlock.alert_floor`` (0-100), None when unknown.
        drifted_anchors: anchors of that session whose state is ``drifted``.
        audits_below_floor: audit points of that session's integrity history (one per
            compaction, and MemLock's drift log) whose score is below ``alert_floor``.
        compactions: compactions of that session (state.db's count), None when unknown.
        changes_total, changes_by_actor, last_change: the change history (None: unknown).
        stale_sessions: :class:`~.stale_sessions.StaleSessions` (live sessions whose frozen
            memory is out of date with the files; not available until the agent's-view feature).
        provider: ``memory.provider`` (``""`` = built-in only; None = unknown).
        memlock_path, memlock_rule: where MemLock keeps this home's state and by which rule
            (``hermes_home`` = in the home; ``memlock_home`` / ``user_home`` = elsewhere).
        session_store: the message when config.yaml puts the sessions outside state.db, else None.
        state_db: state.db's state (``ok``, ``missing``, ``locked``...), None when unknown.
        hermes_version: which Hermes wrote the home, as memdeck detected it ("" unknown).
        problems: one line per source that could not be read (shown on the row).
        cache_hit_ratio: cache reads over every input token of the API requests memdeck's plugin
            recorded for the home (0-1; ``status --json`` ``cost.hit_ratio``), None when none.
    """

    home: str
    profile: str
    memory: Mapping[str, StoreFigures] = field(default_factory=lambda: MappingProxyType({}))
    pending: int = 0
    oldest_pending_at: float | None = None
    integrity_session: str | None = None
    integrity_score: int | None = None
    alert_floor: int | None = None
    drifted_anchors: int = 0
    audits_below_floor: int | None = None
    compactions: int | None = None
    changes_total: int | None = None
    changes_by_actor: Mapping[str, int] | None = None
    last_change: LastChange | None = None
    stale_sessions: StaleSessions = field(default_factory=StaleSessions)
    provider: str | None = None
    memlock_path: str | None = None
    memlock_rule: str | None = None
    session_store: str | None = None
    state_db: str | None = None
    hermes_version: str = ""
    problems: tuple[str, ...] = ()
    cache_hit_ratio: float | None = None

    @property
    def memlock_elsewhere(self) -> bool:
        """True when MemLock keeps this home's state outside the home (MemLock 0.5's default profile)."""
        return self.memlock_rule not in (None, "hermes_home")

    def oldest_pending_age(self, now: float) -> float | None:
        """Seconds the oldest pending write has waited at ``now`` (epoch s), or None."""
        if self.oldest_pending_at is None or self.oldest_pending_at <= 0:
            return None
        return max(0.0, now - self.oldest_pending_at)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (``memdeck fleet --json``'s ``figures``; the remote rows' cache)."""
        last = None
        if self.last_change is not None:
            c = self.last_change
            last = {"time": c.time, "actor": c.actor, "where": c.where, "op": c.op}
        return {
            "home": self.home, "profile": self.profile,
            "memory": {t: s.to_dict() for t, s in self.memory.items()},
            "pending": self.pending, "oldest_pending_at": self.oldest_pending_at,
            "integrity_session": self.integrity_session, "integrity_score": self.integrity_score,
            "alert_floor": self.alert_floor, "drifted_anchors": self.drifted_anchors,
            "audits_below_floor": self.audits_below_floor, "compactions": self.compactions,
            "changes_total": self.changes_total,
            "changes_by_actor": None if self.changes_by_actor is None else dict(self.changes_by_actor),
            "last_change": last, "stale_sessions": self.stale_sessions.to_dict(), "provider": self.provider,
            "memlock_path": self.memlock_path, "memlock_rule": self.memlock_rule,
            "session_store": self.session_store, "state_db": self.state_db, "hermes_version": self.hermes_version,
            "problems": list(self.problems), "cache_hit_ratio": self.cache_hit_ratio,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HomeFigures:
        """The inverse of :meth:`to_dict`.

        Raises:
            ValueError: ``d`` is not that shape (a damaged cache file).
        """
        try:
            mem = {str(t): StoreFigures(int(s["chars"]), int(s["limit"]), int(s["pct"]), int(s["entries"]),
                                        int(s["flagged"]), bool(s.get("exists", True)), s.get("error"))
                   for t, s in dict(d.get("memory") or {}).items()}
            lc = d.get("last_change")
            last = LastChange(float(lc["time"]), str(lc["actor"]), str(lc["where"]), str(lc["op"])) if lc else None
            by_actor = d.get("changes_by_actor")
            return cls(
                home=str(d["home"]), profile=str(d["profile"]), memory=MappingProxyType(mem),
                pending=int(d.get("pending") or 0), oldest_pending_at=_opt_float(d.get("oldest_pending_at")),
                integrity_session=d.get("integrity_session"), integrity_score=_opt_int(d.get("integrity_score")),
                alert_floor=_opt_int(d.get("alert_floor")), drifted_anchors=int(d.get("drifted_anchors") or 0),
                audits_below_floor=_opt_int(d.get("audits_below_floor")), compactions=_opt_int(d.get("compactions")),
                changes_total=_opt_int(d.get("changes_total")),
                changes_by_actor=None if by_actor is None else MappingProxyType({str(k): int(v) for k, v in dict(by_actor).items()}),
                last_change=last, stale_sessions=StaleSessions.from_dict(d.get("stale_sessions")),
                provider=d.get("provider"), memlock_path=d.get("memlock_path"), memlock_rule=d.get("memlock_rule"),
                session_store=d.get("session_store"), state_db=d.get("state_db"),
                hermes_version=str(d.get("hermes_version") or ""), problems=tuple(str(p) for p in d.get("problems") or ()),
                cache_hit_ratio=_opt_float(d.get("cache_hit_ratio")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a fleet row: {type(exc).__name__}: {exc}") from exc



def _section(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``parent[key]`` when it is a mapping (a section of ``status --json``), else empty."""
    value = parent.get(key)
    return value if isinstance(value, Mapping) else {}

def _opt_int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _opt_float(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _below(points: Any, floor: int | None) -> int | None:
    if floor is None:
        return None
    n = 0
    for p in points:
        score = p.get("score") if isinstance(p, Mapping) else None
        if isinstance(score, (int, float)) and not isinstance(score, bool) and score < floor:
            n += 1
    return n


def _last_change(d: Any) -> LastChange | None:
    if not isinstance(d, Mapping):
        return None
    try:
        return LastChange(float(d["time"]), str(d["actor"]), str(d.get("where") or d.get("target") or ""), str(d["op"]))
    except (KeyError, TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- from status --json


def figures_from_status(status: Mapping[str, Any], *, home: str | None = None, profile: str | None = None,
                        stale_sessions: StaleSessions | None = None) -> HomeFigures:
    """The figures of a ``status --json`` dict (this memdeck's or a remote one's). Never raises:
    a key an older memdeck does not write leaves its figure None, a malformed value too, and
    either is named in :attr:`HomeFigures.problems`.

    Args:
        status: the parsed ``status --json`` object (module docstring of
            :mod:`memdeck.core.overview.status`).
        home, profile: override the ``home`` / ``profile`` the status names (a remote row is
            labelled by its ``ssh://`` address).
        stale_sessions: the stale live sessions, when known (:mod:`.stale_sessions`).
    """
    problems: list[str] = []
    memory: dict[str, StoreFigures] = {}
    mem = _section(status, "memory")
    for t in TARGETS:
        st = mem.get(t)
        if not isinstance(st, Mapping):
            problems.append(f"{t}: not in status")
            continue
        try:
            entries = [e for e in st.get("entries") or () if isinstance(e, Mapping)]
            memory[t] = StoreFigures(int(st["chars"]), int(st["limit"]), int(st["pct"]), len(entries),
                                     sum(1 for e in entries if e.get("threats")), bool(st.get("exists", True)),
                                     st.get("error"))
        except (KeyError, TypeError, ValueError):
            problems.append(f"{t}: malformed in status")
            continue
        if st.get("error"):
            problems.append(f"{t}: {st['error']}")
    pending = [p for p in status.get("pending") or () if isinstance(p, Mapping)]
    created = [float(p["created_at"]) for p in pending
               if isinstance(p.get("created_at"), (int, float)) and not isinstance(p.get("created_at"), bool)
               and p["created_at"] > 0]
    integ = _section(status, "integrity")
    sid = integ.get("session_id")
    floor = _opt_int(status.get("alert_floor"))
    anchors = [a for a in status.get("anchors") or () if isinstance(a, Mapping)]
    compactions = None
    for s in status.get("sessions") or ():
        if isinstance(s, Mapping) and sid is not None and s.get("id") == sid:
            compactions = _opt_int(s.get("compactions"))
    changes = status.get("changes") if isinstance(status.get("changes"), Mapping) else None
    by_actor = None
    if changes is not None and isinstance(changes.get("by_actor"), Mapping):
        by_actor = MappingProxyType({str(k): int(v) for k, v in changes["by_actor"].items()
                                     if isinstance(v, int) and not isinstance(v, bool)})
    loc = _section(status, "memlock_location")
    store = status.get("session_store") if isinstance(status.get("session_store"), Mapping) else None
    db = _section(status, "state_db")
    hermes = _section(status, "hermes")
    for section, why in (status.get("section_errors") or {}).items():
        problems.append(f"{section}: {why}")
    if db.get("state") not in (None, "ok", "missing") and db.get("message"):
        problems.append(f"state.db: {db.get('message')}")
    provider = status.get("memory_provider")
    return HomeFigures(
        home=str(home if home is not None else status.get("home", "")),
        profile=str(profile if profile is not None else status.get("profile", "")),
        memory=MappingProxyType(memory),
        pending=len(pending),
        oldest_pending_at=min(created) if created else None,
        integrity_session=sid if isinstance(sid, str) else None,
        integrity_score=_opt_int(integ.get("score")),
        alert_floor=floor,
        drifted_anchors=sum(1 for a in anchors if a.get("state") == "drifted" and a.get("session_id") == sid),
        audits_below_floor=_below(integ.get("history") or (), floor),
        compactions=compactions,
        changes_total=_opt_int(changes.get("total")) if changes is not None else None,
        changes_by_actor=by_actor,
        last_change=_last_change(changes.get("last")) if changes is not None else None,
        stale_sessions=stale_sessions if stale_sessions is not None else stale_sessions_from_status(status),
        provider=provider if isinstance(provider, str) else None,
        memlock_path=loc.get("path") if isinstance(loc.get("path"), str) else None,
        memlock_rule=loc.get("rule") if isinstance(loc.get("rule"), str) else None,
        session_store=str(store.get("message") or store.get("name")) if store is not None else None,
        state_db=db.get("state") if isinstance(db.get("state"), str) else None,
        hermes_version=str(hermes.get("version") or ""),
        problems=tuple(problems),
        cache_hit_ratio=_opt_float(_section(status, "cost").get("hit_ratio")),
    )
