"""The ledger of a session's compactions in state.db (``memdeck constraints``): for each
compaction, the user's rules in the turns it compacted, the summary's lines, and each verdict
(:mod:`.classify`). Read-only on state.db.

Each compaction's ledger is computed once and kept in memdeck.db (``constraint_ledgers``, keyed by
what determines it: :func:`ledger_key`), as the integrity history keeps its verdicts; what anchors
and MEMORY/USER carry is checked when the ledger is read (:func:`.classify.apply_carried`), so a
memory change never computes a ledger again. A bounded read (``budget_s``) computes the newest
compactions first and leaves the rest ``pending``; :func:`fill_ledgers` advances them in steps.
"""

from __future__ import annotations

import copy
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from .classify import VERDICTS, Item, apply_carried, classify
from .rules import rules_in
from .summary import summary_lines

#: the version of the rule (markers, rule finding, summary parsing, classifier): a stored ledger of
#: another version is computed again. Bump it with any change that can change a verdict.
RULE_VERSION = 3

#: ledgers computed or loaded in this process, by key (a refresh without memdeck.db computes none twice)
_MEMO: OrderedDict[str, dict[str, Any]] = OrderedDict()
_MEMO_MAX = 4096
#: :func:`ledger_counts` of complete ledgers, by (home, session, the compactions' ledger keys, what
#: else carries a rule): a read after an appended message changes none of these and re-checks nothing
_COUNTS_MEMO: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_COUNTS_MEMO_MAX = 16


class _Cosine:
    """MiniLM cosine between two texts, each text encoded once: :meth:`prime` encodes a
    compaction's rules and lines in one batch (one forward pass, not one per pair)."""

    def __init__(self, enc: Any) -> None:
        self.enc = enc
        self.vecs: dict[str, Any] = {}

    def prime(self, texts: Sequence[str]) -> None:
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.vecs]
        if not todo:
            return
        vecs = np.asarray(self.enc.model.encode(todo), dtype=float)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        for t, v in zip(todo, vecs / norms):
            self.vecs[t] = v
        if len(self.vecs) > 20_000:  # a bound on a long fill's memory
            self.vecs = {t: self.vecs[t] for t in todo}

    def __call__(self, a: str, b: str) -> float:
        self.prime([a, b])
        return float(self.vecs[a] @ self.vecs[b])


def _cosine(home: Any, semantic: bool) -> tuple[Any, str]:
    if not semantic:
        return None, "keyword"
    from ..hygiene.similarity import SEMANTIC, hygiene_encoder

    enc = hygiene_encoder(home)
    if enc.method != SEMANTIC:
        return None, "keyword"
    return _Cosine(enc), "semantic"


def _carried(home: Any, config: Any, session_id: str) -> list[tuple[str, str]]:
    """Anchors of the session (and global pins) and MEMORY/USER entries: what else keeps a rule."""
    out: list[tuple[str, str]] = []
    try:
        from ..memory.reader import read_memory

        for t in ("memory", "user"):
            out += [(t, e.text) for e in read_memory(home, config, t).entries]
    except Exception:  # noqa: BLE001 - an unreadable file carries nothing (the verdict says lost)
        pass
    try:
        from ..anchors.store import AnchorStore

        store = AnchorStore(home, config)
        out += [("anchor", a.text) for a in store.load_session(session_id).sorted_anchors()]
    except Exception:  # noqa: BLE001 - no MemLock file for the session
        pass
    return out


def _region_texts(db: Any, ev: Any) -> set[str]:
    """The stripped texts of the user rows of the region a compaction inserted (the head Hermes
    copied, the summary, the tail; a rotation's are the child's rows): the model still reads them
    word for word, so their turns were not compacted."""
    if ev.region_first_id is None or ev.region_last_id is None:
        return set()
    sid = ev.child_session_id if ev.mode == "rotation" and ev.child_session_id else ev.session_id
    return {(m.text or "").strip() for m in db.user_rows(sid, ev.region_first_id, ev.region_last_id + 1)}


def _spans(events: Sequence[Any]) -> list[tuple[Any, int, int | None]]:
    """``(event, first id, end id)`` of the rows each compaction compacted: an in-place compaction's
    from the previous region (or the start) up to its own region; a rotation's, the parent's rows
    from its last region on."""
    out, start = [], 0
    for ev in events:
        end = ev.region_first_id if ev.mode == "in_place" and ev.region_first_id is not None else None
        out.append((ev, start, end))
        if ev.region_first_id is not None:
            start = ev.region_first_id
    return out


def ledger_key(ev: Any, start: int, end: int | None, method: str) -> str:
    """What determines one compaction's ledger, hashed: the compaction's identity (session, mode,
    summary row and its hash, the compacted rows' range, the inserted region), the method and
    :data:`RULE_VERSION`."""
    ident = [ev.session_id, ev.mode, ev.summary_message_id, ev.summary_hash, start, end, ev.region_first_id,
             ev.region_last_id, ev.child_session_id, method, RULE_VERSION]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()


