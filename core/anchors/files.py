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
from pathlib import Path
from typing import Any, TypeVar

from ..deck import db as deckdb
from ..config import Config, MemlockConfig, load_config
from ..errors import Refused, UnreadableFile
from ..fsio import DEFAULT_LOCK_TIMEOUT, atomic_write_text, file_lock, read_regular_bytes, read_text_strict
from ..home import HermesHome, require_hermes_home
from .model import Anchor, PinsReport, SessionAnchors, SessionFileInfo, dump_json

T = TypeVar("T")

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1


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
    """Read and write MemLock's anchor files (the file layer of :class:`.store.AnchorStore`) under ``<home>/memlock``.

    Args:
        home: a :class:`HermesHome` or the home directory.
        config: the home's :class:`Config` (loaded when None); ``memlock.max_pins`` is enforced.
        actor: who writes (``"cli"``, ``"tui"``, ``"plugin"``), recorded in the journal.
    """

    def __init__(self, home: HermesHome | Path | str, config: Config | None = None, actor: str = "cli",
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.home = home if isinstance(home, HermesHome) else HermesHome(Path(home))
        self.config = config if config is not None else load_config(self.home)
        self.actor = actor
        #: seconds a write waits for a session file's lock before ``LockTimeout``
        self.lock_timeout = float(lock_timeout)

    # -- paths ---------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.home.memlock_dir

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
        new naming) only the more recently modified one is listed.
        """
        try:
            entries = [p for p in self.root.glob("*.json") if p.is_file()]
        except OSError:
            return []
        found: dict[str, SessionFileInfo] = {}
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
            data = json.loads(text)
        except ValueError as exc:
            raise UnreadableFile(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); refusing to touch it") from exc
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

    def update_session(self, session_id: str, mutate: Callable[[SessionAnchors], T], *,
                       after_write: Callable[[sqlite3.Connection, dict[str, Any], dict[str, Any]], Any] | None = None) -> T:
        """Locked read-modify-write of one session file.

        Takes ``fcntl.flock`` on ``<file>.lock`` (the newer-named file), reloads the file
        under the lock (the older-named file when only that exists), calls
        ``mutate(session)``, and writes the result atomically to the newer-named file when
        its content changed. If ``mutate`` raises (e.g. :class:`Refused`) nothing is written.

        ``after_write(conn, before, after)`` (the file's dicts before and after) runs after the
        write, still under the lock, with a connection to memdeck.db opened *before* the write
        (so an unusable memdeck.db refuses with the file untouched); it records the journal row.
        It is not called when nothing changed.

        Returns:
            whatever ``mutate`` returns.

        Raises:
            Refused: code ``unreadable`` when the existing file is not valid JSON (memdeck
                never overwrites it; MemLock itself would silently start blank); ``unwritable``
                when the directory or file cannot be written (e.g. ``memlock`` is a file, no
                permission, disk full; the file is untouched).
            LockTimeout: another writer held the lock too long.
            deckdb.DeckDBError: memdeck.db is unusable (only with ``after_write``).
        """
        if not session_id:
            raise Refused("a session id is required", "invalid", field="session_id")
        require_hermes_home(self.home)
        path = self.session_path(session_id)
        with writable(path), file_lock(path, self.lock_timeout):
            try:
                current = self.load_session(session_id)
            except UnreadableFile as exc:
                raise Refused(str(exc), "unreadable") from exc
            before = current.to_dict()
            result = mutate(current)
            after = current.to_dict()
            if after == before:
                return result
            if after_write is None:
                atomic_write_text(path, dump_json(after), prefix=path.name + ".", suffix=".tmp")
                return result
            with deckdb.opened(self.home) as conn:
                atomic_write_text(path, dump_json(after), prefix=path.name + ".", suffix=".tmp")
                after_write(conn, before, after)
            return result

    # -- global pins (persist/) -------------------------------------------------
    def _read_manifest(self) -> dict[str, dict[str, Any]] | None:
        try:
            raw = json.loads(read_regular_bytes(self.manifest_path).decode("utf-8"))
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
            files = sorted(p for p in self.persist_dir.glob("*.json") if p.name != MANIFEST_NAME)
        except OSError:
            return PinsReport([], [], {})
        baseline = self._read_manifest()
        for f in files:
            try:
                raw = read_regular_bytes(f)
            except OSError as exc:
                skipped[f.stem] = f"unreadable: {exc.strerror}"
                continue
            if baseline is not None and f.stem in baseline:
                if hashlib.sha256(raw).hexdigest() != baseline[f.stem].get("sha256", ""):
                    quarantined.append(f.stem)
                    continue
            try:
                data = json.loads(raw.decode("utf-8"))
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
        for f in sorted(p for p in self.persist_dir.glob("*.json") if p.name != MANIFEST_NAME):
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
        aid = str(record["id"])
        if aid.strip().lower() == "manifest":
            aid = "manifest_pin"
        path = self.pin_path(aid)
        with writable(path), file_lock(self.manifest_path):
            prior: dict[str, Any] = {}
            try:
                loaded = json.loads(read_regular_bytes(path).decode("utf-8"))
                if isinstance(loaded, dict):
                    prior = loaded
            except (OSError, ValueError):
                prior = {}
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
            for k, v in prior.items():
                payload.setdefault(k, v)
            atomic_write_text(path, dump_json(payload), prefix=path.name + ".", suffix=".tmp")
            self._write_manifest_locked({path.stem})
        return path

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
            data = json.loads(read_regular_bytes(self.pin_path(anchor_id)).decode("utf-8"))
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


