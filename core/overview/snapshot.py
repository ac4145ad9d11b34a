"""One immutable value holding everything the dashboard shows, built off the UI thread.

:func:`build_snapshot` reads every source through the core readers (memory files, pending
writes, archive, state.db, MemLock anchors, the audit, the prompt blocks) and returns a frozen
:class:`DeckSnapshot`. It never raises: a source that fails leaves its fields empty and puts
a one-line banner in :attr:`DeckSnapshot.errors` under the panel that shows it, so the rest
of the dashboard keeps working (DESIGN.md: "A file or database that turns bad mid-run shows a
clear banner in its panel").

The snapshot is built by one thread at a time (the dashboard schedules the next build only
after the last one finished), so the :class:`core.statedb.StateDB` passed in is never used
concurrently; its ``PRAGMA data_version`` lets an unchanged database be skipped (the previous
snapshot's session data is reused).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from ..anchors.lifecycle import SessionAudit
from ..anchors.model import SessionAnchors, SessionFileInfo
from ..config import Config
from ..deck.archive import ArchivedItem
from ..hermes_version import HermesVersion
from ..history.changes import Change
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
from .banners import describe_failure

if TYPE_CHECKING:
    from ..sessions.statedb import StateDB

T = TypeVar("T")

#: Seconds one refresh may spend embedding compactions of a first semantic history (newest
#: first); the rest are ``pending`` (:attr:`core.anchors.lifecycle.SessionAudit.pending`) and the
#: dashboard's history worker fills them (:func:`core.anchors.lifecycle.fill_history`), never a
#: loop of refreshes. Keyword audits are not bounded.
SEMANTIC_BUDGET_S = 2.0

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
            (:func:`build_memory_snapshot`): state.db, the anchors and the audit are not read yet.
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


class _Errors:
    def __init__(self) -> None:
        self.by_panel: dict[str, list[str]] = {}

    def add(self, panels: tuple[str, ...], source: str, exc: BaseException) -> None:
        msg = f"{source}: {describe_failure(exc)}"
        for p in panels:
            lst = self.by_panel.setdefault(p, [])
            if msg not in lst:
                lst.append(msg)

    def frozen(self) -> Mapping[str, str]:
        return _frozen({p: " · ".join(v) for p, v in self.by_panel.items()})


def _read_or_banner(errors: _Errors, panels: tuple[str, ...], source: str, fn: Callable[[], T], default: T) -> T:
    """``fn()``, or ``default`` with the failure recorded as a banner on ``panels``."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a failed source becomes a banner, never a crash
        errors.add(panels, source, exc)
        return default


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


def build_memory_snapshot(home: HermesHome, config: Config, *, now: float | None = None,
                          stamps: SourceStamps | None = None) -> DeckSnapshot:
    """The first paint of a launch: memory files, prompt blocks, pending writes and their threat
    findings, read in milliseconds whatever the size of state.db. Never touches state.db or
    memdeck.db. Never raises (a failed source is a banner, as in :func:`build_snapshot`).

    Args:
        stamps: :func:`take_stamps` taken just before this call; kept (for the memory files and
            pending writes only) so that the full build that follows, given this snapshot as
            ``previous``, does not read a large memory file a second time.

    Returns:
        a :class:`DeckSnapshot` with ``partial=True`` and no state.db, anchor or audit data.
    """
    errors = _Errors()
    memory: dict[str, MemoryFileState] = {}
    for target in TARGETS:
        def _read(target: str = target) -> MemoryFileState:
            from ..memory.reader import read_memory

            return read_memory(home, config, target)

        state = _read_or_banner(errors, ("capacity", "review"), home.memory_file(target).name, _read, None)
        if state is not None:
            memory[target] = state
            if state.error:
                errors.add(("capacity",), home.memory_file(target).name, RuntimeError(state.error))

    def _pending() -> tuple[PendingWrite, ...]:
        from ..memory.pending import list_pending

        return tuple(list_pending(home))

    pending: tuple[PendingWrite, ...] = _read_or_banner(errors, ("review",), "pending writes", _pending, ())

    def _blocks() -> str:
        from ..memory.prompt_block import render_prompt_blocks

        return render_prompt_blocks(home, config)

    prompt_blocks = _read_or_banner(errors, ("capacity",), "prompt blocks", _blocks, "")
    findings: dict[str, tuple[Finding, ...]] = _read_or_banner(errors, ("review",), "threat scan",
                                                               lambda: _scan_findings(memory, pending), {})
    provider = _read_or_banner(errors, ("capacity",), "memory provider settings",
                               lambda: _provider(home, config, HermesVersion()), None)
    review: tuple[QueueItem, ...] = _read_or_banner(errors, ("review",), "review queue",
                                                    lambda: _review(pending, memory, provider), ())
    return DeckSnapshot(taken_at=time.time() if now is None else float(now), home=home, config=config,
                        provider=provider, review=review,
                        memory=_frozen(memory), pending=pending, prompt_blocks=prompt_blocks or "",
                        findings=_frozen(findings), errors=errors.frozen(), notices=_notices(config.warnings),
                        warnings=config.warnings, partial=True,
                        # only what this snapshot read counts as read: MemLock files and state.db
                        # get stamps no real source has, so a build from here reads them
                        stamps=None if stamps is None else replace(stamps, memlock=((("", None),),),
                                                                   statedb=("not read",)))


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


