"""The integrity history of a session: per-compaction verdicts, computed once and cached.

One concept: how an anchor set fared at each compaction of a session (read through
:class:`core.sessions.statedb.StateDB`), with the verdicts cached in this process and in
memdeck.db's ``audit_verdicts`` table, and MemLock's drift log turned into events.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .audit import AnchorVerdict, audited_region, integrity_score, run_audit
from .rules import anchor_id_of, field_of, memlock_cfg, probes_of


def session_system_prompt(db: Any, session_id: str) -> str:
    """The session's system prompt through ``StateDB.system_prompt`` (the column, else the
    ``system_prompts`` row by ``system_prompt_hash`` on schema >= 23); '' when unavailable."""
    try:
        return str(db.system_prompt(session_id) or "")
    except Exception:  # noqa: BLE001 - any reader failure means no system prompt, as documented
        return ""


def session_events(db: Any, session_id: str) -> list[Any]:
    return [e for e in db.compactions(session_id) if e.session_id == session_id or e.child_session_id == session_id]


def detection_encoder(config: Any, encoder: Any = None, home: Any = None) -> tuple[Any, str | None]:
    """The encoder an audit of ``config`` uses and the identity its verdicts are cached under.

    ``detection: keyword``: ``(encoder, "")`` (the encoder is not used). ``semantic``: the
    caller's ``encoder`` with its identity when it is memdeck's verified model, else ``None``
    (a stand-in's verdicts are never cached); without one, memdeck's verified model
    (:func:`core.anchors.encoder.semantic_encoder`) and its identity, or ``(None, None)`` when it
    cannot be used (the audit then falls back to keyword, and those verdicts are not cached:
    they change when the model is installed).
    """
    cfg = memlock_cfg(config)
    if str(getattr(cfg, "detection", "keyword")).strip().lower() != "semantic":
        return encoder, ""
    from .encoder import encoder_identity, semantic_encoder

    if encoder is not None:
        return encoder, encoder_identity(encoder)
    enc, _status = semantic_encoder(cfg, home)
    return enc, (encoder_identity(enc) if enc is not None else None)


def integrity_history(db: Any, session: Any, anchors: Sequence[Any], config: Any = None, *,
                      system_prompt: str = "", encoder: Any = None, events: Sequence[Any] | None = None,
                      audited: Mapping[int, Mapping[str, AnchorVerdict]] | None = None,
                      home: Any = None, budget_s: float | None = None,
                      progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Integrity score after every compaction event of the session in state.db, merged with
    MemLock's own ``drift_log``.

    Each state.db event is audited on :meth:`StateDB.region_after` (what MemLock audited on
    the next turn) with the *current* anchor set. A ``drift_log`` entry whose time falls
    between an event and the next one is taken as MemLock's audit of that event: the point
    keeps MemLock's score and casualties (``source: "memlock+state.db"``) plus ours
    (``computed_score``). Other drift-log entries (safety-net audits, or events state.db no
    longer shows) stay as ``source: "memlock"``; events MemLock never logged are
    ``source: "state.db"``. ``audited`` maps an event's ``index`` to verdicts the caller
    already computed on that event's region (so it is not audited twice).

    Verdicts are cached (this process, then memdeck.db's ``audit_verdicts``) when they are
    reproducible: keyword ones, and semantic ones of memdeck's verified model (keyed by its
    identity too). Events without cached verdicts are audited **newest first**; ``progress(done,
    total)`` (default: ``db.progress``, the dashboard's reporter, which raises to stop the work
    when the dashboard closes) is called before each one, and with ``budget_s`` (seconds) the
    audits stop once that much time has passed (at least one runs, unless ``budget_s`` is 0: then
    none does): the events left are points with ``score`` None and
    ``pending: True``, audited by a later call (each finished audit's vectors and verdicts are
    kept, so an interrupted history resumes where it stopped).

    Returns:
        ``[{time (epoch s), score, casualties, source, [event_index, mode, computed_score, pending]}]``
        oldest first.
    """
    import time as _time

    events = list(events if events is not None else session_events(db, session.session_id))
    home = home if home is not None else _home_of(db)
    encoder, ident = detection_encoder(config, encoder, home)
    memo_key = (str(getattr(db, "path", "")), ident, *_inputs_key(events, anchors, config, system_prompt, session, audited))
    sid = str(getattr(session, "session_id", ""))
    kept = _HISTORY_MEMO.get(sid)
    if ident is not None and kept is not None and kept[0] == memo_key:  # nothing it depends on changed (an appended message)
        return [dict(p) for p in kept[1]]
    cached = _cached_verdicts(db, events, anchors, config, system_prompt, home, ident)
    found: dict[int, Mapping[str, AnchorVerdict]] = {}
    todo = []
    for ev in events:
        verdicts = (audited or {}).get(ev.index)
        if verdicts is None:
            verdicts = cached.get(ev.index)
        if verdicts is None:
            todo.append(ev)
        else:
            found[ev.index] = verdicts
    fresh: list[tuple[Any, str, dict[str, AnchorVerdict]]] = []
    shared = _shared_key_parts(anchors, config, system_prompt) if todo else None
    report = progress if progress is not None else getattr(db, "progress", None)
    started = _time.monotonic()
    try:
        for done, ev in enumerate(reversed(todo)):  # newest first: the points a person looks at
            if budget_s is not None and (done or budget_s <= 0) and _time.monotonic() - started >= budget_s:
                break  # a budget of 0 audits none: another worker fills the history
            if report is not None and len(todo) > 1:
                report(done, len(todo))
            verdicts = run_audit(anchors, audited_region(db.region_after(ev), system_prompt), config, encoder=encoder,
                                 home=home)
            found[ev.index] = verdicts
            fresh.append((ev, _verdict_key(ev, anchors, config, system_prompt, ident, shared=shared), verdicts))
            if ident:  # a semantic audit is slow: keep each one as it finishes (an interruption loses one)
                _remember_verdicts(fresh[-1:], anchors, config, home, ident)
    finally:
        if not ident:
            _remember_verdicts(fresh, anchors, config, home, ident)
    points: list[dict[str, Any]] = []
    pending = 0
    for ev in events:
        verdicts = found.get(ev.index)
        if verdicts is None:
            pending += 1
            points.append({"time": float(ev.time), "score": None, "casualties": [], "source": "state.db",
                           "event_index": ev.index, "mode": ev.mode, "pending": True})
            continue
        points.append({"time": float(ev.time), "score": integrity_score(verdicts.values()),
                       "casualties": [k for k, v in verdicts.items() if not v.alive],
                       "source": "state.db", "event_index": ev.index, "mode": ev.mode})
    log = sorted((e for e in map(drift_event, getattr(session, "drift_log", [])) if e is not None),
                 key=lambda e: e["time"])
    used: set[int] = set()
    for i, p in enumerate(points):
        start = p["time"]
        end = points[i + 1]["time"] if i + 1 < len(points) else math.inf
        for j, e in enumerate(log):
            if j not in used and start <= e["time"] < end:
                used.add(j)
                p.update({"computed_score": p["score"], "score": e["score"],
                          "casualties": e["casualties"], "source": "memlock+state.db",
                          "memlock_time": e["time"]})
                break
    for j, e in enumerate(log):
        if j not in used:
            points.append({"time": e["time"], "score": e["score"], "casualties": e["casualties"], "source": "memlock"})
    points.sort(key=lambda p: p["time"])
    if ident is not None and not pending:
        _HISTORY_MEMO.pop(sid, None)
        while len(_HISTORY_MEMO) >= _HISTORY_MEMO_MAX:
            _HISTORY_MEMO.pop(next(iter(_HISTORY_MEMO)))
        _HISTORY_MEMO[sid] = (memo_key, [dict(p) for p in points])
    return points


def verdicts_after(db: Any, event: Any, anchors: Sequence[Any], config: Any = None, *, system_prompt: str = "",
                   encoder: Any = None, home: Any = None) -> dict[str, AnchorVerdict]:
    """``{anchor id: verdict}`` of ``anchors`` on the region right after ``event``
    (:meth:`StateDB.region_after`, what MemLock audited on the next turn).

    Verdicts come from the same cache as :func:`integrity_history`'s (this process, then
    memdeck.db's ``audit_verdicts``) and are added to it when computed; a refresh after an
    appended message does not read or audit the last compaction's region again. With a
    stand-in ``encoder`` (not memdeck's verified model) the audit always runs.
    """
    home = home if home is not None else _home_of(db)
    encoder, ident = detection_encoder(config, encoder, home)
    key = _verdict_key(event, anchors, config, system_prompt, ident)
    if ident is not None:
        hit = _MEMO.get(key)
        if hit is None:
            hit = _cached_verdicts(db, [event], anchors, config, system_prompt, home, ident).get(event.index)
        if hit is not None:
            return hit
    verdicts = run_audit(anchors, audited_region(db.region_after(event), system_prompt), config, encoder=encoder,
                         home=home)
    _remember_verdicts([(event, key, verdicts)], anchors, config, home, ident)
    return verdicts


#: The last integrity history computed per session, with the inputs it was computed from
#: (:func:`_inputs_key`): a refresh after an appended message (new ``PRAGMA data_version``, same
#: compactions, anchors, config and drift log) returns it instead of re-deriving 1,250 verdict
#: keys and scores (measured at 1M rows: ~20 ms of every refresh). Keyword audits only: a
#: semantic verdict depends on the encoder too.
_HISTORY_MEMO: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
_HISTORY_MEMO_MAX = 16


def clear_process_cache() -> None:
    """Forget the verdicts and histories kept in this process (what a new process starts with;
    memdeck.db's ``audit_verdicts`` is untouched)."""
    _MEMO.clear()
    _HISTORY_MEMO.clear()


def _inputs_key(events: Sequence[Any], anchors: Sequence[Any], config: Any, system_prompt: str, session: Any,
                audited: Mapping[int, Mapping[str, AnchorVerdict]] | None) -> tuple[Any, ...]:
    """Everything :func:`integrity_history`'s result depends on, as a comparable value: each
    event's identity and time, the anchor set, the detection config, the system prompt,
    MemLock's drift log and the verdicts the caller passed in."""
    return (tuple((e.index, e.time, e.session_id, e.mode, e.summary_hash, e.summary_message_id, e.region_first_id,
                   e.region_last_id, e.child_session_id) for e in events),
            anchors_hash(anchors), config_hash(config), system_prompt,
            _h(list(getattr(session, "drift_log", None) or [])),
            repr(sorted((i, sorted(v.items())) for i, v in (audited or {}).items())))


# ── per-compaction verdict cache ───────────────────────────────────────────
# A compaction's verdicts depend only on its region (session, summary, region rows), the
# system prompt MemLock saw with it, the anchor set and the detection config: computed once,
# kept in this process (bounded) and, when the home has a memdeck.db, in its audit_verdicts
# table (core.deck.db), so a restart does not re-audit a thousand compactions.

_MEMO: dict[str, dict[str, AnchorVerdict]] = {}
_MEMO_MAX = 20_000


def _h(obj: Any) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8")).hexdigest()


def anchors_hash(anchors: Sequence[Any]) -> str:
    """sha256 of what an audit reads of each anchor (id, text, probes, reminder)."""
    return _h([[anchor_id_of(a), str(field_of(a, "text", "")), probes_of(a)] for a in anchors])


def config_hash(config: Any) -> str:
    """sha256 of the detection config (MemLock section: method, thresholds, model)."""
    cfg = memlock_cfg(config)
    fields = getattr(cfg, "__dataclass_fields__", None)
    return _h({k: getattr(cfg, k) for k in sorted(fields)} if fields else repr(cfg))


def _verdict_key(ev: Any, anchors: Sequence[Any], config: Any, system_prompt: str, ident: str | None = "",
                 *, shared: tuple[str, str, str] | None = None) -> str:
    """What a compaction's verdicts depend on; semantic ones on the encoder's identity too
    (keyword keys are unchanged from before migration 8, so their cache stays valid).
    ``shared``: :func:`_shared_key_parts` of these anchors, config and prompt, when the caller
    keys many events (the same value, hashed once)."""
    prompt_h, anchors_h, config_h = shared if shared is not None else _shared_key_parts(anchors, config, system_prompt)
    parts = [ev.session_id, ev.mode, ev.summary_hash, ev.summary_message_id, ev.region_first_id, ev.region_last_id,
             ev.child_session_id, prompt_h, anchors_h, config_h]
    if ident:
        parts.append(ident)
    return _h(parts)


def _shared_key_parts(anchors: Sequence[Any], config: Any, system_prompt: str) -> tuple[str, str, str]:
    """The parts of :func:`_verdict_key` every event of one call shares: the system prompt's, the
    anchor set's and the detection config's hashes (at 1M rows a session's 773 keys hashed the
    prompt and the anchors 773 times: ~20 ms of ``status --json``)."""
    return _h(system_prompt), anchors_hash(anchors), config_hash(config)


def _home_of(db: Any) -> Any:
    path = getattr(db, "path", None)
    return path.parent if path is not None else None


def _cached_verdicts(db: Any, events: Sequence[Any], anchors: Sequence[Any], config: Any, system_prompt: str,
                     home: Any, ident: str | None = "") -> dict[int, dict[str, AnchorVerdict]]:
    out: dict[int, dict[str, AnchorVerdict]] = {}
    if not events or ident is None:
        return out
    shared = _shared_key_parts(anchors, config, system_prompt)
    keys = {ev.index: _verdict_key(ev, anchors, config, system_prompt, ident, shared=shared) for ev in events}
    missing = []
    for idx, k in keys.items():
        v = _MEMO.get(k)
        if v is not None:
            out[idx] = v
        else:
            missing.append(k)
    home = home if home is not None else _home_of(db)
    if missing and home is not None:
        import json

        from ..deck.db import load_audit_verdicts

        stored = load_audit_verdicts(home, missing)
        by_key = {k: i for i, k in keys.items()}
        for k, text in stored.items():
            try:
                verdicts = {str(d["id"]): AnchorVerdict(str(d["id"]), bool(d["alive"]), int(d["hits"]),
                                                        tuple(d["probes"]), tuple(d["missing"]), d.get("similarity"),
                                                        str(d.get("method", "keyword")))
                            for d in json.loads(text)}
            except (ValueError, KeyError, TypeError):
                continue
            if set(verdicts) != {anchor_id_of(a) for a in anchors}:
                continue
            _memo_put(k, verdicts)
            out[by_key[k]] = verdicts
    return out


def _memo_put(key: str, verdicts: dict[str, AnchorVerdict]) -> None:
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = verdicts


def _remember_verdicts(fresh: Sequence[tuple[Any, str, dict[str, AnchorVerdict]]], anchors: Sequence[Any],
                       config: Any, home: Any, ident: str | None = "") -> None:
    """Keep newly computed verdicts in memory and append them to memdeck.db (if it exists):
    keyword ones, and semantic ones of memdeck's verified model (``ident``); never a stand-in
    encoder's (``ident`` None) nor a keyword fallback's (it changes once the model loads)."""
    import json
    import time as _time

    if ident is None:
        return
    rows = []
    ah, ch = anchors_hash(anchors), config_hash(config)
    ok = {"keyword", "semantic"} if ident else {"keyword"}
    for ev, key, verdicts in fresh:
        if any(v.method not in ok for v in verdicts.values()):
            continue
        _memo_put(key, verdicts)
        rows.append((key, str(ev.session_id), ev.summary_hash, ah, ch,
                     json.dumps([v.to_dict() for v in verdicts.values()]), _time.time()))
    if rows and home is not None:
        from ..deck.db import store_audit_verdicts

        store_audit_verdicts(home, rows)


def drift_event(event: Any) -> dict[str, Any] | None:
    """A MemLock drift-log event (``{time, score, casualties[, reverse]}``, reference §1.2) as
    ``{time, score, casualties}`` with safe types, for readers of hand-editable files.

    ``time``: finite epoch seconds (float), else the event is dropped (None is returned);
    ``score``: int percent 0-100, else None; ``casualties``: the str/int items of a list, as
    strings (anything else gives ``[]``). NaN and infinities never pass, so JSON output built
    from the result stays strict.
    """
    if not isinstance(event, Mapping):
        return None
    t = event.get("time")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        return None
    score = event.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) or not 0 <= score <= 100:
        score = None
    cas = event.get("casualties")
    casualties = [str(c) for c in cas if isinstance(c, (str, int)) and not isinstance(c, bool)] if isinstance(cas, list) else []
    return {"time": float(t), "score": None if score is None else int(score), "casualties": casualties}