def _compute(db: Any, ev: Any, start: int, end: int | None, cosine: Any, method: str) -> dict[str, Any]:
    """One compaction's ledger entry, before the carried check."""
    summary = db.message(ev.summary_message_id) if ev.summary_message_id is not None else None
    rows = db.user_rows(ev.session_id, start, end)
    # an in-place compaction compacted the rows it flagged (Hermes 0.22 leaves the rows it copied
    # into a merged tail unflagged); a turn copied into the new region was not compacted either
    region = _region_texts(db, ev)
    turns = [m for m in rows if m.id != ev.summary_message_id and (ev.mode != "in_place" or m.compacted)
             and (m.text or "").strip() not in region]
    rules = [r for m in turns for r in rules_in(m.text, m.id)]
    lines = summary_lines(summary.text if summary is not None else "")
    if cosine is not None and rules and lines and hasattr(cosine, "prime"):
        cosine.prime([r.text for r in rules] + [ln.text for ln in lines])
    items: Sequence[Item] = classify(rules, lines, cosine=cosine)
    return {"compaction_id": ev.index, "at": float(ev.time), "mode": ev.mode, "summary_found": summary is not None,
            "items": [i.to_dict() for i in items], "method": method}


def _memo_put(key: str, entry: dict[str, Any]) -> None:
    _MEMO[key] = entry
    _MEMO.move_to_end(key)
    while len(_MEMO) > _MEMO_MAX:
        _MEMO.popitem(last=False)


def _entries(db: Any, home: Any, session_id: str, spans: Sequence[tuple[Any, int, int | None]], cosine: Any,
             method: str, budget_s: float | None,
             progress: Callable[[int, int], None] | None = None) -> tuple[list[dict[str, Any] | None], int]:
    """The stored or computed entry of each span (None: not computed within ``budget_s``; the
    newest first), and how many were computed now. New ones are kept in memdeck.db."""
    from ..deck.db import load_constraint_ledgers, store_constraint_ledgers

    where = str(getattr(home, "path", home))
    keys = [where + ":" + ledger_key(ev, s, e, method) for ev, s, e in spans]
    out: list[dict[str, Any] | None] = [dict(_MEMO[k]) if k in _MEMO else None for k in keys]
    missing = [k for k, o in zip(keys, out) if o is None]
    if missing and home is not None:
        for k, text in load_constraint_ledgers(home, [k.rsplit(":", 1)[1] for k in missing]).items():
            k = where + ":" + k
            try:
                entry = json.loads(text)
            except ValueError:
                continue
            _memo_put(k, entry)
        out = [dict(_MEMO[k]) if k in _MEMO else None for k in keys]
    todo = [i for i, o in enumerate(out) if o is None]
    t0 = time.perf_counter()
    rows: list[tuple[str, str, int, str, int, str, str, float]] = []
    done = 0
    for n, i in enumerate(reversed(todo)):  # newest first
        if budget_s is not None and n and time.perf_counter() - t0 >= budget_s:
            break
        ev, s, e = spans[i]
        entry = _compute(db, ev, s, e, cosine, method)
        out[i] = dict(entry)
        _memo_put(keys[i], entry)
        c = dict.fromkeys(VERDICTS, 0)
        for it in entry["items"]:
            c[it["verdict"]] += 1
        rows.append((keys[i].rsplit(":", 1)[1], session_id, int(ev.index), method, RULE_VERSION, json.dumps(entry, ensure_ascii=False),
                     json.dumps(c), time.time()))
        done += 1
        if progress is not None:
            progress(done, len(todo))
    if rows and home is not None:
        store_constraint_ledgers(home, rows)
    return out, done


def session_ledger(db: Any, home: Any, config: Any, session_id: str, *, compaction: int | None = None,
                   semantic: bool = True, budget_s: float | None = None,
                   carried: Sequence[tuple[str, str]] | None = None) -> dict[str, Any]:
    """``{"session_id", "method", "pending", "compactions": [{"compaction_id", "at", "mode",
    "summary_found", "items": [...]}]}`` (the shape of ``memdeck constraints --json``): one entry per
    compaction of the session, oldest first (``compaction``: only that 1-based index).

    The compacted user turns of an in-place compaction are the session's user rows Hermes flagged
    ``compacted`` from the previous compaction's region (or the start) up to this one's; of a
    rotation, the parent's user rows from its last region on; in both, less the turns Hermes copied
    into the new region. Each entry is computed once (kept in memdeck.db when it exists);
    ``budget_s`` bounds the seconds spent computing (newest first): the compactions left are not
    listed and counted in ``pending``. ``carried``: the ``(where, text)`` that keep a rule besides
    the summary (default: the session's anchors and MEMORY/USER read now).
    """
    events = [e for e in db.compactions(session_id) if e.session_id == session_id]
    spans = [sp for sp in _spans(events) if compaction is None or sp[0].index == compaction]
    cosine, method = _cosine(home, semantic)
    entries, _done = _entries(db, home, session_id, spans, cosine, method, budget_s)
    if carried is None:
        carried = _carried(home, config, session_id)
    out: list[dict[str, Any]] = []
    for entry in entries:
        if entry is None:
            continue
        entry.pop("method", None)
        entry["items"] = [i.to_dict() for i in apply_carried([Item(**it) for it in entry["items"]], carried)]
        out.append(entry)
    return {"session_id": session_id, "method": method, "pending": sum(1 for e in entries if e is None),
            "compactions": out}


