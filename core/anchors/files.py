"""MemLock's anchor files: session files and global pins (``persist/`` + ``manifest.json``), read and written.

One concept: the files on disk. Layout (``Sahil-SS9/hermes-memlock``; see
``shared/reference/memlock.md`` §1)::

    $HERMES_HOME/memlock/<safe-sid>.json     one per session (SessionAnchors)
    $HERMES_HOME/memlock/persist/<id>.json    one per global pin
    $HERMES_HOME/memlock/persist/manifest.json  (MemLock >= 0.5) sha256 + size per file stem

Reading tolerates every version: the session id is read from *inside* the file, both safe-sid
naming rules are looked up. Writing: ``fcntl`` sidecar lock ``<file>.lock``, reload under the
lock, validate, atomic write (temp ``<file name>.<8 hex>.tmp`` in the same directory, fsync,
rename, fsync dir) via :mod:`core.fsio`. JSON is written as MemLock writes it (``indent=2``,
``ensure_ascii=False``, no trailing newline), plus ``self_sha256`` (>= 0.5 advisory anchor
hash). Global pins keep ``persist/manifest.json`` consistent so MemLock >= 0.5 does not
quarantine them. ``AnchorFiles`` is the base of :class:`.store.AnchorStore`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .. import jsondata
from ..config import Config, MemlockConfig, load_config
from ..deck import archive as _archive
from ..deck import db as deckdb
from ..deck import journal as _journal
from ..errors import Refused, UnreadableFile
from ..fsio import (
    DEFAULT_LOCK_TIMEOUT,
    NOT_UTF8_NAME,
    atomic_write_bytes,
    atomic_write_text,
    file_lock,
    list_names,
    read_regular_bytes,
    read_text_strict,
)
from ..home import HermesHome, require_hermes_home
from ..memlock_home import MemlockLocation, locate_memlock
from .model import Anchor, PinsReport, SessionAnchors, SessionFileInfo, dump_json

T = TypeVar("T")

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1

#: ``AnchorChange.global_after`` when the change leaves ``persist/`` alone
UNCHANGED: Any = type("Unchanged", (), {"__repr__": lambda self: "UNCHANGED"})()

_ANCHOR_CONTENT_KEYS = ("id", "text", "reminder", "priority", "probes", "pinned", "history")
_PIN_CONTENT_KEYS = ("id", "text", "reminder", "priority", "probes", "scope")


def anchor_content(record: Any) -> dict[str, Any] | None:
    """What recovery and undo compare of an anchor record: its content, not MemLock's audit bookkeeping."""
    return None if not isinstance(record, dict) else {k: record.get(k) for k in _ANCHOR_CONTENT_KEYS}


def pin_content(record: Any) -> dict[str, Any] | None:
    """What recovery and undo compare of a global pin record (``persist/<id>.json``)."""
    return None if not isinstance(record, dict) else {k: record.get(k) for k in _PIN_CONTENT_KEYS}


def record_text(record: Any) -> str | None:
    """An anchor/pin record as the journal stores it: sorted-key JSON text, or None."""
    if record is None:
        return None
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


#: the archive state a row holds while its change is in flight (``core/deck/archive.py``)
_ARCHIVE_INTERMEDIATE = {"archived": "archiving", "restored": "restoring"}


@dataclass
class AnchorChange:
    """One anchor change, described by the ``build`` callback of :meth:`AnchorFiles.apply_change`.

    ``global_after``: the pin record to save in ``persist/`` (a dict), ``None`` to remove it,
    :data:`UNCHANGED` to leave it. ``archive_insert``: ``{"payload", "reason", "text"}`` for a
    new archive row (archive); ``archive_set``: ``(archive_id, from_state, to_state)`` (restore,
    and the undo of an archive or a restore). ``before``/``after``: the journal texts of a
    change with no session (``session_id`` None). ``undoes``: the rows an undo marks undone.
    After the call, ``journal_id`` and ``archive_id`` are set (None when nothing changed).
    """

    op: str
    anchor_id: str
    detail: dict[str, Any] = field(default_factory=dict)
    global_after: Any = UNCHANGED
    archive_insert: dict[str, Any] | None = None
    archive_set: tuple[int, str, str] | None = None
    before: str | None = None
    after: str | None = None
    undoes: list[int] | None = None
    result: Any = None
    journal_id: int | None = None
    archive_id: int | None = None


