"""The ledger of a session's compactions in state.db (``memdeck constraints``): for each
compaction, the user's rules in the turns it compacted, the summary's lines, and each verdict
(:mod:`.classify`). Read-only on state.db."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .classify import Item, classify
from .rules import rules_in
from .summary import summary_lines


def _cosine(home: Any, semantic: bool) -> tuple[Any, str]:
    if not semantic:
        return None, "keyword"
    from ..hygiene.similarity import SEMANTIC, cosine_matrix, hygiene_encoder

    enc = hygiene_encoder(home)
    if enc.method != SEMANTIC:
        return None, "keyword"

    def cosine(a: str, b: str) -> float:
        return float(cosine_matrix(enc, [a, b])[0, 1])

    return cosine, "semantic"


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


def _region_texts(db: Any, ev: Any, next_start: int | None) -> set[str]:
    """The stripped texts of the user rows the model still reads after a compaction: the region it
    inserted (head, summary, tail; a rotation's are the child's rows) and the turns after it, up to
    the next compaction's region (``next_start``). Hermes 0.22's merge-into-tail region is read this
    way whole, where its tail rows copy rows it left ``compacted = 0``."""
    if ev.region_first_id is None:
        return set()
    sid = ev.child_session_id if ev.mode == "rotation" and ev.child_session_id else ev.session_id
    return {(m.text or "").strip() for m in db.user_rows(sid, ev.region_first_id, next_start)}


def session_ledger(db: Any, home: Any, config: Any, session_id: str, *, compaction: int | None = None,
                   semantic: bool = True) -> dict[str, Any]:
    """``{"session_id", "method", "compactions": [{"compaction_id", "at", "mode", "items": [...]}]}``
    (the shape of ``memdeck constraints --json``): one entry per compaction of the session,
    oldest first (``compaction``: only that 1-based index).

    The compacted user turns of an in-place compaction are the session's user rows from the
    previous compaction's region (or the start) up to this one's; of a rotation, the parent's
    user rows from its last region on.
    """
    events = [e for e in db.compactions(session_id) if e.session_id == session_id]
    cosine, method = _cosine(home, semantic)
    carried = _carried(home, config, session_id)
    out: list[dict[str, Any]] = []
    start = 0
    for n, ev in enumerate(events):
        end = ev.region_first_id if ev.mode == "in_place" and ev.region_first_id is not None else None
        if compaction is None or ev.index == compaction:
            summary = db.message(ev.summary_message_id) if ev.summary_message_id is not None else None
            turns = [m for m in db.user_rows(session_id, start, end) if m.id != ev.summary_message_id]
            # a turn Hermes copied into the new region (the protected head, the verbatim tail) was not
            # compacted: the model still reads it word for word
            nxt = events[n + 1] if n + 1 < len(events) else None
            region = _region_texts(db, ev, nxt.region_first_id if nxt is not None and nxt.mode == "in_place" else None)
            rules = [r for m in turns if (m.text or "").strip() not in region for r in rules_in(m.text, m.id)]
            lines = summary_lines(summary.text if summary is not None else "")
            items: Sequence[Item] = classify(rules, lines, carried=carried, cosine=cosine)
            out.append({"compaction_id": ev.index, "at": float(ev.time), "mode": ev.mode,
                        "summary_found": summary is not None, "items": [i.to_dict() for i in items]})
        if ev.region_first_id is not None:
            start = ev.region_first_id
    return {"session_id": session_id, "method": method, "compactions": out}


def counts(ledger: dict[str, Any]) -> dict[str, int]:
    """Items per verdict over every compaction of a :func:`session_ledger`."""
    from .classify import VERDICTS

    c = dict.fromkeys(VERDICTS, 0)
    for comp in ledger.get("compactions", []):
        for it in comp["items"]:
            c[it["verdict"]] += 1
    return c
