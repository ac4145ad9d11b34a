"""Revert: reversing one recorded change through the stores.

A memory change is reversed by ``MemoryStore.revert_entry``, a session file's anchor change by
``AnchorFiles.apply_change`` (through ``AnchorStore``); either is journaled as ``op="revert"``,
write-ahead like every writer (the row is committed in state ``intent`` before the file is
replaced), and the change's ``reverted_by`` is set to that journal row.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..anchors.files import AnchorChange
from ..anchors.model import Anchor, SessionAnchors
from ..anchors.model import scan_or_refuse as _scan_anchor
from ..anchors.store import AnchorStore
from ..config import Config, load_config
from ..deck import db as deckdb
from ..errors import Refused
from ..home import HermesHome
from ..memory.store import MemoryStore
from .changes import Change, get_change
from .observation import observe
from .watched import anchor_fields


def revert(home: HermesHome, config: Config | None, change_id: int, actor: str = "cli", *,
           origin: dict[str, Any] | None = None) -> dict[str, Any]:
    """Reverse one change through the core (lock, reload, threat scan, budget), journaled as
    ``op="revert"`` with ``detail.change_id``; the change's ``reverted_by`` is set to that
    journal row. The files are observed first so the check runs against what is on disk.
    ``origin``: where the decision came from (a chat: ``{"platform", "chat_id", "user_id", ...}``),
    kept as the journal row's ``detail["origin"]``.

    Returns:
        ``{"message", "change_id", "journal_id", "kind", "target", "scope", "session_id"}``
        (the change's fields; memory: plus the ``WriteResult`` as ``result``).

    Raises:
        Refused: ``not_found`` (no such change); ``conflict`` (already reverted, or it no longer
            applies: the removed entry is already back, the replaced-with text is gone);
            ``overflow`` (with ``current_entries`` you could archive); ``threat``;
            ``unsupported`` (global pins in ``persist/``: revert them with ``memdeck anchor``).
    """
    config = config or load_config(home)
    observe(home)
    ch = get_change(home, change_id)
    if ch is None:
        raise Refused(f"no change #{change_id} in the history (see `memdeck history`)", code="not_found")
    done_by = ch.reverted_by if ch.reverted_by is not None else _reverted_in_journal(home, ch.change_id)
    if done_by is not None:
        raise Refused(f"change #{change_id} was already reverted (journal #{done_by})", code="conflict")
    detail: dict[str, Any] = {"change_id": ch.change_id, "change_op": ch.op}
    if origin:
        detail["origin"] = dict(origin)
    if ch.kind == "memory":
        if ch.target is None:
            raise Refused(f"change #{change_id} names no memory file", code="invalid")
        res = MemoryStore(home, config, actor=actor).revert_entry(ch.target, remove=ch.after, add=ch.before,
                                                                   detail=detail)
        jid = res.journal_id
        out: dict[str, Any] = {"message": f"Reverted change #{ch.change_id} ({ch.op}) in {ch.target}.",
                               "result": res.to_dict()}
    else:
        jid = _revert_anchor(home, config, ch, actor, detail)
        out = {"message": f"Reverted change #{ch.change_id} ({ch.op}) of anchor {ch.anchor_id} in {ch.where}."}
    # the revert is made and journaled (detail.change_id: the journal says it was reverted); marking
    # the history row and observing the result are bookkeeping: if memdeck.db cannot take them now
    # (a full disk), the command still reports what happened, with a warning
    try:
        with deckdb.opened(home) as c, deckdb.transaction(c):
            c.execute("UPDATE history SET reverted_by = ? WHERE change_id = ?", (jid, ch.change_id))
        observe(home)
    except (deckdb.DeckDBError, sqlite3.Error, OSError) as exc:
        out["warning"] = f"the change was reverted (journal #{jid}) but the history could not be updated: {exc}"
    out.update({"change_id": ch.change_id, "journal_id": jid, "kind": ch.kind, "target": ch.target, "scope": ch.scope,
                "session_id": ch.session_id})
    return out


def _reverted_in_journal(home: HermesHome, change_id: int) -> int | None:
    """The journal row of a done revert of ``change_id`` (``detail.change_id``), or None."""
    with deckdb.opened(home) as c:
        row = c.execute("SELECT journal_id FROM journal WHERE op = 'revert' AND state = 'done' AND undone_by IS NULL"
                        " AND json_valid(detail) AND json_extract(detail, '$.change_id') = ? ORDER BY journal_id DESC"
                        " LIMIT 1", (int(change_id),)).fetchone()
    return int(row[0]) if row else None


def _revert_anchor(home: HermesHome, config: Config, ch: Change, actor: str, detail: dict[str, Any]) -> int:
    if ch.session_id is None or ch.path.startswith("memlock/persist/"):
        raise Refused(f"change #{ch.change_id} is to a global pin in persist/; revert it with `memdeck anchor` commands",
                      code="unsupported")
    aid = ch.anchor_id or ""
    before = json.loads(ch.before) if ch.before else None
    after = json.loads(ch.after) if ch.after else None
    if before:
        _scan_anchor(str(before.get("text", "")), str(before.get("reminder", "")))
    store = AnchorStore(home, config, actor=actor)

    def build(s: SessionAnchors | None) -> AnchorChange:
        assert s is not None
        cur = s.anchors.get(aid)
        if after is None:  # anchor_removed: put it back
            if cur is not None:
                raise Refused(f"cannot revert: anchor {aid} is already back in session {ch.session_id}. Nothing was changed.",
                              code="conflict")
            s.add(Anchor.from_dict({**(before or {}), "id": aid, "pinned": True}))
        elif cur is None or anchor_fields(cur.to_dict()) != after:
            raise Refused(f"cannot revert: anchor {aid} in session {ch.session_id} changed since. Nothing was changed.",
                          code="conflict")
        elif before is None:  # anchor_added: take it out
            del s.anchors[aid]
            s.recount()
        else:
            cur.text, cur.reminder = str(before["text"]), str(before["reminder"])
            cur.priority, cur.probes = int(before["priority"]), list(before["probes"])
        return AnchorChange("revert", aid, dict(detail))

    # write-ahead like every anchor writer: intent row, session file, done (AnchorFiles.apply_change)
    made = store.apply_change(ch.session_id, build)
    if made.journal_id is None:
        raise Refused(f"cannot revert: anchor {aid} in session {ch.session_id} already holds what it held before "
                      f"change #{ch.change_id}. Nothing was changed.", code="conflict")
    return made.journal_id


__all__ = ["revert"]