# ── naming ─────────────────────────────────────────────────────────────────


def safe_sid_v1(session_id: str) -> str:
    """Session file stem, MemLock <= 0.5.0 (``store.py:28-30``): keep ``isalnum()`` and ``-_``,
    everything else becomes ``_``. Not reversible; ``s/1.x`` -> ``s_1_x``."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)


def safe_sid(session_id: str) -> str:
    """Session file stem, MemLock >= 694ec32 (``memlock_core/store.py::_safe_sid``, "M6"):
    ``/`` -> ``_slash_``, ``.`` -> ``_dot_``, other disallowed chars -> ``_``. memdeck writes this name."""
    out = []
    for c in session_id:
        if c.isalnum() or c in "-_":
            out.append(c)
        elif c == "/":
            out.append("_slash_")
        elif c == ".":
            out.append("_dot_")
        else:
            out.append("_")
    return "".join(out)


def safe_pin_stem(anchor_id: str) -> str:
    """Persist file stem of a pin (``persistence.py:52-54``; the id ``manifest`` becomes
    ``manifest_pin`` as MemLock 694ec32 "L4" renames it)."""
    if anchor_id.strip().lower() == "manifest":
        anchor_id = "manifest_pin"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in anchor_id)


@contextlib.contextmanager
def writable(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` of a write into :class:`Refused` (``unwritable``) naming the file.

    Every write is an atomic rename, so a failed one leaves the previous file as it was.
    """
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = exc.filename or path
        raise Refused(f"cannot write {path.name}: {where}: {reason}; nothing was changed", "unwritable",
                      path=str(path)) from exc




