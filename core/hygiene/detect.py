"""The four kinds of hygiene finding over a home's MEMORY.md, USER.md and memdeck's archive
(:func:`hygiene_report`). Offline: the lexical rules of :mod:`.pairs`, with meaning from the
verified all-MiniLM-L6-v2 when the semantic extra is installed; Hermes' own ``session_search``
ranking (``core/sessions/recall.py``) tells whether a session touched an entry's subject since it
was written; the change history (``core/history``) tells who wrote each entry and when.

* **duplicate**: groups of entries whose pairs are duplicates (:func:`.pairs.classify`); the
  proposal merges a group into its longest entry (the person edits the merged text).
* **wasteful**: an entry every word of which another, longer entry already carries (across
  MEMORY and USER too: a USER fact copied into MEMORY); the proposal archives it. Its
  ``chars_saved`` is what it costs on every turn.
* **contradiction**: a pair on the same subject with a differing value or polarity, both
  entries with their history side by side; the newer is not assumed right: the person keeps
  one (``--keep 1|2``), the other is archived.
* **stale**: an entry naming an absolute path that is gone from this machine (its parent directory
  is here, the path is not); an entry no
  session mentioned (no ``session_search`` hit in any turn) for ``stale_days`` since it was
  written; an entry the person archived that a writer put back since; an entry Hermes wrote
  (a tool call, its background review) that says again what the person had replaced or removed.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..memory.entries import ENTRY_DELIMITER, serialize_entries
from .findings import EntryRef, Finding, HygieneReport, Proposal, finding_id
from .pairs import CONTRADICTION, DUPLICATE, classify, may_not_be_distinct
from .similarity import LEXICAL, Encoder, cosine_matrix, hygiene_encoder
from .words import Words, words

#: days without a session mentioning an entry's subject before it is called stale (settable:
#: ``memdeck hygiene --stale-days N``)
STALE_DAYS = 90
#: the smaller entry's share of words the longer one must carry for it to be wasteful
WASTEFUL_CONTAINMENT = 1.0
#: entries compared pair by pair at most (Hermes' char limits hold 20-60; a hand-made or hostile
#: file with thousands would cost millions of pairs): past it, pairs are not compared, and said so
MAX_COMPARED = 300
#: contradiction candidates reported at most (many entries on one subject with other values)
MAX_CONTRADICTIONS = 100
#: absolute or home-relative paths in an entry (not URLs: ``s3://x/y``, ``https://x/y``)
_PATH = re.compile(r"(?<![\w.:/~-])(~?/[\w.+-]+(?:/[\w.+-]+)+/?)")


def _gone(path: str) -> bool:
    """True when ``path`` does not exist but its parent directory does: the place is on this
    machine and the thing it names is gone (a path whose parent is missing too may be another
    machine's, a gateway's server: not judged)."""
    full = os.path.expanduser(path.rstrip("/"))
    return not os.path.lexists(full) and os.path.isdir(os.path.dirname(full))


#: the change history's actors that are the person (memdeck's CLI and dashboard, a hand edit)
PERSON_ACTORS = frozenset({"cli", "tui", "external"})
#: the actors that are Hermes itself (a tool call, an applied pending write of its review)
HERMES_ACTORS = frozenset({"hermes", "pending"})


def _changes(home: Any) -> list[Any]:
    """memdeck's change history of memory entries, newest first ([] when there is none)."""
    from ..history.changes import list_changes

    try:
        return [c for c in list_changes(home, limit=5000) if c.kind == "memory" and c.target]
    except Exception:  # noqa: BLE001 - no history: who and when are unknown, and said so
        return []


def _history(home: Any, changes: list[Any] | None = None) -> dict[tuple[str, str], Any]:
    """(target, text) -> the newest change that wrote that entry text (memdeck's history)."""
    out: dict[tuple[str, str], Any] = {}
    for c in changes if changes is not None else _changes(home):  # newest first
        if c.after:
            out.setdefault((c.target, c.after), c)
    return out


