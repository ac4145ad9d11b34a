"""MEMORY.md / USER.md: parse, serialize, read, and the locked atomic writer.

Byte- and lock-compatible with Hermes 0.19 ``tools/memory_tool.py``:

* format: entries joined by ``ENTRY_DELIMITER = "\\n§\\n"`` (:69), no header, no trailing
  newline; parsing splits on the delimiter, strips each piece, drops empties (``_read_file``
  :693-712) and de-duplicates keeping the first copy (:202-203, :315). Usage is ``len`` of the
  joined text (``_char_count`` :335-339). We read tolerantly (UTF-8 BOM, CRLF) and never write
  either.
* lock: ``fcntl.flock(LOCK_EX)`` on the sidecar ``<file>.lock`` (``_file_lock`` :253-289), via
  ``core.fsio.file_lock`` (0600, no symlink following, bounded wait -> ``LockTimeout``).
* every write reloads under the lock, runs the drift guard (``_detect_external_drift``
  :714-767: the file must round-trip and no entry may exceed the char limit; otherwise the raw
  file is copied to ``<file>.bak.<int(time)>`` and the write is refused), checks the budget and
  the threat scan, then writes the canonical form atomically (``core.fsio.atomic_write_text``).

Differences from Hermes, on purpose:

* the drift guard also protects ``add`` (Hermes skips it for add, which rewrites the file from
  its parsed entries); refusing is the safe side. ``normalize`` is the explicit repair.
* selectors: an entry id (8 hex of sha256 of the text), a unique id prefix (>= 4 hex), an
  exact whole entry, or a unique case-sensitive substring; an exact id or exact whole-entry
  match beats everything else (as newer Hermes main does); several distinct candidates ->
  ``Refused(code="ambiguous")`` listing them. ``apply_batch`` (used to replay pending writes)
  keeps Hermes 0.19's pure substring rule.
* an unreadable or invalid-UTF-8 file makes every write refuse; it is never wiped.
* write approval (``memory.write_approval``) is Hermes' gate for the *agent*; writes made
  through memdeck's CLI/TUI are direct user actions and are applied directly.

Every successful write is journaled (``core/journal.py``, ``kind="memory"``, before/after =
whole canonical file text), then stale ``.mem_*.tmp`` files are removed: all of them when the
other target's lock can be taken without waiting (Hermes only creates temps while holding a
target lock), otherwise only those older than 60 s.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..deck import archive as _archive
from ..deck import db as deckdb
from ..deck import journal
from ..config import Config, load_config
from ..errors import LockTimeout, Refused, UnreadableFile
from ..fsio import (DEFAULT_LOCK_TIMEOUT, atomic_write_bytes, atomic_write_text, cleanup_stale_temps, file_lock,
                    read_text_strict, replaced_until_committed)
from ..home import TARGETS, HermesHome, require_hermes_home
from .threats import pattern_ids, scan, scan_ids, threat_message

ENTRY_DELIMITER = "\n§\n"
ID_LEN = 8
MIN_PREFIX = 4
STALE_TEMP_AGE = 60.0


# ---------------------------------------------------------------------------------------
# Format


def parse_entries(raw: str | None) -> list[str]:
    """Split file text into entries exactly as Hermes 0.19 does (split, strip, drop empty, dedupe).

    ``None`` or whitespace-only text gives ``[]``.
    """
    if raw is None or not raw.strip():
        return []
    pieces = (p.strip() for p in raw.split(ENTRY_DELIMITER))
    return list(dict.fromkeys(p for p in pieces if p))


def serialize_entries(entries: Sequence[str]) -> str:
    """The canonical file text: entries joined by ``"\\n§\\n"``; ``""`` for no entries."""
    return ENTRY_DELIMITER.join(entries) if entries else ""


def usage_chars(entries: Sequence[str]) -> int:
    """Hermes' usage: ``len`` of the joined entries (delimiters count), in chars."""
    return len(serialize_entries(entries))


def usage_pct(chars: int, limit: int) -> int:
    """Percent 0-100 as Hermes shows it: ``min(100, int(chars / limit * 100))``."""
    return min(100, int((chars / limit) * 100)) if limit > 0 else 0


def drift_reason(raw: str | None, limit: int) -> str | None:
    """Why Hermes' drift guard would refuse to rewrite this file, or None.

    Matches Hermes 0.19 ``_detect_external_drift`` (:714-767): the stripped text must equal the
    join of its stripped non-empty pieces (no dedupe here), and no piece may exceed ``limit``.
    """
    if raw is None or not raw.strip():
        return None
    pieces = [p.strip() for p in raw.split(ENTRY_DELIMITER) if p.strip()]
    if raw.strip() != ENTRY_DELIMITER.join(pieces):
        return "the file does not round-trip (extra blank lines or whitespace around § delimiters)"
    longest = max((len(p) for p in pieces), default=0)
    if longest > limit:
        return f"an entry is {longest:,} chars, longer than the whole {limit:,}-char limit (text added outside the memory tool?)"
    return None