def build_snapshot(
    home: HermesHome,
    config: Config,
    db: StateDB | None,
    previous: DeckSnapshot | None = None,
    *,
    session_id: str | None = None,
    now: float | None = None,
    stamps: SourceStamps | None = None,
    context_report: bool = True,
    history_budget_s: float = SEMANTIC_BUDGET_S,
) -> DeckSnapshot:
    """Read every source once and return a frozen :class:`DeckSnapshot`. Never raises.

    Args:
        home: the Hermes home.
        config: its config.
        db: a :class:`core.statedb.StateDB` (or ``None`` when the home has no state.db).
        previous: the last snapshot; its state.db section is reused when ``PRAGMA
            data_version`` did not change and the same session is shown.
        session_id: the session to show (default: live session, else newest MemLock file).
        now: epoch seconds stamped as :attr:`DeckSnapshot.taken_at` (default ``time.time()``).
        stamps: :func:`take_stamps` taken just before this call. With the previous snapshot's
            stamps it decides what to re-read: memory files (capacity, prompt blocks, threat
            findings, the audit), pending writes, MemLock files, state.db; when every source is
            unchanged and the same session is asked for, ``previous`` itself is returned (the
            caller repaints nothing).
        context_report: build the followed session's report in :attr:`DeckSnapshot.agent_view`
            (the dashboard asks for it while the Context panel is shown; every open session's
            frozen-memory comparison is built either way).
        history_budget_s: seconds this build may spend auditing compactions of a first semantic
            history (newest first; the rest stay ``pending``). 0 audits none: the dashboard passes
            it while its own worker fills the history (:func:`core.anchors.lifecycle.fill_history`).
            A previous snapshot whose history was still pending is never returned as it is: its
            audit is read again, to take what was filled since.

    Returns:
        the snapshot; failed sources are listed in ``errors`` (panel id -> banner).
    """
    prev_stamps = previous.stamps if previous is not None else None
    if stamps is not None and prev_stamps is not None and previous is not None and not previous.errors:
        same_session = (previous.following_live and session_id is None) or (
            not previous.following_live and session_id == previous.session_id)
        had_report = previous.agent_view is None or previous.agent_view.report is not None or not context_report
        history_done = previous.audit is None or not previous.audit.pending
        if stamps == prev_stamps and same_session and previous.config is config and had_report and history_done:
            return previous

    def unchanged(part: str) -> bool:
        return (stamps is not None and prev_stamps is not None and previous is not None
                and previous.config is config and not previous.errors
                and getattr(stamps, part) == getattr(prev_stamps, part))

    errors = _Errors()
    taken_at = time.time() if now is None else float(now)
    warnings = list(config.warnings)
    history_warnings: list[str] = []
    memlock_warnings: list[str] = []

    # ── memory files ──
    memory: dict[str, MemoryFileState] = {}
    memory_same = unchanged("memory")
    if memory_same and previous is not None:
        memory = dict(previous.memory)
    for target in (() if memory_same else TARGETS):
        def _read(target: str = target) -> MemoryFileState:
            from ..memory.reader import read_memory

            return read_memory(home, config, target)

        state = _read_or_banner(errors, ("capacity", "review"), f"{home.memory_file(target).name}", _read, None)
        if state is not None:
            memory[target] = state
    for target, state in memory.items():  # read now or reused: an unreadable file keeps its banner
        if state.error:
            errors.add(("capacity",), home.memory_file(target).name, RuntimeError(state.error))

    # ── pending writes and archive ──
    def _pending() -> tuple[PendingWrite, ...]:
        from ..memory.pending import list_pending

        return tuple(list_pending(home))

    pending_same = unchanged("pending")
    if pending_same and previous is not None:
        pending = previous.pending
    else:
        pending = _read_or_banner(errors, ("review",), "pending writes", _pending, ())

    def _archived() -> tuple[Any, ...]:
        from ..deck.archive import items

        return tuple(items(home, kind=None, state="archived"))

    memlock_same = unchanged("memlock")
    # ── change history: record what other writers changed (core/history/observation.py), only when the
    # memory or MemLock files' stamps changed since the previous snapshot (the dashboard path) ──
    new_changes: tuple[Any, ...] = ()
    if stamps is not None and not (memory_same and memlock_same):
        try:
            from ..history.observation import observe

            new_changes = tuple(observe(home, statedb=db if db is not None else None, now=taken_at))
        except Exception as exc:  # noqa: BLE001 - the history never breaks the dashboard
            history_warnings.append(f"change history not updated: {describe_failure(exc)}")
            warnings.append(history_warnings[-1])
    if memory_same and memlock_same and previous is not None and not new_changes:
        changes = previous.history
    else:
        def _history() -> tuple[Change, ...]:
            from ..history.changes import list_changes

            return tuple(list_changes(home, limit=HISTORY_ROWS))

        changes = _read_or_banner(errors, ("history",), "change history", _history, ())
    if (memory_same and previous is not None and not previous.partial
            and not any(c.kind == "memory" for c in new_changes)):
        usage_history = previous.usage_history
    else:
        def _usage() -> Mapping[str, Any]:
            from ..history.usage import usage_series

            return _frozen({t: usage_series(home, t) for t in TARGETS})

        usage_history = _read_or_banner(errors, ("capacity",), "usage history", _usage, _frozen({}))
    if memory_same and memlock_same and previous is not None:
        archived = previous.archived  # memdeck's archive changes only with the files it archives from
    else:
        archived = _read_or_banner(errors, ("capacity", "anchors"), "archive", _archived, ())

    # ── state.db ──
    sessions: tuple[Any, ...] = ()
    live = None
    status = None
    data_version = None
    db_unchanged = False
    db_same = unchanged("statedb")
    if db is not None and db_same and previous is not None:
        sessions, live, status, data_version = previous.sessions, previous.live_session, previous.db_status, previous.data_version
        db_unchanged = True
    elif db is not None:
        delta = _read_or_banner(errors, ("integrity", "recall"), "state.db", lambda: db.refresh(), None)
        status = _read_or_banner(errors, ("integrity",), "state.db", lambda: db.status(), None)
        data_version = delta.data_version if delta is not None else None
        db_unchanged = delta is not None and not delta.changed and not delta.reset
        if status is not None and status.state != "ok":
            errors.add(("integrity", "recall"), "state.db", RuntimeError(status.message))
        if db_unchanged and previous is not None and previous.db_status == status:
            sessions, live = previous.sessions, previous.live_session
        else:
            sessions = _read_or_banner(errors, ("integrity",), "state.db sessions", lambda: tuple(db.sessions()), ())
            live = _read_or_banner(errors, ("integrity",), "state.db live session", lambda: db.live_session(), None)

    # ── MemLock anchors ──
    from ..anchors.store import AnchorStore

    store = AnchorStore(home, config, actor="tui")
    if memlock_same and previous is not None:
        anchor_sessions = previous.anchor_sessions
    else:
        anchor_sessions = _read_or_banner(errors, ("anchors", "integrity"), "memlock", lambda: tuple(store.list_sessions()), ())
    for info in anchor_sessions:
        if info.error:
            memlock_warnings.append(f"memlock: {info.path.name}: {info.error}")
            warnings.append(memlock_warnings[-1])
    if store.location.warning:
        memlock_warnings.append(f"memlock: {store.location.warning}")
        warnings.append(memlock_warnings[-1])
    shown = _pick_session(session_id, live, anchor_sessions)
    session_anchors = None
    anchors_same = memlock_same and previous is not None and previous.session_id == shown
    if anchors_same and previous is not None:
        session_anchors, global_ids = previous.session_anchors, previous.global_ids
        pin_warnings = previous.pin_warnings
    else:
        if shown:
            session_anchors = _read_or_banner(errors, ("anchors", "integrity", "drift"), "memlock session",
                                     lambda: store.load_session(shown), None)
        pins = _read_or_banner(errors, ("anchors",), "memlock persist", store.load_pins_report, None)
        global_ids = frozenset(str(p["id"]) for p in pins.pins if p.get("scope") == "global") if pins else frozenset()
        pin_warnings = _pin_warnings(pins)
    memlock_warnings.extend(pin_warnings)
    warnings.extend(pin_warnings)

    # ── audit, integrity history, drift log ──
    audit = None
    if shown and session_anchors is not None and db is not None:  # no state.db: MemLock's own flags
        def _audit() -> Any:
            from ..anchors.lifecycle import audit_session

            return audit_session(db, store, shown, config, budget_s=history_budget_s)

        reuse_audit = (
            previous is not None
            and previous.session_id == shown
            and db_unchanged
            and (memory_same or dict(previous.memory) == memory)
            and previous.session_anchors is not None
            and previous.session_anchors.to_dict() == session_anchors.to_dict()
            and previous.audit is not None
            and not previous.audit.pending  # a semantic history still being filled in: continue it
        )
        audit = previous.audit if reuse_audit and previous is not None else _read_or_banner(
            errors, ("integrity", "anchors", "drift"), "audit", _audit, None
        )
    scores: tuple[tuple[float, int], ...] = ()
    drift_log: tuple[Mapping[str, Any], ...] = ()
    points = audit.history if audit is not None else ()
    prev_points = previous.audit.history if previous is not None and previous.audit is not None else None
    if points and previous is not None and prev_points is not None and (prev_points is points or prev_points == points):
        # the same history (an appended message: the history is memoised, see integrity_history):
        # keep the frozen points instead of copying 1,250 of them again
        drift_log, scores = previous.drift_log, previous.integrity_history
    else:
        if points:
            # core.audit.integrity_history: state.db compaction events merged with MemLock's drift log
            drift_log = tuple(_frozen(p) for p in reversed(points) if isinstance(p, Mapping))
        elif session_anchors is not None:
            drift_log = tuple(_frozen(e) for e in reversed(session_anchors.drift_log) if isinstance(e, Mapping))
        scores = tuple(
            (float(e.get("time") or 0.0), int(e["score"]))
            for e in reversed(drift_log)
            if isinstance(e.get("score"), (int, float)) and not isinstance(e.get("score"), bool)
        )
    compactions: tuple[Any, ...] = ()
    if db is not None and shown and db_unchanged and previous is not None and previous.session_id == shown:
        compactions = previous.compactions
    elif db is not None and shown:
        compactions = _read_or_banner(errors, ("drift", "integrity"), "state.db compactions", lambda: tuple(db.compactions(shown)), ())

    # ── prompt blocks, reminder, memory-context preview ──
    def _blocks() -> str:
        from ..memory.prompt_block import render_prompt_blocks

        return render_prompt_blocks(home, config)

    if memory_same and previous is not None:
        prompt_blocks = previous.prompt_blocks
    else:
        prompt_blocks = _read_or_banner(errors, ("capacity",), "prompt blocks", _blocks, "")
    reminder = audit.reminder_block if audit is not None else ""

    # ── threat findings for every entry and pending write (off the UI thread) ──
    if memory_same and pending_same and previous is not None:
        findings = dict(previous.findings)
    else:
        findings = _read_or_banner(errors, ("review",), "threat scan", lambda: _scan_findings(memory, pending), {})

    # ── which Hermes wrote the home (state.db layout, config.yaml, pending record fields) ──
    def _profile() -> Any:
        from ..sessions.profile import detect_profile

        return detect_profile(home)

    # The profile depends on the layout of state.db, not its rows: it is detected again only
    # when the database file, its schema cookie (DDL: a Hermes upgrade), the pending records
    # or the config change, not on every message Hermes appends.
    layout_same = (stamps is not None and prev_stamps is not None and previous is not None
                   and (stamps.statedb or ())[:2] == (prev_stamps.statedb or ())[:2]
                   and (db.schema_cookie if db is not None else None) == previous.schema_cookie)
    if ((db_same or layout_same) and pending_same and previous is not None and previous.hermes_profile is not None
            and previous.config is config):
        profile = previous.hermes_profile
    else:
        profile = _read_or_banner(errors, ("integrity",), "Hermes profile", _profile, None)

    def _differences() -> tuple[Mapping[str, Any], ...]:
        from ..memory.pending import replay_texts
        from ..sessions.profile import threat_differences

        texts: list[tuple[str, str]] = []
        for target, st in memory.items():
            texts.extend((target, e.text) for e in st.entries)
        for p in pending:
            texts.extend((f"pending {p.id}", t) for t in replay_texts(p.payload))
        return tuple(_frozen(d) for d in threat_differences(profile, texts))

    if memory_same and pending_same and previous is not None and previous.hermes_profile is profile:
        differences = previous.threat_differences
    else:
        differences = _read_or_banner(errors, ("review",), "threat rules", _differences, ())

    # ── the authoritative stores (memory.provider, memory_enabled, user_profile_enabled) ──
    version = profile.hermes if profile is not None else HermesVersion()
    provider: ProviderSettings | None
    if (previous is not None and previous.provider is not None and previous.config is config
            and previous.hermes_profile is profile and unchanged("config")):
        provider = previous.provider
    else:
        provider = _read_or_banner(errors, ("capacity",), "memory provider settings",
                                   lambda: _provider(home, config, version), None)

    # ── the review queue: what approving each pending write would do now ──
    if (memory_same and pending_same and previous is not None and previous.provider == provider
            and len(previous.review) == len(pending)):
        review = previous.review
    else:
        review = _read_or_banner(errors, ("review",), "review queue", lambda: _review(pending, memory, provider), ())

    # ── what the open sessions see (core/context): reused whole when its sources are unchanged ──
    basis: tuple[Any, ...] = (stamps.statedb, stamps.memory, stamps.config) if stamps is not None else (taken_at,)
    basis += (id(config), session_id, live.id if live is not None else None, reminder, version, data_version,
              context_report)
    prev_view = previous.agent_view if previous is not None else None

    followed = session_id if session_id is not None else (live.id if live is not None else None)

    def _view() -> AgentView:
        from .agent_view import build_agent_view

        return build_agent_view(home, config, db, session_id=followed, version=version,
                                reminder_block=reminder, basis=basis, previous=prev_view,
                                memory_key=stamps.memory if stamps is not None else None, with_report=context_report)

    agent_view = _read_or_banner(errors, ("context",), "what the sessions see", _view, None)

    return DeckSnapshot(
        taken_at=taken_at,
        home=home,
        config=config,
        memory=_frozen(memory),
        pending=pending,
        archived=archived,
        sessions=sessions,
        live_session=live,
        db_status=status,
        data_version=data_version,
        session_id=shown,
        anchor_sessions=anchor_sessions,
        session_anchors=session_anchors,
        global_ids=global_ids,
        audit=audit,
        integrity_history=scores,
        compactions=compactions,
        drift_log=drift_log,
        prompt_blocks=prompt_blocks or "",
        reminder_block=reminder,
        findings=_frozen(findings),
        errors=errors.frozen(),
        notices=_notices(config.warnings, memlock_warnings, history_warnings),
        pin_warnings=pin_warnings,
        warnings=tuple(warnings),
        stamps=stamps,
        following_live=session_id is None,
        new_changes=new_changes,
        history=changes,
        hermes_profile=profile,
        schema_cookie=db.schema_cookie if db is not None else None,
        threat_differences=differences,
        memlock_location=store.location,
        usage_history=usage_history,
        agent_view=agent_view,
        provider=provider,
        review=review,
    )
