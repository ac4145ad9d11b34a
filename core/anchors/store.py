"""MemLock's anchor store, read in every version and written through memdeck's lock protocol.

Layout (``Sahil-SS9/hermes-memlock``; see ``shared/reference/memlock.md`` §1)::

    $HERMES_HOME/memlock/<safe-sid>.json     one per session (SessionAnchors)
    $HERMES_HOME/memlock/persist/<id>.json    one per global pin
    $HERMES_HOME/memlock/persist/manifest.json  (MemLock >= 0.5) sha256 + size per file stem

Reading tolerates every version: missing keys take MemLock's blank-template defaults
(``store.py:44-56`` + ``turn_count`` >= 694ec32), unknown keys are kept and written back, the
session id is read from *inside* the file, both safe-sid naming rules are looked up.

Writing: ``fcntl`` sidecar lock ``<file>.lock``, reload under the lock, validate, atomic write
(temp ``<file name>.<8 hex>.tmp`` in the same directory, fsync, rename, fsync dir) via
:mod:`core.fsio`. JSON is written as MemLock writes it (``indent=2``, ``ensure_ascii=False``,
no trailing newline), plus ``self_sha256`` (>= 0.5 advisory anchor hash). Global pins keep
``persist/manifest.json`` consistent so MemLock >= 0.5 does not quarantine them.

Journal and undo: pin, unpin, update, archive and restore each append one :mod:`core.journal`
row (``kind="anchor"``, ``target`` = the session id, or ``"global"`` for a change to
``persist/`` alone; ``before``/``after`` = the anchor record as sorted-key JSON or NULL;
``detail`` = ``{anchor_id, ...}`` with ``global_before``/``global_after`` when the durable copy
changed and ``archive_id`` for archive/restore). The row is written under the session lock
right after the file, on a memdeck.db connection opened before it. The ``anchor`` undo handler
(:meth:`AnchorStore.undo_rows`) is registered with :func:`core.journal.register_undo_handler`.
A global copy is written under the session lock before the session file and taken back if
that write fails. Archived anchors live in :mod:`core.archive` rows of ``kind="anchor"``.

Caveat (reference §7.6): a running MemLock holds each session's store in memory and
overwrites the file on its next save; memdeck's own plugin writes through
:meth:`AnchorStore.update_session` and so never loses an edit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..deck import archive as _archive
from . import audit as _audit
from . import rules as _rules
from ..deck import db as deckdb
from ..deck import journal as _journal
from ..config import Config, MemlockConfig, load_config
from ..errors import Refused, UnreadableFile
from ..fsio import DEFAULT_LOCK_TIMEOUT, atomic_write_text, file_lock, read_regular_bytes, read_text_strict
from ..home import HermesHome, require_hermes_home

T = TypeVar("T")

#: Prior versions kept per anchor by ``update`` (MemLock >= 0.4 ``HISTORY_CAP``).
HISTORY_CAP = 5
#: The longest anchor text memdeck accepts, in chars. A pin is re-injected into the user's next
#: message every time it drifts, within MemLock's ``max_reminder_chars`` (600 by default), and
#: audited every turn: standing instructions are a sentence or two. Longer text belongs in
#: MEMORY.md or a skill (and a prompt-injected model must not pin a 2 MB payload).
MAX_ANCHOR_CHARS = 2000
MANIFEST_NAME = "manifest.json"
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


# ── naming ─────────────────────────────────────────────────────────────────


def safe_sid_v1(session_id: str) -> str:
    """Session file stem, MemLock <= 0.5.0 (``store.py:28-30``): keep ``isalnum()`` and ``-_``,
    everything else becomes ``_``. Not reversible; ``s/1.x`` -> ``s_1_x``."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)


def safe_sid(session_id: str) -> str:
    """Session file stem, MemLock >= 694ec32 (``memlock_core/store.py::_safe_sid``, "M6"):
    ``/`` -> ``_slash_``, ``.`` -> ``_dot_``, other disallowed chars -> ``_``. memdeck writes this name."""
    out = []
    for c in session_id:
        if c.isalnum() or c in "-_":
            out.append(c)
        elif c == "/":
            out.append("_slash_")
        elif c == ".":
            out.append("_dot_")
        else:
            out.append("_")
    return "".join(out)


def safe_pin_stem(anchor_id: str) -> str:
    """Persist file stem of a pin (``persistence.py:52-54``; the id ``manifest`` becomes
    ``manifest_pin`` as MemLock 694ec32 "L4" renames it)."""
    if anchor_id.strip().lower() == "manifest":
        anchor_id = "manifest_pin"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in anchor_id)


def new_pin_id(existing: Iterable[str] = ()) -> str:
    """A fresh pin id in MemLock >= 694ec32 format ``pin_<8 hex>`` not in ``existing``."""
    taken = set(existing)
    while True:
        candidate = f"pin_{uuid.uuid4().hex[:8]}"
        if candidate not in taken:
            return candidate