def _ref(target: str, text: str, hist: dict[tuple[str, str], Any]) -> EntryRef:
    c = hist.get((target, text))
    if c is None:
        return EntryRef(target, text)
    sid = (c.attribution or {}).get("session_id") if isinstance(c.attribution, dict) else None
    return EntryRef(target, text, float(c.until), c.actor, sid)


def _saved(entries: dict[str, list[str]], drop: Sequence[EntryRef], replace: dict[EntryRef, str] | None = None) -> int:
    """Chars the next session's frozen block shrinks by when ``drop`` go and ``replace`` apply."""
    saved = 0
    for target, texts in entries.items():
        gone = {e.text for e in drop if e.target == target}
        new = [t for t in texts if t not in gone]
        for ref, text in (replace or {}).items():
            if ref.target == target and ref.text in new:
                new[new.index(ref.text)] = text
        saved += len(serialize_entries(texts)) - len(serialize_entries(list(dict.fromkeys(new))))
    return saved


def hygiene_report(home: Any, config: Any = None, *, now: float | None = None, stale_days: float = STALE_DAYS,
                   encoder: Encoder | None = None, semantic: bool = True, statedb: Any = None) -> HygieneReport:
    """Every finding of ``home``, ranked by chars saved (largest first). Never raises: a source
    that cannot be read is named in :attr:`HygieneReport.unknown`.

    Args:
        now: epoch seconds (default ``time.time()``); stale_days: see :data:`STALE_DAYS`.
        encoder: an :class:`.similarity.Encoder` (default :func:`.similarity.hygiene_encoder`);
            ``semantic=False`` forces the lexical method.
        statedb: an open :class:`core.sessions.statedb.StateDB` for the disuse check (default:
            the home's state.db opened read-only for this call; none: that check is unknown).
    """
    from ..memory.reader import read_memory

    now = time.time() if now is None else float(now)
    enc = encoder if encoder is not None else hygiene_encoder(home, allow_semantic=semantic)
    unknown: list[str] = []
    entries: dict[str, list[str]] = {}
    for target in ("memory", "user"):
        state = read_memory(home, config, target)
        if state.error:
            unknown.append(f"{target}: {state.error}")
        entries[target] = [e.text for e in state.entries]
    changes = _changes(home)
    hist = _history(home, changes)
    if not hist:
        unknown.append("who wrote each entry and when: memdeck has no change history of this home yet")
    refs = [_ref(t, text, hist) for t in ("memory", "user") for text in entries[t]]
    ws: list[Words] = [words(r.text) for r in refs]
    cos = cosine_matrix(enc, [r.text for r in refs])
    findings = _pair_findings(refs, ws, cos, entries, enc.method, unknown)

    # ── stale ──
    stale = _stale(home, refs, ws, entries, now, stale_days, statedb, unknown, changes)
    findings.extend(stale)
    findings.sort(key=lambda f: (-f.chars_saved, f.kind, f.id))
    return HygieneReport(enc.method, tuple(findings), enc.reason if enc.method == LEXICAL else None, tuple(unknown))


#: the kinds the dashboard's badge counts (:func:`pair_counts`): those found from the entries'
#: text alone, the same on every machine; ``stale`` is left out (a path gone from this machine,
#: sessions in this state.db, today's date)
BADGE_KINDS = ("duplicate", "contradiction", "wasteful")


