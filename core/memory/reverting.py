"""Reverting memory changes: undo of journal rows and revert of one recorded change (history).

One concept: putting a file back to what it held before a change, under the lock, only while
the file still holds that change's result (else ``Refused(code="conflict")``). Undo keeps archive
rows consistent and, for an approved pending write, stages the record again.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from ..deck import archive as _archive
from ..deck import db as deckdb
from ..deck import journal
from ..errors import Refused
from ..fsio import atomic_write_text
from ..home import TARGETS
from .entries import (entries_of, entry_id, overflow_refusal, parse_entries, preview, scan_or_refuse, serialize_entries,
                      usage_chars)
from .results import WriteResult


class RevertOps:
    """Undo/revert methods of :class:`.store.MemoryStore` (a mixin: they use its lock, load,
    journal and replace plumbing)."""

    def revert_entry(self, target: str, *, remove: str | None, add: str | None,
                     detail: dict[str, Any] | None = None) -> WriteResult:
        """Reverse one recorded change of ``target``: take out ``remove`` and put back ``add``.

        Used by ``core/history/reverting.py`` (``revert``): for a removal ``remove=None, add=<old entry>``
        (appended), for an addition ``remove=<new entry>, add=None``, for a replacement both
        (``add`` takes ``remove``'s place). Under the lock, after a reload: ``add`` must not be in
        the file already and ``remove`` must still be there (exact whole entries), the text put
        back is threat-scanned and the budget checked. Journaled as ``op="revert"``.

        Raises:
            Refused: ``conflict`` (the change no longer applies: ``add`` is already back or
                ``remove`` is gone), ``overflow`` (with ``current_entries``), ``threat``,
                ``drift``, ``unreadable``, ``unwritable``, ``empty`` (neither text given).
        """
        self.path(target)
        if not (remove or add):
            raise Refused("nothing to revert: the change has neither a before nor an after text", code="empty")
        if add:
            scan_or_refuse(add, "The entry to put back is blocked: ")
        with self._locked(target):
            raw, entries = self._load(target)
            if add and add in entries:
                raise Refused(f"cannot revert: {target} already holds {preview(add, 60)!r} again. Nothing was changed.",
                              code="conflict", current_entries=[e.to_dict() for e in entries_of(entries)])
            if remove and remove not in entries:
                raise Refused(f"cannot revert: {target} no longer holds {preview(remove, 60)!r} (changed since). "
                              "Nothing was changed.", code="conflict",
                              current_entries=[e.to_dict() for e in entries_of(entries)])
            new = list(entries)
            if remove and add:
                new[new.index(remove)] = add
            elif remove:
                new.remove(remove)
            else:
                new.append(add)  # type: ignore[arg-type]
            total, limit = usage_chars(new), self.limit(target)
            if total > limit:
                raise overflow_refusal(target, entries, total, limit, f"Putting back this entry ({len(add or ''):,} chars)")
            d = {"removed_text": remove, "text": add, "entry_id": entry_id(add) if add else None, **(detail or {})}
            return self._commit("revert", target, raw, entries, new, "Change reverted.", d,
                                entry_id(add) if add else None)


    # -- undo ----------------------------------------------------------------------------------
    def undo_rows(self, rows: Sequence[journal.JournalRow]) -> WriteResult:
        """Revert journal ``rows`` (one change) if every file still holds their ``after`` text.

        Rows already undone (``undone_by`` set, re-read under the lock) are refused. Undoing
        ``normalize`` writes the original text back exactly as it was read (BOM and CRLF
        aside), drift included; every other op writes ``before`` in the canonical form.

        Re-added entries are threat-scanned and the budget is checked. Archive rows are kept
        consistent (undo of ``archive`` marks the row restored; undo of ``restore`` archives it
        again), using the same intent states as archive/restore.

        Raises:
            Refused: ``conflict`` (a file changed since), ``unsupported`` (a row without file
                texts), ``threat``, ``overflow``, ``unreadable``.
        """
        targets = [r.target for r in rows]
        for r in rows:
            if r.kind != "memory" or r.target not in TARGETS or r.after is None:
                raise Refused(f"journal #{r.journal_id} ({r.op}) cannot be undone automatically", code="unsupported")
        with self._locked(*targets):
            # Re-check under the lock: a racing undo may have reverted these rows already, and
            # the file may since hold the same text again through someone else's change.
            if journal.db_exists(self.home):
                for r in rows:
                    fresh = journal.get(self.home, r.journal_id)
                    if fresh is not None and fresh.undone_by is not None:
                        raise Refused(f"cannot undo {r.op} #{r.journal_id}: it was already undone by "
                                      f"#{fresh.undone_by}", code="conflict")
            current: dict[str, list[str]] = {}
            for r in rows:
                _raw, ents = self._load(r.target, canonical_check=False)
                now = serialize_entries(ents)
                undone = r.before if r.op == "normalize" and r.before is not None else serialize_entries(parse_entries(r.before))
                if now != r.after and not (len(rows) > 1 and now == undone):
                    # a file of a multi-file change already holding its undone text is an undo
                    # interrupted between its file writes (never-in-neither order below): it is
                    # finished, not refused
                    raise Refused(f"cannot undo {r.op} #{r.journal_id}: {r.target} changed since (the file no longer "
                                  "holds that change's result)", code="conflict")
                current[r.target] = ents
            # (every file of a multi-file change at its undone text: the undo was killed after its
            # file writes and before its COMMIT; it is recorded now, rewriting identical text)
            plans: list[tuple[journal.JournalRow, list[str]]] = []
            for r in rows:
                before = parse_entries(r.before)
                added = [e for e in before if e not in current[r.target]]
                for e in added:
                    scan_or_refuse(e)
                total, limit = usage_chars(before), self.limit(r.target)
                if total > limit:
                    raise overflow_refusal(r.target, current[r.target], total, limit, "Undoing this change")
                plans.append((r, before))
            # files that gain an entry are written before files that lose one, so an undo of a
            # move killed between its writes leaves the entry in both files, never in neither
            # (issue 13 #2); a second undo finishes it (see above)
            plans.sort(key=lambda p: 0 if set(p[1]) - set(current[p[0].target]) else 1)
            with deckdb.opened(self.home) as conn:
                arch = [(r, r.detail.get("archive_id")) for r in rows if r.op in {"archive", "restore"}]
                undoes = [x.journal_id for x in rows]
                texts = [(r, r.before if r.op == "normalize" and r.before is not None else serialize_entries(before))
                         for r, before in plans]
                # write-ahead: the undo rows (intent) and the archive intents first, then the
                # files, the restaged record, and the COMMIT marking it all done
                with deckdb.transaction(conn):
                    for r, aid in arch:
                        if aid is not None:
                            if r.op == "archive":
                                _archive.set_state(conn, int(aid), "restoring", expect="archived")
                            else:  # restored_at kept: recovery tells this intent from a new archive's
                                _archive.set_state(conn, int(aid), "archiving", expect="restored",
                                                   keep_restored_at=True)
                    txn = uuid.uuid4().hex if len(rows) > 1 else None
                    ids = self._intents(conn, [("undo", r.target, r.after, text, {"undoes": undoes, "op": r.op})
                                               for r, text in texts], txn)
                jid = ids[-1]
                try:
                    with ExitStack() as files:
                        for r, text in texts:
                            files.enter_context(self._replacing(r.target, text))
                        restaged = self._restage_approved(rows)
                        # a failed COMMIT below puts every file back (the ExitStack unwinds in reverse)
                        with deckdb.transaction(conn):
                            for r, aid in arch:
                                if aid is not None:
                                    if r.op == "archive":
                                        _archive.set_state(conn, int(aid), "restored", expect="restoring")
                                    else:
                                        _archive.set_state(conn, int(aid), "archived", expect="archiving")
                            journal.mark_done(conn, ids)
                            journal.mark_undone(conn, undoes, jid)
                except BaseException:
                    for t in dict.fromkeys(targets):
                        self._settle(t, conn)
                    raise
            self._cleanup_temps(targets)
            last_t = rows[0].target
            note = f" The pending write {restaged} is staged again for review." if restaged else ""
            first_plan = next(b for r, b in plans if r.journal_id == rows[0].journal_id)
            return self._result("undo", last_t, first_plan,
                                f"Undid {rows[0].op} (journal #{rows[-1].journal_id}).{note}", journal_id=jid)

    def _restage_approved(self, rows: Sequence[journal.JournalRow]) -> str | None:
        """After undoing an approved pending write, put its record back in ``pending/memory/``
        (as it was staged), so the approval is undone and not the staged write lost. Returns
        the pending id, or None when the rows were not an approval or the record could not be
        written back (the undo itself stands; the journal still holds the record)."""
        for r in rows:
            rec, name = r.detail.get("record"), r.detail.get("record_file")
            if not (isinstance(rec, str) and isinstance(name, str)) or "/" in name or not name.endswith(".json"):
                continue
            path = self.home.pending_dir / name
            try:
                if not path.exists():
                    path.parent.mkdir(parents=True, exist_ok=True)
                    atomic_write_text(path, rec)
            except OSError:
                return None
            return str(r.detail.get("pending_id") or name[:-5])
        return None

