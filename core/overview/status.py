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

``sessions``/``state_db`` come from :func:`memdeck.core.sessions.statedb.status_section`, ``anchors``,
``integrity``, ``drift_log`` and ``anchors_warnings`` from :func:`anchors_section`.

Another top-level section is added with :func:`register_section` (a section that raises
becomes ``{"error": "..."}``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..anchors.files import default_session_id
from ..anchors.integrity_history import drift_event
from ..anchors.lifecycle import audit_session
from ..anchors.rules import priority_of, probes_of
from ..anchors.store import AnchorStore
from ..config import Config, load_config
from ..deck import archive
from ..hermes_version import HermesVersion
from ..history.changes import history_summary
from ..home import TARGETS, HermesHome
from ..memlock_home import locate_memlock
from ..memory.pending import list_pending, replay_texts
from ..memory.reader import read_memory
from ..sessions.bounds import cut_mark, cuts_since
from ..sessions.connection import sharing_readers
from ..sessions.profile import detect_profile, session_store_note, threat_differences
from ..sessions.statedb import StateDB
from ..sessions.statedb import status_section as statedb_status_section

SectionFn = Callable[[HermesHome, Config], Any]

#: Providers whose function returns *several* top-level keys, merged into the status dict
#: (a key already present is never overwritten). If one raises, its keys are absent and
#: ``section_errors[module]`` says why.
MERGED_PROVIDERS: list[tuple[str, SectionFn]] = [
    ("statedb", statedb_status_section),  # "sessions", "state_db"
    ("audit", lambda home, config: anchors_section(home, config)),  # "anchors", "integrity", "drift_log", "anchors_warnings", "detection"
]

_REGISTERED: dict[str, SectionFn] = {}


def register_section(key: str, fn: SectionFn) -> None:
    """Add a top-level status section computed by ``fn(home, config)``."""
    _REGISTERED[key] = fn


#: Seconds ``status`` may spend embedding compactions of a first semantic history (newest first);
#: the points left carry ``pending: true`` and a later call continues (each window is embedded once).
STATUS_SEMANTIC_BUDGET_S = 10.0


def anchors_section(home: Any, config: Any = None, *, encoder: Any = None, drift_log_limit: int = 100,
                    budget_s: float | None = STATUS_SEMANTIC_BUDGET_S) -> dict[str, Any]:
    """The ``anchors``, ``integrity`` and ``drift_log`` parts of ``status --json``. Never raises.

    * ``anchors``: ``[{id, text, reminder, priority, probes, scope, session_id, state}]`` for
      the default session (the live session in state.db, else the newest MemLock file), then
      global pins that session does not hold (``state: "pinned"``, ``session_id`` None);
    * ``integrity``: ``{session_id, score, history: [{time, score[, pending]}], pending}`` (score
      percent 0-100, or None without anchors or without a readable state.db; history oldest
      first, see :func:`integrity_history`; ``pending``
      counts compactions of a first semantic history not audited yet: ``budget_s`` seconds are
      spent per call, newest first);
    * ``drift_log``: ``[{time, session_id, score, casualties}]`` from every MemLock session
      file, oldest first, the newest ``drift_log_limit`` entries;
    * ``anchors_warnings``: problems met (unreadable files, quarantined pins);
    * ``detection``: ``{configured, active, model, weights_sha256_ok, reason, model_path}``
      (:class:`core.anchors.encoder.DetectionStatus`): which detection memdeck's audit runs and,
      when it is not the configured one, why (docs/STATUS_JSON.md).
    """
    warnings: list[str] = []
    home = home if isinstance(home, HermesHome) else HermesHome(home)
    config = config if config is not None else load_config(home)
    out: dict[str, Any] = {"anchors": [], "integrity": {"session_id": None, "score": None, "history": []},
                           "drift_log": [], "anchors_warnings": warnings, "detection": None}
    try:
        from ..anchors.encoder import semantic_encoder

        out["detection"] = semantic_encoder(config, home)[1].to_dict()
    except Exception as exc:  # noqa: BLE001 - status never raises
        warnings.append(f"detection: {type(exc).__name__}: {exc}")
    try:
        store = AnchorStore(home, config, actor="status")
        if store.location.warning:
            warnings.append(store.location.warning)
        infos = store.list_sessions()
        log: list[dict[str, Any]] = []
        for info in infos:
            if info.error:
                warnings.append(f"{info.path.name}: {info.error}")
                continue
            try:
                s = store.load_session(info.session_id)
            except Exception as exc:  # noqa: BLE001 - status never raises
                warnings.append(f"{info.path.name}: {exc}")
                continue
            for e in map(drift_event, s.drift_log):
                if e is not None:
                    log.append({"time": e["time"], "session_id": s.session_id, "score": e["score"],
                                "casualties": e["casualties"]})
        log.sort(key=lambda e: e["time"])
        out["drift_log"] = log[-drift_log_limit:] if drift_log_limit else log
        report = store.load_pins_report()
        warnings.extend(f"persist/{stem}.json quarantined: its sha256 differs from manifest.json" for stem in report.quarantined)
        warnings.extend(f"persist/{stem}.json skipped: {why}" for stem, why in sorted(report.skipped.items()))
        with StateDB.shared(home.state_db) as db:
            db_ok = db.status().ok
            live = db.live_session() if db_ok else None
            sid = default_session_id(store, live.id if live else None)
            if sid is None:
                out["anchors"] = [_pin_row(p) for p in report.pins if p.get("scope") == "global"]
                return out
            sa = audit_session(db, store, sid, config, encoder=encoder, budget_s=budget_s)
        out["anchors"] = [{"id": r.anchor.id, "text": r.anchor.text, "reminder": r.anchor.reminder,
                           "priority": r.anchor.priority, "probes": list(r.anchor.probes), "scope": r.scope,
                           "session_id": sid, "state": r.state} for r in sa.anchors]
        held = {r.anchor.id for r in sa.anchors}
        out["anchors"] += [_pin_row(p) for p in report.pins if p.get("scope") == "global" and str(p["id"]) not in held]
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


def _pin_row(p: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(p["id"]), "text": str(p.get("text", "")), "reminder": str(p.get("reminder", "")),
            "priority": priority_of(p), "probes": probes_of(p), "scope": "global", "session_id": None, "state": "pinned"}


def memory_section(home: HermesHome, config: Config) -> dict[str, Any]:
    """``{"memory": {...}, "user": {...}}`` from :func:`core.memory.read_memory` (never raises)."""
    out: dict[str, Any] = {}
    for t in TARGETS:
        st = read_memory(home, config, t)
        d = st.to_dict()
        d.pop("target", None)
        out[t] = d
    return out


def pending_section(home: HermesHome, config: Config | None = None, provider: str | None = None,
                    now: float | None = None) -> list[dict[str, Any]]:
    """The pending writes as status rows, each with who staged it and what approving it would do
    now (``core/memory/review.py``: ``state``, ``reason``, ``age_s``). Never raises."""
    from ..memory.review import review_queue

    now = time.time() if now is None else now
    out = []
    for item in review_queue(home, config, provider):
        p = item.record
        age = item.age(now)
        out.append({"id": p.id, "action": p.action, "target": p.target, "origin": p.origin, "summary": p.summary,
                    "created_at": p.created_at, "threats": list(p.threats), "malformed": p.malformed,
                    "subsystem": p.subsystem, "staged_by": p.staged_by, "state": item.state, "reason": item.reason,
                    "age_s": round(age, 1) if age is not None else None})
    return out


def hermes_section(home: HermesHome, memory: dict[str, Any]) -> dict[str, Any]:
    """The home's :class:`~memdeck.core.sessions.profile.HermesProfile` as a dict, plus
    ``threat_differences``: every entry and pending write whose memdeck verdict differs from
    the verdict of the Hermes that loads it (empty when that Hermes is unknown)."""
    profile = detect_profile(home)
    texts: list[tuple[str, str]] = []
    for t in TARGETS:
        texts += [(t, str(e.get("text") or "")) for e in (memory.get(t) or {}).get("entries", [])]
    for rec in list_pending(home):
        texts += [(f"pending {rec.id}", c) for c in replay_texts(rec.payload)]
    return {**profile.to_dict(), "threat_differences": threat_differences(profile, texts)}


def stale_sessions_section(home: HermesHome, config: Config, version: HermesVersion) -> dict[str, Any]:
    """``{"count": int, "note": None}``: the open sessions whose frozen memory differs from the
    files (``core/context/report.py`` :func:`stale_session_count`), or ``{"count": None, "note":
    why}`` when state.db cannot be read. Never raises."""
    from ..context.report import stale_session_count

    try:
        with StateDB.shared(home.state_db) as db:
            st = db.status()
            if not st.ok:
                return {"count": None, "note": f"state.db: {st.state}"}
            return {"count": stale_session_count(db, home, config, version), "note": None}
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        return {"count": None, "note": f"{type(exc).__name__}: {exc}"}


def build_status(home: HermesHome, config: Config | None = None) -> dict[str, Any]:
    """Build the status dict described in the module docstring. Never raises on bad data."""
    config = config or load_config(home)
    mark = cut_mark()
    try:
        archived = archive.count(home, kind="memory", state="archived")
    except Exception:  # noqa: BLE001 - an unusable memdeck.db must not break status
        archived = 0
    from ..provider_settings import configured_provider

    out: dict[str, Any] = {
        "home": str(home.path),
        "profile": home.profile,
        "memory": memory_section(home, config),
        "pending": [],
        "archived": archived,
        "config_warnings": list(config.warnings),
        "memory_provider": "",
        "alert_floor": int(config.memlock.alert_floor),
    }
    errors: dict[str, str] = {}
    try:
        out["changes"] = history_summary(home).to_dict()
    except Exception as exc:  # noqa: BLE001 - an unusable memdeck.db must not break status
        errors["changes"] = f"{type(exc).__name__}: {exc}"
    note = session_store_note(config, home)
    if note:
        out["session_store"] = {"name": config.session_store, "source": config.session_store_source, "message": note}
    try:
        out["memlock_location"] = locate_memlock(home).to_dict()
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["memlock_location"] = f"{type(exc).__name__}: {exc}"
    with sharing_readers():  # one state.db reader for every section: the history is read once
        try:
            out["hermes"] = hermes_section(home, out["memory"])
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            errors["profile"] = f"{type(exc).__name__}: {exc}"
        _merge_sections(home, config, out, errors)
        hermes = out.get("hermes") or {}
        version = HermesVersion.of(hermes.get("version"), hermes.get("version_source") or "")
        out["stale_sessions"] = stale_sessions_section(home, config, version)
    provider = configured_provider(config, version)  # the one reading (dashboard, fleet, metrics too)
    out["pending"] = pending_section(home, config, provider)
    out["memory_provider"] = provider or ""
    try:
        from ..provider_settings import provider_settings

        out["provider"] = provider_settings(config, home, version).to_dict()
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["provider"] = f"{type(exc).__name__}: {exc}"
    try:
        from ..context.cost import totals_dict
        from ..deck.usage import home_totals

        out["cost"] = totals_dict(home_totals(home))  # issue 37: what the plugin recorded, None when nothing
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["cost"] = f"{type(exc).__name__}: {exc}"
    try:
        out["hygiene"] = hygiene_section(home, config)
    except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
        errors["hygiene"] = f"{type(exc).__name__}: {exc}"
    out["section_errors"] = errors
    out["cut_reads"] = [c.to_dict() for c in cuts_since(mark)]
    return out


def hygiene_section(home: HermesHome, config: Config) -> dict[str, Any]:
    """``{"method": "lexical", "counts": {duplicate, contradiction, stale, wasteful}, "chars_saved"}``:
    the hygiene findings (``core/hygiene``) by the lexical method, which costs milliseconds
    (``memdeck hygiene`` adds meaning with the semantic extra and may find more)."""
    from ..hygiene.detect import hygiene_report

    report = hygiene_report(home, config, semantic=False)
    return {"method": report.method, "counts": report.counts(),
            "chars_saved": sum(f.chars_saved for f in report.findings if f.kind != "contradiction")}


def _merge_sections(home: HermesHome, config: Config, out: dict[str, Any], errors: dict[str, str]) -> None:
    for mod, fn in MERGED_PROVIDERS:
        try:
            part = fn(home, config)
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            errors[mod] = f"{type(exc).__name__}: {exc}"
            continue
        if isinstance(part, dict):
            for key, value in part.items():
                out.setdefault(key, value)
    for key, fn in _REGISTERED.items():
        if key in out:
            continue
        try:
            out[key] = fn(home, config)
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            out[key] = {"error": f"{type(exc).__name__}: {exc}"}