def pending_ledgers(db: Any, home: Any, session_id: str, *, semantic: bool = False) -> int:
    """How many of the session's compactions have no ledger kept (in this process or memdeck.db)
    for the method ``semantic`` resolves to. Computes nothing."""
    from ..deck.db import load_constraint_ledgers

    events = [e for e in db.compactions(session_id) if e.session_id == session_id]
    _cos, method = _cosine(home, semantic) if semantic else (None, "keyword")
    where = str(getattr(home, "path", home))
    keys = [ledger_key(ev, s, e, method) for ev, s, e in _spans(events)]
    missing = [k for k in keys if where + ":" + k not in _MEMO]
    if missing and home is not None:
        missing = [k for k in missing if k not in load_constraint_ledgers(home, missing)]
    return len(missing)


def fill_ledgers(db: Any, home: Any, session_id: str, *, budget_s: float, semantic: bool = False,
                 progress: Callable[[int, int], None] | None = None) -> int:
    """Compute and keep the session's ledgers not kept yet, for at most ``budget_s`` seconds (at
    least one when any is left; newest first), and return how many are still not kept (0: the
    ledger is complete). The dashboard runs it in a worker of its own, step after step, until it
    returns 0 or stops making progress (a memdeck.db it cannot write: the caller stops).
    ``progress(done, total)`` may raise to stop (what was computed is kept)."""
    events = [e for e in db.compactions(session_id) if e.session_id == session_id]
    spans = _spans(events)
    cosine, method = _cosine(home, semantic)
    entries, _done = _entries(db, home, session_id, spans, cosine, method, max(budget_s, 1e-9), progress)
    return sum(1 for e in entries if e is None)


def counts(ledger: dict[str, Any]) -> dict[str, int]:
    """Items per verdict over every compaction of a :func:`session_ledger`."""
    c = dict.fromkeys(VERDICTS, 0)
    for comp in ledger.get("compactions", []):
        for it in comp["items"]:
            c[it["verdict"]] += 1
    return c


def clear_process_cache() -> None:
    """Forget the ledgers kept in this process (tests; a home switched)."""
    _MEMO.clear()
    _COUNTS_MEMO.clear()


#: the verdicts that tell a person a compaction changed a rule (the toast's and watch's)
CHANGED = ("lost", "weakened", "promoted")


def ledger_counts(db: Any, home: Any, config: Any, session_id: str, *, budget_s: float | None,
                  carried: Sequence[tuple[str, str]] | None = None) -> dict[str, Any]:
    """The counts the dashboard and ``status --json`` show for one session's keyword ledger:
    ``{"session_id", "method", "compactions" (int), "pending" (compactions not computed yet within
    ``budget_s``), "counts": {verdict: n} over the computed ones, "newest": {"compaction_id", "at",
    "counts", "changed": [{"verdict", "rule", "summary_line", "source_turn_id", "scope"}]} | null}``
    (``newest``: the session's newest compaction: a bounded read computes it first, always)."""
    memo_key: tuple[Any, ...] | None = None
    if carried is not None:  # the counts depend on nothing else: the ledgers are fixed per compaction
        events = [e for e in db.compactions(session_id) if e.session_id == session_id]
        memo_key = (str(getattr(home, "path", home)), session_id,
                    tuple(ledger_key(ev, s, e, "keyword") for ev, s, e in _spans(events)), tuple(carried))
        hit = _COUNTS_MEMO.get(memo_key)
        if hit is not None:
            _COUNTS_MEMO.move_to_end(memo_key)
            return copy.deepcopy(hit)
    led = session_ledger(db, home, config, session_id, semantic=False, budget_s=budget_s, carried=carried)
    comps = led["compactions"]
    newest = None
    total = len(comps) + int(led["pending"])
    if comps:
        last = comps[-1]
        newest = {"compaction_id": last["compaction_id"], "at": last["at"],
                  "counts": counts({"compactions": [last]}),
                  "changed": [{k: i[k] for k in ("verdict", "rule", "summary_line", "source_turn_id", "scope")}
                              for i in last["items"] if i["verdict"] in CHANGED]}
    out = {"session_id": session_id, "method": led["method"], "compactions": total, "pending": int(led["pending"]),
           "counts": counts(led), "newest": newest}
    if memo_key is not None and not out["pending"]:  # only a complete ledger: a pending one changes as it fills
        _COUNTS_MEMO[memo_key] = copy.deepcopy(out)
        while len(_COUNTS_MEMO) > _COUNTS_MEMO_MAX:
            _COUNTS_MEMO.popitem(last=False)
    return out
