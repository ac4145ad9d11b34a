"""The anchor lifecycle of a session: pinned, alive, drifted, rehydrated, archived (``audit_session``).

One concept: the dashboard's audit of one session over state.db and the anchor files (the
anchor store is passed in, duck-typed), with each anchor's lifecycle state and the session's
integrity history (:mod:`.integrity_history`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .audit import AnchorVerdict, audited_region, integrity_score, run_audit
from .integrity_history import detection_encoder, integrity_history, session_events, session_system_prompt, verdicts_after
from .rehydration import plan_reminder
from .rules import REMINDER_LINE_CHARS, REMINDER_MARKER, memlock_cfg, reminder_of, sorted_anchors

# ``db`` is a :class:`core.sessions.statedb.StateDB` and ``store`` an
# :class:`core.anchors.store.AnchorStore`, both passed in (never imported here).

#: Lifecycle states of an anchor (MemLock's README diagram; MemLock stores only ``drifted``).
STATES = ("pinned", "alive", "drifted", "rehydrated", "archived")


@dataclass(frozen=True)
class AnchorAudit:
    """One anchor in a :class:`SessionAudit`.

    Attributes:
        anchor: the :class:`core.anchors.Anchor`.
        state: ``pinned`` (no compaction yet), ``alive``, ``drifted``, ``rehydrated``.
        verdict: the audit of the current active region.
        at_last_compaction: the audit of the region right after the last compaction (or None).
        rehydrated_message_id: the user row whose ``api_content`` carried its reminder after
            the last compaction (or None).
        scope: ``global`` when ``persist/`` holds it, else ``session``.
    """

    anchor: Any
    state: str
    verdict: AnchorVerdict
    at_last_compaction: AnchorVerdict | None
    rehydrated_message_id: int | None
    scope: str

    def to_dict(self) -> dict[str, Any]:
        a = self.anchor
        return {
            "id": a.id, "state": self.state, "hits": self.verdict.hits, "probes": list(self.verdict.probes),
            "missing": list(self.verdict.missing), "similarity": self.verdict.similarity,
            "text": a.text, "reminder": a.reminder, "priority": a.priority, "pinned": a.pinned,
            "scope": self.scope, "rehydrated_message_id": self.rehydrated_message_id,
        }


@dataclass(frozen=True)
class SessionAudit:
    """The audit of one session: what MemLock's algorithm says about it now, and its history.

    Attributes:
        session_id: the session.
        score: integrity score (percent 0-100) of the current active region, None without anchors.
        anchors: per-anchor results, MemLock order (priority desc, id).
        reminder_block: the block MemLock would inject at its next audit with the current
            verdicts (``inject`` mode, ``max_slots``, ``max_reminder_chars``); ``""`` for none.
        history: ``[{time, score, casualties, source, ...}]`` oldest first: one point per
            compaction event in state.db merged with MemLock's ``drift_log`` (see
            :func:`integrity_history`).
        compactions: number of compaction events of the session in state.db.
        method: ``keyword``, ``semantic`` or ``keyword-fallback``.
        pending: compactions whose (semantic) verdicts are not computed yet (a bounded first
            history, see :func:`integrity_history`); their points have ``score`` None.
        detection: the :class:`core.anchors.encoder.DetectionStatus` of this audit (None when
            the caller passed its own encoder).
    """

    session_id: str
    score: int | None
    anchors: tuple[AnchorAudit, ...]
    reminder_block: str
    history: tuple[dict[str, Any], ...]
    compactions: int
    method: str
    pending: int = 0
    detection: Any = None

    def to_dict(self) -> dict[str, Any]:
        """The ``audit --json`` shape: ``{session_id, score, anchors:[{id, state, hits, probes, ...}], reminder_block, ...}``."""
        return {
            "session_id": self.session_id,
            "score": self.score,
            "anchors": [a.to_dict() for a in self.anchors],
            "reminder_block": self.reminder_block,
            "history": [dict(h) for h in self.history],
            "compactions": self.compactions,
            "method": self.method,
            "pending": self.pending,
            "detection": self.detection.to_dict() if self.detection is not None else None,
        }



_LEGACY_PIN_ID = re.compile(r"^pin_(\d{9,11})_\d+$")


def anchor_pinned_at(anchor: Any) -> float | None:
    """When an anchor was pinned (epoch seconds), if known: the ``pinned_at`` key memdeck
    writes on its pins, else the time encoded in a MemLock 0.2 id ``pin_<epoch>_<n>``;
    ``None`` for config anchors and uuid-style ids without the key."""
    extra = getattr(anchor, "extra", None) or {}
    value = extra.get("pinned_at")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    m = _LEGACY_PIN_ID.match(str(getattr(anchor, "id", "")))
    return float(m.group(1)) if m else None


def _rehydrated_by(rows: Sequence[Any], after_id: int | None, reminder: str) -> int | None:
    line = f"  - {reminder[:REMINDER_LINE_CHARS]}"
    for m in rows:
        if after_id is not None and m.id <= after_id:
            continue
        if m.role == "user" and m.api_content and REMINDER_MARKER in m.api_content and line in m.api_content:
            return m.id
    return None



def session_anchor_set(store: Any, session_id: str, config: Any = None) -> tuple[Any, list[Any], Any]:
    """``(session, anchors in MemLock order, pins report)``: the session file's anchors, or, when
    the session has no file, what MemLock would seed into it (static config anchors + global
    pins, reference memlock.md §1.3).

    Raises:
        core.errors.UnreadableFile: the session's MemLock file is not valid JSON.
    """
    cfg = memlock_cfg(config if config is not None else store.config)
    session = store.load_session(session_id)
    report = store.load_pins_report()
    if session.anchors or session.path is not None:
        return session, session.sorted_anchors(), report
    return session, sorted_anchors(store.seeded_anchors(cfg, report.pins)), report


class _AuditNow(NamedTuple):
    """The audit of the region MemLock would audit now (:func:`_audit_now`)."""

    cfg: Any
    session: Any
    global_ids: set[str]
    anchors: list[Any]
    system_prompt: str
    rows: Any
    current: Any
    encoder: Any
    detection: Any
    home: Any


def _audit_now(db: Any, store: Any, session_id: str, config: Any, encoder: Any) -> _AuditNow:
    """The audit of the region MemLock would audit now, shared by :func:`audit_session` and
    :func:`reminder_now`; ``encoder`` None: memdeck's verified model when ``detection: semantic``
    (:func:`core.anchors.encoder.semantic_encoder`, whose status is ``detection``)."""
    cfg = memlock_cfg(config if config is not None else store.config)
    session, anchors, report = session_anchor_set(store, session_id, cfg)
    global_ids = {str(p["id"]) for p in report.pins if p.get("scope") == "global"}
    home = getattr(store, "home", None)
    detection = None
    if encoder is None:
        from .encoder import semantic_encoder

        encoder, detection = semantic_encoder(cfg, home)
    encoder, _ident = detection_encoder(cfg, encoder, home)
    system_prompt = session_system_prompt(db, session_id)
    rows = db.active_region(session_id)
    current = run_audit(anchors, audited_region(rows, system_prompt), cfg, encoder=encoder, home=home)
    return _AuditNow(cfg, session, global_ids, anchors, system_prompt, rows, current, encoder, detection, home)


def _reminder_of(anchors: Sequence[Any], current: Any, cfg: Any) -> str:
    drifted_now = [a.id for a in anchors if not current[a.id].alive]
    marked = [{"id": a.id, "text": a.text, "reminder": a.reminder, "priority": a.priority} for a in anchors]
    return plan_reminder(marked, drifted_now, cfg)[0]


def reminder_now(db: Any, store: Any, session_id: str, config: Any = None, *, encoder: Any = None) -> str:
    """The reminder block MemLock would inject at its next audit (``""``: none): exactly
    :attr:`SessionAudit.reminder_block` of :func:`audit_session`, without reading the session's
    compaction history (which only the lifecycle states need).

    Raises:
        core.errors.UnreadableFile: the session's MemLock file is not valid JSON.
    """
    now = _audit_now(db, store, session_id, config, encoder)
    return _reminder_of(now.anchors, now.current, now.cfg)


def fill_history(db: Any, store: Any, session_id: str, config: Any = None, *, budget_s: float,
                 encoder: Any = None, progress: Any = None) -> int:
    """Advance the session's integrity history by at most ``budget_s`` seconds of audits of
    compactions not audited before (newest first), keeping each verdict in memdeck.db, and return
    how many compactions are still not audited (0: the history is complete).

    This is the background half of :func:`audit_session`'s bounded history: the dashboard runs it
    in a worker of its own until it returns 0 (or stops making progress), instead of re-running
    whole refreshes to continue (issue 38: a refresh that found every source unchanged returned
    the previous snapshot, so the history never advanced and the loop spun a core). The verdicts
    it keeps are those :func:`audit_session` then finds cached: the same anchors, config, system
    prompt and encoder key them. A stand-in encoder's verdicts are never cached, so with one the
    count never falls: the caller stops when it does not.

    Args:
        budget_s: seconds of audits (at least one compaction is audited when any is left).
        progress: as :func:`audit_session`'s (it may raise to stop; what was audited is kept).

    Raises:
        core.errors.UnreadableFile: the session's MemLock file is not valid JSON.
    """
    cfg = memlock_cfg(config if config is not None else store.config)
    session, anchors, _report = session_anchor_set(store, session_id, cfg)
    home = getattr(store, "home", None)
    if encoder is None:
        from .encoder import semantic_encoder

        encoder, _status = semantic_encoder(cfg, home)
    points = integrity_history(db, session, anchors, cfg, system_prompt=session_system_prompt(db, session_id),
                               encoder=encoder, events=session_events(db, session_id), home=home,
                               budget_s=max(budget_s, 1e-9), progress=progress)
    return sum(1 for p in points if p.get("pending"))


def audit_session(db: Any, store: Any, session_id: str, config: Any = None, *, encoder: Any = None,
                  with_history: bool = True, budget_s: float | None = None,
                  progress: Any = None) -> SessionAudit:
    """Audit one session from state.db and its MemLock file.

    Anchors: the session file's (or, when there is no file, what MemLock would seed: static
    config anchors + global pins). The current verdicts audit the region MemLock would audit
    now (:func:`audited_region` of the session's active rows). Lifecycle per anchor:

    * ``pinned``: no compaction event yet (``drifted`` when MemLock's file says so, e.g. after
      a safety-net audit), or pinned after the last compaction (:func:`anchor_pinned_at`) and
      not yet seen in the current region (``alive`` once it is);
    * ``alive``: alive in the region right after the last compaction, or alive again now;
    * ``drifted``: not alive after the last compaction, not re-injected and not re-stated since;
    * ``rehydrated``: drifted, and a user row after the last summary row (the compacted
      tail included: Hermes re-inserts the triggering turn there) carries its reminder line
      under the marker in ``api_content``, but the anchor is not alive in the current region yet.

    Args:
        db: a :class:`core.statedb.StateDB`; store: a :class:`core.anchors.AnchorStore`.
        config: ``Config``/``MemlockConfig`` (None: the store's config).
        encoder: a semantic encoder (None: memdeck's verified model, when ``detection:
            semantic``, :func:`core.anchors.encoder.semantic_encoder`).
        budget_s: seconds the history may spend auditing compactions not audited before
            (semantic detection: newest first; the rest are ``pending``); None: no bound.
        progress: ``progress(done, total)`` while compactions are audited for the history
            (default: ``db.progress``); it may raise to stop (what was audited is kept).

    Raises:
        core.errors.UnreadableFile: the session's MemLock file is not valid JSON.
    """
    now = _audit_now(db, store, session_id, config, encoder)
    cfg, session, global_ids, anchors, system_prompt = now.cfg, now.session, now.global_ids, now.anchors, now.system_prompt
    rows, current, encoder, detection, home = now.rows, now.current, now.encoder, now.detection, now.home
    events = session_events(db, session_id)
    last = events[-1] if events else None
    at_last = verdicts_after(db, last, anchors, cfg, system_prompt=system_prompt, encoder=encoder,
                             home=home) if last else {}
    # Rows after the summary row count: with Hermes' preflight compaction the turn that
    # triggered it (whose api_content carries the reminder) is re-inserted in the batch's tail.
    after_id = None
    if last is not None:
        after_id = last.summary_message_id if last.summary_message_id is not None else last.region_last_id
    results = []
    for a in anchors:
        v = current[a.id]
        ev = at_last.get(a.id)
        rehyd = None
        pinned_at = anchor_pinned_at(a)
        if last is not None and pinned_at is not None and pinned_at > float(last.time):
            # pinned after the last compaction: no compaction has tested it yet
            state = "alive" if v.alive else "pinned"
        elif last is None:
            state = "drifted" if a.drifted else "pinned"
        elif ev is not None and ev.alive:
            state = "alive"
        else:
            rehyd = _rehydrated_by(rows, after_id, reminder_of(a))
            if rehyd is not None:
                state = "alive" if v.alive else "rehydrated"
            else:
                state = "alive" if v.alive else "drifted"
        results.append(AnchorAudit(a, state, v, ev, rehyd, "global" if a.id in global_ids else "session"))
    block = _reminder_of(anchors, current, cfg)
    history = integrity_history(db, session, anchors, cfg, system_prompt=system_prompt, encoder=encoder,
                                events=events, audited={last.index: at_last} if last is not None else None,
                                home=home, budget_s=budget_s, progress=progress) if with_history else []
    methods = {v.method for v in current.values()} or {"keyword"}
    # MemLock scores at its first audit (a compaction or the safety net); before any, it has no
    # score (``integrity_score: null``), and neither does memdeck: the anchors wait for one.
    audited = last is not None or session.integrity_score is not None
    return SessionAudit(session_id=session_id, score=integrity_score(current.values()) if audited else None,
                        anchors=tuple(results),
                        reminder_block=block, history=tuple(history), compactions=len(events),
                        method=sorted(methods)[0], pending=sum(1 for h in history if h.get("pending")),
                        detection=detection)
