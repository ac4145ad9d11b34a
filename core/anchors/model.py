"""The anchor model: ``Anchor``, ``SessionAnchors`` (one session file's content), their validation.

One concept: what an anchor and a MemLock session store hold, in memory, read tolerantly from
every MemLock version (missing keys take MemLock's blank-template defaults, ``store.py:44-56`` +
``turn_count`` >= 694ec32; unknown keys are kept and written back), and the checks a new or
edited anchor passes (priority, probes, scope). Files are :mod:`.files`; writes :mod:`.store`.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..coerce import as_int
from ..errors import Refused
from . import audit as _audit
from . import rules as _rules

#: Prior versions kept per anchor by ``update`` (MemLock >= 0.4 ``HISTORY_CAP``).
HISTORY_CAP = 5
#: The longest anchor text memdeck accepts, in chars. A pin is re-injected into the user's next
#: message every time it drifts, within MemLock's ``max_reminder_chars`` (600 by default), and
#: audited every turn: standing instructions are a sentence or two. Longer text belongs in
#: MEMORY.md or a skill (and a prompt-injected model must not pin a 2 MB payload).
MAX_ANCHOR_CHARS = 2000
MANIFEST_VERSION = 1
#: Priority range of a pin (MemLock clamps to it; memdeck refuses values outside it).
PRIORITY_MIN, PRIORITY_MAX = 1, 100
SCOPES = ("session", "global")

_ANCHOR_KEYS = ("id", "text", "reminder", "priority", "probes", "pinned", "drifted", "last_alive_turn", "history")
#: Every top-level key of a session file, in MemLock's order (0.2 template + 694ec32 turn_count).
_SESSION_KEYS = (
    "session_id", "anchors", "static_anchor_ids", "pinned_count", "last_summary_hash",
    "last_compaction_at", "integrity_score", "drift_log", "last_alert_at", "last_reinject_turn",
    "turn_count",
)


def new_pin_id(existing: Iterable[str] = ()) -> str:
    """A fresh pin id in MemLock >= 694ec32 format ``pin_<8 hex>`` not in ``existing``."""
    taken = set(existing)
    while True:
        candidate = f"pin_{uuid.uuid4().hex[:8]}"
        if candidate not in taken:
            return candidate


def _score(value: Any) -> int | None:
    """A file's ``integrity_score``: an int (MemLock writes 0-100) or None when absent or not a
    finite number (a hand-edited ``[1, 2]`` or ``NaN`` is no score)."""
    n = _rules.as_number(value)
    return None if n is None else int(n)


def dump_json(data: Any) -> str:
    """JSON exactly as MemLock writes it: ``indent=2``, ``ensure_ascii=False``, no final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def anchors_sha256(anchors: Any) -> str:
    """MemLock >= 0.5 ``self_sha256``: sha256 of ``json.dumps(anchors, sort_keys=True, ensure_ascii=False)``."""
    return hashlib.sha256(json.dumps(anchors, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass
class Anchor:
    """One anchor record of a MemLock session file (``store.py:94-121`` ``add_anchor``).

    Attributes:
        id: ``pin_<8 hex>`` (>= 694ec32), ``pin_<epoch>_<n>`` (older) or a config id.
        text: the full instruction (whitespace-flattened when memdeck writes it).
        reminder: the short form that gets re-injected (<= 120 chars shown).
        priority: 1-100 for pins; higher is re-injected first.
        probes: keywords of the keyword audit.
        pinned: True for pins, False for static config anchors.
        drifted: result of the last audit.
        last_alive_turn: turn of the last audit that found it alive (0 = never).
        history: prior versions ``[{text, reminder, priority, probes, updated_at}]`` oldest
            first (MemLock >= 0.4), ``None`` when the file has no ``history`` key.
        extra: unknown keys, preserved on write.
    """

    id: str
    text: str
    reminder: str
    priority: int = 50
    probes: list[str] = field(default_factory=list)
    pinned: bool = True
    drifted: bool = False
    last_alive_turn: int = 0
    history: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any], anchor_id: str | None = None) -> Anchor:
        """Build from a file record; tolerant of missing keys and odd types."""
        aid = str(data.get("id") or anchor_id or "")
        text = data.get("text")
        text = "" if text is None else str(text)
        reminder = data.get("reminder")
        history = data.get("history")
        return cls(
            id=aid,
            text=text,
            reminder=text[: _rules.REMINDER_LINE_CHARS] if reminder is None else str(reminder),
            priority=as_int(data.get("priority", 50), 50),
            probes=_rules.probes_of(data),
            pinned=bool(data.get("pinned", False)),
            drifted=bool(data.get("drifted", False)),
            last_alive_turn=as_int(data.get("last_alive_turn", 0), 0),
            history=[h for h in history if isinstance(h, dict)] if isinstance(history, list) else None,
            extra={k: v for k, v in data.items() if k not in _ANCHOR_KEYS},
        )

    def to_dict(self) -> dict[str, Any]:
        """The file record, MemLock's key order, extras last."""
        d: dict[str, Any] = {
            "id": self.id,
            "text": self.text,
            "reminder": self.reminder,
            "priority": self.priority,
            "probes": list(self.probes),
            "pinned": self.pinned,
            "drifted": self.drifted,
            "last_alive_turn": self.last_alive_turn,
        }
        if self.history is not None:
            d["history"] = [dict(h) for h in self.history]
        d.update(self.extra)
        return d

    def version_entry(self, now: float) -> dict[str, Any]:
        """The ``history`` entry recording this anchor's current content (MemLock ``update_anchor``)."""
        return {"text": self.text, "reminder": self.reminder, "priority": self.priority,
                "probes": list(self.probes), "updated_at": now}