def dump_json(data: Any) -> str:
    """JSON exactly as MemLock writes it: ``indent=2``, ``ensure_ascii=False``, no final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def anchors_sha256(anchors: Any) -> str:
    """MemLock >= 0.5 ``self_sha256``: sha256 of ``json.dumps(anchors, sort_keys=True, ensure_ascii=False)``."""
    return hashlib.sha256(json.dumps(anchors, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


# ── records ────────────────────────────────────────────────────────────────


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
    def from_dict(cls, data: dict[str, Any], anchor_id: str | None = None) -> "Anchor":
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
            priority=_rules.as_int(data.get("priority", 50), 50),
            probes=_rules.probes_of(data),
            pinned=bool(data.get("pinned", False)),
            drifted=bool(data.get("drifted", False)),
            last_alive_turn=_rules.as_int(data.get("last_alive_turn", 0), 0),
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
    def from_dict(cls, data: dict[str, Any], fallback_session_id: str = "", path: Path | None = None) -> "SessionAnchors":
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
            pinned_count=_rules.as_int(data.get("pinned_count", 0), 0),
            last_summary_hash=data.get("last_summary_hash"),
            last_compaction_at=data.get("last_compaction_at"),
            integrity_score=data.get("integrity_score"),
            drift_log=[e for e in drift_log if isinstance(e, dict)] if isinstance(drift_log, list) else [],
            last_alert_at=data.get("last_alert_at"),
            last_reinject_turn=_rules.as_int(data.get("last_reinject_turn", 0), 0),
            turn_count=_rules.as_int(data.get("turn_count", 0), 0),
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

    def record_audit(self, verdicts: dict[str, "_audit.AnchorVerdict"], turn: int, now: float,
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
        raise Refused(f"probes must be a list of keywords, not a string ({probes!r}); pass each probe separately", "invalid", field="probes")
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


def _scan_or_refuse(*texts: str) -> None:
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


@contextlib.contextmanager
def _writable(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` of a write into :class:`Refused` (``unwritable``) naming the file.

    Every write is an atomic rename, so a failed one leaves the previous file as it was.
    """
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = exc.filename or path
        raise Refused(f"cannot write {path.name}: {where}: {reason}; nothing was changed", "unwritable",
                      path=str(path)) from exc


# ── the store ──────────────────────────────────────────────────────────────


