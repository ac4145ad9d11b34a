"""The live watcher: which files of a Hermes home wake the dashboard, and how it waits for them.

Hermes replaces MEMORY.md by renaming a ``.mem_XXXXXXXX.tmp`` over it and keeps ``*.lock``
sidecars; MemLock writes ``<file>.json.tmp`` then renames; SQLite touches ``-shm`` and
``-journal`` files on every read; memdeck keeps its own ``memdeck/`` directory. None of that
wakes the dashboard: only the files whose content it shows (:func:`source_of`). memdeck's own
files never do, so a refresh (which reads memdeck.db) cannot wake the next one.

On Linux the watcher blocks on inotify (``asyncinotify``: the file descriptor is registered
with the event loop, so nothing wakes while nothing changes and a change is seen at once).
Elsewhere it falls back to ``watchfiles.awatch`` with a short debounce.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncGenerator, Callable
from pathlib import Path

from .home import TARGET_FILES, HermesHome
from .memlock_home import candidate_dirs

#: Debounce of the ``watchfiles`` fallback in milliseconds (its default, 1,600 ms, feels dead).
DEBOUNCE_MS = 50
#: How often the ``watchfiles`` fallback checks for changes, in milliseconds.
STEP_MS = 50

#: How long a burst of inotify events is gathered before the watcher reports it, in seconds.
#: Only for writes in place (a SQLite commit to ``state.db-wal``, an editor saving over a file):
#: an atomic replace (``MOVED_TO``) or a closed file (``CLOSE_WRITE``) is reported at once.
BURST_S = 0.012

_pause = asyncio.sleep  # the burst timer (tests count its uses)

#: Source kinds a change can touch (what :class:`core.snapshot.SourceStamps` stamps).
SOURCES = ("memory", "config", "pending", "memlock", "statedb")
#: The kind of a write to memdeck.db (``<home>/memdeck/memdeck.db``, ``core/deck/db.py``): reported
#: only to a caller that asks (``watch_home(..., deck=True)``, ``memdeck watch``'s ``delivered``
#: events); the dashboard never wakes on memdeck's own files.
DECK = "deck"
_DECK_FILES = ("memdeck.db", "memdeck.db-wal")


def deck_source_of(home: HermesHome, path: str | Path) -> str | None:
    """:data:`DECK` for memdeck.db, its ``-wal`` or the ``memdeck/`` directory itself, else None."""
    p = Path(path)
    d = home.memdeck_dir
    return DECK if p == d or (p.parent == d and p.name in _DECK_FILES) else None

_NOISE = re.compile(
    r"""(
        ^\.mem_.*\.tmp$        # Hermes / memdeck atomic-write temp files
      | \.tmp$                 # MemLock and pending-write temp files
      | \.lock$                # sidecar locks (never deleted, touched on every write)
      | \.bak\.\d+$ | \.bak-   # Hermes drift backups, MemLock setup backups
      | -shm$ | -journal$      # SQLite shared memory / rollback journal
      | ^\.\#  | ~$ | \.swp$   # editor droppings
    )""",
    re.VERBOSE,
)

#: The names of the home directory itself that matter, and the source each one is.
HOME_NAMES = {"state.db": "statedb", "state.db-wal": "statedb", "config.yaml": "config"}
#: Sub-directories of the home that are watched, and the source their files are.
WATCHED_DIRS = {
    "memories": "memory",
    "pending": "pending",
    "pending/memory": "pending",
    "memlock": "memlock",
    "memlock/persist": "memlock",
}


def is_noise(name: str) -> bool:
    """True when a file name is write/lock/backup noise the dashboard never reacts to."""
    return bool(_NOISE.search(name))


def outside_memlock_dirs(home: HermesHome) -> tuple[Path, ...]:
    """The places outside the home where MemLock may keep its state (``~/.memlock/memlock`` or
    ``$MEMLOCK_HOME/memlock`` for the default profile; :func:`core.memlock_home.candidate_dirs`)."""
    return tuple(d for d, rule in candidate_dirs(home) if rule != "hermes_home")


def _outside_memlock_source(p: Path, dirs: tuple[Path, ...]) -> str | None:
    for d in dirs:
        if p in (d, d / "persist", d.parent):
            return "memlock"  # the directory (or its MemLock home) appeared or vanished
        if p.parent in (d, d / "persist"):
            return "memlock" if p.name.endswith(".json") else None
    return None


def source_of(home: HermesHome, path: str | Path, memlock_dirs: tuple[Path, ...] | None = None) -> str | None:
    """The source kind (one of :data:`SOURCES`) a change to ``path`` touches, or None.

    None for noise (:func:`is_noise`), for memdeck's own files (``memdeck/``), and for
    anything the dashboard does not show. A watched directory itself appearing or vanishing
    is reported as its source. ``memlock_dirs``: MemLock directories outside the home
    (default :func:`outside_memlock_dirs`); their ``*.json`` files are ``memlock``.
    """
    p = Path(path)
    try:
        rel = p.relative_to(home.path)
    except ValueError:
        if is_noise(p.name):
            return None
        return _outside_memlock_source(p, outside_memlock_dirs(home) if memlock_dirs is None else memlock_dirs)
    parts = rel.parts
    if not parts or is_noise(p.name):
        return None
    if len(parts) == 1:
        name = parts[0]
        return HOME_NAMES.get(name) or WATCHED_DIRS.get(name)
    parent = "/".join(parts[:-1])
    kind = WATCHED_DIRS.get(parent)
    if kind is None:
        return None
    if kind == "memory":
        return kind if parts[-1] in TARGET_FILES.values() else None
    if "/".join(parts) in WATCHED_DIRS:
        return kind  # pending/memory or memlock/persist appeared
    return kind if parts[-1].endswith(".json") else None


async def watch_home(home: HermesHome, on_ready: Callable[[], None] | None = None, *,
                     deck: bool = False) -> AsyncGenerator[frozenset[str], None]:
    """Yield the set of source kinds touched, once per burst of changes, for as long as awaited.

    Each yielded set holds what changed since the previous one (bursts that arrive while the
    consumer is busy are merged). Never yields an empty set. Cancel the task to stop.
    ``on_ready`` is called once the watches are armed (a change after it is seen). ``deck``: also
    report a write to memdeck.db as :data:`DECK` (a reader of memdeck.db must not pass it from a
    loop that writes memdeck.db on each wake-up).
    """
    if sys.platform.startswith("linux"):
        try:
            import asyncinotify  # noqa: F401
        except ImportError:
            pass
        else:
            async for kinds in _watch_inotify(home, on_ready, deck):
                yield kinds
            return
    async for kinds in _watch_polling(home, on_ready, deck):
        yield kinds


async def _watch_inotify(home: HermesHome, on_ready: Callable[[], None] | None = None,
                         deck: bool = False) -> AsyncGenerator[frozenset[str], None]:
    from asyncinotify import Event, Inotify, Mask

    file_mask = Mask.CLOSE_WRITE | Mask.MOVED_TO | Mask.MOVED_FROM | Mask.CREATE | Mask.DELETE | Mask.MODIFY
    watched: dict[str, object] = {}
    outside = outside_memlock_dirs(home)

    def arm(ino: Inotify) -> None:
        dirs = [home.path / rel if rel else home.path for rel in ("", *WATCHED_DIRS)]
        if deck:
            dirs.append(home.memdeck_dir)
        for d in outside:  # MemLock 0.5's ~/.memlock/memlock: its parent too, to see it created
            dirs += [d.parent, d, d / "persist"]
        for d in dirs:
            key = str(d)
            if key in watched or not d.is_dir():
                continue
            try:
                watched[key] = ino.add_watch(d, file_mask | Mask.DELETE_SELF | Mask.MOVE_SELF | Mask.ONLYDIR)
            except OSError:
                continue

    with Inotify() as ino:
        ino.sync_timeout = 0.0  # sync_get() drains what is already queued, never blocks
        arm(ino)
        if on_ready is not None:
            on_ready()
        while True:
            event: Event | None = await ino.get()
            kinds: set[str] = set()
            rearm = False
            settled = True  # every relevant event so far left a complete file (a rename, a close)
            waited = False
            while True:
                while event is not None:
                    if event.mask & (Mask.IGNORED | Mask.DELETE_SELF | Mask.MOVE_SELF) and event.watch is not None:
                        watched.pop(str(event.watch.path), None)
                        rearm = True
                    if event.path is not None:
                        kind = source_of(home, event.path, outside)
                        if kind is None and deck:
                            kind = deck_source_of(home, event.path)
                        if kind in ("statedb", DECK) and event.mask & Mask.CLOSE_WRITE:
                            # any connection, memdeck's read-only one included, opens -wal for
                            # writing and closes it: only a write (MODIFY), a create, delete or
                            # rename counts
                            kind = None
                        if kind is not None:
                            kinds.add(kind)
                            if event.mask & Mask.ISDIR:
                                rearm = True
                            if not event.mask & (Mask.MOVED_TO | Mask.CLOSE_WRITE):
                                settled = False
                    event = ino.sync_get()
                if not kinds or settled or waited:
                    break  # noise only, or an atomic replace that is complete: report at once
                # a SQLite commit (several writes to -wal) or an in-place write is a burst of
                # events within a few ms: let it land (once), so it wakes one refresh, not two
                await _pause(BURST_S)
                waited = True
                event = ino.sync_get()
            if rearm or (outside and kinds):
                arm(ino)  # a MemLock directory outside the home may have appeared since
            if kinds:
                yield frozenset(kinds)


async def _watch_polling(home: HermesHome, on_ready: Callable[[], None] | None = None,
                         deck: bool = False) -> AsyncGenerator[frozenset[str], None]:
    from watchfiles import awatch

    outside = outside_memlock_dirs(home)

    def kind_of(path: str) -> str | None:
        kind = source_of(home, path, outside)
        return deck_source_of(home, path) if kind is None and deck else kind

    def keep(_change: object, path: str) -> bool:
        return kind_of(path) is not None

    while not home.path.is_dir():
        await asyncio.sleep(1.0)  # fallback only: nothing to watch until the home exists
    if on_ready is not None:
        on_ready()  # watchfiles arms on its first step: a change right after may be merged into it
    extra = [d.parent for d in outside if d.parent.is_dir()]
    async for changes in awatch(home.path, *extra, watch_filter=keep, debounce=DEBOUNCE_MS, step=STEP_MS,
                                recursive=True, ignore_permission_denied=True):
        kinds = frozenset(k for _c, p in changes if (k := kind_of(p)) is not None)
        if kinds:
            yield kinds