@dataclass
class SessionAnchors:
    """A MemLock session file (every version's keys; unknown keys kept in ``extra``).

    Attributes mirror the file (reference §1.2): ``session_id`` (from inside the file),
    ``anchors`` (id -> :class:`Anchor`, file order), ``static_anchor_ids``, ``pinned_count``,
    ``last_summary_hash``, ``last_compaction_at`` (epoch s), ``integrity_score`` (0-100 or
    None), ``drift_log`` ([{time, score, casualties[, reverse]}], last 20),
    ``last_alert_at`` (epoch s), ``last_reinject_turn``, ``turn_count`` (>= 694ec32).
    ``path`` is where it was read from; ``sha_ok`` is None without a ``self_sha256`` key,
    else whether it matched (advisory, as in MemLock >= 0.5).
    """

    session_id: str
    anchors: dict[str, Anchor] = field(default_factory=dict)
    static_anchor_ids: list[str] = field(default_factory=list)
    pinned_count: int = 0
    last_summary_hash: str | None = None
    last_compaction_at: float | None = None
    integrity_score: int | None = None
    drift_log: list[dict[str, Any]] = field(default_factory=list)
    last_alert_at: float | None = None
    last_reinject_turn: int = 0
    turn_count: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    sha_ok: bool | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any], fallback_session_id: str = "", path: Path | None = None) -> SessionAnchors:
        """Overlay a file's dict onto MemLock's blank template (``store.py:72-84``)."""
        if not isinstance(data, dict):
            raise ValueError("a MemLock session file must hold a JSON object")
        raw_anchors = data.get("anchors") or {}
        anchors: dict[str, Anchor] = {}
        if isinstance(raw_anchors, dict):
            for key, rec in raw_anchors.items():
                if isinstance(rec, dict):
                    a = Anchor.from_dict(rec, str(key))
                    anchors[str(key)] = a
        stored_sha = data.get("self_sha256")
        sha_ok = None if not stored_sha else anchors_sha256(raw_anchors) == stored_sha
        sid = data.get("session_id")
        drift_log = data.get("drift_log")
        static_ids = data.get("static_anchor_ids")
        return cls(
            session_id=str(sid) if isinstance(sid, str) and sid else fallback_session_id,
            anchors=anchors,
            static_anchor_ids=[str(x) for x in static_ids if isinstance(x, (str, int))] if isinstance(static_ids, list) else [],
            pinned_count=as_int(data.get("pinned_count", 0), 0),
            last_summary_hash=data.get("last_summary_hash") if isinstance(data.get("last_summary_hash"), str) else None,
            last_compaction_at=_rules.as_number(data.get("last_compaction_at")),
            integrity_score=_score(data.get("integrity_score")),
            drift_log=[e for e in drift_log if isinstance(e, dict)] if isinstance(drift_log, list) else [],
            last_alert_at=_rules.as_number(data.get("last_alert_at")),
            last_reinject_turn=as_int(data.get("last_reinject_turn", 0), 0),
            turn_count=as_int(data.get("turn_count", 0), 0),
            extra={k: v for k, v in data.items() if k not in _SESSION_KEYS and k != "self_sha256"},
            path=path,
            sha_ok=sha_ok,
        )

    def to_dict(self) -> dict[str, Any]:
        """The file content (newest schema: all keys + ``self_sha256``), extras preserved."""
        anchors = {k: a.to_dict() for k, a in self.anchors.items()}
        d: dict[str, Any] = {
            "session_id": self.session_id,
            "anchors": anchors,
            "static_anchor_ids": list(self.static_anchor_ids),
            "pinned_count": self.pinned_count,
            "last_summary_hash": self.last_summary_hash,
            "last_compaction_at": self.last_compaction_at,
            "integrity_score": self.integrity_score,
            "drift_log": [dict(e) for e in self.drift_log],
            "last_alert_at": self.last_alert_at,
            "last_reinject_turn": self.last_reinject_turn,
            "turn_count": self.turn_count,
        }
        d.update(self.extra)
        d["self_sha256"] = anchors_sha256(anchors)
        return d

    # -- queries --------------------------------------------------------------
    def sorted_anchors(self) -> list[Anchor]:
        """Anchors by priority descending, then id (MemLock ``sorted_anchors``)."""
        return _rules.sorted_anchors(self.anchors.values())

    def pinned_now(self) -> int:
        return sum(1 for a in self.anchors.values() if a.pinned)

    # -- mutations (in memory; persist with AnchorStore.update_session) ------
    def recount(self) -> None:
        """Recompute ``pinned_count`` (MemLock does it on add and unpin)."""
        self.pinned_count = self.pinned_now()

    def add(self, anchor: Anchor) -> None:
        """Add or replace an anchor as MemLock ``add_anchor`` does (static ids are recorded)."""
        self.anchors[anchor.id] = anchor
        if anchor.pinned:
            self.recount()
        elif anchor.id not in self.static_anchor_ids:
            self.static_anchor_ids.append(anchor.id)

    def record_audit(self, verdicts: dict[str, _audit.AnchorVerdict], turn: int, now: float,
                     reverse: dict[str, Any] | None = None) -> tuple[int | None, list[str]]:
        """Apply an audit as MemLock does after ``audit_anchors`` (``__init__.py:331-362``).

        Alive anchors get ``drifted=False`` and ``last_alive_turn=turn``; drifted ones
        ``drifted=True``; the score is recomputed over *all* anchors; a drift-log event
        ``{time, score, casualties}`` (+ ``reverse`` when given) is appended and the log
        trimmed to the last 20.

        Returns:
            ``(score, casualty ids in audit order)``; score None when there are no anchors
            (then nothing is logged).
        """
        casualties: list[str] = []
        for aid, v in verdicts.items():
            a = self.anchors.get(aid)
            if a is None:
                continue
            if v.alive:
                a.drifted = False
                a.last_alive_turn = turn
            else:
                a.drifted = True
                casualties.append(aid)
        score = _audit.integrity_score(self.anchors.values())
        self.integrity_score = score
        if score is None:
            return None, casualties
        event: dict[str, Any] = {"time": now, "score": score, "casualties": casualties}
        if reverse is not None:
            event["reverse"] = reverse
        self.drift_log.append(event)
        self.drift_log = self.drift_log[-_rules.DRIFT_LOG_CAP:]
        return score, casualties


