"""``MemoryStore``: the locked, atomic writer of MEMORY.md / USER.md (add, replace, edit, remove, move, normalize).

One concept: a write to a memory file. The entry format and selectors live in :mod:`.entries`;
archive/restore, Hermes-semantics replay and undo/revert are the mixins :mod:`.archiving`,
:mod:`.replay` and :mod:`.reverting`, which this class composes. Byte- and lock-compatible with
Hermes 0.19 ``tools/memory_tool.py``:

* lock: ``fcntl.flock(LOCK_EX)`` on the sidecar ``<file>.lock`` (``_file_lock`` :253-289), via
  ``core.fsio.file_lock`` (0600, no symlink following, bounded wait -> ``LockTimeout``).
* every write reloads under the lock, runs the drift guard (``_detect_external_drift``
  :714-767: the file must round-trip and no entry may exceed the char limit; otherwise the raw
  file is copied to ``<file>.bak.<int(time)>`` and the write is refused), checks the budget and
  the threat scan, then writes the canonical form atomically (``core.fsio.atomic_write_text``).

Differences from Hermes, on purpose:

* the drift guard also protects ``add`` (Hermes skips it for add, which rewrites the file from
  its parsed entries); refusing is the safe side. ``normalize`` is the explicit repair.
* selectors: memdeck's rule (:mod:`.entries`); ``apply_batch`` (used to replay pending writes)
  keeps Hermes 0.19's pure substring rule.
* an unreadable or invalid-UTF-8 file makes every write refuse; it is never wiped.
* write approval (``memory.write_approval``) is Hermes' gate for the *agent*; writes made
  through memdeck's CLI/TUI are direct user actions and are applied directly.

Every successful write is journaled (``core/deck/journal.py``, ``kind="memory"``, before/after =
whole canonical file text) write-ahead (:meth:`MemoryStore._write_ahead`; an interrupted one is
settled per entry by :mod:`.recovery`), then stale ``.mem_*.tmp`` files are removed: all of
them when the other target's lock can be taken without waiting (Hermes only creates temps while
holding a target lock), otherwise only those older than 60 s; a write's staged names
(``.mem_intent_*``) only when no ``intent`` row names them.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..deck import archive as _archive
from ..deck import db as deckdb
from ..deck import journal
from ..errors import LockTimeout, Refused, UnreadableFile
from ..fsio import (
    DEFAULT_LOCK_TIMEOUT,
    INTENT_TEMP_PREFIX,
    StagedReplace,
    applied,
    atomic_write_bytes,
    atomic_write_text,
    cleanup_stale_temps,
    discard_staged,
    file_lock,
    list_names,
    read_regular_bytes,
    read_text_strict,
    stage_replace,
)
from ..home import TARGETS, HermesHome, require_hermes_home
from . import approval
from .approval import RecordClaim
from .archiving import ArchiveOps
from .consolidating import ConsolidateOps
from .entries import (
    ENTRY_DELIMITER,
    entries_of,
    entry_id,
    find_entry,
    noncanonical_reason,
    overflow_refusal,
    parse_entries,
    preview,
    scan_or_refuse,
    serialize_entries,
    usage_chars,
)
from .reader import read_memory
from .recovery import RecoveryOps, resolve_reject_intents
from .replay import ReplayOps
from .results import PlannedWrite, WriteResult
from .reverting import RevertOps

STALE_TEMP_AGE = 60.0


def _same_snapshot(path: Path, raw: bytes, newest: int = 3) -> Path | None:
    """The newest of the last ``newest`` ``<file>.bak.<ts>`` snapshots of ``path`` whose bytes are
    ``raw``, or None (names that are not UTF-8 are never looked at: ``core/fsio.py`` ``list_names``)."""
    prefix = path.name + ".bak."
    try:
        names = [n for n in list_names(path.parent)[0] if n.startswith(prefix) and n[len(prefix):].isdigit()]
    except OSError:
        return None
    for name in sorted(names, key=lambda n: int(n[len(prefix):]), reverse=True)[:newest]:
        p = path.parent / name
        try:
            if p.stat().st_size == len(raw) and read_regular_bytes(p) == raw:
                return p
        except OSError:
            continue
    return None


class MemoryStore(ArchiveOps, ConsolidateOps, ReplayOps, RevertOps, RecoveryOps):
    """The locked, atomic writer of MEMORY.md / USER.md for one Hermes home.

    Args:
        home: the Hermes home. config: its config (None -> ``load_config(home)``).
        actor: recorded in the journal (``cli``/``tui``/``plugin``).
        lock_timeout: seconds to wait for a sidecar lock before ``LockTimeout``.

    Every method raises ``Refused`` (disk untouched) for: ``empty`` input, ``threat`` (with
    ``findings``), ``overflow`` (with ``current_entries`` and ``usage``), ``no_match`` /
    ``ambiguous`` (with candidates), ``drift`` (with ``drift_backup``), ``unreadable``,
    ``unwritable`` (the atomic write failed: disk full, a symlink into a missing directory); and
    ``LockTimeout`` when the lock stays busy. Targets are ``"memory"`` or ``"user"``
    (``ValueError`` otherwise).
    """

    def __init__(self, home: HermesHome, config: Config | None = None, actor: str = "cli",
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.home = home
        self.config = config or load_config(home)
        self.actor = actor
        self.lock_timeout = lock_timeout
        #: merged into every journal row's detail (e.g. ``{"pending_id": ...}`` for approvals)
        self.journal_extra: dict[str, Any] = {}
        #: set by ``pending.approve``: the record this store's next write applies (set aside
        #: before the file changes, removed once the write is ``done``; :mod:`.approval`)
        self.claim: RecordClaim | None = None

    # -- plumbing ------------------------------------------------------------------------
    def path(self, target: str) -> Path:
        return self.home.memory_file(target)

    def limit(self, target: str) -> int:
        return self.config.char_limit(target)

    @contextmanager
    def _locked(self, *targets: str) -> Iterator[None]:
        """Hold the sidecar locks of ``targets`` in a fixed order (memory before user)."""
        for t in targets:
            self.path(t)  # validates
        require_hermes_home(self.home)
        with ExitStack() as stack:
            for t in sorted(set(targets), key=TARGETS.index):
                try:
                    stack.enter_context(file_lock(self.path(t), self.lock_timeout))
                except OSError as exc:  # e.g. memories/ is a regular file
                    raise Refused(f"cannot use {self.home.memories_dir} as the memories directory: "
                                  f"{exc.strerror or exc}. Nothing was written.", code="unwritable") from exc
            if journal.db_exists(self.home):
                with deckdb.opened(self.home) as conn:
                    self._recover_journal_locked(set(targets), conn)
                    for t in dict.fromkeys(targets):  # and an interrupted archive/restore's row
                        self._recover_locked(t, conn)
                    if _set_aside_records(self.home):
                        approval.sweep(self.home, conn)
            yield

    def _intents(self, conn: sqlite3.Connection, rows: Sequence[tuple[str, str, str | None, str, dict[str, Any]]],
                 txn: str | None = None) -> list[int]:
        """Insert ``(op, target, before, after, detail)`` rows in state ``intent`` (in the
        caller's transaction)."""
        return [journal.record(self.home, actor=self.actor, op=op, kind="memory", target=target, before=before,
                               after=after, detail={**detail, **self.journal_extra}, txn=txn, conn=conn,
                               state="intent")
                for op, target, before, after, detail in rows]

    def _load(self, target: str, *, canonical_check: bool = True) -> tuple[str | None, list[str]]:
        """Read ``target`` under its lock: (raw text or None, entries). Refuses unreadable/drift."""
        path = self.path(target)
        try:
            raw = read_text_strict(path)
        except UnreadableFile as exc:
            raise Refused(f"{exc}. Nothing was written; fix or move the file first.", code="unreadable") from exc
        if canonical_check:
            reason = noncanonical_reason(raw, self.limit(target))
            if reason:
                bak = self._backup(path)
                raise Refused(
                    f"Refusing to write {path.name}: {reason}. A snapshot was saved to {bak}. "
                    f"Run `memdeck memory normalize --target {target}` to rewrite it in the canonical form, "
                    "or fix it by hand.", code="drift", drift_backup=bak, drift=reason)
        return raw, parse_entries(raw)

    @staticmethod
    def _backup(path: Path) -> str:
        """Copy the file's raw bytes to ``<file>.bak.<int(time)>`` (Hermes' naming), unless one of
        the newest snapshots already holds exactly these bytes: then that one is named again, so a
        refused write repeated (a key held down, a script retrying) never fills the disk with copies
        of one large drifted file (the hostile homes' 50 MB MEMORY.md wrote 50 MB per refusal)."""
        bak = path.with_name(f"{path.name}.bak.{int(time.time())}")
        try:
            raw = path.read_bytes()
            same = _same_snapshot(path, raw)
            if same is not None:
                return str(same)
            atomic_write_bytes(bak, raw, prefix=".bak_")
        except OSError as exc:
            return f"{bak} (BACKUP FAILED: {exc.strerror}; file unchanged on disk)"
        return str(bak)

    def _write(self, target: str, entries: Sequence[str]) -> str:
        """Atomically write ``entries``; an OSError becomes ``Refused("unwritable")`` (file untouched)."""
        text = serialize_entries(entries)
        self._write_text(target, text)
        return text

    def _write_text(self, target: str, text: str) -> None:
        path = self.path(target)
        try:
            atomic_write_text(path, text)
        except OSError as exc:
            raise Refused(f"cannot write {path.name}: {exc.strerror or exc}. Nothing was changed.",
                          code="unwritable", path=str(path)) from exc

    def _stage(self, target: str, text: str) -> StagedReplace:
        """Stage ``text`` as ``target``'s next content (``core.fsio.stage_replace``: the new
        content and a link to the old file under fresh ``.mem_intent_*`` names, fsynced). An
        OSError (disk full) is ``Refused("unwritable")`` with nothing changed."""
        path = self.path(target)
        try:
            return stage_replace(path, text.encode("utf-8"), secrets.token_hex(8))
        except OSError as exc:
            raise Refused(f"cannot write {path.name}: {exc.strerror or exc}. Nothing was changed.",
                          code="unwritable", path=str(path)) from exc

    @contextmanager
    def _replacing(self, staged: StagedReplace) -> Iterator[None]:
        """Rename a staged content onto its file (lock held); if the block raises -- the
        journal's COMMIT failed, e.g. SQLITE_FULL -- the previous file is put back (one rename)
        before the exception propagates, so a failure reported to the caller always means the
        file is unchanged (``core.fsio.applied``; issue 13 #3). A failed rename is
        ``Refused("unwritable")`` with nothing changed."""
        try:
            cm = applied(staged)
            cm.__enter__()
        except OSError as exc:
            raise Refused(f"cannot write {staged.real.name}: {exc.strerror or exc}. Nothing was changed.",
                          code="unwritable", path=str(staged.real)) from exc
        try:
            yield
        except BaseException as exc:
            cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        cm.__exit__(None, None, None)

    def _write_ahead(self, conn: sqlite3.Connection, plans: Sequence[PlannedWrite], *, txn: str | None = None,
                     on_intent: Callable[[Any], dict[str, Any] | None] | None = None,
                     on_done: Callable[[Any, list[int]], object] | None = None,
                     after_files: Callable[[], AbstractContextManager[Any]] | None = None) -> list[int]:
        """The write protocol for one change of one or more memory files (their locks held,
        their intents settled). In order:

        1. stage every file's new content (:meth:`_stage`): the witness of each rename;
        2. COMMIT one ``intent`` row per file, naming its staged files (``detail["witness"]``),
           with ``on_intent``'s statements (an archive row's intent; what it returns is merged
           into every row's detail). A locked or unusable memdeck.db refuses here: the staged
           files are removed, no file changed;
        3. an approval sets its record aside (:meth:`.approval.RecordClaim.hide`);
        4. rename each staged content onto its file, in ``plans`` order (put a file that gains
           entries first: a kill between two renames leaves an entry in both, never neither);
        5. enter ``after_files`` (an undone approval staged again), then COMMIT ``done`` with
           ``on_done``'s statements;
        6. remove the links to the old files and the set-aside record.

        A failure in 3-5 puts every file back (``after_files`` unwinds first, then each file,
        one rename each, in reverse) and settles the rows from the disk at once (they are
        deleted: the staged names say the writes were rolled back). A kill anywhere leaves
        ``intent`` rows that :mod:`.recovery` settles under the lock before the next write,
        whatever other writers did to the files meanwhile.

        Returns:
            the journal ids, in ``plans`` order.

        Raises:
            Refused: ``unwritable`` (staging or a rename failed; nothing changed), ``not_found``
                (an approval's record was handled by another reviewer meanwhile); the
                memdeck.db errors of the COMMITs (files put back).
        """
        staged: list[StagedReplace] = []
        try:
            for p in plans:
                staged.append(self._stage(p.target, p.after))
            with deckdb.transaction(conn):
                extra = (on_intent(conn) if on_intent is not None else None) or {}
                ids = self._intents(conn, [(p.op, p.target, p.before, p.after,
                                            {**p.detail, **extra, "witness": st.names()})
                                           for p, st in zip(plans, staged)], txn)
        except BaseException:
            for st in staged:
                discard_staged(st)
            raise
        claim, self.claim = self.claim, None  # one claim, one write
        try:
            with ExitStack() as files:
                if claim is not None:
                    claim.hide()
                for st in staged:
                    files.enter_context(self._replacing(st))
                if after_files is not None:
                    files.enter_context(after_files())
                with deckdb.transaction(conn):
                    journal.mark_done(conn, ids)
                    if on_done is not None:
                        on_done(conn, ids)
        except BaseException:
            self._settle_failed([p.target for p in plans], conn)
            raise
        for st in staged:
            discard_staged(st)
        if claim is not None:
            claim.release()
        return ids

    def _settle_failed(self, targets: Sequence[str], conn: sqlite3.Connection) -> None:
        """After a failed write (files put back): settle its intents from the disk at once,
        journal rows and archive rows (best effort: what is left, recovery settles later)."""
        with suppress(Exception):
            self._recover_journal_locked(set(targets), conn)
        for t in dict.fromkeys(targets):
            with suppress(Exception):
                self._recover_locked(t, conn)

    def _cleanup_temps(self, held: Sequence[str]) -> None:
        directory = self.home.memories_dir
        others = [t for t in TARGETS if t not in held]
        try:
            with ExitStack() as stack:
                for t in others:
                    stack.enter_context(file_lock(self.path(t), 0))
                cleanup_stale_temps(directory, older_than=0.0)
                cleanup_stale_temps(directory, prefix=".bak_", older_than=0.0)
                for d in dict.fromkeys([directory, *(self.path(t).resolve().parent for t in TARGETS)]):
                    self._drop_orphan_staged(d)  # a symlinked file's staged names sit beside its real file
        except (LockTimeout, UnreadableFile):
            cleanup_stale_temps(directory, older_than=STALE_TEMP_AGE)

    def _drop_orphan_staged(self, directory: Path) -> int:
        """Remove staged names (``.mem_intent_*``) that no ``intent`` row names: left by a kill
        before the row's COMMIT, or after the row was settled. Only with every target's lock
        held (no write is between its staging and its intent). Returns how many."""
        try:
            names = [n for n in os.listdir(directory) if n.startswith(INTENT_TEMP_PREFIX)]
        except OSError:
            return 0
        if not names:
            return 0
        referenced: set[str] = set()
        if journal.db_exists(self.home):
            try:
                for r in journal.intents(self.home, "memory"):
                    w = r.detail.get("witness")
                    if isinstance(w, dict):
                        referenced.update(str(v) for v in w.values() if isinstance(v, str))
            except Exception:  # noqa: BLE001 - an unusable journal: keep every name
                return 0
        n = 0
        for name in names:
            if name not in referenced:
                with suppress(OSError):
                    os.unlink(directory / name)
                    n += 1
        return n

    def _journal(self, conn: sqlite3.Connection, op: str, target: str, before: str | None, after: str | None,
                 detail: dict[str, Any], txn: str | None = None) -> int:
        return journal.record(self.home, actor=self.actor, op=op, kind="memory", target=target, before=before,
                              after=after, detail={**detail, **self.journal_extra}, txn=txn, conn=conn)

    def _result(self, op: str, target: str, entries: Sequence[str], message: str, **kw: Any) -> WriteResult:
        return WriteResult(op, target, message, entries=entries_of(entries), chars=usage_chars(entries),
                           limit=self.limit(target), **kw)

    def _commit(self, op: str, target: str, raw: str | None, old: list[str], new: list[str], message: str,
                detail: dict[str, Any], entry: str | None = None) -> WriteResult:
        """Write ``new`` (lock held), journal it, clean temps; a no-op when nothing changes.

        Write-ahead (issue 13, :meth:`_write_ahead`): the row is committed as ``intent`` first
        (an unusable or locked memdeck.db refuses the write with the file untouched), the file
        is replaced, and the row is marked ``done``; a failed second COMMIT puts the file back
        and the intent is settled at once (deleted). A kill in between leaves an intent that
        the next write on the file settles per entry (:mod:`.recovery`).
        """
        before = serialize_entries(old)
        if new == old and raw is not None and raw == before:
            return self._result(op, target, new, message, changed=False, entry_id=entry)
        after = serialize_entries(new)
        jid = self._wal_write(target, raw, after, op, detail)
        self._cleanup_temps([target])
        return self._result(op, target, new, message, entry_id=entry, journal_id=jid)

    def _wal_write(self, target: str, raw: str | None, after: str, op: str, detail: dict[str, Any]) -> int:
        """One file's change through :meth:`_write_ahead`; returns the journal id."""
        with deckdb.opened(self.home) as conn:
            (jid,) = self._write_ahead(conn, [PlannedWrite(op, target, raw, after, detail)])
        return jid

    @staticmethod
    def _clean(text: str | None, what: str) -> str:
        """The entry text as it will read back, or a refusal.

        * CRLF and CR become LF: Hermes 0.19 writes a CR raw but reads the file with universal
          newlines (``tools/memory_tool.py:702`` ``path.read_text``), so every reader sees LF;
          storing that form keeps ids, undo and duplicate detection right (issue 13 #10).
        * text whose canonical join does not round-trip -- ending in
          ``\n§`` or containing ``\n§\n`` -- would merge with or split from its neighbours
          on the next read: ``Refused(code="delimiter")`` (issue 13 #9).

        Raises:
            Refused: ``empty``, ``delimiter``.
        """
        t = (text or "").replace("\r\n", "\n").replace("\r", "\n").strip()
        if not t:
            raise Refused(f"{what} cannot be empty.", code="empty")
        pieces = [p.strip() for p in ("a" + ENTRY_DELIMITER + t + ENTRY_DELIMITER + "b").split(ENTRY_DELIMITER)]
        if pieces != ["a", t, "b"]:
            raise Refused(f"{what} cannot end with newline + '§' or hold a line that "
                          "is only '§': that is the entry delimiter, and the text would split from or merge with "
                          "its neighbours. Nothing was written.", code="delimiter")
        return t

    def _locate(self, selector: str, target: str | None) -> str:
        """The target holding the entry ``selector`` designates (search both when None)."""
        if target is not None:
            self.path(target)
            return target
        found: list[tuple[str, int]] = []
        for t in TARGETS:
            state = read_memory(self.home, self.config, t)
            try:
                found.append((t, find_entry([e.text for e in state.entries], selector, target=t)))
            except Refused as exc:
                if exc.code == "ambiguous":
                    raise
        if not found:
            raise Refused(f"no entry in MEMORY.md or USER.md matches {preview(selector.strip(), 60)!r}", code="no_match")
        if len(found) > 1:
            raise Refused(f"{preview(selector.strip(), 60)!r} matches an entry in both MEMORY.md and USER.md; "
                          "give --target", code="ambiguous",
                          candidates=[{"target": t, "id": entry_id(read_memory(self.home, self.config, t).entries[i].text)}
                                      for t, i in found])
        return found[0][0]

    # -- operations ------------------------------------------------------------------------
    def add(self, target: str, text: str) -> WriteResult:
        """Append an entry (Hermes ``add`` :346-396: an exact duplicate is a successful no-op)."""
        self.path(target)
        content = self._clean(text, "Content")
        scan_or_refuse(content)
        with self._locked(target):
            raw, entries = self._load(target)
            if content in entries:
                return self._result("add", target, entries, "Entry already exists (no duplicate added).",
                                    changed=False, entry_id=entry_id(content))
            new = entries + [content]
            total, limit = usage_chars(new), self.limit(target)
            if total > limit:
                raise overflow_refusal(target, entries, total, limit, f"Adding this entry ({len(content):,} chars)")
            return self._commit("add", target, raw, entries, new, "Entry added.",
                                {"entry_id": entry_id(content), "text": content}, entry_id(content))

    def replace(self, target: str, selector: str, new_text: str) -> WriteResult:
        """Replace the whole entry ``selector`` designates with ``new_text``."""
        self.path(target)
        content = self._clean(new_text, "new_content")
        scan_or_refuse(content)
        with self._locked(target):
            raw, entries = self._load(target)
            i = find_entry(entries, selector, target=target)
            return self._replace_at(target, raw, entries, i, content, "replace", "Entry replaced.")

    def edit(self, selector: str, new_text: str, target: str | None = None) -> WriteResult:
        """Rewrite an entry found by id (or selector) in ``target`` or whichever file holds it."""
        content = self._clean(new_text, "new text")
        scan_or_refuse(content)
        target = self._locate(selector, target)
        with self._locked(target):
            raw, entries = self._load(target)
            i = find_entry(entries, selector, target=target)
            return self._replace_at(target, raw, entries, i, content, "edit", "Entry edited.")

    def _replace_at(self, target: str, raw: str | None, entries: list[str], i: int, content: str, op: str,
                    message: str) -> WriteResult:
        old = entries[i]
        new = list(entries)
        new[i] = content
        new = list(dict.fromkeys(new))  # replacing with the text of another entry merges them
        total, limit = usage_chars(new), self.limit(target)
        if total > limit:
            raise overflow_refusal(target, entries, total, limit, "This replacement")
        return self._commit(op, target, raw, entries, new, message,
                            {"old_id": entry_id(old), "old_text": old, "entry_id": entry_id(content), "text": content},
                            entry_id(content))

    def remove(self, target: str | None, selector: str) -> WriteResult:
        """Delete the entry ``selector`` designates; ``target`` None searches both files, as
        :meth:`archive` does (refused ``ambiguous`` when both hold a match, ``no_match`` when
        neither does)."""
        target = self._locate(selector, target)
        with self._locked(target):
            raw, entries = self._load(target)
            i = find_entry(entries, selector, target=target)
            gone = entries[i]
            new = entries[:i] + entries[i + 1:]
            return self._commit("remove", target, raw, entries, new, "Entry removed.",
                                {"entry_id": entry_id(gone), "text": gone}, entry_id(gone))

    def move(self, from_target: str | None, selector: str, to_target: str) -> WriteResult:
        """Move an entry to the other file. Both locks are held (memory, then user).

        The destination is written first, so a crash between the two writes leaves the entry in
        both files (never in neither). Refuses ``same_target``, ``overflow`` (destination budget),
        ``threat``.
        """
        self.path(to_target)
        src = self._locate(selector, from_target)
        if src == to_target:
            raise Refused(f"the entry is already in {to_target}", code="same_target")
        with self._locked(src, to_target):
            raw_s, ents_s = self._load(src)
            raw_d, ents_d = self._load(to_target)
            i = find_entry(ents_s, selector, target=src)
            text = ents_s[i]
            scan_or_refuse(text)
            new_s = ents_s[:i] + ents_s[i + 1:]
            new_d = ents_d if text in ents_d else ents_d + [text]
            total, limit = usage_chars(new_d), self.limit(to_target)
            if total > limit:
                raise overflow_refusal(to_target, ents_d, total, limit, f"Moving this entry ({len(text):,} chars)")
            txn = uuid.uuid4().hex
            detail = {"entry_id": entry_id(text), "text": text, "from": src, "to": to_target}
            # write-ahead, both rows in one txn (a locked or broken memdeck.db refuses the move
            # before either file changes); destination first, then source: a kill between the
            # two renames leaves the entry in both files, and recovery finishes the move by
            # entries (never in neither, and in exactly one once settled); a failed rename or
            # COMMIT puts both files back (source, then destination)
            with deckdb.opened(self.home) as conn:
                ids = self._write_ahead(conn, [PlannedWrite("move", to_target, raw_d, serialize_entries(new_d), detail),
                                               PlannedWrite("move", src, raw_s, serialize_entries(new_s), detail)],
                                        txn=txn)
                jid = ids[-1]
            self._cleanup_temps([src, to_target])
            return self._result("move", to_target, new_d, f"Entry moved from {src} to {to_target}.",
                                entry_id=entry_id(text), journal_id=jid, details={"source": src})

    def normalize(self, target: str) -> WriteResult:
        """Rewrite ``target`` in the canonical form (the explicit repair for drift).

        Drops blank padding around delimiters, empty pieces and duplicate entries; keeps every
        entry's text. A ``.bak.<ts>`` copy of the raw file is written first.

        Raises:
            Refused: ``unreadable``; ``limit`` when an entry alone exceeds the char limit
                (normalizing cannot fix that without cutting text: shorten it in an editor).
        """
        self.path(target)
        with self._locked(target):
            raw, entries = self._load(target, canonical_check=False)
            limit = self.limit(target)
            long = [e for e in entries if len(e) > limit]
            if long:
                raise Refused(
                    f"cannot normalize {self.path(target).name}: entry {entry_id(long[0])} is {len(long[0]):,} chars, "
                    f"longer than the whole {limit:,}-char limit; split or shorten it in an editor first",
                    code="limit", entries=[{"id": entry_id(e), "chars": len(e)} for e in long])
            if raw is None or raw == serialize_entries(entries):
                return self._result("normalize", target, entries, "Already canonical; nothing to do.", changed=False)
            bak = self._backup(self.path(target))
            res = self._commit("normalize", target, raw, entries, entries, "Rewritten in canonical form.",
                               {"backup": bak, "entries": len(entries)})
            res.backup = bak
            return res



def _set_aside_records(home: HermesHome) -> bool:
    try:
        return any(n.endswith(".json" + approval.APPLYING_SUFFIX) for n in os.listdir(home.pending_dir))
    except OSError:
        return False


def recover_intents(home: HermesHome, config: Config | None = None, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> int:
    """Resolve every interrupted memory write: archive/restore intents, ``intent`` journal rows
    (under both targets' locks, so a move's two rows resolve together; :mod:`.recovery`) and
    pending records an interrupted approval left set aside (:func:`.approval.sweep`).

    Returns:
        how many archive/restore intents were resolved."""
    if not journal.db_exists(home):
        return 0
    intents = _archive.unfinished_archive_intents(home, "memory")
    rows = journal.intents(home, "memory")
    if not intents and not rows and not _set_aside_records(home):
        return 0
    store = MemoryStore(home, config, lock_timeout=lock_timeout)
    with store._locked(*TARGETS), deckdb.opened(home) as conn:  # _locked settles the journal and archive rows
        resolve_reject_intents(home, conn)
        approval.sweep(home, conn)
        left = {i.archive_id for i in _archive.unfinished_archive_intents(home, "memory", conn=conn)}
    return sum(1 for i in intents if i.archive_id not in left)


__all__ = ["MemoryStore", "PlannedWrite", "recover_intents", "resolve_reject_intents"]