def pair_counts(entries: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """How many duplicate groups, contradiction candidates and wasteful entries the lexical method
    finds in ``entries`` (target -> entry texts): :data:`BADGE_KINDS` -> count, each kind present.
    From the texts alone (no history, no archive, no state.db, no file system, never the semantic
    extra), so the same entries give the same counts on every machine: what the Capacity tab's
    badge shows (``memdeck hygiene`` has every finding, stale ones and meaning included). ~9 ms of
    CPU for a full 2,200 + 1,375-char memory."""
    texts = {t: [x for x in entries.get(t, ()) if x] for t in ("memory", "user")}
    refs = [EntryRef(t, text) for t in ("memory", "user") for text in texts[t]]
    counts = dict.fromkeys(BADGE_KINDS, 0)
    if len(refs) > MAX_COMPARED:  # not compared pair by pair (hygiene_report says so): nothing counted
        return counts
    found = _pair_findings(refs, [words(r.text) for r in refs], None, texts, LEXICAL, [])
    for f in found:
        counts[f.kind] += 1
    return counts


def _pair_findings(refs: list[EntryRef], ws: list[Words], cos: Any, entries: dict[str, list[str]], method: str,
                   unknown: list[str]) -> list[Finding]:
    """The findings of entries taken two by two: duplicates (grouped), wasteful entries and
    contradiction candidates. ``cos``: the cosine matrix (None: lexical); ``unknown`` gains what
    was not compared."""
    findings: list[Finding] = []
    parent = list(range(len(refs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    dup_evidence: dict[tuple[int, int], dict[str, Any]] = {}
    wasteful: dict[int, tuple[int, dict[str, Any]]] = {}
    contradictions: list[tuple[int, int, dict[str, Any]]] = []
    compared = len(refs) if len(refs) <= MAX_COMPARED else 0
    if not compared and refs:
        unknown.append(f"duplicates, contradictions and wasteful entries: {len(refs)} entries are more than the "
                       f"{MAX_COMPARED} memdeck compares pair by pair (Hermes' char limits hold far fewer)")
    for i in range(compared):
        for j in range(i + 1, compared):
            c = None if cos is None else float(cos[i, j])
            if not may_not_be_distinct(ws[i], ws[j], c):
                continue  # too few words in common and no meaning in common: distinct, never wasteful (most pairs)
            v = classify(refs[i].text, refs[j].text, c, wa=ws[i], wb=ws[j])
            if v.kind == CONTRADICTION:
                if len(contradictions) < MAX_CONTRADICTIONS:
                    contradictions.append((i, j, v.evidence))
                elif len(contradictions) == MAX_CONTRADICTIONS:
                    unknown.append(f"contradictions: only the first {MAX_CONTRADICTIONS} candidates are listed")
                    contradictions.append((-1, -1, {}))
                continue
            small, big = (i, j) if len(refs[i].text) <= len(refs[j].text) else (j, i)
            bag_s, bag_b = ws[small].bag, ws[big].bag
            if (len(bag_s) >= 2 and bag_s <= bag_b and len(refs[big].text) > 1.3 * len(refs[small].text)
                    and ws[small].values <= ws[big].values and ws[small].negated == ws[big].negated):
                if small not in wasteful:
                    wasteful[small] = (big, {"carried_by": refs[big].to_dict(), "shared": sorted(bag_s),
                                             "similarity": None if c is None else round(c, 3)})
                continue
            if v.kind == DUPLICATE:
                dup_evidence[(i, j)] = v.evidence
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(refs)):
        if i in wasteful:
            continue
        groups.setdefault(root(i), []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        group = tuple(refs[m] for m in members)
        keep = max(group, key=lambda r: (len(r.text), -members[group.index(r)]))
        drop = tuple(r for r in group if r is not keep)
        pairs = [{"a": refs[a].text, "b": refs[b].text, **ev} for (a, b), ev in dup_evidence.items()
                 if a in members and b in members]
        findings.append(Finding(finding_id("duplicate", group), "duplicate", group,
                                {"pairs": pairs, "method": method}, _saved(entries, drop),
                                Proposal("merge", group, keep, keep.text)))
    for small, (big, ev) in wasteful.items():
        ref = refs[small]
        findings.append(Finding(finding_id("wasteful", (ref,)), "wasteful", (ref, refs[big]),
                                {**ev, "chars_per_turn": len(ref.text) + len(ENTRY_DELIMITER)},
                                _saved(entries, (ref,)), Proposal("archive", (ref,))))
    for i, j, ev in contradictions:
        if i < 0:
            continue
        pair = (refs[i], refs[j])
        findings.append(Finding(finding_id("contradiction", pair), "contradiction", pair,
                                {**ev, "method": method,
                                 "newer": None if None in (refs[i].written_at, refs[j].written_at)
                                 else (1 if (refs[i].written_at or 0) >= (refs[j].written_at or 0) else 2),
                                 "note": "the newer entry is not assumed right: keep one with --keep 1|2"},
                                min(_saved(entries, (refs[i],)), _saved(entries, (refs[j],))),
                                Proposal("choose", pair)))
    return findings


def _stale(home: Any, refs: list[EntryRef], ws: list[Words], entries: dict[str, list[str]], now: float,
           stale_days: float, statedb: Any, unknown: list[str], changes: list[Any] | None = None) -> list[Finding]:
    out: list[Finding] = []
    reasons: dict[int, dict[str, Any]] = {}
    # an entry Hermes wrote (a tool call, its background review's write) saying again what the
    # person had replaced or removed before: the person's newer word is not assumed wrong, but
    # the entry is shown
    by_person = [c for c in changes or () if c.actor in PERSON_ACTORS and c.before and c.op in ("replaced", "removed")]
    for i, r in enumerate(refs):
        if r.actor not in HERMES_ACTORS or r.written_at is None:
            continue
        for c in by_person:
            if float(c.until) < r.written_at and c.target == r.target and (
                    c.before == r.text or classify(c.before, r.text, wa=words(c.before), wb=ws[i]).kind == DUPLICATE):
                reasons.setdefault(i, {})["replaced_by_person"] = {
                    "change_id": c.change_id, "at": float(c.until), "by": c.actor, "op": c.op, "before": c.before,
                    "after": c.after, "written_again_by": r.actor, "written_again_at": r.written_at}
                break
    for i, r in enumerate(refs):
        named = [p.rstrip(".,;:") for p in _PATH.findall(r.text)]
        missing = [p for p in named if _gone(p)]
        if missing:
            reasons.setdefault(i, {})["missing_paths"] = missing
    # an entry the person archived that a writer put back since
    try:
        from ..deck.archive import items

        archived = {(a.target, a.text): a for a in items(home, kind="memory", state="archived")}
    except Exception:  # noqa: BLE001 - no archive: that check is unknown
        archived = {}
    for i, r in enumerate(refs):
        a = archived.get((r.target, r.text))
        if a is not None and r.written_at is not None and r.written_at > a.archived_at and r.actor not in ("cli", "tui"):
            reasons.setdefault(i, {})["archived_before"] = {"archive_id": a.archive_id, "archived_at": a.archived_at,
                                                            "written_again_by": r.actor, "at": r.written_at}
    # no session mentioned it for stale_days since it was written (Hermes' session_search)
    db, opened = statedb, False
    if db is None and home.state_db.exists():
        try:
            from ..sessions.statedb import StateDB

            db, opened = StateDB(home.state_db), True
        except Exception as exc:  # noqa: BLE001 - no state.db: the disuse check is unknown, and said so
            unknown.append(f"disuse: state.db cannot be read ({type(exc).__name__})")
    if db is None:
        unknown.append("disuse: no state.db, so no session can be searched")
    else:
        try:
            from ..sessions.recall import search_messages

            for i, r in enumerate(refs):
                if r.written_at is None or now - r.written_at < stale_days * 86400:
                    continue
                terms = sorted({t for t in ws[i].tokens if len(t) >= 3}, key=len, reverse=True)[:3]
                if not terms:
                    continue
                hits = search_messages(db, " OR ".join(terms), sort="newest", limit=1, with_context=False)
                last = max((float(h.get("timestamp") or 0) for h in hits), default=None)
                if last is None or last < r.written_at:
                    reasons.setdefault(i, {})["unused"] = {"days": round((now - r.written_at) / 86400, 1),
                                                           "query": " OR ".join(terms), "last_mention": last}
        finally:
            if opened:
                db.close()
    for i, ev in reasons.items():
        r = refs[i]
        out.append(Finding(finding_id("stale", (r,)), "stale", (r,), ev, _saved(entries, (r,)), Proposal("archive", (r,))))
    return out