@dataclass(frozen=True)
class SessionFileInfo:
    """A session file found under ``memlock/``: id from inside the file, path, mtime (epoch s).
    ``error`` is set (and ``session_id`` is the file stem) when the file cannot be parsed."""

    session_id: str
    path: Path
    mtime: float
    error: str | None = None


@dataclass(frozen=True)
class PinsReport:
    """Result of reading ``persist/``: valid pins, quarantined stems, skipped files (reason)."""

    pins: list[dict[str, Any]]
    quarantined: list[str]
    skipped: dict[str, str]


# ── validation ─────────────────────────────────────────────────────────────


def validate_priority(priority: Any) -> int:
    """An integer 1-100, else :class:`Refused` (``invalid``). MemLock would crash on ``"high"``."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        if isinstance(priority, str) and priority.strip().lstrip("-").isdigit():
            priority = int(priority.strip())
        else:
            raise Refused(f"priority must be an integer {PRIORITY_MIN}-{PRIORITY_MAX}, got {priority!r}", "invalid", field="priority")
    if not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise Refused(f"priority must be between {PRIORITY_MIN} and {PRIORITY_MAX}, got {priority}", "invalid", field="priority")
    return priority


def validate_probes(probes: Any, text: str) -> list[str]:
    """A list of non-empty strings (flattened), or derived from ``text`` when ``None``/empty.

    Raises:
        Refused: ``probes`` is a string (MemLock would split it into characters) or holds
            something that is not a non-empty string (code ``invalid``).
    """
    if probes is None:
        return _rules.derive_probes(text)
    if isinstance(probes, (str, bytes)):
        raise Refused(f"probes must be a list of keywords, not a string ({probes!r}); pass each probe separately",
                      "invalid", field="probes")
    try:
        items = list(probes)
    except TypeError:
        raise Refused(f"probes must be a list of keywords, got {type(probes).__name__}", "invalid", field="probes") from None
    out: list[str] = []
    for p in items:
        if not isinstance(p, str) or not _rules.flatten_ws(p):
            raise Refused(f"every probe must be a non-empty string, got {p!r}", "invalid", field="probes")
        out.append(_rules.flatten_ws(p))
    return out or _rules.derive_probes(text)


def validate_scope(scope: Any) -> str:
    if scope not in SCOPES:
        raise Refused(f"scope must be 'session' or 'global', got {scope!r}", "invalid", field="scope")
    return str(scope)


def scan_or_refuse(*texts: str) -> None:
    """Threat-scan pinned content; a hostile pin is re-asserted every compaction, so refuse it."""
    from ..memory.threats import scan, threat_message

    findings = []
    for t in texts:
        if t:
            findings.extend(scan(t))
    if findings:
        raise Refused(
            f"anchor refused by the threat scan: {threat_message(findings)}",
            "threat",
            findings=[getattr(f, "pattern_id", str(f)) for f in findings],
        )



def seeded_anchors(config: Any, pins: Sequence[dict[str, Any]]) -> list[Any]:
    """The anchors MemLock would seed into a new session (``_on_start``): valid static config
    anchors (``_validate_anchors``: id and text required; probe-less ones only when exactly
    one valid anchor is defined) then global pins not already present."""
    cfg = _rules.memlock_cfg(config)
    raw = [a for a in (getattr(cfg, "anchors", ()) or ()) if isinstance(a, dict)]
    total = sum(1 for a in raw if a.get("id") and a.get("text"))
    out: dict[str, Any] = {}
    for a in raw:
        if not a.get("id") or not a.get("text"):
            continue
        probes = _rules.probes_of(a)
        if not probes and total > 1:
            continue
        text = str(a["text"])
        out.setdefault(str(a["id"]), Anchor(id=str(a["id"]), text=text, reminder=str(a.get("reminder") or text[:120]),
                                            priority=_rules.priority_of(a), probes=probes, pinned=bool(a.get("pinned", False))))
    for p in pins:
        if p.get("scope") == "global" and str(p["id"]) not in out:
            out[str(p["id"])] = Anchor.from_dict({**p, "pinned": True, "drifted": False, "last_alive_turn": 0})
    return list(out.values())