def entry_id(text: str) -> str:
    """Stable id of an entry: the first 8 hex digits of sha256 of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LEN]


def archive_candidates(entries: Sequence[str], need: int) -> list[tuple[str, int, str]]:
    """Entries whose archiving frees at least ``need`` chars: the fewest, largest first.

    Each removal frees the entry's length plus its ``"\n§\n"`` delimiter (3 chars) while
    another entry remains. Returns ``[(entry id, chars, text)]``; all entries when even that
    is not enough; ``[]`` when ``need <= 0``.
    """
    if need <= 0:
        return []
    out: list[tuple[str, int, str]] = []
    freed = 0
    ordered = sorted((e for e in entries if e), key=len, reverse=True)
    for n, e in enumerate(ordered, 1):
        out.append((entry_id(e), len(e), e))
        freed += len(e) + (len(ENTRY_DELIMITER) if n < len(ordered) else 0)
        if freed >= need:
            break
    return out


@dataclass(frozen=True)
class Entry:
    """One entry. ``chars`` is ``len(text)``; ``threats`` are pattern ids (``core.threats``);
    ``scanned`` is False when the threat scan did not reach it (:data:`SCAN_BUDGET_CHARS`)."""

    id: str
    text: str
    chars: int
    threats: tuple[str, ...] = ()
    index: int = 0
    scanned: bool = True

    @classmethod
    def of(cls, text: str, index: int = 0, *, scan: bool = True) -> "Entry":
        return cls(entry_id(text), text, len(text), scan_ids(text) if scan else (), index, scan)

    def to_dict(self) -> dict[str, Any]:
        d = {"id": self.id, "text": self.text, "chars": self.chars, "threats": list(self.threats)}
        if not self.scanned:
            d["scanned"] = False
        return d


@dataclass(frozen=True)
class MemoryFileState:
    """What a reader sees in one memory file (never raises to build).

    Attributes:
        target: ``"memory"`` or ``"user"``; path: the file.
        exists: the file exists. entries: parsed entries (empty when unreadable).
        chars: usage in chars; limit: char limit; pct: percent 0-100 (Hermes' rounding).
        drift: :func:`drift_reason` or None. error: why the file is unreadable, or None.
        mtime: epoch seconds of the file, or None.
    """

    target: str
    path: Path
    exists: bool
    entries: tuple[Entry, ...]
    chars: int
    limit: int
    pct: int
    drift: str | None = None
    error: str | None = None
    mtime: float | None = None

    @property
    def usage(self) -> str:
        return f"{self.chars:,}/{self.limit:,}"

    @property
    def unscanned(self) -> int:
        """How many entries the threat scan did not reach (a file far over its limit)."""
        return sum(1 for e in self.entries if not e.scanned)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "path": str(self.path), "exists": self.exists, "chars": self.chars,
            "limit": self.limit, "pct": self.pct, "drift": self.drift, "error": self.error,
            "entries": [e.to_dict() for e in self.entries], "unscanned": self.unscanned,
        }


#: The most entry text, in chars, one read threat-scans (about a hundred full MEMORY.md files).
#: A file far over its char limit (a 50 MB MEMORY.md) is read whole, but only its first entries
#: are scanned, and every entry past the budget says so (``Entry.scanned``): reading it never
#: takes tens of seconds (issue 13 #4).
SCAN_BUDGET_CHARS = 256 * 1024


def _entries_of(texts: Sequence[str]) -> tuple[Entry, ...]:
    out, used = [], 0
    for i, t in enumerate(texts):
        used += len(t)
        out.append(Entry.of(t, i, scan=used <= SCAN_BUDGET_CHARS))
    return tuple(out)


def read_memory(home: HermesHome, config: Config | None, target: str) -> MemoryFileState:
    """Read one target without locking (writes are atomic renames). Never raises.

    Args:
        home: the Hermes home; config: its config (None -> loaded); target: memory|user.
    """
    config = config or load_config(home)
    limit = config.char_limit(target)
    path = home.memory_file(target)
    try:
        raw = read_text_strict(path)
    except UnreadableFile as exc:
        return MemoryFileState(target, path, True, (), 0, limit, 0, None, str(exc), None)
    if raw is None:
        return MemoryFileState(target, path, False, (), 0, limit, 0)
    texts = parse_entries(raw)
    chars = usage_chars(texts)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = None
    return MemoryFileState(target, path, True, _entries_of(texts), chars, limit, usage_pct(chars, limit),
                           drift_reason(raw, limit), None, mtime)


# ---------------------------------------------------------------------------------------
# Selection


def _preview(text: str, width: int = 80) -> str:
    return text[:width] + ("..." if len(text) > width else "")


def _candidates(entries: Sequence[str], idxs: Sequence[int]) -> list[dict[str, Any]]:
    return [{"id": entry_id(entries[i]), "preview": _preview(entries[i]), "chars": len(entries[i])} for i in idxs]


def find_entry(entries: Sequence[str], selector: str, *, target: str = "") -> int:
    """Index of the entry ``selector`` designates (memdeck's selector rule, module docstring).

    Raises:
        Refused: ``empty`` (blank selector), ``no_match`` (with ``current_entries``),
            ``ambiguous`` (with ``candidates``: id, preview, chars).
    """
    sel = (selector or "").strip()
    if not sel:
        raise Refused("the entry selector is empty: give an id, an id prefix or part of the entry's text", code="empty")
    ids = [entry_id(e) for e in entries]
    low = sel.lower()
    hexlike = all(c in "0123456789abcdef" for c in low)
    if hexlike and len(low) == ID_LEN and low in ids:
        return ids.index(low)
    if sel in entries:
        return list(entries).index(sel)
    hits: list[int] = []
    if hexlike and len(low) >= MIN_PREFIX:
        hits.extend(i for i, eid in enumerate(ids) if eid.startswith(low))
    hits.extend(i for i, e in enumerate(entries) if sel in e and i not in hits)
    where = f" in {target}" if target else ""
    if not hits:
        raise Refused(f"no entry{where} matches {_preview(sel, 60)!r} (by id, id prefix or text)", code="no_match",
                      current_entries=[e.to_dict() for e in _entries_of(entries)])
    if len(hits) > 1:
        raise Refused(f"{len(hits)} entries{where} match {_preview(sel, 60)!r}; give the id of the one you mean",
                      code="ambiguous", candidates=_candidates(entries, sorted(hits)))
    return hits[0]


def _hermes_match(entries: Sequence[str], old_text: str) -> int | str:
    """Hermes 0.19 replace/remove matching: substring; identical duplicates -> first; else error text."""
    matches = [i for i, e in enumerate(entries) if old_text in e]
    if not matches:
        return f"no entry matched '{old_text}'."
    if len({entries[i] for i in matches}) > 1:
        return f"'{old_text}' matched multiple distinct entries -- be more specific."
    return matches[0]


# ---------------------------------------------------------------------------------------
# Results


@dataclass
class WriteResult:
    """The outcome of a successful (or no-op) write.

    Attributes:
        op: the operation; target: the file written (for ``move``: the destination).
        message: one human sentence (Hermes' wording where one exists).
        changed: False for a no-op (e.g. adding an entry that already exists).
        entries: the target's entries after the write; chars/limit: usage after, in chars.
        entry_id: the entry concerned (new id for add/replace/edit/move), if any.
        journal_id: the journal row (last row for multi-file operations), if written.
        archive_id: for archive/restore. backup: a ``.bak`` path written by ``normalize``.
        details: anything else (e.g. ``source`` for ``move``).
    """

    op: str
    target: str
    message: str
    changed: bool = True
    entries: tuple[Entry, ...] = ()
    chars: int = 0
    limit: int = 0
    entry_id: str | None = None
    journal_id: int | None = None
    archive_id: int | None = None
    backup: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def usage(self) -> str:
        return f"{self.chars:,}/{self.limit:,}"

    @property
    def success(self) -> bool:
        return True

    def get(self, key: str, default: Any = None) -> Any:
        """dict-style access (``result.get("message")``) for callers that treat results as dicts."""
        return self.to_dict().get(key, default)

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": True, "op": self.op, "target": self.target, "message": self.message, "changed": self.changed,
            "usage": self.usage, "chars": self.chars, "limit": self.limit, "entry_id": self.entry_id,
            "journal_id": self.journal_id, "archive_id": self.archive_id, "backup": self.backup,
            "entry_count": len(self.entries), "details": self.details,
        }


# ---------------------------------------------------------------------------------------
# The store


def _scan_or_refuse(text: str, what: str = "") -> None:
    findings = scan(text)
    if findings:
        msg = threat_message(findings) or "Blocked."
        raise Refused(f"{what}{msg}", code="threat", findings=[f.to_dict() for f in findings],
                      threats=pattern_ids(findings))


def _overflow(target: str, entries: Sequence[str], new_total: int, limit: int, what: str) -> Refused:
    cur = usage_chars(entries)
    return Refused(
        f"{what} would put {target} at {new_total:,}/{limit:,} chars, over the limit. Nothing was dropped: "
        "archive, remove or shorten entries first.",
        code="overflow", current_entries=[e.to_dict() for e in _entries_of(entries)], usage=f"{cur:,}/{limit:,}",
        would_be=new_total, limit=limit,
    )


class MemoryStore:
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
            yield

    def _load(self, target: str, *, drift_check: bool = True) -> tuple[str | None, list[str]]:
        """Read ``target`` under its lock: (raw text or None, entries). Refuses unreadable/drift."""
        path = self.path(target)
        try:
            raw = read_text_strict(path)
        except UnreadableFile as exc:
            raise Refused(f"{exc}. Nothing was written; fix or move the file first.", code="unreadable") from exc
        if drift_check:
            reason = drift_reason(raw, self.limit(target))
            if reason:
                bak = self._backup(path)
                raise Refused(
                    f"Refusing to write {path.name}: {reason}. A snapshot was saved to {bak}. "
                    f"Run `memdeck memory normalize --target {target}` to rewrite it in the canonical form, "
                    "or fix it by hand.", code="drift", drift_backup=bak, drift=reason)
        return raw, parse_entries(raw)

    @staticmethod
    def _backup(path: Path) -> str:
        """Copy the file's raw bytes to ``<file>.bak.<int(time)>`` (Hermes' naming)."""
        bak = path.with_name(f"{path.name}.bak.{int(time.time())}")
        try:
            atomic_write_bytes(bak, path.read_bytes(), prefix=".bak_")
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

    @contextmanager
    def _replacing(self, target: str, text: str) -> Iterator[None]:
        """Replace ``target`` with ``text`` (lock held); if the block raises -- the journal's
        COMMIT failed, e.g. SQLITE_FULL -- the previous file is put back before the exception
        propagates, so a failure reported to the caller always means the file is unchanged
        (``core.fsio.replaced_until_committed``; issue 13 #3). A failed replace is
        ``Refused("unwritable")`` with nothing changed."""
        path = self.path(target)
        try:
            cm = replaced_until_committed(path, text.encode("utf-8"))
            cm.__enter__()
        except OSError as exc:
            raise Refused(f"cannot write {path.name}: {exc.strerror or exc}. Nothing was changed.",
                          code="unwritable", path=str(path)) from exc
        try:
            yield
        except BaseException as exc:
            cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        cm.__exit__(None, None, None)

    def _cleanup_temps(self, held: Sequence[str]) -> None:
        directory = self.home.memories_dir
        others = [t for t in TARGETS if t not in held]
        try:
            with ExitStack() as stack:
                for t in others:
                    stack.enter_context(file_lock(self.path(t), 0))
                cleanup_stale_temps(directory, older_than=0.0)
                cleanup_stale_temps(directory, prefix=".bak_", older_than=0.0)
        except (LockTimeout, UnreadableFile):
            cleanup_stale_temps(directory, older_than=STALE_TEMP_AGE)

    def _journal(self, conn: Any, op: str, target: str, before: str | None, after: str | None,
                 detail: dict[str, Any], txn: str | None = None) -> int:
        return journal.record(self.home, actor=self.actor, op=op, kind="memory", target=target, before=before,
                              after=after, detail={**detail, **self.journal_extra}, txn=txn, conn=conn)

    def _result(self, op: str, target: str, entries: Sequence[str], message: str, **kw: Any) -> WriteResult:
        return WriteResult(op, target, message, entries=_entries_of(entries), chars=usage_chars(entries),
                           limit=self.limit(target), **kw)

    def _commit(self, op: str, target: str, raw: str | None, old: list[str], new: list[str], message: str,
                detail: dict[str, Any], entry: str | None = None) -> WriteResult:
        """Write ``new`` (lock held), journal it, clean temps; a no-op when nothing changes.

        The journal row is inserted inside a ``BEGIN IMMEDIATE`` transaction *before* the file
        is replaced and committed after, so an unusable or locked memdeck.db refuses the write
        (``DeckDBError``) with the file untouched, and a failed file write leaves no row.
        """
        before = serialize_entries(old)
        if new == old and raw is not None and raw == before:
            return self._result(op, target, new, message, changed=False, entry_id=entry)
        after = serialize_entries(new)
        with deckdb.opened(self.home) as conn, ExitStack() as files:
            with deckdb.transaction(conn):
                jid = self._journal(conn, op, target, raw if raw is not None else None, after, detail)
                files.enter_context(self._replacing(target, after))
            # a failed COMMIT leaves the transaction above with the exception, and the ExitStack
            # then puts the file back: the file changed if and only if the row is committed
        self._cleanup_temps([target])
        return self._result(op, target, new, message, entry_id=entry, journal_id=jid)

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
            raise Refused(f"no entry in MEMORY.md or USER.md matches {_preview(selector.strip(), 60)!r}", code="no_match")
        if len(found) > 1:
            raise Refused(f"{_preview(selector.strip(), 60)!r} matches an entry in both MEMORY.md and USER.md; "
                          "give --target", code="ambiguous",
                          candidates=[{"target": t, "id": entry_id(read_memory(self.home, self.config, t).entries[i].text)} for t, i in found])
        return found[0][0]

    # -- operations ------------------------------------------------------------------------
    def add(self, target: str, text: str) -> WriteResult:
        """Append an entry (Hermes ``add`` :346-396: an exact duplicate is a successful no-op)."""
        self.path(target)
        content = self._clean(text, "Content")
        _scan_or_refuse(content)
        with self._locked(target):
            raw, entries = self._load(target)
            if content in entries:
                return self._result("add", target, entries, "Entry already exists (no duplicate added).",
                                    changed=False, entry_id=entry_id(content))
            new = entries + [content]
            total, limit = usage_chars(new), self.limit(target)
            if total > limit:
                raise _overflow(target, entries, total, limit, f"Adding this entry ({len(content):,} chars)")
            return self._commit("add", target, raw, entries, new, "Entry added.",
                                {"entry_id": entry_id(content), "text": content}, entry_id(content))

    def replace(self, target: str, selector: str, new_text: str) -> WriteResult:
        """Replace the whole entry ``selector`` designates with ``new_text``."""
        self.path(target)
        content = self._clean(new_text, "new_content")
        _scan_or_refuse(content)
        with self._locked(target):
            raw, entries = self._load(target)
            i = find_entry(entries, selector, target=target)
            return self._replace_at(target, raw, entries, i, content, "replace", "Entry replaced.")

    def edit(self, selector: str, new_text: str, target: str | None = None) -> WriteResult:
        """Rewrite an entry found by id (or selector) in ``target`` or whichever file holds it."""
        content = self._clean(new_text, "new text")
        _scan_or_refuse(content)
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
            raise _overflow(target, entries, total, limit, "This replacement")
        return self._commit(op, target, raw, entries, new, message,
                            {"old_id": entry_id(old), "old_text": old, "entry_id": entry_id(content), "text": content},
                            entry_id(content))

    def remove(self, target: str, selector: str) -> WriteResult:
        """Delete the entry ``selector`` designates."""
        self.path(target)
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
            _scan_or_refuse(text)
            new_s = ents_s[:i] + ents_s[i + 1:]
            new_d = ents_d if text in ents_d else ents_d + [text]
            total, limit = usage_chars(new_d), self.limit(to_target)
            if total > limit:
                raise _overflow(to_target, ents_d, total, limit, f"Moving this entry ({len(text):,} chars)")
            txn = uuid.uuid4().hex
            detail = {"entry_id": entry_id(text), "text": text, "from": src, "to": to_target}
            # rows first, files inside the same transaction (see _commit): a locked or broken
            # memdeck.db refuses the move before either file changes
            # (destination first, then source: never in neither); a failed source write or
            # COMMIT puts both files back (ExitStack unwinds source, then destination)
            with deckdb.opened(self.home) as conn, ExitStack() as files:
                with deckdb.transaction(conn):
                    self._journal(conn, "move", to_target, raw_d, serialize_entries(new_d), detail, txn)
                    jid = self._journal(conn, "move", src, raw_s, serialize_entries(new_s), detail, txn)
                    files.enter_context(self._replacing(to_target, serialize_entries(new_d)))
                    files.enter_context(self._replacing(src, serialize_entries(new_s)))
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
            raw, entries = self._load(target, drift_check=False)
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

    def apply_batch(self, target: str, operations: Sequence[dict[str, Any]]) -> WriteResult:
        """All-or-nothing batch with Hermes 0.19 ``apply_batch`` semantics (:507-612).

        Every add/replace content is scanned first; ops apply to a copy in order (substring
        matching, duplicate add skipped); the budget is checked on the final state only.

        Raises:
            Refused: ``empty`` (no operations), ``invalid`` (bad op, with Hermes' per-op text),
                ``no_match``/``ambiguous``, ``threat``, ``overflow``, ``drift``, ``unreadable``.
        """
        self.path(target)
        if not operations:
            raise Refused("operations list is empty.", code="empty")
        for i, op in enumerate(operations):
            op = op or {}
            if op.get("action") in {"add", "replace"} and op.get("content"):
                _scan_or_refuse(str(op["content"]), f"Operation {i + 1}: ")
        with self._locked(target):
            raw, entries = self._load(target)
            working = list(entries)
            suffix = " No operations were applied (batch is all-or-nothing)."
            for i, op in enumerate(operations):
                op = op or {}
                act = op.get("action")
                content = str(op.get("content") or "").strip()
                old_text = str(op.get("old_text") or "").strip()
                pos = f"Operation {i + 1} ({act or 'unknown'})"
                if act == "add":
                    if not content:
                        raise Refused(f"{pos}: content is required.{suffix}", code="invalid")
                    if content not in working:
                        working.append(content)
                elif act in {"replace", "remove"}:
                    if not old_text:
                        raise Refused(f"{pos}: old_text is required.{suffix}", code="invalid")
                    if act == "replace" and not content:
                        raise Refused(f"{pos}: content is required (use action='remove' to delete).{suffix}", code="invalid")
                    m = _hermes_match(working, old_text)
                    if isinstance(m, str):
                        code = "no_match" if m.startswith("no entry") else "ambiguous"
                        raise Refused(f"{pos}: {m}{suffix}", code=code,
                                      current_entries=[e.to_dict() for e in _entries_of(entries)])
                    if act == "replace":
                        working[m] = content
                    else:
                        working.pop(m)
                else:
                    raise Refused(f"{pos}: unknown action. Use add, replace, or remove.{suffix}", code="invalid")
            total, limit = usage_chars(working), self.limit(target)
            if total > limit:
                raise _overflow(target, entries, total, limit, f"After applying all {len(operations)} operations, the batch")
            return self._commit("batch", target, raw, entries, working, f"Applied {len(operations)} operation(s).",
                                {"operations": [dict(o or {}) for o in operations]})

    def hermes_single(self, action: str, target: str, content: str = "", old_text: str = "") -> WriteResult:
        """One staged write replayed like Hermes 0.19 ``apply_memory_pending`` (:1052-1070).

        add -> :meth:`add`; replace/remove use Hermes' substring rule (not memdeck selectors).
        """
        if action == "add":
            return self.add(target, content)
        if action not in {"replace", "remove"}:
            raise Refused(f"Unknown staged action '{action}'.", code="invalid")
        old = (old_text or "").strip()
        if not old:
            raise Refused("old_text cannot be empty.", code="empty")
        new_content = (content or "").strip()
        if action == "replace":
            new_content = self._clean(new_content, "new_content")
            _scan_or_refuse(new_content)
        with self._locked(target):
            raw, entries = self._load(target)
            m = _hermes_match(entries, old)
            if isinstance(m, str):
                code = "no_match" if m.startswith("no entry") else "ambiguous"
                raise Refused(m[0].upper() + m[1:], code=code, current_entries=[e.to_dict() for e in _entries_of(entries)])
            if action == "replace":
                return self._replace_at(target, raw, entries, m, new_content, "replace", "Entry replaced.")
            gone = entries[m]
            return self._commit("remove", target, raw, entries, entries[:m] + entries[m + 1:], "Entry removed.",
                                {"entry_id": entry_id(gone), "text": gone}, entry_id(gone))

    def revert_entry(self, target: str, *, remove: str | None, add: str | None,
                     detail: dict[str, Any] | None = None) -> WriteResult:
        """Reverse one recorded change of ``target``: take out ``remove`` and put back ``add``.

        Used by ``core/history.py`` (``revert``): for a removal ``remove=None, add=<old entry>``
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
            _scan_or_refuse(add, "The entry to put back is blocked: ")
        with self._locked(target):
            raw, entries = self._load(target)
            if add and add in entries:
                raise Refused(f"cannot revert: {target} already holds {_preview(add, 60)!r} again. Nothing was changed.",
                              code="conflict", current_entries=[e.to_dict() for e in _entries_of(entries)])
            if remove and remove not in entries:
                raise Refused(f"cannot revert: {target} no longer holds {_preview(remove, 60)!r} (changed since). "
                              "Nothing was changed.", code="conflict",
                              current_entries=[e.to_dict() for e in _entries_of(entries)])
            new = list(entries)
            if remove and add:
                new[new.index(remove)] = add
            elif remove:
                new.remove(remove)
            else:
                new.append(add)  # type: ignore[arg-type]
            total, limit = usage_chars(new), self.limit(target)
            if total > limit:
                raise _overflow(target, entries, total, limit, f"Putting back this entry ({len(add or ''):,} chars)")
            d = {"removed_text": remove, "text": add, "entry_id": entry_id(add) if add else None, **(detail or {})}
            return self._commit("revert", target, raw, entries, new, "Change reverted.", d,
                                entry_id(add) if add else None)

    def replay_pinned(self, payload: dict[str, Any]) -> WriteResult:
        """Apply a pinned pending write (Hermes 0.22 ``patch`` / ``matched_entry``) under the lock.

        The new entries come from :func:`.staged.compute` (0.22 ``apply_memory_pending``
        semantics); the file is written as ``"\n§\n".join(entries)`` like 0.22
        ``_write_file``. The drift guard is 0.22's (``tools/memory_tool_store.py:685-700``): only
        an entry longer than the whole limit refuses (a ``.bak.<ts>`` snapshot is kept).

        Raises:
            Refused: every refusal of :func:`.staged.compute`, plus ``drift``/``unreadable``.
        """
        from . import staged

        target = str(payload.get("target") or "memory")
        self.path(target)
        with self._locked(target):
            raw, entries = self._load(target, drift_check=False)
            limit = self.limit(target)
            longest = max((len(e) for e in entries), default=0)
            if longest > limit and payload.get("action") != "add":
                bak = self._backup(self.path(target))
                raise Refused(f"Refusing to write {self.path(target).name}: it holds an entry of {longest:,} chars, "
                              f"larger than the whole {limit:,}-char limit. A snapshot was saved to {bak}.",
                              code="drift", drift_backup=bak)
            new, message, op = staged.compute(payload, entries, limit)
            if new == entries:
                return self._result(op, target, new, message, changed=False)
            with deckdb.opened(self.home) as conn, deckdb.transaction(conn):
                jid = self._journal(conn, op, target, raw, serialize_entries(new),
                                    {"payload": dict(payload), "semantics": "hermes-0.22"})
                self._write(target, new)
            self._cleanup_temps([target])
            return self._result(op, target, new, message, journal_id=jid)

    # -- archive / restore -------------------------------------------------------------------
    def archive(self, target: str | None, selector: str, reason: str = "") -> WriteResult:
        """Move an entry out of its file into memdeck.db (crash-safe; see ``core/archive.py``).

        Returns a result whose ``archive_id`` names the archive row.
        """
        target = self._locate(selector, target)
        with self._locked(target):
            with deckdb.opened(self.home) as conn:
                self._recover_locked(target, conn)
                raw, entries = self._load(target)
                i = find_entry(entries, selector, target=target)
                text = entries[i]
                with deckdb.transaction(conn):
                    aid = _archive.insert(conn, kind="memory", target=target, text=text, actor=self.actor,
                                          reason=reason, payload={"entry_id": entry_id(text)}, state="archiving")
                new = entries[:i] + entries[i + 1:]
                after = serialize_entries(new)
                # a failed second COMMIT puts the file back; the "archiving" intent then holds
                # text still in the file, which recovery deletes (nothing archived)
                with self._replacing(target, after), deckdb.transaction(conn):
                    _archive.set_state(conn, aid, "archived", expect="archiving")
                    jid = self._journal(conn, "archive", target, raw, after,
                                        {"archive_id": aid, "entry_id": entry_id(text), "text": text, "reason": reason})
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
                _scan_or_refuse(text)
                new = entries + [text]
                total, limit = usage_chars(new), self.limit(target)
                if total > limit:
                    raise _overflow(target, entries, total, limit, f"Restoring this entry ({len(text):,} chars)")
                with deckdb.transaction(conn):
                    _archive.set_state(conn, cur.archive_id, "restoring", expect="archived")
                after = serialize_entries(new)
                # a failed second COMMIT puts the file back; recovery turns "restoring" with the
                # text absent back into "archived"
                with self._replacing(target, after), deckdb.transaction(conn):
                    _archive.set_state(conn, cur.archive_id, "restored", expect="restoring")
                    jid = self._journal(conn, "restore", target, raw, after,
                                        {"archive_id": cur.archive_id, "entry_id": entry_id(text), "text": text})
            self._cleanup_temps([target])
            return self._result("restore", target, new, f"Entry restored from archive #{cur.archive_id}.",
                                entry_id=entry_id(text), journal_id=jid, archive_id=cur.archive_id)

    def _recover_locked(self, target: str, conn: Any) -> int:
        """Resolve ``target``'s interrupted archive/restore intents (its lock must be held)."""
        intents = [i for i in _archive.pending_intents(self.home, "memory", conn=conn) if i.target == target]
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

    # -- undo ----------------------------------------------------------------------------------
    def undo_rows(self, rows: Sequence[journal.JournalEntry]) -> WriteResult:
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
                _raw, ents = self._load(r.target, drift_check=False)
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
            plans: list[tuple[journal.JournalEntry, list[str]]] = []
            for r in rows:
                before = parse_entries(r.before)
                added = [e for e in before if e not in current[r.target]]
                for e in added:
                    _scan_or_refuse(e)
                total, limit = usage_chars(before), self.limit(r.target)
                if total > limit:
                    raise _overflow(r.target, current[r.target], total, limit, "Undoing this change")
                plans.append((r, before))
            # files that gain an entry are written before files that lose one, so an undo of a
            # move killed between its writes leaves the entry in both files, never in neither
            # (issue 13 #2); a second undo finishes it (see above)
            plans.sort(key=lambda p: 0 if set(p[1]) - set(current[p[0].target]) else 1)
            with deckdb.opened(self.home) as conn:
                arch = [(r, r.detail.get("archive_id")) for r in rows if r.op in {"archive", "restore"}]
                with deckdb.transaction(conn):
                    for r, aid in arch:
                        if aid is not None:
                            if r.op == "archive":
                                _archive.set_state(conn, int(aid), "restoring", expect="archived")
                            else:  # restored_at kept: recovery tells this intent from a new archive's
                                _archive.set_state(conn, int(aid), "archiving", expect="restored",
                                                   keep_restored_at=True)
                files = ExitStack()
                for r, before in plans:
                    # normalize kept every entry; undoing it means the original text back
                    text = r.before if r.op == "normalize" and r.before is not None else serialize_entries(before)
                    try:
                        files.enter_context(self._replacing(r.target, text))
                    except BaseException as exc:
                        files.__exit__(type(exc), exc, exc.__traceback__)
                        raise
                # a failed COMMIT below puts every file back (the ExitStack unwinds in reverse)
                with files, deckdb.transaction(conn):
                    for r, aid in arch:
                        if aid is not None:
                            if r.op == "archive":
                                _archive.set_state(conn, int(aid), "restored", expect="restoring")
                            else:
                                _archive.set_state(conn, int(aid), "archived", expect="archiving")
                    jid = 0
                    txn = uuid.uuid4().hex if len(rows) > 1 else None
                    for r, before in plans:
                        undone_text = r.before if r.op == "normalize" and r.before is not None else serialize_entries(before)
                        jid = self._journal(conn, "undo", r.target, r.after, undone_text,
                                            {"undoes": [x.journal_id for x in rows], "op": r.op}, txn)
                    journal.mark_undone(conn, [x.journal_id for x in rows], jid)
            self._cleanup_temps(targets)
            restaged = self._restage_approved(rows)
            last_t = rows[0].target
            note = f" The pending write {restaged} is staged again for review." if restaged else ""
            first_plan = next(b for r, b in plans if r.journal_id == rows[0].journal_id)
            return self._result("undo", last_t, first_plan,
                                f"Undid {rows[0].op} (journal #{rows[-1].journal_id}).{note}", journal_id=jid)

    def _restage_approved(self, rows: Sequence[journal.JournalEntry]) -> str | None:
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


def recover_intents(home: HermesHome, config: Config | None = None, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> int:
    """Resolve every interrupted memory archive/restore (each under its target's lock)."""
    intents = _archive.pending_intents(home, "memory")
    if not intents:
        return 0
    store = MemoryStore(home, config, lock_timeout=lock_timeout)
    done = 0
    for target in sorted({i.target for i in intents if i.target in TARGETS}, key=TARGETS.index):
        with store._locked(target), deckdb.opened(home) as conn:
            done += store._recover_locked(target, conn)
    return done




def scan_memory(home: HermesHome, config: Config | None = None) -> dict[str, list[dict[str, Any]]]:
    """Findings for every entry on disk: ``{target: [{"id", "text", "chars", "findings": [...]}]}``.

    Only flagged entries are listed. Never raises (unreadable files give no rows).
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for t in TARGETS:
        state = read_memory(home, config, t)
        rows = []
        for e in state.entries:
            if e.threats:
                rows.append({**e.to_dict(), "findings": [f.to_dict() for f in scan(e.text)]})
        out[t] = rows
    return out


__all__ = [
    "ENTRY_DELIMITER", "Entry", "MemoryFileState", "MemoryStore", "WriteResult", "drift_reason", "entry_id",
    "find_entry", "parse_entries", "read_memory", "recover_intents", "scan_memory", "serialize_entries",
    "usage_chars", "usage_pct",
]
