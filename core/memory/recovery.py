"""Recovery of interrupted memory writes: deciding each ``intent`` journal row per entry.

One concept: a memory write killed between its journal ``intent`` and its ``done`` (the write
protocol, docs/ARCHITECTURE.md) is settled under the file's lock before the next write, on a
file that other writers -- Hermes above all -- may have changed since. Whole-file comparison
cannot do that (any Hermes write makes the file neither "before" nor "after"), so each row is
decided on two kinds of evidence, in this order:

1. **The witness of the file write** (``detail["witness"]``, ``core/fsio.py``
   ``stage_replace``): every write stages its new content under a fresh name and journals that
   name before renaming it onto the file. The staged name still there -> the rename never
   happened (``absent``); gone while the kept link to the old file is still there -> it
   happened (``applied``); both gone -> it happened and was rolled back after a failed COMMIT
   (``absent``). Exact, whatever other writers did to the file afterwards.
2. **The entries** (``core/memory/effects.py``), for rows without a usable witness (rows of
   older memdeck versions; a first write of a file that did not exist, rolled back; no hard
   links): the row's effect on entries (texts removed, texts added) is ``present`` in the file
   now -> ``applied``; the before-state's entries are there and none it added -> ``absent``;
   another writer touched the very same entries -> ``unknown``, with the reason. A change of
   form only (``normalize``) is judged on the whole text, as before.

The rows of one change (one ``txn``: a move, an undo of a move) are settled together, and only
when every file they touch is locked here:

* all ``applied`` -> ``done`` (an undo also marks its rows undone, and stages an undone
  approval's record again);
* all ``absent`` -> deleted (an approval's set-aside record is put back first: staged again);
* some ``applied``, the rest ``absent`` (a move killed between its two renames; an undo of one)
  -> the change is *finished by entries*: each absent row's effect is made on that file as it
  is now (the moved entry taken out of its source, Hermes' entries kept), the row's texts are
  replaced by what was really written, then ``done``. The destination is written first, so
  finishing only takes entries out: it never overflows; a file that is not canonical gets a
  ``.bak.<ts>`` snapshot first (Hermes' naming). A move is thus in exactly one file;
* any ``unknown`` -> every row of the change ``unknown`` (never undone automatically); an
  approval's record stays aside (never replayed).

The decision and the reason are kept in ``detail["recovery"]`` (``{"by": "witness" |
"entries" | "text", "state": ..., "reason": ...}``). A finish that cannot be made (the
file unreadable, a budget) leaves the change ``unknown`` with that reason. Each step is
idempotent: a kill during recovery is settled by the next recovery the same way.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from ..deck import db as deckdb
from ..deck import journal
from ..errors import LockTimeout, UnreadableFile
from ..fsio import INTENT_TEMP_PREFIX, file_lock, read_text_strict, replace_outcome
from ..home import TARGETS
from . import approval
from .effects import EntryEffect
from .entries import noncanonical_reason, parse_entries, serialize_entries, usage_chars
from .plumbing import StorePlumbing


@dataclass(frozen=True)
class Verdict:
    """What recovery found for one ``intent`` row.

    Attributes:
        state: ``applied`` (the change is on disk), ``absent`` (it never happened, or was
            rolled back), ``neutral`` (a row that changes nothing: it follows its change),
            ``unknown``.
        by: the evidence: ``witness`` (the staged names), ``entries``, ``text`` (whole
            text, for a change of form only), ``file`` (the file could not be read).
        reason: in words, for the journal and the person reading it.
    """

    state: str
    by: str
    reason: str

    def note(self, **extra: Any) -> dict[str, Any]:
        return {"by": self.by, "state": self.state, "reason": self.reason, **extra}


@dataclass(frozen=True)
class _File:
    text: str | None
    entries: list[str]
    error: str | None = None


def verdict(row: journal.JournalRow, outcome: str | None, now: _File) -> Verdict:
    """Decide one row (pure; see the module docstring).

    Args:
        row: an ``intent`` memory row. outcome: :func:`core.fsio.replace_outcome` of its
            witness, or None when it has none. now: the file as it is now.
    """
    if outcome == "not_made":
        return Verdict("absent", "witness", "its staged file was never renamed onto the file: the write did not happen")
    if outcome == "made":
        return Verdict("applied", "witness", "its staged file was renamed onto the file: the write happened")
    if outcome == "rolled_back":
        return Verdict("absent", "witness", "the write was rolled back after its journal commit failed")
    if now.error is not None:
        return Verdict("unknown", "file", now.error)
    eff = EntryEffect.of(row.before, row.after)
    status = eff.status(now.entries)
    if status == "present":
        return Verdict("applied", "entries", "its entries are in the file: " + _describe(eff))
    if status == "absent":
        return Verdict("absent", "entries", "the file holds the entries it had before the change")
    if status == "mixed":
        return Verdict("unknown", "entries", f"another writer changed the same entries since: {eff.why_mixed(now.entries)}")
    if row.before == row.after:
        return Verdict("neutral", "text", "the change leaves this file as it was")
    if now.text == row.after:
        return Verdict("applied", "text", "the file holds the text the change wrote")
    if now.text == row.before:
        return Verdict("absent", "text", "the file holds the text it had before the change")
    return Verdict("unknown", "text", "a change of form only (the same entries), and the file was rewritten since: "
                   "the entries cannot tell whether it happened")


def _describe(eff: EntryEffect) -> str:
    parts = []
    if eff.added:
        parts.append(f"{len(eff.added)} added")
    if eff.removed:
        parts.append(f"{len(eff.removed)} removed")
    return ", ".join(parts)


class RecoveryOps(StorePlumbing):
    """Recovery methods of :class:`.store.MemoryStore` (a mixin: they use its paths, limits,
    backup and write plumbing)."""

    def _recover_journal_locked(self, held: set[str], conn: sqlite3.Connection) -> int:
        """Settle the ``intent`` rows of the held targets (see the module docstring).

        Rows of one change are settled together, and only while every file they touch is
        locked: the ``held`` ones by the caller, any other (a move's second file) taken here
        without waiting, else the change is left for a later write.

        Returns:
            how many rows were settled.
        """
        rows = [r for r in journal.intents(self.home, "memory", conn=conn) if r.op != "reject"]
        groups: dict[str, list[journal.JournalRow]] = {}
        for r in rows:
            groups.setdefault(r.txn or f"#{r.journal_id}", []).append(r)
        n = 0
        for group in groups.values():
            if any(r.target not in TARGETS for r in group):
                continue
            need = {r.memory_target for r in group}
            with ExitStack() as more:
                try:  # a move's other file: its lock only if free now (no wait: no lock-order deadlock)
                    for t in sorted(need - held, key=TARGETS.index):
                        more.enter_context(file_lock(self.path(t), 0))
                except (LockTimeout, UnreadableFile, OSError):
                    continue
                self._settle_change(conn, group)
            n += len(group)
        return n

    # -- one change --------------------------------------------------------------------------
    def _read_now(self, target: str) -> _File:
        try:
            text = read_text_strict(self.path(target))
        except UnreadableFile as exc:
            return _File(None, [], f"the file cannot be read: {exc}")
        return _File(text, parse_entries(text))

    def _outcome(self, row: journal.JournalRow) -> str | None:
        w = row.detail.get("witness")
        if not isinstance(w, dict):
            return None
        out = replace_outcome(self.path(str(row.target)), w)
        return None if out == "unknown" else out

    def _settle_change(self, conn: sqlite3.Connection, group: list[journal.JournalRow]) -> None:
        now = {t: self._read_now(t) for t in dict.fromkeys(str(r.target) for r in group)}
        verdicts = [verdict(r, self._outcome(r), now[str(r.target)]) for r in group]
        states = {v.state for v in verdicts} - {"neutral"}
        if "unknown" in states:
            why = "; ".join(f"{r.target}: {v.reason}" for r, v in zip(group, verdicts) if v.state == "unknown")
            notes = {r.journal_id: v.note(change=why) if v.state != "unknown" else v.note() for r, v in zip(group, verdicts)}
            with deckdb.transaction(conn):
                journal.settle_intents(conn, "unknown", notes)
            self._drop_staged(group)
            return
        if not states or states == {"applied"}:
            self._finish_rows(conn, group, {r.journal_id: v.note() for r, v in zip(group, verdicts)})
            return
        if states == {"absent"}:
            for r in group:  # the record back under its name first: a kill below repeats this
                approval.settle(self.home, r.detail, False)
            with deckdb.transaction(conn):
                journal.discard_intents(conn, [r.journal_id for r in group])
            self._drop_staged(group)
            return
        self._finish_by_entries(conn, group, verdicts, now)

    def _finish_by_entries(self, conn: sqlite3.Connection, group: list[journal.JournalRow], verdicts: list[Verdict],
                           now: dict[str, _File]) -> None:
        """Some rows of the change happened, the others not: make the others' effect on their
        files as they are now (see the module docstring), then mark the change ``done``."""
        plans: list[tuple[journal.JournalRow, str | None, str]] = []
        for r, v in zip(group, verdicts):
            if v.state != "absent":
                continue
            cur = now[str(r.target)]
            eff = EntryEffect.of(r.before, r.after)
            new = eff.apply(cur.entries)
            why = None
            if not eff.entry_level:
                why = "part of the change happened and this part is a change of form only: it cannot be finished by entries"
            elif usage_chars(new) > self.limit(str(r.target)) and usage_chars(new) > usage_chars(cur.entries):
                why = (f"part of the change happened; finishing it on {r.target} would put it at {usage_chars(new):,}/"
                       f"{self.limit(str(r.target)):,} chars")
            if why is not None:
                notes = {x.journal_id: Verdict("unknown", "entries", why).note() for x in group}
                with deckdb.transaction(conn):
                    journal.settle_intents(conn, "unknown", notes)
                self._drop_staged(group)
                return
            plans.append((r, cur.text, serialize_entries(new)))
        for r, before, text in plans:
            if before != text:
                if noncanonical_reason(before, self.limit(str(r.target))):
                    self._backup(self.path(str(r.target)))
                self._write_text(str(r.target), text)
        notes = {r.journal_id: v.note() for r, v in zip(group, verdicts)}
        for r, _b, _t in plans:
            notes[r.journal_id] = Verdict("applied", "entries", "part of the change had happened; recovery finished "
                                          "it on the file as other writers left it").note(finished=True)
        self._finish_rows(conn, group, notes, {r.journal_id: (b, t) for r, b, t in plans})

    def _finish_rows(self, conn: sqlite3.Connection, group: list[journal.JournalRow], notes: dict[int, dict[str, Any]] | None = None,
                     texts: dict[int, tuple[str | None, str]] | None = None) -> None:
        """Mark a change's rows ``done`` (with recovery's notes, and the texts it really wrote);
        an undo marks its rows undone and stages an undone approval again; an approval's
        set-aside record is removed; the staged names go last."""
        ids = [r.journal_id for r in group]
        undoes = [int(j) for r in group if r.op == "undo" for j in (r.detail.get("undoes") or [])]
        with deckdb.transaction(conn):
            for jid, (before, after) in (texts or {}).items():
                journal.set_texts(conn, jid, before, after)
            if notes:
                journal.settle_intents(conn, "done", notes)
            journal.mark_done(conn, ids)
            if undoes:
                journal.mark_undone(conn, sorted(set(undoes)), max(ids))
        if undoes:
            undone = [x for x in (journal.get(self.home, j, conn=conn) for j in sorted(set(undoes))) if x is not None]
            self._restage_approved(undone)
        for r in group:
            approval.settle(self.home, r.detail, True)
        self._drop_staged(group)

    def _drop_staged(self, group: list[journal.JournalRow]) -> None:
        """Remove the staged names of settled rows (after their COMMIT: until then they are the
        evidence). Never raises."""
        for r in group:
            w = r.detail.get("witness")
            if not isinstance(w, dict):
                continue
            directory = os.path.dirname(os.path.realpath(self.path(str(r.target))))
            for name in (w.get("new"), w.get("old")):
                if isinstance(name, str) and name.startswith(INTENT_TEMP_PREFIX) and "/" not in name:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, name))


def resolve_reject_intents(home: Any, conn: sqlite3.Connection) -> int:
    """Resolve ``reject`` rows left in ``intent`` by a killed reject (``pending.reject`` is
    write-ahead: row, removal of the record, done): the record file gone -> ``done``; still
    in ``pending/memory/`` -> the row is deleted (nothing was rejected). Returns how many."""
    rows = [r for r in journal.intents(home, "memory", conn=conn) if r.op == "reject"]
    if not rows:
        return 0
    with deckdb.transaction(conn):
        for r in rows:
            name = str(r.detail.get("record_file") or f"{r.detail.get('pending_id')}.json")
            if "/" in name or (home.pending_dir / name).exists() or (home.pending_dir / name).is_symlink():
                journal.discard_intents(conn, [r.journal_id])
            else:
                journal.mark_done(conn, [r.journal_id])
    return len(rows)


__all__ = ["RecoveryOps", "Verdict", "resolve_reject_intents", "verdict"]