class AnchorStore:
    """Read and write MemLock's anchor files under ``<home>/memlock``.

    Args:
        home: a :class:`HermesHome` or the home directory.
        config: the home's :class:`Config` (loaded when None); ``memlock.max_pins`` is enforced.
        actor: who writes (``"cli"``, ``"tui"``, ``"plugin"``), recorded in the journal.
    """

    @staticmethod
    def seeded_anchors(config: Any, pins: Sequence[dict[str, Any]]) -> list["Anchor"]:
        """The anchors MemLock would seed into a new session (see :func:`seeded_anchors`)."""
        return seeded_anchors(config, pins)

    def __init__(self, home: HermesHome | Path | str, config: Config | None = None, actor: str = "cli",
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.home = home if isinstance(home, HermesHome) else HermesHome(Path(home))
        self.config = config if config is not None else load_config(self.home)
        self.actor = actor
        #: seconds a write waits for a session file's lock before ``LockTimeout``
        self.lock_timeout = float(lock_timeout)

    # -- paths ---------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.home.memlock_dir

    @property
    def persist_dir(self) -> Path:
        return self.root / "persist"

    @property
    def manifest_path(self) -> Path:
        return self.persist_dir / MANIFEST_NAME

    @property
    def mcfg(self) -> MemlockConfig:
        return self.config.memlock

    def session_path(self, session_id: str) -> Path:
        """The path memdeck writes for ``session_id`` (newest safe-sid rule)."""
        return self.root / f"{safe_sid(session_id)}.json"

    def pin_path(self, anchor_id: str) -> Path:
        return self.persist_dir / f"{safe_pin_stem(anchor_id)}.json"

    # -- session files ---------------------------------------------------------
    def list_sessions(self) -> list[SessionFileInfo]:
        """Every session file (``memlock/*.json``, not ``persist/``, not temp files), newest first.

        The session id comes from inside each file; an unparsable file is listed with
        ``error`` set and its stem as id. When two files carry the same session id (old and
        new naming) only the more recently modified one is listed.
        """
        try:
            entries = [p for p in self.root.glob("*.json") if p.is_file()]
        except OSError:
            return []
        found: dict[str, SessionFileInfo] = {}
        for p in entries:
            try:
                mtime = p.stat().st_mtime
            except OSError:
                continue
            try:
                sid = self._read_file(p, p.stem).session_id
                info = SessionFileInfo(sid, p, mtime)
            except (UnreadableFile, ValueError) as exc:
                info = SessionFileInfo(p.stem, p, mtime, str(exc))
            prev = found.get(info.session_id)
            if prev is None or (info.mtime, info.path.name) > (prev.mtime, prev.path.name):
                found[info.session_id] = info
        return sorted(found.values(), key=lambda i: (-i.mtime, i.session_id))

    def _read_file(self, path: Path, fallback_sid: str) -> SessionAnchors:
        text = read_text_strict(path)
        if text is None:
            raise FileNotFoundError(path)
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UnreadableFile(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); refusing to touch it") from exc
        try:
            return SessionAnchors.from_dict(data, fallback_sid, path)
        except ValueError as exc:
            raise UnreadableFile(f"{path}: {exc}") from exc

    def _candidate_paths(self, session_id: str) -> list[Path]:
        paths = [self.session_path(session_id)]
        old = self.root / f"{safe_sid_v1(session_id)}.json"
        if old != paths[0]:
            paths.append(old)
        return paths

    def find_session_file(self, session_id: str) -> Path | None:
        """The existing file for ``session_id``: the newer-named or older-named file, the
        more recently modified when both exist; ``None`` when there is none."""
        existing = []
        for p in self._candidate_paths(session_id):
            try:
                existing.append((p.stat().st_mtime, p == self.session_path(session_id), p))
            except OSError:
                continue
        if not existing:
            return None
        return max(existing)[2]

    def load_session(self, session_id: str) -> SessionAnchors:
        """The session's anchors; a blank session (MemLock template) when no file exists.

        Raises:
            UnreadableFile: the file exists but is not UTF-8 JSON holding an object.
        """
        path = self.find_session_file(session_id)
        if path is None:
            return SessionAnchors(session_id=session_id)
        try:
            s = self._read_file(path, session_id)
        except FileNotFoundError:  # replaced between stat and read
            return SessionAnchors(session_id=session_id)
        if s.session_id != session_id:
            # A v1 name collision (``s/1`` and ``s.1``): the file belongs to another session.
            return SessionAnchors(session_id=session_id)
        return s

    def update_session(self, session_id: str, mutate: Callable[[SessionAnchors], T], *,
                       after_write: Callable[[sqlite3.Connection, dict[str, Any], dict[str, Any]], Any] | None = None) -> T:
        """Locked read-modify-write of one session file.

        Takes ``fcntl.flock`` on ``<file>.lock`` (the newer-named file), reloads the file
        under the lock (the older-named file when only that exists), calls
        ``mutate(session)``, and writes the result atomically to the newer-named file when
        its content changed. If ``mutate`` raises (e.g. :class:`Refused`) nothing is written.

        ``after_write(conn, before, after)`` (the file's dicts before and after) runs after the
        write, still under the lock, with a connection to memdeck.db opened *before* the write
        (so an unusable memdeck.db refuses with the file untouched); it records the journal row.
        It is not called when nothing changed.

        Returns:
            whatever ``mutate`` returns.

        Raises:
            Refused: code ``unreadable`` when the existing file is not valid JSON (memdeck
                never overwrites it; MemLock itself would silently start blank); ``unwritable``
                when the directory or file cannot be written (e.g. ``memlock`` is a file, no
                permission, disk full; the file is untouched).
            LockTimeout: another writer held the lock too long.
            deckdb.DeckDBError: memdeck.db is unusable (only with ``after_write``).
        """
        if not session_id:
            raise Refused("a session id is required", "invalid", field="session_id")
        require_hermes_home(self.home)
        path = self.session_path(session_id)
        with _writable(path), file_lock(path, self.lock_timeout):
            try:
                current = self.load_session(session_id)
            except UnreadableFile as exc:
                raise Refused(str(exc), "unreadable") from exc
            before = current.to_dict()
            result = mutate(current)
            after = current.to_dict()
            if after == before:
                return result
            if after_write is None:
                atomic_write_text(path, dump_json(after), prefix=path.name + ".", suffix=".tmp")
                return result
            with deckdb.opened(self.home) as conn:
                atomic_write_text(path, dump_json(after), prefix=path.name + ".", suffix=".tmp")
                after_write(conn, before, after)
            return result

    # -- global pins (persist/) -------------------------------------------------
    def _read_manifest(self) -> dict[str, dict[str, Any]] | None:
        try:
            raw = json.loads(read_regular_bytes(self.manifest_path).decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None
        pins = raw.get("pins") if isinstance(raw, dict) else None
        if not isinstance(pins, dict):
            return None
        return {str(k): v for k, v in pins.items() if isinstance(v, dict)}

    def load_pins_report(self) -> PinsReport:
        """Read ``persist/*.json`` as MemLock >= 0.5 ``load_pins`` does.

        Files in sorted order, ``manifest.json`` skipped; a file whose sha256 differs from
        its manifest entry is *quarantined* (not loaded); a missing or unreadable manifest
        means every file is trusted (bootstrap); a file that is not JSON or lacks ``id`` /
        ``text`` is skipped.
        """
        pins: list[dict[str, Any]] = []
        quarantined: list[str] = []
        skipped: dict[str, str] = {}
        try:
            files = sorted(p for p in self.persist_dir.glob("*.json") if p.name != MANIFEST_NAME)
        except OSError:
            return PinsReport([], [], {})
        baseline = self._read_manifest()
        for f in files:
            try:
                raw = read_regular_bytes(f)
            except OSError as exc:
                skipped[f.stem] = f"unreadable: {exc.strerror}"
                continue
            if baseline is not None and f.stem in baseline:
                if hashlib.sha256(raw).hexdigest() != baseline[f.stem].get("sha256", ""):
                    quarantined.append(f.stem)
                    continue
            try:
                data = json.loads(raw.decode("utf-8"))
            except ValueError as exc:
                skipped[f.stem] = f"not valid JSON: {exc}"
                continue
            if not isinstance(data, dict) or not data.get("id") or not data.get("text"):
                skipped[f.stem] = "missing id or text"
                continue
            pins.append(data)
        return PinsReport(pins, quarantined, skipped)

    def load_pins(self) -> list[dict[str, Any]]:
        """The valid, non-quarantined global-pin records (see :meth:`load_pins_report`)."""
        return self.load_pins_report().pins

    def global_ids(self) -> set[str]:
        """Ids of pins stored in ``persist/`` with ``scope: global``."""
        return {str(p["id"]) for p in self.load_pins() if p.get("scope") == "global"}

    def _write_manifest_locked(self, fresh_stems: set[str]) -> None:
        """Rewrite the manifest (caller holds the manifest lock), honouring MemLock 694ec32:

        * M1 merge: starts from the on-disk entries; files gone are dropped;
        * M2: a file that cannot be read is dropped, never recorded with a zero hash;
        * M3: a file whose bytes no longer match its entry (quarantined) keeps its *old*
          entry, so tampered bytes are never re-baselined - unless memdeck itself just
          wrote it (``fresh_stems``).
        """
        existing = self._read_manifest()
        pins: dict[str, dict[str, Any]] = {}
        for f in sorted(p for p in self.persist_dir.glob("*.json") if p.name != MANIFEST_NAME):
            try:
                raw = read_regular_bytes(f)
            except OSError:
                continue  # M2
            entry = {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
            if existing is not None and f.stem in existing and f.stem not in fresh_stems:
                old = existing[f.stem]
                if old.get("sha256") != entry["sha256"]:
                    pins[f.stem] = old  # M3
                    continue
            pins[f.stem] = entry
        manifest = {"version": MANIFEST_VERSION, "generated_at": time.time(), "pins": pins}
        atomic_write_text(self.manifest_path, dump_json(manifest), prefix=MANIFEST_NAME + ".", suffix=".tmp")

    def save_pin(self, record: dict[str, Any]) -> Path:
        """Write one global pin file (MemLock ``FileStore.save_pin`` payload, unknown keys of an
        existing file kept) and update the manifest, under the manifest's sidecar lock.

        ``record`` needs ``id`` and ``text``; ``reminder`` defaults to ``text[:120]``,
        ``priority`` 50, ``probes`` [], ``scope`` ``"global"``, ``pinned_at`` now.

        Raises:
            Refused: ``unwritable`` when ``persist/`` cannot be written (nothing changed).
            LockTimeout: the manifest lock was held too long.
        """
        require_hermes_home(self.home)
        aid = str(record["id"])
        if aid.strip().lower() == "manifest":
            aid = "manifest_pin"
        path = self.pin_path(aid)
        with _writable(path), file_lock(self.manifest_path):
            prior: dict[str, Any] = {}
            try:
                loaded = json.loads(read_regular_bytes(path).decode("utf-8"))
                if isinstance(loaded, dict):
                    prior = loaded
            except (OSError, ValueError):
                prior = {}
            text = str(record["text"])
            payload: dict[str, Any] = {
                "id": aid,
                "text": text,
                "reminder": record.get("reminder", text[:120]),
                "priority": record.get("priority", 50),
                "probes": list(record.get("probes", [])),
                "pinned": True,
                "scope": record.get("scope", "global"),
                "pinned_at": record.get("pinned_at", time.time()),
            }
            for k, v in prior.items():
                payload.setdefault(k, v)
            atomic_write_text(path, dump_json(payload), prefix=path.name + ".", suffix=".tmp")
            self._write_manifest_locked({path.stem})
        return path

    def remove_pin(self, anchor_id: str) -> bool:
        """Delete a global pin file and drop it from the manifest. Returns whether it existed.

        Raises:
            Refused: ``unwritable`` when the file cannot be removed.
        """
        path = self.pin_path(anchor_id)
        if not self.persist_dir.is_dir():
            return False
        with _writable(path), file_lock(self.manifest_path):
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            self._write_manifest_locked(set())
        return True

    # -- operations --------------------------------------------------------------
    def get_pin(self, anchor_id: str) -> dict[str, Any] | None:
        """The raw record of global pin ``anchor_id`` in ``persist/`` (None when absent or unreadable)."""
        try:
            data = json.loads(read_regular_bytes(self.pin_path(anchor_id)).decode("utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _journaled(self, op: str, anchor_id: str, *, globals_: dict[str, Any] | None = None,
                   **detail: Any) -> Callable[[sqlite3.Connection, dict[str, Any], dict[str, Any]], int]:
        """An ``after_write`` for :meth:`update_session` that journals one anchor change.

        The row (:func:`core.journal.record`): ``kind="anchor"``, ``target`` = the session id,
        ``before``/``after`` = the anchor's record in the file before/after (JSON text, or NULL
        when it was absent / is gone), ``detail`` = ``{"anchor_id", ...}`` plus, when the
        global copy in ``persist/`` changed, ``global_before``/``global_after`` (pin records).
        """
        def write(conn: sqlite3.Connection, before: dict[str, Any], after: dict[str, Any]) -> int:
            aid = anchor_id
            b = (before.get("anchors") or {}).get(aid)
            a = (after.get("anchors") or {}).get(aid)
            extra = dict(detail)
            if globals_:
                extra.update(globals_)
            return _journal.record(self.home, actor=self.actor, op=op, kind="anchor", target=str(after["session_id"]),
                                   before=_record_text(b), after=_record_text(a),
                                   detail={"anchor_id": aid, **extra}, conn=conn)
        return write

    def pin(self, text: str, *, priority: Any = 50, reminder: str | None = None, probes: Any = None,
            scope: str = "session", session_id: str) -> Anchor:
        """Pin a standing instruction into ``session_id`` (MemLock ``guard_pin``, validated).

        Text and reminder are whitespace-flattened; an empty reminder is the first sentence
        of the text (120 chars); missing probes are derived (:func:`core.audit.derive_probes`);
        the id is ``pin_<8 hex>``. ``scope="global"`` also writes ``persist/<id>.json`` and the
        manifest (under the session lock, before the session file; removed again if the
        session write fails). Journaled as kind ``anchor``, op ``pin``.

        Raises:
            Refused: ``empty`` (no text), ``invalid`` (priority not an int 1-100, probes a
                string, bad scope, no session), ``threat`` (the threat scan found something),
                ``limit`` (the session already has ``max_pins`` pinned anchors),
                ``unreadable``/``unwritable`` (the session file or ``persist/``).
            LockTimeout, deckdb.DeckDBError: see :meth:`update_session`.
        """
        if not isinstance(text, str):
            raise Refused(f"an anchor's text must be a string, got {type(text).__name__}; nothing was pinned",
                          "invalid", field="text")
        flat = _rules.flatten_ws(text)
        if not flat:
            raise Refused("an anchor needs text; nothing was pinned", "empty", field="text")
        if len(flat) > MAX_ANCHOR_CHARS:
            raise Refused(f"an anchor is at most {MAX_ANCHOR_CHARS:,} chars (this one is {len(flat):,}): standing "
                          "instructions are re-injected every time they drift; put longer text in MEMORY.md. "
                          "Nothing was pinned.", "too_long", field="text")
        prio = validate_priority(priority)
        scope = validate_scope(scope)
        rem = _rules.flatten_ws(reminder) or _rules.auto_reminder(flat)
        prb = validate_probes(probes, flat)
        if not session_id and scope != "global":
            raise Refused("no session to pin into: pass a session id (a global pin needs none)", "invalid",
                          field="session_id")
        _scan_or_refuse(str(text), str(reminder or ""), flat, rem, " ".join(prb))
        if not session_id:
            return self._pin_global_only(flat, rem, prio, prb)
        max_pins = int(self.mcfg.max_pins)
        made: dict[str, Any] = {}

        def mutate(s: SessionAnchors) -> Anchor:
            if s.pinned_now() >= max_pins:
                raise Refused(f"pin limit reached ({max_pins}) in session {session_id}; unpin or archive something first",
                              "limit", max_pins=max_pins)
            anchor = Anchor(id=new_pin_id(s.anchors), text=flat, reminder=rem, priority=prio, probes=prb, pinned=True,
                            extra={"pinned_at": time.time()})
            made["id"] = anchor.id
            if scope == "global":
                made["global"] = {**anchor.to_dict(), "scope": "global", "pinned_at": time.time()}
                self.save_pin(made["global"])
            s.add(anchor)
            return anchor

        def after_write(conn: sqlite3.Connection, before: dict[str, Any], after: dict[str, Any]) -> int:
            made["written"] = True
            g = {"global_before": None, "global_after": self.get_pin(made["id"])} if "global" in made else None
            return self._journaled("pin", made["id"], globals_=g, scope=scope)(conn, before, after)

        try:
            return self.update_session(session_id, mutate, after_write=after_write)
        except BaseException:
            if "global" in made and not made.get("written"):
                with contextlib.suppress(Exception):
                    self.remove_pin(made["id"])
            raise

    def _pin_global_only(self, text: str, reminder: str, priority: int, probes: list[str]) -> Anchor:
        """A global pin made before any session exists: only ``persist/<id>.json`` (and the
        manifest) is written; MemLock seeds it into every new session. Journaled against
        ``"global"``."""
        anchor = Anchor(id=new_pin_id(self.global_ids()), text=text, reminder=reminder, priority=priority,
                        probes=probes, pinned=True, extra={"pinned_at": time.time()})
        record = {**anchor.to_dict(), "scope": "global", "pinned_at": time.time()}
        self.save_pin(record)
        try:
            _journal.record(self.home, actor=self.actor, op="pin", kind="anchor", target="global", before=None,
                            after=_record_text(record),
                            detail={"anchor_id": anchor.id, "scope": "global", "global_before": None,
                                    "global_after": self.get_pin(anchor.id)})
        except BaseException:
            with contextlib.suppress(Exception):
                self.remove_pin(anchor.id)
            raise
        return anchor

    def unpin(self, anchor_id: str, *, session_id: str, scope: str | None = None) -> dict[str, Any]:
        """Remove a pinned anchor from ``session_id`` (MemLock ``unpin``: only ``pinned=true``).

        With ``scope="global"`` the durable copy in ``persist/`` is deleted too (MemLock >=
        0.5 semantics; without it a global pin is re-seeded into new sessions). A global pin
        that is not in this session can still be unpinned with ``scope="global"`` (journaled
        with target ``"global"``). Journaled as op ``unpin``.

        Returns:
            ``{"id", "session_removed": bool, "global_removed": bool}``.

        Raises:
            Refused: ``not_found`` when the anchor is neither pinned in the session nor (with
                ``scope="global"``) a global pin; ``invalid`` for a bad scope;
                ``unreadable``/``unwritable``.
        """
        if scope is not None:
            validate_scope(scope)
        done: dict[str, Any] = {}

        def mutate(s: SessionAnchors) -> None:
            a = s.anchors.get(anchor_id)
            if scope == "global":
                rec = self.get_pin(anchor_id)
                if rec is not None and self.remove_pin(anchor_id):
                    done["global_before"] = rec
            if a is None or not a.pinned:
                return
            done["session"] = True
            del s.anchors[anchor_id]
            s.recount()

        def after_write(conn: sqlite3.Connection, before: dict[str, Any], after: dict[str, Any]) -> int:
            done["written"] = True
            g = {"global_before": done["global_before"], "global_after": None} if "global_before" in done else None
            return self._journaled("unpin", anchor_id, globals_=g, scope=scope or "session")(conn, before, after)

        try:
            if session_id:
                self.update_session(session_id, mutate, after_write=after_write)
            elif scope == "global":
                mutate(SessionAnchors(session_id=""))
        except BaseException:
            if "global_before" in done and not done.get("written"):
                with contextlib.suppress(Exception):
                    self.save_pin(done["global_before"])
            raise
        global_removed = "global_before" in done
        if not done.get("session") and not global_removed:
            raise Refused(f"anchor {anchor_id!r} not found or not pinned in session {session_id}", "not_found")
        if global_removed and not done.get("session"):
            # Only the durable copy changed: journal it against "global".
            _journal.record(self.home, actor=self.actor, op="unpin", kind="anchor", target="global",
                            before=_record_text(done["global_before"]), after=None,
                            detail={"anchor_id": anchor_id, "scope": "global", "global_before": done["global_before"],
                                    "global_after": None})
        return {"id": anchor_id, "session_removed": bool(done.get("session")), "global_removed": global_removed}

    def update(self, anchor_id: str, *, text: str | None = None, reminder: str | None = None, priority: Any = None,
               probes: Any = None, session_id: str) -> Anchor:
        """Edit an anchor in place, keeping its id (MemLock >= 0.4 ``update_anchor``).

        The previous version goes to ``history`` (``{text, reminder, priority, probes,
        updated_at}``, last 5 kept). A changed text without a new reminder / probes gets an
        automatic reminder / derived probes; so does one whose reminder / probes are passed back
        unchanged while they were the automatic ones of the old text (MemLock re-injects the
        reminder, so a stale one would restate the old rule). Custom ones are kept. A global copy in ``persist/`` is rewritten too
        (under the session lock; put back if the session write fails). Journaled as op ``update``.

        Raises:
            Refused: ``not_found``, ``empty`` (text given but blank), ``invalid``,
                ``threat``, ``no_change`` (nothing differs), ``unreadable``/``unwritable``.
        """
        if text is not None and not isinstance(text, str):
            raise Refused(f"an anchor's text must be a string, got {type(text).__name__}; nothing was changed",
                          "invalid", field="text")
        new_text = None if text is None else _rules.flatten_ws(text)
        if text is not None and not new_text:
            raise Refused("an anchor needs text; nothing was changed", "empty", field="text")
        if new_text is not None and len(new_text) > MAX_ANCHOR_CHARS:
            raise Refused(f"an anchor is at most {MAX_ANCHOR_CHARS:,} chars (this one is {len(new_text):,}); "
                          "nothing was changed", "too_long", field="text")
        new_prio = None if priority is None else validate_priority(priority)
        new_rem = None if reminder is None else _rules.flatten_ws(reminder)
        new_probes = None if probes is None else validate_probes(probes, new_text or "")
        scan_texts = [t for t in (text, reminder, new_text, new_rem, " ".join(new_probes or [])) if t]
        if scan_texts:
            _scan_or_refuse(*scan_texts)
        now = time.time()
        done: dict[str, Any] = {}
        is_global = anchor_id in self.global_ids()

        def mutate(s: SessionAnchors) -> Anchor:
            a = s.anchors.get(anchor_id)
            if a is None:
                ids = ", ".join(sorted(s.anchors)[:8]) or "(none)"
                raise Refused(f"anchor {anchor_id!r} not found in session {s.session_id}. Available ids: {ids}", "not_found")
            text_now = new_text if new_text is not None else a.text
            text_changed = new_text is not None and new_text != a.text
            # A reminder or probes that were derived from the old text follow the new text, also
            # when the caller passes them back unchanged (an edit form prefilled with them);
            # a custom reminder or custom probes stay.
            rem_given = new_rem
            if text_changed and rem_given == a.reminder and a.reminder == _rules.auto_reminder(a.text):
                rem_given = None
            probes_given = new_probes
            if (text_changed and probes_given is not None and list(probes_given) == list(a.probes)
                    and list(a.probes) == _rules.derive_probes(a.text)):
                probes_given = None
            rem_now = rem_given if rem_given else (_rules.auto_reminder(text_now) if text_changed else a.reminder)
            if probes_given is not None:
                probes_now = probes_given or _rules.derive_probes(text_now)
            elif text_changed:
                probes_now = _rules.derive_probes(text_now)
            else:
                probes_now = list(a.probes)
            prio_now = new_prio if new_prio is not None else a.priority
            if (text_now, rem_now, prio_now, list(probes_now)) == (a.text, a.reminder, a.priority, list(a.probes)):
                raise Refused(f"anchor {anchor_id!r} already has that content; nothing was changed", "no_change")
            hist = list(a.history or [])
            hist.append(a.version_entry(now))
            a.history = hist[-HISTORY_CAP:]
            a.text, a.reminder, a.priority, a.probes = text_now, rem_now, prio_now, list(probes_now)
            if is_global:
                prior = self.get_pin(anchor_id)
                self.save_pin({**a.to_dict(), "scope": "global", "pinned_at": now})
                done["globals"] = {"global_before": prior, "global_after": self.get_pin(anchor_id)}
            return a

        def after_write(conn: sqlite3.Connection, before: dict[str, Any], after: dict[str, Any]) -> int:
            done["written"] = True
            return self._journaled("update", anchor_id, globals_=done.get("globals"))(conn, before, after)

        try:
            return self.update_session(session_id, mutate, after_write=after_write)
        except BaseException:
            g = done.get("globals")
            if g and g["global_before"] is not None and not done.get("written"):
                with contextlib.suppress(Exception):
                    self.save_pin(g["global_before"])
            raise

    def archive(self, anchor_id: str, session_id: str, reason: str = "") -> int:
        """Move an anchor (pinned or static) out of its session into memdeck's archive table.

        The archive row (``kind="anchor"``, payload ``{session_id, scope, anchor}``) is written
        first, so a crash between the two steps duplicates, never loses; a failed session write
        discards it again. A global pin's durable copy is removed as well (under the session
        lock) and restored with it. Journaled as op ``archive`` (detail ``archive_id``).

        Returns:
            the archive id (an int, ``core.archive``).

        Raises:
            Refused: ``not_found`` when the session has no such anchor; ``unreadable``/``unwritable``.
        """
        probe = self.load_session(session_id).anchors.get(anchor_id)
        if probe is None:
            raise Refused(f"anchor {anchor_id!r} not found in session {session_id}", "not_found")
        is_global = anchor_id in self.global_ids()
        payload = {"session_id": session_id, "scope": "global" if is_global else "session", "anchor": probe.to_dict()}
        archive_id = _archive.archive_record(self.home, kind="anchor", key=anchor_id, payload=payload,
                                             reason=reason, actor=self.actor)
        done: dict[str, Any] = {}

        def mutate(s: SessionAnchors) -> None:
            a = s.anchors.get(anchor_id)
            if a is None:
                raise Refused(f"anchor {anchor_id!r} not found in session {s.session_id}", "not_found")
            del s.anchors[anchor_id]
            if not a.pinned and anchor_id in s.static_anchor_ids:
                s.static_anchor_ids.remove(anchor_id)
            s.recount()
            if is_global:
                rec = self.get_pin(anchor_id)
                if rec is not None and self.remove_pin(anchor_id):
                    done["global_before"] = rec

        def after_write(conn: sqlite3.Connection, before: dict[str, Any], after: dict[str, Any]) -> int:
            done["written"] = True
            g = {"global_before": done["global_before"], "global_after": None} if "global_before" in done else None
            return self._journaled("archive", anchor_id, globals_=g, archive_id=archive_id, reason=reason)(conn, before, after)

        try:
            self.update_session(session_id, mutate, after_write=after_write)
        except BaseException:
            if not done.get("written"):
                if "global_before" in done:
                    with contextlib.suppress(Exception):
                        self.save_pin(done["global_before"])
                _archive.discard_record(self.home, archive_id)
            raise
        return archive_id

    def restore(self, archive_id: Any) -> Anchor:
        """Put an archived anchor back into its session (and ``persist/`` if it was global).

        The archive row becomes ``restored`` in the same memdeck.db transaction as the journal
        row (op ``restore``), under the session lock, after the session file is written.

        Raises:
            Refused: ``not_found`` (no such archived anchor), ``conflict`` (the session
                already has that id), ``limit`` (max_pins reached), ``unreadable``/``unwritable``.
        """
        row = _archive.get_record(self.home, archive_id, kind="anchor")
        if row is None:
            raise Refused(f"no archived anchor {archive_id!r}", "not_found")
        payload = row.payload
        if not isinstance(payload.get("anchor"), dict) or not payload.get("session_id"):
            raise Refused(f"archived anchor {archive_id!r} has no restorable payload", "invalid")
        session_id = str(payload["session_id"])
        anchor = Anchor.from_dict(payload["anchor"])
        max_pins = int(self.mcfg.max_pins)
        done: dict[str, Any] = {}

        def mutate(s: SessionAnchors) -> Anchor:
            # Re-read under the session lock: a concurrent restore of the same row holds it too.
            if _archive.get_record(self.home, row.archive_id, kind="anchor") is None:
                raise Refused(f"archived anchor {archive_id!r} was restored meanwhile", "conflict")
            if anchor.id in s.anchors:
                raise Refused(f"session {session_id} already has an anchor {anchor.id!r}", "conflict")
            if anchor.pinned and s.pinned_now() >= max_pins:
                raise Refused(f"pin limit reached ({max_pins}) in session {session_id}", "limit", max_pins=max_pins)
            if payload.get("scope") == "global":
                prior = self.get_pin(anchor.id)
                self.save_pin({**anchor.to_dict(), "scope": "global", "pinned_at": time.time()})
                done["globals"] = {"global_before": prior, "global_after": self.get_pin(anchor.id)}
            s.add(anchor)
            return anchor

        def after_write(conn: sqlite3.Connection, before: dict[str, Any], after: dict[str, Any]) -> int:
            done["written"] = True
            with deckdb.transaction(conn):
                _archive.set_state(conn, row.archive_id, "restored", expect="archived")
                return self._journaled("restore", anchor.id, globals_=done.get("globals"),
                                       archive_id=row.archive_id)(conn, before, after)

        try:
            return self.update_session(session_id, mutate, after_write=after_write)
        except BaseException:
            g = done.get("globals")
            if g and not done.get("written"):
                with contextlib.suppress(Exception):
                    if g["global_before"] is None:
                        self.remove_pin(anchor.id)
                    else:
                        self.save_pin(g["global_before"])
            raise

    # -- undo -------------------------------------------------------------------
    def undo_rows(self, rows: Sequence["_journal.JournalEntry"]) -> dict[str, Any]:
        """Revert the journal ``rows`` of one anchor change (the ``kind="anchor"`` undo handler).

        Each row is checked and reverted under its session file's lock: the session must
        still hold the row's ``after`` anchor (compared on ``id, text, reminder, priority,
        probes, pinned, history``; MemLock's audit bookkeeping ``drifted``/``last_alive_turn``
        may have changed meanwhile and is kept), the ``persist/`` copy its ``global_after``,
        and an archived/restored anchor's archive row the matching state; then ``before`` is
        written back (a re-added anchor is threat-scanned and counts against ``max_pins``),
        the archive row flips back, and an ``undo`` row marks the rows undone in the same
        memdeck.db transaction.

        Returns:
            ``{"success", "op": "undo", "undone", "anchor_id", "session_id", "journal_id", "message"}``.

        Raises:
            Refused: ``conflict`` (the anchor, its global copy or its archive row changed since),
                ``unsupported`` (a row that is not an anchor change), ``limit``, ``threat``,
                ``unreadable``/``unwritable``.
        """
        result: dict[str, Any] = {}
        for r in reversed(list(rows)):
            result = self._undo_one(r, [x.journal_id for x in rows])
        return result

    def _undo_one(self, r: "_journal.JournalEntry", undoes: list[int]) -> dict[str, Any]:
        aid = r.detail.get("anchor_id")
        if r.kind != "anchor" or not aid or r.op not in _UNDOABLE:
            raise Refused(f"journal #{r.journal_id} ({r.op}) cannot be undone automatically", "unsupported")
        aid = str(aid)
        try:
            before = json.loads(r.before) if r.before else None
            after = json.loads(r.after) if r.after else None
        except ValueError:
            raise Refused(f"journal #{r.journal_id} has an unreadable anchor record", "unsupported") from None
        has_global = "global_before" in r.detail
        g_before, g_after = r.detail.get("global_before"), r.detail.get("global_after")
        arch_id = r.detail.get("archive_id") if r.op in ("archive", "restore") else None
        what = f"{r.op} of anchor {aid!r} (journal #{r.journal_id})"
        where = "persist/" if r.target == "global" else f"session {r.target}"

        def conflict(why: str) -> Refused:
            return Refused(f"cannot undo {what}: {why}; nothing was changed", "conflict", journal_id=r.journal_id)

        def check_outside() -> None:
            # Re-read under the lock: a concurrent undo of the same rows may have won the race
            # (the file could even hold the same content again after a legitimate re-pin).
            with deckdb.opened(self.home) as c:
                marks = c.execute(
                    f"SELECT journal_id, undone_by FROM journal WHERE journal_id IN ({','.join('?' * len(undoes))})",
                    list(undoes),
                ).fetchall()
            gone = [m["journal_id"] for m in marks if m["undone_by"] is not None]
            if gone:
                raise conflict(f"journal #{gone[0]} was already undone")
            if has_global and _pin_content(self.get_pin(aid)) != _pin_content(g_after):
                raise conflict("its global copy in persist/ changed since")
            if arch_id is not None:
                want = "archived" if r.op == "archive" else "restored"
                if _archive.get_record(self.home, arch_id, kind="anchor", state=want) is None:
                    raise conflict(f"archive row #{arch_id} is no longer {want}")
            if before is not None:
                _scan_or_refuse(str(before.get("text") or ""), str(before.get("reminder") or ""))

        def apply_global() -> None:
            if has_global:
                done["global"] = True
                if g_before is None:
                    self.remove_pin(aid)
                else:
                    self.save_pin(g_before)

        def record(conn: sqlite3.Connection) -> int:
            with deckdb.transaction(conn):
                if arch_id is not None:
                    if r.op == "archive":
                        _archive.set_state(conn, int(arch_id), "restored", expect="archived")
                    else:
                        _archive.set_state(conn, int(arch_id), "archived", expect="restored")
                jid = _journal.record(self.home, actor=self.actor, op="undo", kind="anchor", target=r.target,
                                      before=r.after, after=r.before,
                                      detail={"undoes": undoes, "op": r.op, "anchor_id": aid}, conn=conn)
                _journal.mark_undone(conn, undoes, jid)
                return jid

        done: dict[str, Any] = {}
        max_pins = int(self.mcfg.max_pins)

        def mutate(s: SessionAnchors) -> None:
            cur = s.anchors.get(aid)
            if _anchor_content(cur.to_dict() if cur else None) != _anchor_content(after):
                raise conflict(f"{where} no longer holds that change's result")
            check_outside()
            if before is None:
                del s.anchors[aid]
                if aid in s.static_anchor_ids and not cur.pinned:
                    s.static_anchor_ids.remove(aid)
            else:
                restored = Anchor.from_dict(before, aid)
                if cur is not None:
                    restored.drifted, restored.last_alive_turn = cur.drifted, cur.last_alive_turn
                    s.anchors[aid] = restored
                else:
                    if restored.pinned and s.pinned_now() >= max_pins:
                        raise Refused(f"cannot undo {what}: pin limit reached ({max_pins}) in session {s.session_id}",
                                      "limit", max_pins=max_pins)
                    s.add(restored)
            s.recount()
            apply_global()

        def after_write(conn: sqlite3.Connection, _before: dict[str, Any], _after: dict[str, Any]) -> int:
            done["written"] = True
            done["jid"] = record(conn)
            return done["jid"]

        try:
            if r.target == "global":
                with file_lock(self.manifest_path):
                    check_outside()
                with deckdb.opened(self.home) as conn:
                    apply_global()
                    done["written"] = True
                    done["jid"] = record(conn)
            else:
                self.update_session(str(r.target), mutate, after_write=after_write)
        except BaseException:
            if done.get("global") and not done.get("written"):
                with contextlib.suppress(Exception):
                    if g_after is None:
                        self.remove_pin(aid)
                    else:
                        self.save_pin(g_after)
            raise
        if "jid" not in done:
            raise conflict(f"{where} already holds the state before it")
        return {"success": True, "op": "undo", "undone": r.op, "anchor_id": aid, "session_id": r.target,
                "journal_id": done["jid"],
                "message": f"Undid {r.op} of anchor {aid} in {where} (journal #{r.journal_id})."}

    # -- listing ----------------------------------------------------------------
    def all_anchors(self, session_id: str | None = None) -> list[tuple[str, Anchor]]:
        """``(session_id, anchor)`` for one session or every session file, sorted MemLock's way."""
        sids = [session_id] if session_id else [i.session_id for i in self.list_sessions() if i.error is None]
        out: list[tuple[str, Anchor]] = []
        for sid in sids:
            try:
                s = self.load_session(sid)
            except UnreadableFile:
                continue
            out.extend((sid, a) for a in s.sorted_anchors())
        return out


#: Journal ops of kind ``anchor`` that :meth:`AnchorStore.undo_rows` can revert.
_UNDOABLE = ("pin", "unpin", "update", "archive", "restore")
_ANCHOR_CONTENT_KEYS = ("id", "text", "reminder", "priority", "probes", "pinned", "history")
_PIN_CONTENT_KEYS = ("id", "text", "reminder", "priority", "probes", "scope")


def _anchor_content(record: Any) -> dict[str, Any] | None:
    """What an undo compares of an anchor record: its content, not MemLock's audit bookkeeping."""
    return None if not isinstance(record, dict) else {k: record.get(k) for k in _ANCHOR_CONTENT_KEYS}


def _pin_content(record: Any) -> dict[str, Any] | None:
    return None if not isinstance(record, dict) else {k: record.get(k) for k in _PIN_CONTENT_KEYS}




def _record_text(record: Any) -> str | None:
    """An anchor/pin record as the journal stores it: sorted-key JSON text, or None."""
    if record is None:
        return None
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


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


def default_session_id(store: AnchorStore, live_session_id: str | None = None) -> str | None:
    """The session commands act on: the live session from state.db when given, else the most
    recently modified MemLock session file, else ``None``."""
    if live_session_id:
        return live_session_id
    for info in store.list_sessions():
        if info.error is None:
            return info.session_id
    return None


def environment_root(env: dict[str, str] | None = None) -> Path:
    """MemLock's own root resolution (>= 0.5): ``HERMES_HOME``, ``MEMLOCK_HOME``, then ``~/.memlock``."""
    env = dict(os.environ) if env is None else env
    for var in ("HERMES_HOME", "MEMLOCK_HOME"):
        val = env.get(var, "").strip()
        if val:
            return Path(val).expanduser()
    return Path.home() / ".memlock"


__all__ = [
    "Anchor", "AnchorStore", "HISTORY_CAP", "PinsReport", "SessionAnchors", "SessionFileInfo",
    "anchors_sha256", "default_session_id", "dump_json", "new_pin_id", "safe_pin_stem", "safe_sid",
    "safe_sid_v1", "validate_priority", "validate_probes", "validate_scope",
]