class AnchorFiles:
    """Read and write MemLock's anchor files (the file layer of :class:`.store.AnchorStore`) in the
    ``memlock/`` directory MemLock uses for the home (:func:`core.memlock_home.locate_memlock`: the
    home's own ``memlock/``, or ``~/.memlock/memlock`` / ``$MEMLOCK_HOME/memlock`` where MemLock 0.5
    runs on the default profile without ``HERMES_HOME``), so reads and writes go where MemLock reads.

    Args:
        home: a :class:`HermesHome` or the home directory.
        config: the home's :class:`Config` (loaded when None); ``memlock.max_pins`` is enforced.
        actor: who writes (``"cli"``, ``"tui"``, ``"plugin"``), recorded in the journal.
        location: the MemLock directory to use (located once, at construction, when None).
    """

    def __init__(self, home: HermesHome | Path | str, config: Config | None = None, actor: str = "cli",
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT, location: MemlockLocation | None = None) -> None:
        self.home = home if isinstance(home, HermesHome) else HermesHome(Path(home))
        self.config = config if config is not None else load_config(self.home)
        self.actor = actor
        #: seconds a write waits for a session file's lock before ``LockTimeout``
        self.lock_timeout = float(lock_timeout)
        #: where MemLock keeps this home's state (:class:`core.memlock_home.MemlockLocation`)
        self.location = location if location is not None else locate_memlock(self.home)

    # -- paths ---------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The ``memlock/`` directory in use (:attr:`location`)."""
        return self.location.path

    @property
    def persist_dir(self) -> Path:
        return self.root / "persist"

    @property
    def manifest_path(self) -> Path:
        return self.persist_dir / MANIFEST_NAME

    @property
    def mcfg(self) -> MemlockConfig:
        return self.config.memlock

    def session_path(self, session_id: str) -> Path:
        """The path memdeck writes for ``session_id`` (newest safe-sid rule)."""
        return self.root / f"{safe_sid(session_id)}.json"

    def pin_path(self, anchor_id: str) -> Path:
        return self.persist_dir / f"{safe_pin_stem(anchor_id)}.json"

    # -- session files ---------------------------------------------------------
    def list_sessions(self) -> list[SessionFileInfo]:
        """Every session file (``memlock/*.json``, not ``persist/``, not temp files), newest first.

        The session id comes from inside each file; an unparsable file is listed with
        ``error`` set and its stem as id. When two files carry the same session id (old and
        new naming) only the more recently modified one is listed. No ``memlock/`` directory
        means no sessions.

        Raises:
            UnreadableFile: ``memlock/`` exists but cannot be listed (not a directory, no
                permission): "no sessions" would be a wrong answer.
        """
        try:
            names, undecodable = list_names(self.root, ".json")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise UnreadableFile(f"{self.root} cannot be listed ({exc.strerror or exc}); "
                                 "memdeck cannot see MemLock's session files") from exc
        entries = [p for p in (self.root / n for n in names) if p.is_file()]
        found: dict[str, SessionFileInfo] = {}
        for shown in undecodable:  # listed, never read: the id is the shown name (printable, valid Unicode)
            found[shown[:-5]] = SessionFileInfo(shown[:-5], self.root / shown, 0.0, NOT_UTF8_NAME)
        for p in entries:
            try:
                mtime = p.stat().st_mtime
            except OSError:
                continue
            try:
                sid = self._read_file(p, p.stem).session_id
                info = SessionFileInfo(sid, p, mtime)
            except (UnreadableFile, ValueError) as exc:
                info = SessionFileInfo(p.stem, p, mtime, str(exc))
            prev = found.get(info.session_id)
            if prev is None or (info.mtime, info.path.name) > (prev.mtime, prev.path.name):
                found[info.session_id] = info
        return sorted(found.values(), key=lambda i: (-i.mtime, i.session_id))

    def _read_file(self, path: Path, fallback_sid: str) -> SessionAnchors:
        text = read_text_strict(path)
        if text is None:
            raise FileNotFoundError(path)
        try:
            data = jsondata.loads(text)
        except json.JSONDecodeError as exc:
            raise UnreadableFile(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); refusing to touch it") from exc
        except ValueError as exc:
            raise UnreadableFile(f"{path} {exc}; refusing to touch it") from exc
        try:
            return SessionAnchors.from_dict(data, fallback_sid, path)
        except ValueError as exc:
            raise UnreadableFile(f"{path}: {exc}") from exc

    def _candidate_paths(self, session_id: str) -> list[Path]:
        paths = [self.session_path(session_id)]
        old = self.root / f"{safe_sid_v1(session_id)}.json"
        if old != paths[0]:
            paths.append(old)
        return paths

    def find_session_file(self, session_id: str) -> Path | None:
        """The existing file for ``session_id``: the newer-named or older-named file, the
        more recently modified when both exist; ``None`` when there is none."""
        existing = []
        for p in self._candidate_paths(session_id):
            try:
                existing.append((p.stat().st_mtime, p == self.session_path(session_id), p))
            except OSError:
                continue
        if not existing:
            return None
        return max(existing)[2]

    def load_session(self, session_id: str) -> SessionAnchors:
        """The session's anchors; a blank session (MemLock template) when no file exists.

        Raises:
            UnreadableFile: the file exists but is not UTF-8 JSON holding an object.
        """
        path = self.find_session_file(session_id)
        if path is None:
            return SessionAnchors(session_id=session_id)
        try:
            s = self._read_file(path, session_id)
        except FileNotFoundError:  # replaced between stat and read
            return SessionAnchors(session_id=session_id)
        if s.session_id != session_id:
            # A v1 name collision (``s/1`` and ``s.1``): the file belongs to another session.
            return SessionAnchors(session_id=session_id)
        return s

    def load_for_write(self, session_id: str) -> SessionAnchors:
        """:meth:`load_session` for a write: an unreadable file is a refusal, not a guess.

        Raises:
            Refused: code ``unreadable``, with the reader's reason.
        """
        try:
            return self.load_session(session_id)
        except UnreadableFile as exc:
            raise Refused(str(exc), "unreadable") from exc

    def update_session(self, session_id: str, mutate: Callable[[SessionAnchors], T]) -> T:
        """Locked read-modify-write of one session file, not journaled (MemLock's own bookkeeping:
        turns, drift log, audit flags; the plugin's engine). A change the journal records goes
        through :meth:`apply_change` instead (write-ahead).

        Takes ``fcntl.flock`` on ``<file>.lock`` (the newer-named file), reloads the file
        under the lock (the older-named file when only that exists), calls
        ``mutate(session)``, and writes the result atomically to the newer-named file when
        its content changed. If ``mutate`` raises (e.g. :class:`Refused`) nothing is written.

        Returns:
            whatever ``mutate`` returns.

        Raises:
            Refused: code ``unreadable`` when the existing file is not valid JSON (memdeck
                never overwrites it; MemLock itself would silently start blank); ``unwritable``
                when the directory or file cannot be written (e.g. ``memlock`` is a file, no
                permission, disk full; the file is untouched).
            LockTimeout: another writer held the lock too long.
        """
        if not session_id:
            raise Refused("a session id is required", "invalid", field="session_id")
        require_hermes_home(self.home)
        path = self.session_path(session_id)
        with writable(path), file_lock(path, self.lock_timeout):
            current = self.load_for_write(session_id)
            before = current.to_dict()
            result = mutate(current)
            after = current.to_dict()
            if after != before:
                atomic_write_text(path, dump_json(after), prefix=path.name + ".", suffix=".tmp")
            return result

    # -- write-ahead anchor changes (issue 13) --------------------------------------
    @property
    def global_lock_path(self) -> Path:
        """The file whose sidecar lock (``persist/global.lock``) serialises changes to
        ``persist/`` that touch no session file (journal rows with ``session_id`` None)."""
        return self.persist_dir / "global"

    def _lock_for(self, session_id: str | None) -> Path:
        return self.global_lock_path if session_id is None else self.session_path(session_id)

    def apply_change(self, session_id: str | None, build: Callable[[SessionAnchors | None], AnchorChange]) -> AnchorChange:
        """A crash-safe anchor change: intent, files, done (the memory archive's protocol).

        Under the session file's lock (``persist/global.lock`` when ``session_id`` is None),
        first resolves the interrupted changes under that lock (:meth:`recover_locked`), then reloads
        the session and calls ``build(session)`` (it mutates the session in place and returns
        the :class:`AnchorChange`; raising leaves everything untouched). Then:

        1. one memdeck.db transaction commits the journal row in state ``intent`` (before/after
           anchor records, ``global_before``/``global_after`` when ``persist/`` changes) and the
           archive row's intent (a new row in ``archiving``, or ``restoring``/``archiving`` for
           a state change); a locked or unusable memdeck.db refuses here, files untouched;
        2. the global copy in ``persist/`` (and its manifest) is written, then the session file;
        3. a second transaction sets the archive row's final state, marks the row ``done`` and,
           for an undo, the undone rows.

        A kill anywhere leaves an intent that the next change under the same lock resolves from
        the disk. The journal row's ``session_id`` is ``session_id`` (None: ``persist/`` alone) and
        its ``scope`` is ``"global"`` when the change covers the durable copy in ``persist/``
        (or there is no session), else ``"session"`` (``core/deck/journal.py``). A failed file write is rolled back at once the same way.

        Returns:
            the change, with ``journal_id``/``archive_id`` set (None when nothing changed).

        Raises:
            Refused: ``unreadable`` (the session file), ``unwritable``, and ``build``'s refusals.
            LockTimeout, deckdb.DeckDBError.
        """
        if session_id == "":
            raise Refused("a session id is required", "invalid", field="session_id")
        require_hermes_home(self.home)
        session_id = session_id or None
        lock = self._lock_for(session_id)
        with writable(lock), file_lock(lock, self.lock_timeout), deckdb.opened(self.home) as conn:
            self.recover_locked(session_id, conn)
            current: SessionAnchors | None = None
            before: dict[str, Any] | None = None
            if session_id:
                current = self.load_for_write(session_id)
                before = current.to_dict()
            ch = build(current)
            aid = ch.anchor_id
            after = current.to_dict() if current is not None else None
            detail: dict[str, Any] = {"anchor_id": aid, **ch.detail}
            g_change = ch.global_after is not UNCHANGED
            g_before = self.get_pin(aid) if g_change else None
            g_after = self.pin_payload(ch.global_after, g_before) if isinstance(ch.global_after, dict) else None
            if g_change and pin_content(g_before) == pin_content(g_after) and g_before is not None:
                g_change = False
            if g_change:
                detail.update(global_before=g_before, global_after=g_after)
            if after == before and not g_change and ch.archive_insert is None and ch.archive_set is None:
                return ch
            if session_id:
                row_before = record_text((before or {}).get("anchors", {}).get(aid))
                row_after = record_text((after or {}).get("anchors", {}).get(aid))
            else:
                row_before, row_after = ch.before, ch.after
            if ch.undoes:
                detail.setdefault("undoes", list(ch.undoes))
            scope = "global" if g_change or session_id is None else "session"
            with deckdb.transaction(conn):
                if ch.archive_insert is not None:
                    ins = ch.archive_insert
                    pl = ins["payload"] if isinstance(ins["payload"], dict) else {}
                    ch.archive_id = _archive.insert(conn, kind="anchor", anchor_id=aid, text=str(ins["text"]),
                                                    scope="global" if pl.get("scope") == "global" else "session",
                                                    session_id=session_id,
                                                    actor=self.actor, reason=str(ins.get("reason") or ""),
                                                    payload=ins["payload"], state="archiving")
                    detail["archive_id"] = ch.archive_id
                    detail["archive_intent"] = [ch.archive_id, None, "archived"]
                elif ch.archive_set is not None:
                    arch, frm, to = ch.archive_set
                    if not _archive.set_state(conn, int(arch), _ARCHIVE_INTERMEDIATE[to], expect=frm,
                                              keep_restored_at=True):
                        raise Refused(f"archive row #{arch} is no longer {frm}; nothing was changed", "conflict")
                    ch.archive_id = int(arch)
                    detail["archive_intent"] = [int(arch), frm, to]
                ch.journal_id = _journal.record(self.home, actor=self.actor, op=ch.op, kind="anchor", scope=scope,
                                                session_id=session_id,
                                                before=row_before, after=row_after, detail=detail, conn=conn,
                                                state="intent")
            path = self.session_path(session_id) if session_id else None
            # the bytes of every file this change may write, to put back if it cannot be journaled done
            kept = _kept_bytes([p for p in (path, self.pin_path(aid) if g_change else None,
                                             self.manifest_path if g_change else None) if p is not None])
            try:
                if g_change:
                    if g_after is None:
                        self.remove_pin(aid)
                    else:
                        self.save_pin(g_after)
                if path is not None and after != before:
                    atomic_write_text(path, dump_json(after), prefix=path.name + ".", suffix=".tmp")
                row = _journal.get(self.home, ch.journal_id, conn=conn)
                assert row is not None
                self._finish(conn, row)
            except BaseException:
                with contextlib.suppress(Exception):
                    row = _journal.get(self.home, ch.journal_id, conn=conn)
                    if row is not None and row.state == "intent" and not self._put_back(conn, row, kept):
                        self._resolve(conn, row)
                raise
            return ch

    def _put_back(self, conn: sqlite3.Connection, row: _journal.JournalRow, kept: dict[Path, bytes | None]) -> bool:
        """The change failed after its intent was committed (a file write, or the ``done`` commit:
        a full disk, a lost memdeck.db): put back every file it may have written, byte for byte
        (the manifest included, so no pin is quarantined), and roll the row back, so a failure
        reported to the caller means nothing changed (memory files do the same: ``core/fsio.py``
        ``replaced_until_committed``). False when that fails too: the row then stays an intent
        for the next change under this lock to resolve from the disk."""
        try:
            with file_lock(self.manifest_path) if self.manifest_path in kept else contextlib.nullcontext():
                for p, data in kept.items():
                    try:
                        now = read_regular_bytes(p)
                    except FileNotFoundError:
                        now = None
                    if now == data:
                        continue
                    if data is None:
                        p.unlink(missing_ok=True)
                    else:
                        atomic_write_bytes(p, data, prefix=p.name + ".", suffix=".tmp")
            self._roll_back(conn, row)
        except Exception:  # noqa: BLE001 - the intent row stays; recovery decides from the disk
            return False
        return True

    def _finish(self, conn: sqlite3.Connection, row: _journal.JournalRow) -> None:
        with deckdb.transaction(conn):
            step = row.detail.get("archive_intent")
            if step:
                arch, _frm, to = step
                _archive.set_state(conn, int(arch), to, expect=_ARCHIVE_INTERMEDIATE[to])
            _journal.mark_done(conn, [row.journal_id])
            undoes = row.detail.get("undoes") if row.op == "undo" else None
            if undoes:
                _journal.mark_undone(conn, [int(j) for j in undoes], row.journal_id)

    def _roll_back(self, conn: sqlite3.Connection, row: _journal.JournalRow) -> None:
        with deckdb.transaction(conn):
            step = row.detail.get("archive_intent")
            if step:
                arch, frm, to = step
                if frm is None:
                    _archive.delete_intent(conn, int(arch))
                else:
                    _archive.set_state(conn, int(arch), frm, expect=_ARCHIVE_INTERMEDIATE[to], keep_restored_at=True)
            _journal.discard_intents(conn, [row.journal_id])

    def _resolve(self, conn: sqlite3.Connection, row: _journal.JournalRow) -> str:
        """Resolve one ``intent`` row from the disk (its target's lock held): ``"done"`` when
        the files hold its after state, ``"rolled_back"`` when they hold its before state (a
        global copy already written is put back first: it is written before the session
        file), ``"unknown"`` otherwise (the row is kept as ``unknown``, the archive row stays in
        its intent state, which still holds the text)."""
        aid = str(row.detail.get("anchor_id") or "")
        try:
            b = json.loads(row.before) if row.before else None
            a = json.loads(row.after) if row.after else None
        except ValueError:
            b = a = {}
        if row.session_id is None:
            s_after = s_before = True
        else:
            try:
                cur = self.load_session(row.session_id).anchors.get(aid)
            except UnreadableFile:
                with deckdb.transaction(conn):
                    _journal.mark_unknown(conn, [row.journal_id])
                return "unknown"
            now = anchor_content(cur.to_dict() if cur else None)
            s_after, s_before = now == anchor_content(a), now == anchor_content(b)
        g_at_after = g_at_before = True
        has_global = "global_before" in row.detail
        if has_global:
            g_now = pin_content(self.get_pin(aid))
            g_at_after = g_now == pin_content(row.detail.get("global_after"))
            g_at_before = g_now == pin_content(row.detail.get("global_before"))
        if s_after and g_at_after:
            self._finish(conn, row)
            return "done"
        if s_before and (g_at_before or g_at_after):
            if not g_at_before:
                g_before = row.detail.get("global_before")
                if g_before is None:
                    self.remove_pin(aid)
                else:
                    self.save_pin(g_before)
            self._roll_back(conn, row)
            return "rolled_back"
        with deckdb.transaction(conn):
            _journal.mark_unknown(conn, [row.journal_id])
        return "unknown"

    def recover_locked(self, session_id: str | None, conn: sqlite3.Connection) -> int:
        """Resolve the interrupted anchor changes of session ``session_id`` (None: the changes to
        ``persist/`` alone; its lock must be held), newest first so each row sees the state its
        change left. Returns how many rows were resolved."""
        rows = [r for r in _journal.intents(self.home, "anchor", conn=conn) if r.session_id == session_id]
        for r in reversed(rows):
            self._resolve(conn, r)
        return len(rows)

    def recover_intents(self) -> int:
        """Resolve every interrupted anchor change in this home, each under its session's lock
        (``persist/global.lock`` for changes to ``persist/`` alone): what the next change under
        that lock does first."""
        if not deckdb.db_path(self.home).exists():
            return 0
        sessions = {r.session_id for r in _journal.intents(self.home, "anchor")}
        done = 0
        for sid in sorted(sessions, key=lambda x: (x is not None, x or "")):
            lock = self._lock_for(sid)
            with writable(lock), file_lock(lock, self.lock_timeout), deckdb.opened(self.home) as conn:
                done += self.recover_locked(sid, conn)
        return done

    # -- global pins (persist/) -------------------------------------------------
    def _pin_files(self) -> list[Path]:
        """``persist/*.json`` but the manifest, sorted (names that are not UTF-8 skipped:
        :func:`core.fsio.list_names`). Raises OSError when ``persist/`` cannot be listed."""
        names, _bad = list_names(self.persist_dir, ".json")
        return [self.persist_dir / n for n in names if n != MANIFEST_NAME]

    def _undecodable_pins(self) -> list[str]:
        try:
            return list_names(self.persist_dir, ".json")[1]
        except OSError:
            return []

    def _read_manifest(self) -> dict[str, dict[str, Any]] | None:
        try:
            raw = jsondata.loads(read_regular_bytes(self.manifest_path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None
        pins = raw.get("pins") if isinstance(raw, dict) else None
        if not isinstance(pins, dict):
            return None
        return {str(k): v for k, v in pins.items() if isinstance(v, dict)}

    def load_pins_report(self) -> PinsReport:
        """Read ``persist/*.json`` as MemLock >= 0.5 ``load_pins`` does.

        Files in sorted order, ``manifest.json`` skipped; a file whose sha256 differs from
        its manifest entry is *quarantined* (not loaded); a missing or unreadable manifest
        means every file is trusted (bootstrap); a file that is not JSON or lacks ``id`` /
        ``text`` is skipped.
        """
        pins: list[dict[str, Any]] = []
        quarantined: list[str] = []
        skipped: dict[str, str] = {}
        try:
            files = self._pin_files()
        except OSError:
            return PinsReport([], [], {})
        skipped.update({shown[:-5]: NOT_UTF8_NAME for shown in self._undecodable_pins()})
        baseline = self._read_manifest()
        for f in files:
            try:
                raw = read_regular_bytes(f)
            except OSError as exc:
                skipped[f.stem] = f"unreadable: {exc.strerror or exc}"
                continue
            if baseline is not None and f.stem in baseline:
                if hashlib.sha256(raw).hexdigest() != baseline[f.stem].get("sha256", ""):
                    quarantined.append(f.stem)
                    continue
            try:
                data = jsondata.loads(raw)
            except ValueError as exc:
                skipped[f.stem] = f"not valid JSON: {exc}"
                continue
            if not isinstance(data, dict) or not data.get("id") or not data.get("text"):
                skipped[f.stem] = "missing id or text"
                continue
            pins.append(data)
        return PinsReport(pins, quarantined, skipped)

    def load_pins(self) -> list[dict[str, Any]]:
        """The valid, non-quarantined global-pin records (see :meth:`load_pins_report`)."""
        return self.load_pins_report().pins

    def global_ids(self) -> set[str]:
        """Ids of pins stored in ``persist/`` with ``scope: global``."""
        return {str(p["id"]) for p in self.load_pins() if p.get("scope") == "global"}

    def _write_manifest_locked(self, fresh_stems: set[str]) -> None:
        """Rewrite the manifest (caller holds the manifest lock), honouring MemLock 694ec32:

        * M1 merge: starts from the on-disk entries; files gone are dropped;
        * M2: a file that cannot be read is dropped, never recorded with a zero hash;
        * M3: a file whose bytes no longer match its entry (quarantined) keeps its *old*
          entry, so tampered bytes are never re-baselined - unless memdeck itself just
          wrote it (``fresh_stems``).
        """
        existing = self._read_manifest()
        pins: dict[str, dict[str, Any]] = {}
        for f in self._pin_files():
            try:
                raw = read_regular_bytes(f)
            except OSError:
                continue  # M2
            entry = {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
            if existing is not None and f.stem in existing and f.stem not in fresh_stems:
                old = existing[f.stem]
                if old.get("sha256") != entry["sha256"]:
                    pins[f.stem] = old  # M3
                    continue
            pins[f.stem] = entry
        manifest = {"version": MANIFEST_VERSION, "generated_at": time.time(), "pins": pins}
        atomic_write_text(self.manifest_path, dump_json(manifest), prefix=MANIFEST_NAME + ".", suffix=".tmp")

    def save_pin(self, record: dict[str, Any]) -> Path:
        """Write one global pin file (MemLock ``FileStore.save_pin`` payload, unknown keys of an
        existing file kept) and update the manifest, under the manifest's sidecar lock.

        ``record`` needs ``id`` and ``text``; ``reminder`` defaults to ``text[:120]``,
        ``priority`` 50, ``probes`` [], ``scope`` ``"global"``, ``pinned_at`` now.

        Raises:
            Refused: ``unwritable`` when ``persist/`` cannot be written (nothing changed).
            LockTimeout: the manifest lock was held too long.
        """
        require_hermes_home(self.home)
        path = self.pin_path(str(record["id"]))
        with writable(path), file_lock(self.manifest_path):
            prior: dict[str, Any] = {}
            try:
                loaded = jsondata.loads(read_regular_bytes(path))
                if isinstance(loaded, dict):
                    prior = loaded
            except (OSError, ValueError):
                prior = {}
            payload = self.pin_payload(record, prior)
            atomic_write_text(path, dump_json(payload), prefix=path.name + ".", suffix=".tmp")
            self._write_manifest_locked({path.stem})
        return path

    @staticmethod
    def pin_payload(record: dict[str, Any], prior: dict[str, Any] | None = None) -> dict[str, Any]:
        """The record :meth:`save_pin` writes for ``record`` over the file's ``prior`` content
        (MemLock ``FileStore.save_pin`` keys; unknown keys of ``prior`` kept)."""
        aid = str(record["id"])
        if aid.strip().lower() == "manifest":
            aid = "manifest_pin"
        text = str(record["text"])
        payload: dict[str, Any] = {
            "id": aid,
            "text": text,
            "reminder": record.get("reminder", text[:120]),
            "priority": record.get("priority", 50),
            "probes": list(record.get("probes", [])),
            "pinned": True,
            "scope": record.get("scope", "global"),
            "pinned_at": record.get("pinned_at", time.time()),
        }
        for k, v in (prior or {}).items():
            payload.setdefault(k, v)
        return payload

    def remove_pin(self, anchor_id: str) -> bool:
        """Delete a global pin file and drop it from the manifest. Returns whether it existed.

        Raises:
            Refused: ``unwritable`` when the file cannot be removed.
        """
        path = self.pin_path(anchor_id)
        if not self.persist_dir.is_dir():
            return False
        with writable(path), file_lock(self.manifest_path):
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            self._write_manifest_locked(set())
        return True

    # -- operations --------------------------------------------------------------
    def get_pin(self, anchor_id: str) -> dict[str, Any] | None:
        """The raw record of global pin ``anchor_id`` in ``persist/`` (None when absent or unreadable)."""
        try:
            data = jsondata.loads(read_regular_bytes(self.pin_path(anchor_id)))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    # -- listing ----------------------------------------------------------------
    def all_anchors(self, session_id: str | None = None) -> list[tuple[str, Anchor]]:
        """``(session_id, anchor)`` for one session or every session file, sorted MemLock's way."""
        sids = [session_id] if session_id else [i.session_id for i in self.list_sessions() if i.error is None]
        out: list[tuple[str, Anchor]] = []
        for sid in sids:
            try:
                s = self.load_session(sid)
            except UnreadableFile:
                continue
            out.extend((sid, a) for a in s.sorted_anchors())
        return out




def _kept_bytes(paths: list[Path]) -> dict[Path, bytes | None]:
    """``path -> its bytes`` (None: absent) of each of ``paths``; a file that cannot be read is
    not kept (it is then never put back)."""
    out: dict[Path, bytes | None] = {}
    for p in paths:
        try:
            out[p] = read_regular_bytes(p)
        except FileNotFoundError:
            out[p] = None
        except OSError:
            continue
    return out


def default_session_id(store: AnchorFiles, live_session_id: str | None = None) -> str | None:
    """The session commands act on: the live session from state.db when given, else the most
    recently modified MemLock session file, else ``None``."""
    if live_session_id:
        return live_session_id
    for info in store.list_sessions():
        if info.error is None:
            return info.session_id
    return None


def environment_root(env: dict[str, str] | None = None) -> Path:
    """MemLock's own root resolution (>= 0.5): ``HERMES_HOME``, ``MEMLOCK_HOME``, then ``~/.memlock``."""
    env = dict(os.environ) if env is None else env
    for var in ("HERMES_HOME", "MEMLOCK_HOME"):
        val = env.get(var, "").strip()
        if val:
            return Path(val).expanduser()
    return Path.home() / ".memlock"


