"""``memdeck status --json``: the stable, documented status contract.

Shape (keys are only ever added, never renamed or removed)::

    {
      "home": str,                       # the Hermes home path
      "profile": str,                    # "default" or the profile name
      "memory": {
        "memory": {"path": str, "exists": bool, "chars": int, "limit": int, "pct": int (0-100),
                   "drift": str | null, "error": str | null,
                   "entries": [{"id": str (8 hex), "text": str, "chars": int,
                                "threats": [pattern ids]}]},
        "user":   {... same ...}
      },
      "pending": [{"id", "action", "target", "origin", "summary", "created_at", "threats": [ids],
                   "malformed": str | null, "subsystem": str, "staged_by": str | null,
                   "state": "clean"|"stale"|"refused"|"foreign"|"malformed"|"applying", "reason": str | null,
                   "age_s": float | null}],
      "archived": int,                   # memory entries currently archived
      "config_warnings": [str],
      "sessions": [{"id", "title", "source", "started_at", "ended_at" (epoch s | null),
                    "message_count", "compactions", "live": bool}],     # newest first
      "state_db": {"state": "ok"|"missing"|"locked"|..., "message", "schema_version", ...},
      "anchors": [{"id", "text", "reminder", "priority", "probes", "scope", "session_id",
                   "state": "pinned"|"alive"|"drifted"|"rehydrated"}],
      "integrity": {"session_id", "score": int 0-100 | null, "history": [{"time", "score", ...}]},
      "drift_log": [{"time", "session_id", "score", "casualties": [anchor ids]}],
      "anchors_warnings": [str],
      "memlock_location": {"path": str, "rule": "hermes_home"|"memlock_home"|"user_home",
                           "reason": str, "warning": str | null, "installed": str | null,
                           "places": [{"path", "rule", "sessions", "pins", "newest"}]},
      "detection": {"configured": "keyword"|"semantic", "active": "keyword"|"semantic",
                    "model": str | null, "weights_sha256_ok": bool | null, "reason": str | null,
                    "model_path": str | null},
      "hermes": {"version", "version_source", "schema_version", "config_version", "threat_rules",
                 "tables", "columns", "fts", "fts_trigram", "system_prompt_in", "in_place_compaction",
                 "summary_flag", "state_meta_keys", "pending_fields", "pending_actions",
                 "degradations": [str], "notes": [str], "summary": str,
                 "threat_differences": [{"where", "text", "memdeck", "hermes", "rules", "rules_text"}]},
      "memory_provider": str,            # memory.provider as the home's Hermes reads it ("" = the built-in stores only)
      "provider": {"name": str | null, "memory_enabled": bool, "user_profile_enabled": bool,
                   "authoritative": str, "rules": str, "found": str | null,
                   "settings": {"where", "present", "keys", "error"} | null, "notes": [str]},
                                         # the stores the home's Hermes treats as authoritative, read
                                         # as that version reads them (core/provider_settings.py)
      "alert_floor": int,                # MemLock's memlock.alert_floor (percent 0-100): a lower score alerts
      "changes": {"total": int, "by_actor": {actor: int},             # memdeck.db's change history
                  "last": {"id", "time", "actor", "kind", "target", "where", "op"} | null},
      "session_store": {"name": str, "source": str, "message": str},  # only when config.yaml names a
                                         # session store other than SQLite (state.db is then not where
                                         # the sessions are: "sessions are in PostgreSQL: not read")
      "section_errors": {module: "why"},  # a section that failed; its keys are then absent
      "constraints": {"session_id", "method": "keyword", "compactions": int, "pending": int,
                      "counts": {"kept", "weakened", "lost", "promoted", "orphan": int},
                      "newest": {"compaction_id", "at", "counts", "changed": [{"verdict", "rule",
                                 "summary_line", "source_turn_id", "scope"}]} | null} | null,
                                         # the shown session's constraint ledger (core/constraints)
      "cut_reads": [{"what": str, "chars": int, "kept": int, "dropped": int}],
                                         # stored texts read only in part (a system prompt or an
                                         # api_content over core/sessions/bounds.py's 1,000,000 chars)
      ... one key per registered section (below)
    }

Every key is a serialisation of the home's one read model: the parts of
:mod:`core.overview.parts`, read by a :class:`core.overview.reader.HomeReader` (the dashboard's,
the fleet's and the metrics' reader too) with the fields of :data:`STATUS_FIELDS` and
:data:`STATUS_EXTRAS` (the change history's summary, every MemLock session file's drift log, the
global pins' rows, the detection and the hygiene counts are parts too, the last four read only
when asked for). Where a part failed (a banner on the dashboard) its section error is the
failure the part kept (:meth:`core.overview.reader.HomeReader.failure`: ``Type: message``), not
a second read. What is still read here: config.yaml's session store (``session_store``) and a
home without a held state.db (``sessions``, ``state_db``, ``stale_sessions`` and the audit with
MemLock's own flags: the parts that need state.db are not read then).

Another top-level section is added with :func:`register_section` (a section that raises
becomes ``{"error": "..."}``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config import Config, load_config
from ..hermes_version import HermesVersion
from ..home import TARGETS, HermesHome
from ..provider_settings import configured_provider
from ..sessions.bounds import cut_mark, cuts_since
from ..sessions.connection import sharing_readers
from ..sessions.profile import session_store_note
from ..sessions.statedb import StateDB
from ..sessions.statedb import status_section as statedb_status_section

if TYPE_CHECKING:
    from ..hygiene.findings import HygieneReport
    from .reader import HomeReader
    from .snapshot import DeckSnapshot

SectionFn = Callable[[HermesHome, Config], Any]

_REGISTERED: dict[str, SectionFn] = {}

#: The snapshot fields ``status`` serialises: a :class:`~core.overview.reader.HomeReader` reads
#: the parts that fill them and their inputs, nothing else (not the change history's observation,
#: which writes memdeck.db, nor the usage chart, the prompt blocks or the threat findings).
STATUS_FIELDS = ("memory", "pending", "review", "archived", "db_status", "sessions", "live_session",
                 "memlock_location", "anchor_sessions", "session_id", "session_anchors", "audit",
                 "hermes_profile", "threat_differences", "provider", "agent_view", "stale_sessions",
                 "change_summary", "constraints",
                 "cost_totals")
#: The fields of the sections no :class:`core.fleet.figures.HomeFigures` figure shows (``extras``
#: of :func:`status_of`): parts read only when asked for (:attr:`core.overview.parts.Part.asked`).
STATUS_EXTRAS = ("drift_logs", "global_pins", "detection", "hygiene")

#: How many sessions ``sessions`` lists (newest first).
SESSIONS_LISTED = 50


def register_section(key: str, fn: SectionFn) -> None:
    """Add a top-level status section computed by ``fn(home, config)``."""
    _REGISTERED[key] = fn


#: Seconds ``status`` may spend embedding compactions of a first semantic history (newest first);
#: the points left carry ``pending: true`` and a later call continues (each window is embedded once).
STATUS_SEMANTIC_BUDGET_S = 10.0

#: Seconds ``status`` may spend computing constraint ledgers not kept yet (newest first); the rest
#: are counted in ``constraints.pending`` and a later call continues (each is computed once and kept
#: in memdeck.db).
STATUS_LEDGER_BUDGET_S = 5.0



def build_status(home: HermesHome, config: Config | None = None) -> dict[str, Any]:
    """Build the status dict described in the module docstring. Never raises on bad data."""
    from .reader import HomeReader

    config = config or load_config(home)
    mark = cut_mark()
    with sharing_readers():  # one state.db reader for every read asked again: the history is read once
        reader = HomeReader(home, config)
        try:
            reader.read(want=(*STATUS_FIELDS, *STATUS_EXTRAS), context_report=False,
                        history_budget_s=STATUS_SEMANTIC_BUDGET_S, ledger_budget_s=STATUS_LEDGER_BUDGET_S)
            return status_of(reader, cuts_from=mark)
        finally:
            reader.close()


def status_of(reader: HomeReader, *, cuts_from: int | None = None, now: float | None = None,
              extras: bool = True) -> dict[str, Any]:
    """The status dict of ``reader``'s last snapshot, read with at least :data:`STATUS_FIELDS`
    (and :data:`STATUS_EXTRAS` for ``extras``; module docstring). ``cuts_from``: a
    :func:`core.sessions.bounds.cut_mark` taken before the read (``cut_reads`` lists the cuts
    since; None: since this call). ``extras=False`` leaves out what no
    :class:`core.fleet.figures.HomeFigures` figure shows (``hygiene``, ``detection``, every
    session's ``drift_log``, the global pins' rows): the fleet's and the metrics' local reads.
    A part that failed is a section error worded with its failure (:meth:`HomeReader.failure`).
    Never raises on bad data. Thread-safe for distinct readers (a command's one state.db reader
    per path, :func:`sharing_readers`, is the caller's)."""
    snap = reader.snapshot
    assert snap is not None, "status_of needs a read snapshot"
    mark = cut_mark() if cuts_from is None else cuts_from
    home, config = snap.home, snap.config
    now = time.time() if now is None else now
    profile = snap.hermes_profile
    version = profile.hermes if profile is not None else HermesVersion()
    provider = configured_provider(config, version)  # the one reading (dashboard, fleet, metrics too)
    errors: dict[str, str] = {}
    out: dict[str, Any] = {
        "home": str(home.path),
        "profile": home.profile,
        "memory": _memory(reader, snap, errors),
        "pending": [],
        "archived": sum(1 for a in snap.archived if a.kind == "memory"),
        "config_warnings": list(config.warnings),
        "memory_provider": provider or "",
        "alert_floor": int(config.memlock.alert_floor),
    }
    if snap.change_summary is not None:
        out["changes"] = snap.change_summary.to_dict()
    else:
        errors["changes"] = _failure(reader, "change_summary")
    note = session_store_note(config, home)
    if note:
        out["session_store"] = {"name": config.session_store, "source": config.session_store_source, "message": note}
    if snap.memlock_location is not None:
        out["memlock_location"] = snap.memlock_location.to_dict()
    else:
        errors["memlock_location"] = _failure(reader, "memlock_location")
    if snap.hermes_profile is None or reader.failed("hermes_profile"):
        errors["profile"] = _failure(reader, "hermes_profile")
    elif reader.failed("threat_differences"):
        errors["profile"] = _failure(reader, "threat_differences")
    else:
        out["hermes"] = {**snap.hermes_profile.to_dict(), "threat_differences": [dict(d) for d in snap.threat_differences]}
    for key, fn in (("statedb", _sessions), ("audit", functools.partial(_anchors, extras=extras))):
        try:
            part = fn(reader, snap)
        except _PartFailed as failed:
            errors[key] = str(failed)
            continue
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            errors[key] = f"{type(exc).__name__}: {exc}"
            continue
        for k, value in part.items():
            out.setdefault(k, value)
    for key, section in _REGISTERED.items() if extras else ():
        if key in out:
            continue
        try:
            out[key] = section(home, config)
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            out[key] = {"error": f"{type(exc).__name__}: {exc}"}
    out["stale_sessions"] = _stale_sessions(reader, snap, version)
    out["constraints"] = _constraints(snap)
    try:
        out["pending"] = _pending(reader, snap, now)
    except _PartFailed as failed:  # the key is then absent, as every failed section's
        del out["pending"]
        errors["pending"] = str(failed)
    if snap.provider is not None and not reader.failed("provider"):
        out["provider"] = snap.provider.to_dict()
    else:
        errors["provider"] = _failure(reader, "provider")
    if reader.failed("cost_totals"):
        errors["cost"] = _failure(reader, "cost_totals")
    else:
        try:  # issue 37: what the plugin recorded (memdeck.db api_usage), None when nothing
            out["cost"] = snap.cost_totals if snap.cost_totals is not None else _cost_totals(home)
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            errors["cost"] = f"{type(exc).__name__}: {exc}"
    if extras:
        if snap.hygiene is not None:
            out["hygiene"] = _hygiene(snap.hygiene)
        else:
            errors["hygiene"] = _failure(reader, "hygiene")
    out["section_errors"] = errors
    out["cut_reads"] = [c.to_dict() for c in cuts_since(mark)]
    return out


def _failure(reader: HomeReader, part: str) -> str:
    """Why part ``part`` has no value: its failure as ``"Type: message"`` (:meth:`HomeReader.failure`)."""
    return reader.failure(part) or f"{part}: not read"


def _cost_totals(home: HermesHome) -> Any:
    """The home's recorded API usage with its cache hit ratio, read here when the ``cost_totals``
    part was not (a home without state.db)."""
    from ..context.cost import totals_dict
    from ..deck.usage import home_totals

    return totals_dict(home_totals(home))


def _constraints(snap: DeckSnapshot) -> dict[str, Any] | None:
    """``constraints``: the constraint ledger part's counts of the shown session
    (:func:`core.constraints.ledger.ledger_counts`: ``{session_id, method, compactions, pending,
    counts, newest}``), or None without a readable state.db or a session."""
    c = snap.constraints
    return dict(c) if c is not None and _db_ok(snap) else None


class _PartFailed(Exception):
    """A part failed: its section is ``section_errors[key]``, worded ``str(self)`` (the part's own failure)."""


def _memory(reader: HomeReader, snap: DeckSnapshot, errors: dict[str, str]) -> dict[str, Any]:
    """``{"memory": {...}, "user": {...}}``: the memory part's files (``MemoryFileState.to_dict``);
    a file whose read raised is absent and its failure is ``section_errors["memory"]``."""
    out: dict[str, Any] = {}
    for t in TARGETS:
        st = snap.memory.get(t)
        if st is None:
            errors.setdefault("memory", _failure(reader, "memory"))
            continue
        d = st.to_dict()
        d.pop("target", None)
        out[t] = d
    return out


def _pending(reader: HomeReader, snap: DeckSnapshot, now: float) -> list[dict[str, Any]]:
    """The pending writes as status rows from the review part: who staged each and what approving
    it would do now (``core/memory/review.py``: ``state``, ``reason``, ``age_s``). Raises
    :class:`_PartFailed` when the pending or review part failed."""
    for part in ("pending", "review"):
        if reader.failed(part):
            raise _PartFailed(_failure(reader, part))
    out = []
    for item in snap.review:
        p = item.record
        age = item.age(now)
        out.append({"id": p.id, "action": p.action, "target": p.target, "origin": p.origin, "summary": p.summary,
                    "created_at": p.created_at, "threats": list(p.threats), "malformed": p.malformed,
                    "subsystem": p.subsystem, "staged_by": p.staged_by, "state": item.state, "reason": item.reason,
                    "age_s": round(age, 1) if age is not None else None})
    return out


def _db_ok(snap: DeckSnapshot) -> bool:
    return snap.db_status is not None and snap.db_status.ok


def _sessions(reader: HomeReader, snap: DeckSnapshot) -> dict[str, Any]:
    """``sessions`` (newest first, at most :data:`SESSIONS_LISTED`) and ``state_db``."""
    if snap.db_status is None:  # no held state.db (the parts that need one were not read): what it is, and why
        return statedb_status_section(snap.home, snap.config, limit=SESSIONS_LISTED)
    if snap.db_status.ok and reader.failed("sessions"):
        raise _PartFailed(_failure(reader, "sessions"))
    items = snap.sessions[:SESSIONS_LISTED] if snap.db_status.ok else ()
    return {
        "sessions": [
            {"id": s.id, "title": s.title, "source": s.source, "started_at": s.started_at, "ended_at": s.ended_at,
             "message_count": s.message_count, "compactions": s.compactions, "live": s.live}
            for s in items
        ],
        "state_db": snap.db_status.as_dict(),
    }


def _stale_sessions(reader: HomeReader, snap: DeckSnapshot, version: HermesVersion) -> dict[str, Any]:
    """``{"count": int, "note": None}``: the open sessions whose frozen memory differs from the
    files (the agent view's :attr:`~core.overview.agent_view.AgentView.stale`), or ``{"count":
    None, "note": why}`` when state.db cannot be read."""
    view = snap.agent_view
    if _db_ok(snap) and view is not None and not view.error and snap.stale_sessions is not None:
        return {"count": snap.stale_sessions, "note": None}
    if snap.db_status is not None and not snap.db_status.ok:
        return {"count": None, "note": f"state.db: {snap.db_status.state}"}
    if snap.db_status is not None and reader.failure("agent_view"):
        return {"count": None, "note": reader.failure("agent_view")}
    return stale_sessions_section(snap.home, snap.config, version)


def stale_sessions_section(home: HermesHome, config: Config, version: HermesVersion) -> dict[str, Any]:
    """``stale_sessions`` read from state.db itself (the agent view is not there: no held state.db,
    or its read failed): the count, or ``{"count": None, "note": why}``. Never raises."""
    from ..context.report import stale_session_count

    try:
        with StateDB.shared(home.state_db) as db:
            st = db.status()
            if not st.ok:
                return {"count": None, "note": f"state.db: {st.state}"}
            return {"count": stale_session_count(db, home, config, version), "note": None}
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        return {"count": None, "note": f"{type(exc).__name__}: {exc}"}


def _anchors(reader: HomeReader, snap: DeckSnapshot, *, drift_log_limit: int = 100, extras: bool = True) -> dict[str, Any]:
    """The ``anchors``, ``integrity``, ``drift_log``, ``anchors_warnings`` and ``detection`` keys.

    * ``anchors``: ``[{id, text, reminder, priority, probes, scope, session_id, state}]`` of the
      audit part (the live session in state.db, else the newest MemLock file), then global pins
      that session does not hold (``state: "pinned"``, ``session_id`` None);
    * ``integrity``: ``{session_id, score, history: [{time, score[, pending]}], pending}`` (score
      percent 0-100, or None without anchors or without a readable state.db; history oldest
      first; ``pending`` counts compactions of a first semantic history not audited yet:
      :data:`STATUS_SEMANTIC_BUDGET_S` seconds are spent per call, newest first);
    * ``drift_log``: ``[{time, session_id, score, casualties}]`` from every MemLock session
      file (the drift_logs part), oldest first, the newest ``drift_log_limit`` entries;
    * ``anchors_warnings``: problems met (unreadable files, quarantined pins; a part that failed:
      ``"anchors: Type: message"``, and the keys after it are left empty, as MemLock stops there);
    * ``detection``: ``{configured, active, model, weights_sha256_ok, reason, model_path}``
      (:class:`core.anchors.encoder.DetectionStatus`): which detection memdeck's audit runs and,
      when it is not the configured one, why (docs/STATUS_JSON.md).

    The one read here: the audit of a home without a held state.db (the audit part needs one),
    with MemLock's own flags. ``extras=False``: without ``detection``, the drift log of the
    sessions and the global pins' rows (:func:`status_of`). Never raises.
    """
    from .snapshot import _pick_session

    warnings: list[str] = []
    out: dict[str, Any] = {"anchors": [], "integrity": {"session_id": None, "score": None, "history": []},
                           "drift_log": [], "anchors_warnings": warnings, "detection": None}
    if extras:
        if snap.detection is not None:
            out["detection"] = snap.detection.to_dict()
        else:
            warnings.append(f"detection: {_failure(reader, 'detection')}")
    if snap.memlock_location is not None and snap.memlock_location.warning:
        warnings.append(snap.memlock_location.warning)
    if reader.failed("anchor_sessions"):
        warnings.append(f"anchors: {_failure(reader, 'anchor_sessions')}")
        return out
    infos = snap.anchor_sessions
    if extras:
        warnings.extend(snap.drift_log_warnings)
        log = snap.drift_logs[-drift_log_limit:] if drift_log_limit else snap.drift_logs
        out["drift_log"] = [dict(e) for e in log]
        if reader.failed("global_pins"):
            warnings.append(f"anchors: {_failure(reader, 'global_pins')}")
            return out
        warnings.extend(snap.global_pin_warnings)
    pins = snap.global_pins if extras else ()
    db_ok = _db_ok(snap)
    sid = _pick_session(None, snap.live_session if db_ok else None, infos)
    if sid is None:
        out["anchors"] = [_pin_row(p) for p in pins]
        return out
    sa = snap.audit
    if snap.session_id == sid and reader.failed("audit") and reader.failure("audit"):
        warnings.append(f"anchors: {reader.failure('audit')}")
        return out
    if snap.session_id == sid and snap.session_anchors is None and reader.failed("session_anchors"):
        warnings.append(f"anchors: {_failure(reader, 'session_anchors')}")  # the session's file: no audit
        return out
    if sa is None or reader.failed("audit") or snap.session_id != sid:
        try:
            db_ok, sa = _audit_without_statedb(snap, sid)
        except Exception as exc:  # noqa: BLE001 - status never raises
            warnings.append(f"anchors: {type(exc).__name__}: {exc}")
            return out
    out["anchors"] = [{"id": r.anchor.id, "text": r.anchor.text, "reminder": r.anchor.reminder,
                       "priority": r.anchor.priority, "probes": list(r.anchor.probes), "scope": r.scope,
                       "session_id": sid, "state": r.state} for r in sa.anchors]
    held = {r.anchor.id for r in sa.anchors}
    out["anchors"] += [_pin_row(p) for p in pins if str(p["id"]) not in held]
    # without a readable state.db there is no conversation to audit: the score is unknown (None),
    # as the dashboard shows it, not the 0 of an empty region
    out["integrity"] = {"session_id": sid, "score": sa.score if db_ok else None,
                        "history": [{"time": h["time"], "score": h["score"], **({"pending": True} if h.get("pending") else {})}
                                    for h in sa.history], "pending": sa.pending}
    if sa.detection is not None:
        out["detection"] = sa.detection.to_dict()
    return out


def _audit_without_statedb(snap: DeckSnapshot, sid: str) -> tuple[bool, Any]:
    """``(state.db ok, audit)`` of session ``sid`` where the audit part was not read (no held
    state.db, or another session shown): MemLock's own flags, as MemLock audits without one."""
    from ..anchors.lifecycle import audit_session
    from ..anchors.store import AnchorStore

    store = AnchorStore(snap.home, snap.config, actor="status", location=snap.memlock_location)
    with StateDB.shared(snap.home.state_db) as db:
        return db.status().ok, audit_session(db, store, sid, snap.config, budget_s=STATUS_SEMANTIC_BUDGET_S)


#: What :func:`anchors_section` reads: the audit and what :func:`_anchors` shows beside it.
ANCHORS_FIELDS = ("audit", "memlock_location", "drift_logs", "global_pins", "detection")


def anchors_section(home: HermesHome | Any, config: Config | None = None) -> dict[str, Any]:
    """The ``anchors``, ``integrity``, ``drift_log``, ``anchors_warnings`` and ``detection`` keys
    of ``status --json`` alone (:func:`_anchors`), read through a :class:`HomeReader`. Never raises."""
    from .reader import HomeReader

    home = home if isinstance(home, HermesHome) else HermesHome(home)
    config = config if config is not None else load_config(home)
    with sharing_readers():
        reader = HomeReader(home, config)
        try:
            reader.read(want=ANCHORS_FIELDS, context_report=False, history_budget_s=STATUS_SEMANTIC_BUDGET_S)
            assert reader.snapshot is not None
            return _anchors(reader, reader.snapshot)
        finally:
            reader.close()


def _pin_row(p: Mapping[str, Any]) -> dict[str, Any]:
    """A global pin of the global_pins part as an ``anchors`` row."""
    return {"id": p["id"], "text": p["text"], "reminder": p["reminder"], "priority": p["priority"],
            "probes": list(p["probes"]), "scope": "global", "session_id": None, "state": "pinned"}


def _hygiene(report: HygieneReport) -> dict[str, Any]:
    """``{"method": "lexical", "counts": {duplicate, contradiction, stale, wasteful}, "chars_saved"}``:
    the hygiene part's findings (``core/hygiene``) by the lexical method, which costs milliseconds
    (``memdeck hygiene`` adds meaning with the semantic extra and may find more)."""
    return {"method": report.method, "counts": report.counts(),
            "chars_saved": sum(f.chars_saved for f in report.findings if f.kind != "contradiction")}
