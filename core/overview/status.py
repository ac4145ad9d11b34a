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
      "cut_reads": [{"what": str, "chars": int, "kept": int, "dropped": int}],
                                         # stored texts read only in part (a system prompt or an
                                         # api_content over core/sessions/bounds.py's 1,000,000 chars)
      ... one key per registered section (below)
    }

Every key is a serialisation of the home's one read model: the parts of
:mod:`core.overview.parts`, read by a :class:`core.overview.reader.HomeReader` (the dashboard's,
the fleet's and the metrics' reader too) with the fields of :data:`STATUS_FIELDS`. ``status`` adds
what no part holds yet, each a read of its own: the change history's summary (``changes``), every
MemLock session file's drift log (``drift_log``), the global pins' rows, the semantic detection
when no audit ran (``detection``) and the hygiene counts (``hygiene``). Where a part failed (a
banner on the dashboard) or was not read (no state.db), its source is asked again, so a section's
error reads ``Type: message`` and an audit without state.db gives MemLock's own flags, as before.

Another top-level section is added with :func:`register_section` (a section that raises
becomes ``{"error": "..."}``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..anchors.integrity_history import drift_event
from ..anchors.rules import priority_of, probes_of
from ..config import Config, load_config
from ..hermes_version import HermesVersion
from ..history.changes import history_summary
from ..home import TARGETS, HermesHome
from ..memlock_home import locate_memlock
from ..sessions.bounds import cut_mark, cuts_since
from ..sessions.connection import sharing_readers
from ..sessions.profile import session_store_note
from ..sessions.statedb import StateDB
from ..sessions.statedb import status_section as statedb_status_section

if TYPE_CHECKING:
    from .reader import HomeReader
    from .snapshot import DeckSnapshot

SectionFn = Callable[[HermesHome, Config], Any]

_REGISTERED: dict[str, SectionFn] = {}

#: The snapshot fields ``status`` serialises: a :class:`~core.overview.reader.HomeReader` reads
#: the parts that fill them and their inputs, nothing else (not the change history's observation,
#: which writes memdeck.db, nor the usage chart, the prompt blocks or the threat findings).
STATUS_FIELDS = ("memory", "pending", "review", "archived", "db_status", "sessions", "live_session",
                 "memlock_location", "anchor_sessions", "session_id", "session_anchors", "audit",
                 "hermes_profile", "threat_differences", "provider", "agent_view", "stale_sessions", "cost_totals")

#: How many sessions ``sessions`` lists (newest first).
SESSIONS_LISTED = 50


def register_section(key: str, fn: SectionFn) -> None:
    """Add a top-level status section computed by ``fn(home, config)``."""
    _REGISTERED[key] = fn


#: Seconds ``status`` may spend embedding compactions of a first semantic history (newest first);
#: the points left carry ``pending: true`` and a later call continues (each window is embedded once).
STATUS_SEMANTIC_BUDGET_S = 10.0



def build_status(home: HermesHome, config: Config | None = None) -> dict[str, Any]:
    """Build the status dict described in the module docstring. Never raises on bad data."""
    from .reader import HomeReader

    config = config or load_config(home)
    mark = cut_mark()
    with sharing_readers():  # one state.db reader for every read asked again: the history is read once
        reader = HomeReader(home, config)
        try:
            reader.read(want=STATUS_FIELDS, context_report=False, history_budget_s=STATUS_SEMANTIC_BUDGET_S)
            return status_of(reader, cuts_from=mark)
        finally:
            reader.close()


def status_of(reader: HomeReader, *, cuts_from: int | None = None, now: float | None = None,
              extras: bool = True) -> dict[str, Any]:
    """The status dict of ``reader``'s last snapshot, read with at least :data:`STATUS_FIELDS`
    (module docstring). ``cuts_from``: a :func:`core.sessions.bounds.cut_mark` taken before the
    read (``cut_reads`` lists the cuts since; None: since this call). ``extras=False`` leaves out
    the reads of what no part holds and no :class:`core.fleet.figures.HomeFigures` figure shows
    (``hygiene``, ``detection``, every session's ``drift_log``, the global pins' rows): the fleet's
    and the metrics' local reads. Never raises on bad data. Thread-safe for distinct readers
    (a command's one state.db reader per path, :func:`sharing_readers`, is the caller's)."""
    snap = reader.snapshot
    assert snap is not None, "status_of needs a read snapshot"
    mark = cut_mark() if cuts_from is None else cuts_from
    home, config = snap.home, snap.config
    now = time.time() if now is None else now
    profile = snap.hermes_profile
    version = profile.hermes if profile is not None else HermesVersion()
    from ..provider_settings import configured_provider

    provider = configured_provider(config, version)  # the one reading (dashboard, fleet, metrics too)
    out: dict[str, Any] = {
        "home": str(home.path),
        "profile": home.profile,
        "memory": _memory(snap),
        "pending": [],
        "archived": sum(1 for a in snap.archived if a.kind == "memory"),
        "config_warnings": list(config.warnings),
        "memory_provider": provider or "",
        "alert_floor": int(config.memlock.alert_floor),
    }
    errors: dict[str, str] = {}
    try:
        out["changes"] = history_summary(home).to_dict()  # not a part yet: read here
    except Exception as exc:  # noqa: BLE001 - an unusable memdeck.db must not break status
        errors["changes"] = f"{type(exc).__name__}: {exc}"
    note = session_store_note(config, home)
    if note:
        out["session_store"] = {"name": config.session_store, "source": config.session_store_source, "message": note}
    try:
        loc = snap.memlock_location if snap.memlock_location is not None else locate_memlock(home)
        out["memlock_location"] = loc.to_dict()
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["memlock_location"] = f"{type(exc).__name__}: {exc}"
    try:
        out["hermes"] = _hermes(reader, snap)
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["profile"] = f"{type(exc).__name__}: {exc}"
    for key, fn in (("statedb", _sessions), ("audit", functools.partial(_anchors, extras=extras))):
        try:
            part = fn(reader, snap)
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
    out["pending"] = _pending(reader, snap, provider, now)
    try:
        out["provider"] = (snap.provider if snap.provider is not None and not reader.failed("provider")
                           else _provider_settings(home, config, version)).to_dict()
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["provider"] = f"{type(exc).__name__}: {exc}"
    try:  # issue 37: what the plugin recorded (memdeck.db api_usage), None when nothing
        out["cost"] = snap.cost_totals if snap.cost_totals is not None else _cost_totals(home)
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["cost"] = f"{type(exc).__name__}: {exc}"
    try:
        if extras:
            out["hygiene"] = hygiene_section(home, config)
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["hygiene"] = f"{type(exc).__name__}: {exc}"
    out["section_errors"] = errors
    out["cut_reads"] = [c.to_dict() for c in cuts_since(mark)]
    return out


def _cost_totals(home: HermesHome) -> Any:
    """The home's recorded API usage with its cache hit ratio, read here when the ``cost_totals``
    part was not (a home without state.db)."""
    from ..context.cost import totals_dict
    from ..deck.usage import home_totals

    return totals_dict(home_totals(home))


def _provider_settings(home: HermesHome, config: Config, version: HermesVersion) -> Any:
    from ..provider_settings import provider_settings

    return provider_settings(config, home, version)


def _memory(snap: DeckSnapshot) -> dict[str, Any]:
    """``{"memory": {...}, "user": {...}}``: the memory part's files (``MemoryFileState.to_dict``)."""
    from ..memory.reader import read_memory

    out: dict[str, Any] = {}
    for t in TARGETS:
        st = snap.memory.get(t)
        d = (st if st is not None else read_memory(snap.home, snap.config, t)).to_dict()
        d.pop("target", None)
        out[t] = d
    return out


def _pending(reader: HomeReader, snap: DeckSnapshot, provider: str | None, now: float) -> list[dict[str, Any]]:
    """The pending writes as status rows from the review part: who staged each and what approving
    it would do now (``core/memory/review.py``: ``state``, ``reason``, ``age_s``)."""
    items: Any = snap.review
    same = snap.provider.name if snap.provider is not None else None
    if reader.failed("pending") or reader.failed("review") or same != provider:
        from ..memory.review import review_queue

        items = review_queue(snap.home, snap.config, provider)
    out = []
    for item in items:
        p = item.record
        age = item.age(now)
        out.append({"id": p.id, "action": p.action, "target": p.target, "origin": p.origin, "summary": p.summary,
                    "created_at": p.created_at, "threats": list(p.threats), "malformed": p.malformed,
                    "subsystem": p.subsystem, "staged_by": p.staged_by, "state": item.state, "reason": item.reason,
                    "age_s": round(age, 1) if age is not None else None})
    return out


def _hermes(reader: HomeReader, snap: DeckSnapshot) -> dict[str, Any]:
    """The home's :class:`~memdeck.core.sessions.profile.HermesProfile` as a dict, plus
    ``threat_differences``: every entry and pending write whose memdeck verdict differs from
    the verdict of the Hermes that loads it (empty when that Hermes is unknown)."""
    profile = snap.hermes_profile
    if profile is None or reader.failed("hermes_profile"):
        from ..sessions.profile import detect_profile

        profile = detect_profile(snap.home)  # the part failed: asked again, for its words
    if reader.failed("threat_differences") or profile is not snap.hermes_profile:
        from ..memory.pending import list_pending, replay_texts
        from ..sessions.profile import threat_differences

        texts: list[tuple[str, str]] = []
        for t, st in snap.memory.items():
            texts += [(t, e.text) for e in st.entries]
        for rec in list_pending(snap.home):
            texts += [(f"pending {rec.id}", c) for c in replay_texts(rec.payload)]
        differences = threat_differences(profile, texts)
    else:
        differences = [dict(d) for d in snap.threat_differences]
    return {**profile.to_dict(), "threat_differences": differences}


def _db_ok(snap: DeckSnapshot) -> bool:
    return snap.db_status is not None and snap.db_status.ok


def _sessions(reader: HomeReader, snap: DeckSnapshot) -> dict[str, Any]:
    """``sessions`` (newest first, at most :data:`SESSIONS_LISTED`) and ``state_db``."""
    if snap.db_status is None or reader.failed("sessions"):  # no held state.db: what it is, and why
        return statedb_status_section(snap.home, snap.config, limit=SESSIONS_LISTED)
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
      file, oldest first, the newest ``drift_log_limit`` entries;
    * ``anchors_warnings``: problems met (unreadable files, quarantined pins);
    * ``detection``: ``{configured, active, model, weights_sha256_ok, reason, model_path}``
      (:class:`core.anchors.encoder.DetectionStatus`): which detection memdeck's audit runs and,
      when it is not the configured one, why (docs/STATUS_JSON.md).

    A part that failed or was not read (no state.db: MemLock's own flags) is read again here.
    ``extras=False``: without ``detection``, the drift log of the sessions not shown and the
    global pins' rows (:func:`status_of`). Never raises.
    """
    from ..anchors.store import AnchorStore
    from .snapshot import _pick_session

    home, config = snap.home, snap.config
    warnings: list[str] = []
    out: dict[str, Any] = {"anchors": [], "integrity": {"session_id": None, "score": None, "history": []},
                           "drift_log": [], "anchors_warnings": warnings, "detection": None}
    try:
        from ..anchors.encoder import semantic_encoder

        if extras:
            out["detection"] = semantic_encoder(config, home)[1].to_dict()
    except Exception as exc:  # noqa: BLE001 - status never raises
        warnings.append(f"detection: {type(exc).__name__}: {exc}")
    try:
        store = AnchorStore(home, config, actor="status", location=snap.memlock_location)
        if store.location.warning:
            warnings.append(store.location.warning)
        infos = snap.anchor_sessions if not reader.failed("anchor_sessions") else tuple(store.list_sessions())
        log: list[dict[str, Any]] = []
        shown = snap.session_anchors if not reader.failed("session_anchors") else None
        for info in infos if extras else ():
            if info.error:
                warnings.append(f"{info.path.name}: {info.error}")
                continue
            try:
                s = shown if shown is not None and shown.session_id == info.session_id else store.load_session(info.session_id)
            except Exception as exc:  # noqa: BLE001 - status never raises
                warnings.append(f"{info.path.name}: {exc}")
                continue
            for e in map(drift_event, s.drift_log):
                if e is not None:
                    log.append({"time": e["time"], "session_id": s.session_id, "score": e["score"],
                                "casualties": e["casualties"]})
        log.sort(key=lambda e: e["time"])
        out["drift_log"] = log[-drift_log_limit:] if drift_log_limit else log
        report = store.load_pins_report() if extras else None  # the global pins' rows: not a part yet
        pins = list(report.pins) if report is not None else []
        if report is not None:
            warnings.extend(f"persist/{stem}.json quarantined: its sha256 differs from manifest.json" for stem in report.quarantined)
            warnings.extend(f"persist/{stem}.json skipped: {why}" for stem, why in sorted(report.skipped.items()))
        db_ok = _db_ok(snap)
        sid = _pick_session(None, snap.live_session if db_ok else None, infos)
        if sid is None:
            out["anchors"] = [_pin_row(p) for p in pins if p.get("scope") == "global"]
            return out
        sa = snap.audit
        if sa is None or reader.failed("audit") or snap.session_id != sid:
            from ..anchors.lifecycle import audit_session

            with StateDB.shared(home.state_db) as db:  # no held state.db: MemLock's own flags
                db_ok = db.status().ok
                sa = audit_session(db, store, sid, config, budget_s=STATUS_SEMANTIC_BUDGET_S)
        out["anchors"] = [{"id": r.anchor.id, "text": r.anchor.text, "reminder": r.anchor.reminder,
                           "priority": r.anchor.priority, "probes": list(r.anchor.probes), "scope": r.scope,
                           "session_id": sid, "state": r.state} for r in sa.anchors]
        held = {r.anchor.id for r in sa.anchors}
        out["anchors"] += [_pin_row(p) for p in pins if p.get("scope") == "global" and str(p["id"]) not in held]
        # without a readable state.db there is no conversation to audit: the score is unknown (None),
        # as the dashboard shows it, not the 0 of an empty region
        out["integrity"] = {"session_id": sid, "score": sa.score if db_ok else None,
                            "history": [{"time": h["time"], "score": h["score"], **({"pending": True} if h.get("pending") else {})}
                                        for h in sa.history], "pending": sa.pending}
        if sa.detection is not None:
            out["detection"] = sa.detection.to_dict()
    except Exception as exc:  # noqa: BLE001 - status never raises
        warnings.append(f"anchors: {type(exc).__name__}: {exc}")
    return out


def anchors_section(home: HermesHome | Any, config: Config | None = None) -> dict[str, Any]:
    """The ``anchors``, ``integrity``, ``drift_log``, ``anchors_warnings`` and ``detection`` keys
    of ``status --json`` alone (:func:`_anchors`), read through a :class:`HomeReader`. Never raises."""
    from .reader import HomeReader

    home = home if isinstance(home, HermesHome) else HermesHome(home)
    config = config if config is not None else load_config(home)
    with sharing_readers():
        reader = HomeReader(home, config)
        try:
            reader.read(want=("audit",), context_report=False, history_budget_s=STATUS_SEMANTIC_BUDGET_S)
            assert reader.snapshot is not None
            return _anchors(reader, reader.snapshot)
        finally:
            reader.close()


def _pin_row(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": str(p["id"]), "text": str(p.get("text", "")), "reminder": str(p.get("reminder", "")),
            "priority": priority_of(p), "probes": probes_of(p), "scope": "global", "session_id": None, "state": "pinned"}


def hygiene_section(home: HermesHome, config: Config) -> dict[str, Any]:
    """``{"method": "lexical", "counts": {duplicate, contradiction, stale, wasteful}, "chars_saved"}``:
    the hygiene findings (``core/hygiene``) by the lexical method, which costs milliseconds
    (``memdeck hygiene`` adds meaning with the semantic extra and may find more). Not a part yet."""
    from ..hygiene.detect import hygiene_report

    report = hygiene_report(home, config, semantic=False)
    return {"method": report.method, "counts": report.counts(),
            "chars_saved": sum(f.chars_saved for f in report.findings if f.kind != "contradiction")}
