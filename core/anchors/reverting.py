"""Undo of anchor changes: journal rows of kind ``anchor`` reverted through the anchor files.

One concept: putting a session file (and a global pin's copy in ``persist/``) back to what it
held before a journaled pin, unpin, update, archive or restore, only while the files still hold
that change's result (compared on content, not MemLock's audit bookkeeping).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..deck import archive as _archive
from ..deck import db as deckdb
from ..deck import journal as _journal
from ..errors import Refused
from .files import AnchorChange, AnchorFiles, anchor_content, pin_content, record_text  # noqa: F401 - record_text re-exported
from .model import Anchor, SessionAnchors, scan_or_refuse

#: Journal ops of kind ``anchor`` that :meth:`AnchorStore.undo_rows` can revert.
_UNDOABLE = ("pin", "unpin", "update", "archive", "restore")
_anchor_content = anchor_content
_pin_content = pin_content


class AnchorUndo(AnchorFiles):
    """The undo methods of :class:`.store.AnchorStore` (on its files)."""

    # -- undo -------------------------------------------------------------------
    def undo_rows(self, rows: Sequence[_journal.JournalRow]) -> dict[str, Any]:
        """Revert the journal ``rows`` of one anchor change (the ``kind="anchor"`` undo handler).

        Each row is checked and reverted under its session file's lock: the session must
        still hold the row's ``after`` anchor (compared on ``id, text, reminder, priority,
        probes, pinned, history``; MemLock's audit bookkeeping ``drifted``/``last_alive_turn``
        may have changed meanwhile and is kept), the ``persist/`` copy its ``global_after``,
        and an archived/restored anchor's archive row the matching state; then ``before`` is
        written back (a re-added anchor is threat-scanned and counts against ``max_pins``),
        the archive row flips back, and an ``undo`` row marks the rows undone: write-ahead
        (:meth:`.files.AnchorFiles.apply_change`), so a kill at any step is resolved by the next
        change on that session.

        Returns:
            ``{"success", "op": "undo", "undone", "anchor_id", "session_id", "journal_id", "message"}``.

        Raises:
            Refused: ``conflict`` (the anchor, its global copy or its archive row changed since),
                ``unsupported`` (a row that is not an anchor change), ``limit``, ``threat``,
                ``unreadable``/``unwritable``.
        """
        result: dict[str, Any] = {}
        for r in reversed(list(rows)):
            result = self._undo_one(r, [x.journal_id for x in rows])
        return result

    def _undo_one(self, r: _journal.JournalRow, undoes: list[int]) -> dict[str, Any]:
        aid = r.detail.get("anchor_id")
        if r.kind != "anchor" or not aid or r.op not in _UNDOABLE:
            raise Refused(f"journal #{r.journal_id} ({r.op}) cannot be undone automatically", "unsupported")
        aid = str(aid)
        try:
            before = json.loads(r.before) if r.before else None
            after = json.loads(r.after) if r.after else None
        except ValueError:
            raise Refused(f"journal #{r.journal_id} has an unreadable anchor record", "unsupported") from None
        has_global = "global_before" in r.detail
        g_before, g_after = r.detail.get("global_before"), r.detail.get("global_after")
        arch_id = r.detail.get("archive_id") if r.op in ("archive", "restore") else None
        what = f"{r.op} of anchor {aid!r} (journal #{r.journal_id})"
        where = "persist/" if r.session_id is None else f"session {r.session_id}"

        def conflict(why: str) -> Refused:
            return Refused(f"cannot undo {what}: {why}; nothing was changed", "conflict", journal_id=r.journal_id)

        def check_outside() -> None:
            # Re-read under the lock: a concurrent undo of the same rows may have won the race
            # (the file could even hold the same content again after a legitimate re-pin).
            with deckdb.opened(self.home) as c:
                marks = c.execute(
                    f"SELECT journal_id, undone_by FROM journal WHERE journal_id IN ({','.join('?' * len(undoes))})",
                    list(undoes),
                ).fetchall()
            gone = [m["journal_id"] for m in marks if m["undone_by"] is not None]
            if gone:
                raise conflict(f"journal #{gone[0]} was already undone")
            if has_global and _pin_content(self.get_pin(aid)) != _pin_content(g_after):
                raise conflict("its global copy in persist/ changed since")
            if arch_id is not None:
                want = "archived" if r.op == "archive" else "restored"
                if _archive.get_record(self.home, arch_id, kind="anchor", state=want) is None:
                    raise conflict(f"archive row #{arch_id} is no longer {want}")
            if before is not None:
                scan_or_refuse(str(before.get("text") or ""), str(before.get("reminder") or ""))

        max_pins = int(self.mcfg.max_pins)

        def build(s: SessionAnchors | None) -> AnchorChange:
            ch = AnchorChange("undo", aid, {"op": r.op}, undoes=list(undoes))
            if has_global:
                ch.global_after = g_before
            if arch_id is not None:
                ch.archive_set = ((int(arch_id), "archived", "restored") if r.op == "archive"
                                  else (int(arch_id), "restored", "archived"))
            if s is None:  # a change to persist/ alone
                check_outside()
                ch.before, ch.after = r.after, r.before
                return ch
            cur = s.anchors.get(aid)
            if _anchor_content(cur.to_dict() if cur else None) != _anchor_content(after):
                raise conflict(f"{where} no longer holds that change's result")
            check_outside()
            if before is None:
                del s.anchors[aid]
                if aid in s.static_anchor_ids and cur is not None and not cur.pinned:
                    s.static_anchor_ids.remove(aid)
            else:
                restored = Anchor.from_dict(before, aid)
                if cur is not None:
                    restored.drifted, restored.last_alive_turn = cur.drifted, cur.last_alive_turn
                    s.anchors[aid] = restored
                else:
                    if restored.pinned and s.pinned_now() >= max_pins:
                        raise Refused(f"cannot undo {what}: pin limit reached ({max_pins}) in session {s.session_id}",
                                      "limit", max_pins=max_pins)
                    s.add(restored)
            s.recount()
            return ch

        ch = self.apply_change(r.session_id, build)
        if ch.journal_id is None:
            raise conflict(f"{where} already holds the state before it")
        return {"success": True, "op": "undo", "undone": r.op, "anchor_id": aid, "session_id": r.session_id,
                "journal_id": ch.journal_id,
                "message": f"Undid {r.op} of anchor {aid} in {where} (journal #{r.journal_id})."}
