"""Archive and restore of memory entries: the crash-safe intent protocol on top of ``MemoryStore``.

One concept: moving an entry out of its file into memdeck.db (``core/deck/archive.py``) and back.
Each step is an intent row (``archiving`` / ``restoring``) committed before the file changes, so
a process killed between the file write and the second COMMIT is resolved by
:meth:`ArchiveOps._recover_locked` (run by :func:`.store.recover_intents` and before every
archive/restore).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..deck import archive as _archive
from ..deck import db as deckdb
from ..errors import Refused, UnreadableFile
from ..fsio import read_text_strict
from .entries import entry_id, find_entry, overflow_refusal, parse_entries, scan_or_refuse, serialize_entries, usage_chars
from .plumbing import StorePlumbing
from .results import PlannedWrite, WriteResult


class ArchiveOps(StorePlumbing):
    """Archive/restore methods of :class:`.store.MemoryStore` (a mixin: they use its lock, load,
    journal and replace plumbing)."""

    # -- archive / restore -------------------------------------------------------------------
    def archive(self, target: str | None, selector: str, reason: str = "") -> WriteResult:
        """Move an entry out of its file into memdeck.db (crash-safe; see ``core/deck/archive.py``).

        Returns a result whose ``archive_id`` names the archive row.
        """
        target = self._locate(selector, target)
        with self._locked(target):
            with deckdb.opened(self.home) as conn:
                self._recover_locked(target, conn)
                raw, entries = self._load(target)
                i = find_entry(entries, selector, target=target)
                text = entries[i]
                new = entries[:i] + entries[i + 1:]
                after = serialize_entries(new)
                made: dict[str, int] = {}

                def archiving(c: Any) -> dict[str, Any]:  # the archive row's intent, with the journal's
                    made["aid"] = _archive.insert(c, kind="memory", target=target, text=text, actor=self.actor,
                                                  reason=reason, payload={"entry_id": entry_id(text)},
                                                  state="archiving")
                    return {"archive_id": made["aid"]}

                # a failed second COMMIT puts the file back; the "archiving" intent then holds
                # text still in the file, which recovery deletes (nothing archived), and the
                # journal intent is deleted (the write was rolled back)
                (jid,) = self._write_ahead(
                    conn, [PlannedWrite("archive", target, raw, after,
                                        {"entry_id": entry_id(text), "text": text, "reason": reason})],
                    on_intent=archiving,
                    on_done=lambda c, _ids: _archive.set_state(c, made["aid"], "archived", expect="archiving"))
                aid = made["aid"]
            self._cleanup_temps([target])
            return self._result("archive", target, new, f"Entry archived (#{aid}).", entry_id=entry_id(text),
                                journal_id=jid, archive_id=aid)

    def restore(self, archive_id: int | str) -> WriteResult:
        """Put an archived entry back through the same checks as ``add`` (budget, threat scan).

        If the file already holds the exact text, the row is marked restored without a duplicate.

        Raises:
            Refused: ``not_found`` (no archived memory entry with that id), plus ``add``'s refusals
                (the row then stays ``archived``).
        """
        item = _archive.get_record(self.home, archive_id, kind="memory", state=None)
        if item is None:
            raise Refused(f"no archived memory entry #{archive_id}", code="not_found")
        target = item.target
        if target is None:  # a memory row always names its file (kind="memory" above)
            raise Refused(f"archived memory entry #{archive_id} names no memory file", code="invalid")
        with self._locked(target):
            with deckdb.opened(self.home) as conn:
                self._recover_locked(target, conn)
                cur = _archive.get(self.home, item.archive_id, conn=conn)
                if cur is None or cur.state != "archived":
                    raise Refused(f"archive #{item.archive_id} is {cur.state if cur else 'gone'}, not archived", code="not_found")
                raw, entries = self._load(target)
                text = cur.text
                if text in entries:
                    with deckdb.transaction(conn):
                        _archive.set_state(conn, cur.archive_id, "restored", expect="archived")
                    return self._result("restore", target, entries, "The entry is already in the file; marked restored.",
                                        changed=False, entry_id=entry_id(text), archive_id=cur.archive_id)
                scan_or_refuse(text)
                new = entries + [text]
                total, limit = usage_chars(new), self.limit(target)
                if total > limit:
                    raise overflow_refusal(target, entries, total, limit, f"Restoring this entry ({len(text):,} chars)")
                after = serialize_entries(new)
                aid = cur.archive_id

                def restoring(c: Any) -> None:  # the archive row's intent, with the journal's
                    _archive.set_state(c, aid, "restoring", expect="archived")

                # a failed second COMMIT puts the file back; recovery turns "restoring" with the
                # text absent back into "archived" and deletes the journal intent
                (jid,) = self._write_ahead(
                    conn, [PlannedWrite("restore", target, raw, after,
                                        {"archive_id": aid, "entry_id": entry_id(text), "text": text})],
                    on_intent=restoring,
                    on_done=lambda c, _ids: _archive.set_state(c, aid, "restored", expect="restoring"))
            self._cleanup_temps([target])
            return self._result("restore", target, new, f"Entry restored from archive #{cur.archive_id}.",
                                entry_id=entry_id(text), journal_id=jid, archive_id=cur.archive_id)

    def _recover_locked(self, target: str, conn: sqlite3.Connection) -> int:
        """Resolve ``target``'s interrupted archive/restore intents (its lock must be held)."""
        intents = [i for i in _archive.unfinished_archive_intents(self.home, "memory", conn=conn) if i.target == target]
        if not intents:
            return 0
        try:
            raw = read_text_strict(self.path(target))
        except UnreadableFile:
            return 0
        present = set(parse_entries(raw))
        done = 0
        with deckdb.transaction(conn):
            for it in intents:
                if it.state == "archiving":
                    if it.text in present and it.restored_at is not None:  # an undo of a restore, not done
                        _archive.set_state(conn, it.archive_id, "restored", expect="archiving", keep_restored_at=True)
                    elif it.text in present:
                        _archive.delete_intent(conn, it.archive_id)
                    else:
                        _archive.set_state(conn, it.archive_id, "archived", expect="archiving")
                elif it.state == "restoring":
                    _archive.set_state(conn, it.archive_id, "restored" if it.text in present else "archived",
                                       expect="restoring")
                done += 1
        return done

