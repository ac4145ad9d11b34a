"""One immutable value holding everything the dashboard shows, read off the UI thread.

:class:`DeckSnapshot` is what :class:`core.overview.reader.HomeReader` returns: each of its fields
is filled by a part of :mod:`core.overview.parts` (read again only when the key of its inputs
changed, the sources' :class:`SourceStamps` among them). A read never raises: a source that fails
leaves its fields empty and puts a one-line banner in :attr:`DeckSnapshot.errors` under the panel
that shows it, so the rest of the dashboard keeps working (DESIGN.md: "A file or database that
turns bad mid-run shows a clear banner in its panel"). This module also holds the helpers the
parts share: the stamps, opening state.db, the session picked, the threat findings, the review.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from ..anchors.lifecycle import SessionAudit
from ..anchors.model import SessionAnchors, SessionFileInfo
from ..config import Config
from ..deck.archive import ArchivedItem
from ..hermes_version import HermesVersion
from ..history.changes import Change, HistorySummary
from ..history.usage import UsageSeries
from ..home import TARGETS, HermesHome
from ..memlock_home import MemlockLocation, candidate_dirs
from ..memory.pending import PendingWrite
from ..memory.reader import MemoryFileState
from ..memory.review import QueueItem
from ..memory.threats import Finding
from ..provider_settings import ProviderSettings
from ..sessions.profile import HermesProfile
from ..sessions.records import CompactionEvent, DBStatus, SessionInfo
from .agent_view import AgentView

if TYPE_CHECKING:
    from ..anchors.encoder import DetectionStatus
    from ..hygiene.findings import HygieneReport
    from ..sessions.statedb import StateDB

T = TypeVar("T")

#: Seconds one refresh may spend embedding compactions of a first semantic history (newest
#: first); the rest are ``pending`` (:attr:`core.anchors.lifecycle.SessionAudit.pending`) and the
#: dashboard's history worker fills them (:func:`core.anchors.lifecycle.fill_history`), never a
#: loop of refreshes. Keyword audits are not bounded.
SEMANTIC_BUDGET_S = 2.0

#: Seconds one refresh may spend computing constraint ledgers not kept yet (keyword, newest first);
#: the rest are ``pending`` and the dashboard's ledger worker fills them
#: (:func:`core.constraints.ledger.fill_ledgers`), never a loop of refreshes.
LEDGER_BUDGET_S = 0.3

#: Panels that can carry an error banner (the dashboard's panel ids).
PANELS = ("integrity", "anchors", "drift", "capacity", "recall", "review", "history", "context")
#: How many of the newest changes the History panel shows.
HISTORY_ROWS = 200


def _frozen(d: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(d or {}))


Stat = tuple[int, int, int, int] | None


def _stat(path: Path) -> Stat:
    """``(st_ino, st_size, st_mtime_ns, st_ctime_ns)`` of ``path`` (None when absent)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _listing(directory: Path, suffix: str = ".json") -> tuple[tuple[str, Stat], ...]:
    """Sorted ``(name, stat)`` of the ``*suffix`` files directly in ``directory`` (temp files skipped)."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(suffix))
    except OSError:
        return ()
    return tuple((n, _stat(directory / n)) for n in names)


@dataclass(frozen=True)
class SourceStamps:
    """What each source of a snapshot looked like when it was read: cheap to take (a few
    ``stat`` calls, one directory listing per watched directory and ``PRAGMA data_version``),
    so a refresh whose stamps equal the last snapshot's does no work and repaints nothing.

    Attributes:
        memory: ``stat`` of MEMORY.md and USER.md.
        config: ``stat`` of config.yaml.
        pending: listing of ``pending/memory/*.json``.
        memlock: listings of ``memlock/*.json`` and ``memlock/persist/*.json`` of every place MemLock
            may keep the home's state (:func:`core.memlock_home.candidate_dirs`).
        statedb: ``(st_dev, st_ino)`` of state.db and its connection's ``PRAGMA data_version``
            (which changes only when *another* connection commits), or None without a database.
    """

    memory: tuple[Stat, ...]
    config: Stat
    pending: tuple[tuple[str, Stat], ...]
    memlock: tuple[tuple[tuple[str, Stat], ...], ...]
    statedb: tuple[Any, ...] | None


def take_stamps(home: HermesHome, db: StateDB | None) -> SourceStamps:
    """Stamp every source of ``home`` (see :class:`SourceStamps`). Never raises.

    ``db`` is the home's :class:`core.statedb.StateDB` or None; a database that was replaced
    since it was opened is reopened first (:meth:`core.statedb.StateDB.reopen_if_replaced`).
    """
    dbstamp: tuple[Any, ...] | None = None
    if db is not None:
        try:
            db.reopen_if_replaced()
            st = os.stat(home.state_db)
            dbstamp = (st.st_dev, st.st_ino, db.data_version())
        except OSError:
            dbstamp = ("missing",)
    return SourceStamps(
        memory=tuple(_stat(home.memory_file(t)) for t in TARGETS),
        config=_stat(home.config_path),
        pending=_listing(home.pending_dir),
        memlock=tuple(x for d, _rule in candidate_dirs(home) for x in (_listing(d), _listing(d / "persist"))),
        statedb=dbstamp,
    )


@dataclass(frozen=True)
class DeckSnapshot:
    """Everything the dashboard renders, as of :attr:`taken_at`.

    Attributes:
        taken_at: epoch seconds when the build started (the dashboard's clock).
        home, config: the home and config the snapshot was built from.
        memory: target (``"memory"``/``"user"``) -> :class:`core.memory.MemoryFileState`.
        pending: pending writes (:func:`core.pending.list_pending`), oldest first.
        archived: :class:`core.archive.ArchivedItem` rows (memory entries and anchors) in state
            ``archived``, newest first.
        sessions: state.db sessions, newest first (empty without a database).
        live_session: the session Hermes is running now (``None`` when none is live).
        db_status: :meth:`core.statedb.StateDB.status` (``None`` without a database).
        data_version: ``PRAGMA data_version`` at build time (``None`` without a database).
        session_id: the session shown by Integrity / Anchors / Drift log (the one picked with
            ``s``, else the live session, else the newest MemLock session file).
        anchor_sessions: MemLock session files (:class:`core.anchors.SessionFileInfo`).
        session_anchors: the shown session's :class:`core.anchors.SessionAnchors` (or None).
        global_ids: ids of global pins (``memlock/persist``).
        audit: :func:`core.audit.audit_session` result for the shown session (or None).
        integrity_history: ``(epoch s, score 0-100)`` oldest first, one per audit point.
        drift_log: the session's audit points, newest first: :attr:`core.audit.SessionAudit.history`
            (``{time, score, casualties, source, [event_index, mode, computed_score]}``: state.db
            compaction events merged with MemLock's drift log), else MemLock's ``drift_log``.
        compactions: the shown session's :class:`core.sessions.records.CompactionEvent` values, oldest first.
        constraints: the shown session's keyword constraint ledger counts
            (:func:`core.constraints.ledger.ledger_counts`, frozen), or None.
        prompt_blocks: the frozen system-prompt memory blocks the next session will get.
        reminder_block: the reminder block MemLock would inject next (``""`` when none).
        findings: text -> :func:`core.threats.scan` findings, for every entry and pending
            write text that has any (texts without findings are absent).
        errors: panel id -> banner text for every source that failed.
        notices: panel id -> banner text for a source that was read only in part, so the panel
            could show a wrong number without it: config.yaml unusable (defaults applied: char
            limits, MemLock's settings), MemLock files skipped, the change history not updated.
            Kept apart from ``errors``, which make the next build read everything again.
        pin_warnings: the global pins of ``memlock/persist/`` MemLock would not load (quarantined:
            bytes differ from the manifest; skipped: unreadable, not JSON, no id or text), as
            MemLock >= 0.5 ``load_pins`` decides (:meth:`core.anchors.files.AnchorFiles.load_pins_report`).
        history: the newest :data:`HISTORY_ROWS` changes of the change history, newest first
            (:func:`memdeck.core.history.changes.list_changes`; empty before memdeck.db exists).
        usage_history: target -> :class:`core.history.usage.UsageSeries`, the file's usage after
            each recorded change (the Capacity panel's chart); read again only when a memory
            file changed or the history gained a memory row.
        new_changes: the :class:`core.history.changes.Change` rows this build recorded (empty when the
            memory and MemLock files were unchanged), oldest first.
        warnings: config warnings and other non-fatal notes.
        stamps: what every source looked like when this snapshot read it (None for a snapshot
            built without stamps); a rebuild reuses each part whose sources are unchanged.
        following_live: True when :attr:`session_id` is the live session because no session
            was pinned (the dashboard follows the newest live session).
        schema_cookie: state.db's ``PRAGMA schema_version`` when read (None without one).
        partial: True for the first, memory-only snapshot of a launch
            (:meth:`core.overview.reader.HomeReader.first_paint`): state.db, the anchors and the audit are not read yet.
        hermes_profile: which Hermes wrote the home (:class:`core.sessions.profile.HermesProfile`:
            version, schema, degradations in plain words), or None when it could not be detected.
        threat_differences: every entry / pending write whose memdeck verdict differs from the
            verdict of the Hermes that loads it (:func:`core.sessions.profile.threat_differences`).
        memlock_location: where MemLock keeps this home's state and why
            (:class:`core.memlock_home.MemlockLocation`; None before the anchors are read).
        agent_view: what the open sessions see: each one's frozen memory against the files and
            the followed session's prompt by section, next turn and next compaction
            (:class:`core.overview.agent_view.AgentView`; None in the memory-only first paint).
        provider: which stores the home's Hermes treats as authoritative: the built-in MEMORY /
            USER and the memory provider (:class:`core.provider_settings.ProviderSettings`).
        review: the review queue: each pending write (same order as :attr:`pending`) with who
            staged it and what approving it would do now (:class:`core.memory.review.QueueItem`:
            clean, stale with Hermes' words, refused, foreign).
        stale_sessions: how many open sessions' frozen memory differs from the files (None: unknown).
        change_summary: the change history in figures (:class:`core.history.changes.HistorySummary`;
            None before memdeck.db could be read).
        drift_logs, drift_log_warnings: every readable MemLock session file's drift log
            (``{time, session_id, score, casualties}``, oldest first) and a line per file not read.
        global_pins, global_pin_warnings: the global pins MemLock loads (``{id, text, reminder,
            priority, probes}``) and the ones it would not (quarantined, skipped).
        detection: which detection memdeck's audit runs (:class:`core.anchors.encoder.DetectionStatus`).
        hygiene: the lexical hygiene report (:class:`core.hygiene.findings.HygieneReport`).
        The last five are read only when asked for (``status --json``: :attr:`core.overview.parts.Part.asked`).
        hygiene_counts: memory hygiene counts from the entries' text alone (lexical; duplicate,
            contradiction, wasteful: :func:`core.hygiene.detect.pair_counts`), the Capacity tab's
            badge; empty before it is read.
        cost_totals: the home's recorded API usage with its cache hit ratio (``status --json`` ``cost``;
            None: nothing recorded).
    """

    taken_at: float
    home: HermesHome
    config: Config
    memory: Mapping[str, MemoryFileState] = field(default_factory=_frozen)
    pending: tuple[PendingWrite, ...] = ()
    archived: tuple[ArchivedItem, ...] = ()
    sessions: tuple[SessionInfo, ...] = ()
    live_session: SessionInfo | None = None
    db_status: DBStatus | None = None
    data_version: int | None = None
    session_id: str | None = None
    anchor_sessions: tuple[SessionFileInfo, ...] = ()
    session_anchors: SessionAnchors | None = None
    global_ids: frozenset[str] = frozenset()
    audit: SessionAudit | None = None
    integrity_history: tuple[tuple[float, int], ...] = ()
    drift_log: tuple[Mapping[str, Any], ...] = ()
    compactions: tuple[CompactionEvent, ...] = ()
    constraints: Mapping[str, Any] | None = None
    prompt_blocks: str = ""
    reminder_block: str = ""
    findings: Mapping[str, tuple[Finding, ...]] = field(default_factory=_frozen)
    errors: Mapping[str, str] = field(default_factory=_frozen)
    notices: Mapping[str, str] = field(default_factory=_frozen)
    pin_warnings: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    stamps: SourceStamps | None = None
    following_live: bool = True
    partial: bool = False
    schema_cookie: int | None = None
    new_changes: tuple[Change, ...] = ()
    history: tuple[Change, ...] = ()
    hermes_profile: HermesProfile | None = None
    threat_differences: tuple[Mapping[str, Any], ...] = ()
    memlock_location: MemlockLocation | None = None
    usage_history: Mapping[str, UsageSeries] = field(default_factory=_frozen)
    agent_view: AgentView | None = None
    provider: ProviderSettings | None = None
    review: tuple[QueueItem, ...] = ()
    stale_sessions: int | None = None
    change_summary: HistorySummary | None = None
    drift_logs: tuple[Mapping[str, Any], ...] = ()
    drift_log_warnings: tuple[str, ...] = ()
    global_pins: tuple[Mapping[str, Any], ...] = ()
    global_pin_warnings: tuple[str, ...] = ()
    detection: DetectionStatus | None = None
    hygiene: HygieneReport | None = None
    hygiene_counts: Mapping[str, int] = field(default_factory=_frozen)
    cost_totals: Mapping[str, Any] | None = None

    @property
    def archive_count(self) -> int:
        """How many archived records can be restored."""
        return len(self.archived)

    def error_for(self, panel: str) -> str | None:
        """The banner text for ``panel``: its failed sources, then its :attr:`notices` (``None``
        when its sources are fine)."""
        parts = [t for t in (self.errors.get(panel), self.notices.get(panel)) if t]
        return " · ".join(parts) if parts else None


#: where each kind of warning is shown as a banner (``DeckSnapshot.notices``): config.yaml
#: feeds the char limits (Capacity) and MemLock's settings (Integrity, Anchors)
_NOTICE_PANELS = {"config": ("capacity", "integrity", "anchors"), "memlock": ("anchors", "integrity"),
                  "history": ("history",)}


def _pin_warnings(report: Any) -> tuple[str, ...]:
    """One line per global pin MemLock would not load (``report``: a ``PinsReport`` or None)."""
    if report is None:
        return ()
    out = [f"memlock: persist/{stem}.json quarantined: its sha256 differs from manifest.json" for stem in report.quarantined]
    out += [f"memlock: persist/{stem}.json skipped: {why}" for stem, why in sorted(report.skipped.items())]
    return tuple(out)


def _notices(config_warnings: Sequence[str], memlock: Sequence[str] = (), history: Sequence[str] = ()) -> Mapping[str, str]:
    """``panel -> banner`` for the warnings that make a panel's numbers partial."""
    by_panel: dict[str, list[str]] = {}
    for kind, texts in (("config", config_warnings), ("memlock", memlock), ("history", history)):
        for t in texts:
            for p in _NOTICE_PANELS[kind]:
                lst = by_panel.setdefault(p, [])
                if t not in lst:
                    lst.append(t)
    return _frozen({p: " · ".join(v) for p, v in by_panel.items()})


def open_statedb(home: HermesHome) -> StateDB | None:
    """Open the home's state.db read-only, or return ``None`` when there is none.

    Raises:
        whatever :class:`core.statedb.StateDB` raises for a database that exists but cannot
        be opened (the caller shows it as a banner).
    """
    if not home.state_db.exists():
        return None
    from ..sessions.statedb import StateDB

    return StateDB(home.state_db)


def _pick_session(requested: str | None, live: SessionInfo | None, anchor_sessions: tuple[SessionFileInfo, ...]) -> str | None:
    if requested:
        return requested
    if live is not None and live.id:
        return live.id
    for info in anchor_sessions:
        if info.error is None:
            return info.session_id
    return None


def _pending_texts(p: PendingWrite) -> list[str]:
    """The texts a pending write would put into memory (``content`` of each add/replace)."""
    if p.text:
        return [p.text]  # what a reviewer sees
    # the raw record's payload (a dict, as loaded from JSON): its values may be anything
    out: list[str] = []
    if p.payload.get("content"):
        out.append(str(p.payload["content"]))
    for op in p.payload.get("operations") or ():
        if isinstance(op, Mapping) and op.get("content"):
            out.append(str(op["content"]))
    return out


def _provider(home: HermesHome, config: Config, version: HermesVersion) -> ProviderSettings:
    from ..provider_settings import provider_settings

    return provider_settings(config, home, version)


def _review(pending: tuple[PendingWrite, ...], memory: Mapping[str, MemoryFileState],
            provider: ProviderSettings | None) -> tuple[QueueItem, ...]:
    from ..memory.review import queue_of

    return tuple(queue_of(pending, memory, provider.name if provider is not None else None))


def _scan_findings(memory: Mapping[str, MemoryFileState], pending: tuple[PendingWrite, ...]) -> dict[str, tuple[Finding, ...]]:
    """text -> threat findings, for every entry and pending write text that has any."""
    from ..memory.threats import scan_cached

    texts: list[str] = []
    for st in memory.values():
        for e in st.entries:
            if not e.scanned:
                continue  # past the scan budget of a file far over its limit: said on screen
            texts.append(e.text)
    for p in pending:
        texts.extend(_pending_texts(p))
    out: dict[str, tuple[Finding, ...]] = {}
    for t in texts:
        if t and t not in out:
            found = scan_cached(t)
            if found:
                out[t] = found
    return out
