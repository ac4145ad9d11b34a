"""Reverting memory changes: undo of journal rows and revert of one recorded change (history).

One concept: taking a change back out of a file, under the lock, only while the file still
holds that change's result -- its whole text, or, when other writers changed the file since, its
entry-level effect (``core/memory/effects.py``) -- else ``Refused(code="conflict")``. Undo keeps
archive rows consistent and, for an approved pending write, stages the record again.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from ..deck import archive as _archive
from ..deck import db as deckdb
from ..deck import journal
from ..errors import Refused
from ..home import TARGETS
from . import approval
from .effects import EntryEffect
from .entries import entries_of, entry_id, overflow_refusal, parse_entries, preview, scan_or_refuse, serialize_entries, usage_chars
from .plumbing import StorePlumbing
from .results import PlannedWrite, WriteResult


class RevertOps(StorePlumbing):
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
        """Revert journal ``rows`` (one change) where their effect is still in the files.

        Decided per file, under the locks, after a reload (rows already undone, ``undone_by``
        re-read under the lock, are refused):

        * the file still holds exactly the row's ``after``: ``before`` is written back (undoing
          ``normalize`` writes the original text exactly as it was read, BOM and CRLF aside,
          drift included; every other op the canonical form);
        * other writers changed the file since, and the row's entry-level effect is still in
          it (``core/memory/effects.py``: every entry it added is there, none it removed): the
          effect alone is reverted -- the entries it added taken out, the ones it removed put
          back where they stood -- and the other writers' entries are kept;
        * a file of a multi-file change (a move) already at its undone state (an entry moved
          back by hand) is left as it is, as long as another file of the change is undone;
        * anything else (the change is no longer there; a change of form only on a rewritten
          file) is ``Refused("conflict")``.

        Re-added entries are threat-scanned and the budget is checked. Archive rows are kept
        consistent (undo of ``archive`` marks the row restored; undo of ``restore`` archives it
        again), using the same intent states as archive/restore. Undoing an approval stages its
        record again (:func:`.approval.restage`).

        Raises:
            Refused: ``conflict`` (see above), ``unsupported`` (a row without file texts),
                ``threat``, ``overflow``, ``unreadable``.
        """
        for r in rows:
            if r.kind != "memory" or r.target not in TARGETS or r.after is None:
                raise Refused(f"journal #{r.journal_id} ({r.op}) cannot be undone automatically", code="unsupported")
        targets = [r.memory_target for r in rows]
        with self._locked(*targets):
            # Re-check under the lock: a racing undo may have reverted these rows already, and
            # the file may since hold the same text again through someone else's change.
            if journal.db_exists(self.home):
                for r in rows:
                    fresh = journal.get(self.home, r.journal_id)
                    if fresh is not None and fresh.undone_by is not None:
                        raise Refused(f"cannot undo {r.op} #{r.journal_id}: it was already undone by "
                                      f"#{fresh.undone_by}", code="conflict")
            plans: list[tuple[journal.JournalRow, str | None, list[str], list[str], str]] = []
            undoable = 0
            for r in rows:
                raw, ents = self._load(r.memory_target, canonical_check=False)
                before = parse_entries(r.before)
                eff = EntryEffect.of(r.before, r.after)
                status = eff.status(ents)
                if serialize_entries(ents) == serialize_entries(parse_entries(r.after)):
                    new = before
                    text = r.before if r.op == "normalize" and r.before is not None else serialize_entries(before)
                    undoable += 1
                elif status == "present":
                    new = eff.revert(ents, before)
                    text = serialize_entries(new)
                    undoable += 1
                elif len(rows) > 1 and status == "absent":
                    new, text = list(ents), serialize_entries(ents)
                else:
                    why = ("its entries are no longer there" if status in ("absent", "mixed")
                           else "the file was rewritten since")
                    raise Refused(f"cannot undo {r.op} #{r.journal_id}: {r.target} changed since ({why}: the file no "
                                  "longer holds that change's result)", code="conflict")
                plans.append((r, raw, ents, new, text))
            if not undoable:
                raise Refused(f"cannot undo {rows[0].op} #{rows[-1].journal_id}: no file holds that change's result "
                              "any more", code="conflict")
            for r, _raw, ents, new, _text in plans:
                for e in new:
                    if e not in ents:
                        scan_or_refuse(e)
                total, limit = usage_chars(new), self.limit(r.memory_target)
                if total > limit and total > usage_chars(ents):
                    raise overflow_refusal(r.memory_target, ents, total, limit, "Undoing this change")
            # files that gain an entry are written before files that lose one, so an undo of a
            # move killed between its writes leaves the entry in both files, never in neither
            # (issue 13 #2); recovery then finishes it by entries
            plans.sort(key=lambda p: 0 if set(p[3]) - set(p[2]) else 1)
            arch: list[tuple[journal.JournalRow | _ArchivedBy, Any]] = [
                (r, r.detail.get("archive_id")) for r in rows if r.op in {"archive", "restore"}]
            # a change that archived several entries at once (core/memory/consolidating.py) names
            # them on every row of its txn: each is restored once
            many = dict.fromkeys(int(a) for r in rows for a in (r.detail.get("archive_ids") or ()))
            arch += [(_ArchivedBy(), aid) for aid in many]
            undoes = [x.journal_id for x in rows]

            def archive_intents(conn: sqlite3.Connection) -> None:
                for r, aid in arch:
                    if aid is not None:
                        if r.op == "archive":
                            _archive.set_state(conn, int(aid), "restoring", expect="archived")
                        else:  # restored_at kept: recovery tells this intent from a new archive's
                            _archive.set_state(conn, int(aid), "archiving", expect="restored", keep_restored_at=True)

            def archive_done(conn: sqlite3.Connection, ids: list[int]) -> None:
                for r, aid in arch:
                    if aid is not None:
                        if r.op == "archive":
                            _archive.set_state(conn, int(aid), "restored", expect="restoring")
                        else:
                            _archive.set_state(conn, int(aid), "archived", expect="archiving")
                journal.mark_undone(conn, undoes, ids[-1])

            restaged: list[str] = []
            with deckdb.opened(self.home) as conn:
                txn = uuid.uuid4().hex if len(rows) > 1 else None
                ids = self._write_ahead(
                    conn, [PlannedWrite("undo", r.memory_target, raw, text, {"undoes": undoes, "op": r.op})
                           for r, raw, _e, _n, text in plans],
                    txn=txn, on_intent=archive_intents, on_done=archive_done,
                    after_files=lambda: self._restaging(rows, restaged))
            jid = ids[-1]
            self._cleanup_temps(targets)
            note = f" The pending write {restaged[0]} is staged again for review." if restaged else ""
            first_plan = next(n for r, _raw, _e, n, _t in plans if r.journal_id == rows[0].journal_id)
            return self._result("undo", rows[0].memory_target, first_plan,
                                f"Undid {rows[0].op} (journal #{rows[-1].journal_id}).{note}", journal_id=jid)

    @contextmanager
    def _restaging(self, rows: Sequence[journal.JournalRow], out: list[str]) -> Iterator[None]:
        """Stage an undone approval's record again before the undo's COMMIT; if the COMMIT
        fails, take it away again before the files are put back (so the record is never
        staged while the file still holds its approval)."""
        names = [r.detail.get("record_file") for r in rows]
        existed = {n for n in names if isinstance(n, str) and "/" not in n and (self.home.pending_dir / n).exists()}
        pid = self._restage_approved(rows)
        try:
            yield
        except BaseException:
            for n in names:
                if isinstance(n, str) and "/" not in n and n.endswith(".json") and n not in existed:
                    with suppress(OSError):
                        (self.home.pending_dir / n).unlink()
            raise
        if pid is not None:
            out.append(pid)

    def _restage_approved(self, rows: Sequence[journal.JournalRow]) -> str | None:
        """After undoing an approved pending write, put its record back in ``pending/memory/``
        (as it was staged), so the approval is undone and not the staged write lost. Returns
        the pending id, or None when the rows were not an approval or the record could not be
        written back (the undo itself stands; the journal still holds the record)."""
        for r in rows:
            pid = approval.restage(self.home, r.detail)
            if pid is not None or isinstance(r.detail.get("record"), str):
                return pid
        return None


class _ArchivedBy:
    """Stands for the row of a change that archived entries among other edits: undoing it
    restores them (``op`` ``archive``)."""

    op = "archive"
