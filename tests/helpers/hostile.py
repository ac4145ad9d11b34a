"""A catalogue of hostile Hermes homes: each a small named builder the cross-cutting tests run
every command and every panel against (``tests/core/test_hostile_homes.py``,
``tests/tui/test_hostile_panels.py``).

Every home starts as a copy of one *base home* (:func:`build_base`: the seed-7 demo home plus a
memdeck.db holding a journal, an archived entry and an archived anchor, so ``undo``, ``restore 1``
and ``revert 1`` have something to act on) and one builder breaks one source in one way. The
catalogue folds in the hostile inputs the older tests covered one command at a time (FIFOs in
place of data files, tests/core/test_fifo_everywhere.py and test_fifo_data_file.py; a directory
that is not a home, test_not_a_home.py; non-finite and mistyped MemLock fields,
test_anchors_store.py; hidden characters in ids, tests/tui/test_hostile_toasts.py).

A :class:`Hostile` says which source it breaks (``source``), which panels must then show a
banner (``panels``: ``DeckSnapshot.error_for``), which files no command may change (``frozen``),
whether the home only means something without root's permission override (``unprivileged``:
a directory of mode 000 is readable by root; the runs drop the override first), and whether
another process must hold something while the commands run (``holder``: :class:`LockServer`, an
exclusive transaction on state.db). The builders find the demo's files through memdeck's own
readers (:func:`live_session_file`, :func:`pin_file`, :func:`pending_file`), never by name.

Add a home by appending one builder to :data:`HOMES`: both test modules pick it up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: lone surrogates, as ``json`` reads the escapes ``\\ud800`` and ``\\udc80`` (never valid UTF-8)
SURROGATES = "\ud800lone\udc80"
#: OSC 52 (set the clipboard), OSC 0 (window title), CSI, NUL, C1 CSI, a bidi override, NEL
CONTROLS = "\x1b]52;c;Y3VybCBldmls\x07\x1b]0;pwned\x1b\\\x1b[2J\x00\x9b31m\u202eevil\u2066\x85"

#: a hostile pending record is added under this name (the oldest: ``{pending}`` of the samples),
#: so every reader meets it new (the history's ``remember_pending`` included)
NEW_PENDING = "pending/memory/0badc0de.json"
#: a hostile MemLock session file is added under this name, without ``self_sha256`` (MemLock
#: 0.2-0.4), besides the live session file changed in place
NEW_SESSION = "memlock/hostile_session.json"
DECK_DB = "memdeck/memdeck.db"

Builder = Callable[[Path], None]
Holder = Callable[[], "LockServer"]
#: a home-relative path, or how to find it in a home (the demo's names are not hard-coded)
Rel = str | Callable[[Path], str]


def live_session_file(root: Path) -> str:
    """The MemLock session file of the home's live session (memdeck's own readers find it)."""
    from memdeck.core.anchors.files import AnchorFiles
    from memdeck.core.home import HermesHome
    from memdeck.core.sessions.statedb import StateDB

    home = HermesHome(root)
    with StateDB(home.state_db) as db:
        live = db.live_session()
    found = AnchorFiles(home).find_session_file(live.id) if live is not None else None
    if found is None:
        raise RuntimeError(f"the base home {root} has no MemLock file for a live session")
    return found.relative_to(root).as_posix()


def pin_file(root: Path) -> str:
    """The first global pin of ``memlock/persist/``."""
    names = sorted(n for n in os.listdir(root / "memlock" / "persist") if n.endswith(".json") and n != "manifest.json")
    return f"memlock/persist/{names[0]}"


def pending_file(root: Path) -> str:
    """The first pending record of the home (by name)."""
    return f"pending/memory/{sorted(os.listdir(root / 'pending' / 'memory'))[0]}"


def _rel(rel: Rel, root: Path) -> str:
    return rel if isinstance(rel, str) else rel(root)


@dataclass(frozen=True)
class Hostile:
    """One hostile home: ``build(path)`` breaks a copy of the base home in place.

    Attributes:
        name: a short id (the test id).
        build: the builder.
        source: the broken source (``memory``, ``user``, ``memlock``, ``pending``, ``config``,
            ``statedb``, ``deckdb``, ``home``).
        panels: the dashboard panels that must show a banner for it (``DeckSnapshot.error_for``).
        frozen: home-relative paths no command may change, whatever it legitimately writes
            elsewhere (memdeck must never "repair" a file it could not read).
        unprivileged: only hostile without root's DAC override (each run first drops
            ``CAP_DAC_OVERRIDE``/``CAP_DAC_READ_SEARCH``: :func:`drop_dac_override` in a forked
            child, :func:`unprivileged_prefix` for a process).
        holder: what holds a live condition while the commands run (:class:`LockServer`: another
            process with an exclusive transaction on state.db); see :func:`holding`.
    """

    name: str
    build: Builder
    source: str
    panels: tuple[str, ...] = ()
    frozen: tuple[Rel, ...] = ()
    unprivileged: bool = False
    holder: Holder | None = None

    def frozen_in(self, root: Path) -> tuple[str, ...]:
        """:attr:`frozen` as home-relative paths of the built home ``root``."""
        return tuple(_rel(f, root) for f in self.frozen)


# --------------------------------------------------------------------------- the base home


def build_base(dest: Path) -> Path:
    """The base every hostile home copies: the seed-7 demo home at ``DEMO_NOW`` plus memdeck.db
    with journal rows (an add, an archive, a pin and an anchor archive) and a change by another
    writer in the history (USER.md's last entry removed), so every writer of ``SAMPLES`` has
    something to act on. Returns ``dest``."""
    from memdeck.core.anchors.store import AnchorStore
    from memdeck.core.config import load_config
    from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home
    from memdeck.core.history import observe
    from memdeck.core.memory.store import MemoryStore

    home = build_demo_home(dest, seed=DEMO_SEED, now=DEMO_NOW)
    cfg = load_config(home)
    observe(home)
    store = MemoryStore(home, cfg, actor="cli")
    store.add("memory", "hostile-base entry: the release train leaves on Thursdays.")
    store.archive("memory", "hostile-base entry")
    anchors = AnchorStore(home, cfg, actor="cli")
    from memdeck.core.sessions.statedb import StateDB

    with StateDB(home.state_db) as db:
        sid = db.live_session().id
    pinned = anchors.pin("Hostile-base anchor: cite the ticket number.", session_id=sid)
    anchors.archive(pinned.id, sid)
    observe(home)
    # another writer removes USER.md's last entry: a change ``revert`` can put back
    from memdeck.core.memory.entries import parse_entries, serialize_entries

    user = home.memory_file("user")
    user.write_text(serialize_entries(parse_entries(user.read_text(encoding="utf-8"))[:-1]), encoding="utf-8")
    observe(home)
    return dest


# --------------------------------------------------------------------------- helpers


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def _replace_with(rel: Rel, kind: str) -> Builder:
    """Put a directory, a FIFO or a symlink to /dev/zero where the file ``rel`` was."""
    def build(root: Path) -> None:
        p = root / _rel(rel, root)
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.exists() or p.is_symlink():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        if kind == "dir":
            p.mkdir()
            (p / "inside.txt").write_text("a directory where a file belongs\n")
        elif kind == "fifo":
            os.mkfifo(p)
        elif kind == "devzero":
            os.symlink("/dev/zero", p)
        else:  # pragma: no cover
            raise ValueError(kind)
    return build


def _overwrite(rel: str, data: bytes) -> Builder:
    """Overwrite the file ``rel`` in place (same inode and mode: damage, not a new file)."""
    def build(root: Path) -> None:
        with open(root / rel, "r+b") as fh:
            fh.write(data)
            fh.truncate()
    return build


def _json_file(rel: str, data: object) -> Builder:
    def build(root: Path) -> None:
        _write(root / rel, json.dumps(data, ensure_ascii=True))
    return build


def _raw_file(rel: Rel, data: bytes | Callable[[], bytes]) -> Builder:
    def build(root: Path) -> None:
        _write(root / _rel(rel, root), data() if callable(data) else data)
    return build


def _session(root: Path) -> dict:
    return json.loads((root / live_session_file(root)).read_text(encoding="utf-8"))


def _session_fields(value: str, *, huge: bool = False) -> Builder:
    """The live MemLock session's ``session_id`` and one anchor's id, text, reminder and probes
    set to ``value`` (a second anchor keeps ordinary fields), in the live session file (changed
    in place: the history has seen it) and in a new file without ``self_sha256``."""
    def build(root: Path) -> None:
        data = _session(root)
        data.pop("self_sha256", None)
        data["session_id"] = value if not huge else "s" * 200_000
        anchors = data["anchors"]
        first_id = next(iter(anchors))
        rec = dict(anchors.pop(first_id))
        bad_id = value if not huge else "a" * 100_000
        rec.update(id=bad_id, text=value if not huge else "t" * 2_000_000,
                   reminder=value if not huge else "r" * 500_000, probes=[value, "ok"] if not huge else ["p" * 300_000])
        anchors[bad_id] = rec
        _write(root / NEW_SESSION, json.dumps(data, ensure_ascii=True))
        live = _session(root)
        live["session_id"] = data["session_id"]
        live["anchors"][bad_id] = rec
        _write(root / live_session_file(root), json.dumps(live, ensure_ascii=True))
    return build


def _memlock_name_not_utf8(root: Path) -> None:
    src = (root / live_session_file(root)).read_bytes()
    d = os.fsencode(root / "memlock")
    fd = os.open(d + b"/\xff\xfe-session.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, src)
    finally:
        os.close(fd)
    pd = os.fsencode(root / "pending" / "memory")
    fd = os.open(pd + b"/\xfe\xff.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, (root / pending_file(root)).read_bytes())
    finally:
        os.close(fd)


def _memlock_wrong_types(root: Path) -> None:
    data = _session(root)
    data.update(pinned_count=float("inf"), turn_count="many", static_anchor_ids={"a": 1}, drift_log="none",
                integrity_score=[1, 2])
    anchors = data["anchors"]
    first_id = next(iter(anchors))
    anchors[first_id].update(priority=float("nan"), probes="not a list", last_alive_turn=float("-inf"))
    anchors["garbage"] = ["not", "an", "object"]
    anchors["nested"] = {"id": {"deep": [[[]]]}, "text": {"not": "a string"}}
    (root / live_session_file(root)).write_text(json.dumps(data, allow_nan=True))


def _record(root: Path) -> dict:
    """A copy of a demo pending record, renamed to :data:`NEW_PENDING`'s id and made the oldest."""
    rec = json.loads((root / pending_file(root)).read_text(encoding="utf-8"))
    rec.update(id="0badc0de", created_at=1.0)
    return rec


def _pending(payload: object) -> Builder:
    def build(root: Path) -> None:
        rec = _record(root)
        rec["payload"] = payload
        _write(root / NEW_PENDING, json.dumps(rec))
    return build


def _pending_20mb(root: Path) -> None:
    rec = _record(root)
    rec["payload"]["content"] = "deploy " * (20 * 1024 * 1024 // 7)
    rec["summary"] = "add a 20 MB entry"
    _write(root / NEW_PENDING, json.dumps(rec))


def _deep(n: int) -> bytes:
    return b'{"id": "0badc0de", "created_at": 1.0, "payload": ' + b"[" * n + b"]" * n + b"}"


def _big_memory(root: Path) -> None:
    line = "deploy freeze on Fridays; " * 40 + "\n§\n"
    with open(root / "memories" / "MEMORY.md", "w", encoding="utf-8") as fh:
        for _ in range(50 * 1024 * 1024 // len(line) + 1):
            fh.write(line)


def _alias_bomb() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = name
    lines.append("memory:\n  memory_char_limit: *i")
    return ("\n".join(lines) + "\n").encode()


def _huge_config(root: Path) -> None:
    text = (root / "config.yaml").read_text(encoding="utf-8")
    filler = "".join(f"  key_{i}: value number {i} of a very long generated section\n" for i in range(220_000))
    _write(root / "config.yaml", text + "generated:\n" + filler)


# ---- state.db


def _statedb_sql(*statements: str) -> Builder:
    def build(root: Path) -> None:
        conn = sqlite3.connect(root / "state.db")
        try:
            for s in statements:
                conn.execute(s)
            conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    return build


def _statedb_truncated(root: Path) -> None:
    _statedb_sql("PRAGMA journal_mode = DELETE")(root)
    p = root / "state.db"
    data = p.read_bytes()
    _write(p, data[: len(data) // 3])


def _statedb_rebuilt_messages(root: Path) -> None:
    """``messages`` rebuilt without ``tool_calls``, ``tool_name`` and ``timestamp`` and with two
    extra columns (a Hermes that never was)."""
    conn = sqlite3.connect(root / "state.db")
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(messages)")]
        keep = [c for c in cols if c not in ("tool_calls", "tool_name", "timestamp")]
        conn.executescript(
            "DROP TRIGGER IF EXISTS messages_fts_insert; DROP TRIGGER IF EXISTS messages_fts_delete;"
            "DROP TRIGGER IF EXISTS messages_fts_update;"
            f"CREATE TABLE messages_new ({', '.join(keep)}, mood TEXT DEFAULT 'grumpy', weight REAL);"
            f"INSERT INTO messages_new ({', '.join(keep)}) SELECT {', '.join(keep)} FROM messages;"
            "DROP TABLE messages; ALTER TABLE messages_new RENAME TO messages;")
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _drop_triggers_then(*statements: str, columns: tuple[str, ...] = ()) -> Builder:
    """Drop state.db's triggers (and the indexes naming ``columns``), then run ``statements``."""
    def build(root: Path) -> None:
        conn = sqlite3.connect(root / "state.db")
        try:
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
                conn.execute(f'DROP TRIGGER "{name}"')
            for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                                          ).fetchall():
                if any(c in sql for c in columns):
                    conn.execute(f'DROP INDEX "{name}"')
            for s in statements:
                conn.execute(s)
            conn.commit()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    return build


_LOCK_SERVER = """
import sqlite3, sys
held = {}
for line in sys.stdin:
    verb, path = line.rstrip("\\n").split(" ", 1)
    if verb == "hold":
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("UPDATE sessions SET title = title")
        held[path] = conn
    else:
        conn = held.pop(path)
        conn.execute("ROLLBACK")
        conn.close()
    print(verb, flush=True)
"""


class LockServer:
    """One process that holds an exclusive transaction on the state.db of each home it is told
    to (rollback journal, exclusive locking mode: no other connection can even read it), for as
    long as told: a home "locked by another process" without a process start per command."""

    def __enter__(self) -> LockServer:
        self.proc = subprocess.Popen([sys.executable, "-c", _LOCK_SERVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return self

    def _say(self, verb: str, home: Path) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{verb} {home / 'state.db'}\n")
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != verb:
            raise RuntimeError(f"the lock server failed: {self.proc.stderr.read() if self.proc.stderr else ''}")

    @contextlib.contextmanager
    def hold(self, home: Path) -> Iterator[None]:
        self._say("hold", home)
        try:
            yield
        finally:
            self._say("release", home)

    def __exit__(self, *exc: object) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _NoHold:
    def __enter__(self) -> _NoHold:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    @contextlib.contextmanager
    def hold(self, home: Path) -> Iterator[None]:
        yield


def _statedb_locked_build(root: Path) -> None:
    _statedb_sql("PRAGMA journal_mode = DELETE")(root)


# ---- memdeck.db


def _deck_sql(*statements: str) -> Builder:
    def build(root: Path) -> None:
        conn = sqlite3.connect(root / DECK_DB, isolation_level=None)
        try:
            for s in statements:
                conn.execute(s)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    return build


def _deck_journal_other_columns(extra: str = "", value: str = "") -> Builder:
    """``journal`` rebuilt with its columns in another order, an extra ``legacy`` column and an
    extra ``NOT NULL`` column with a default (memdeck writes by name: tolerated), plus ``extra``
    (filled with ``value`` for the old rows)."""
    def build(root: Path) -> None:
        _rebuild_journal(root, extra, value)
    return build


def _rebuild_journal(root: Path, extra: str, value: str) -> None:
    cols = ("state, undone_by, txn, detail, after, before, session_id, scope, target, kind, op, actor, ts, "
            "journal_id")
    conn = sqlite3.connect(root / DECK_DB, isolation_level=None)
    try:
        conn.executescript(
            "BEGIN;"
            "CREATE TABLE journal_x (note TEXT, state TEXT NOT NULL DEFAULT 'done', undone_by INTEGER, txn TEXT,"
            " detail TEXT NOT NULL DEFAULT '{}', after TEXT, before TEXT, session_id TEXT, scope TEXT, target TEXT,"
            " kind TEXT NOT NULL, op TEXT NOT NULL, actor TEXT NOT NULL, ts REAL NOT NULL,"
            " journal_id INTEGER PRIMARY KEY AUTOINCREMENT, origin_host TEXT NOT NULL DEFAULT 'elsewhere', legacy BLOB"
            + (f", {extra}" if extra else "") + ");"
            f"INSERT INTO journal_x ({cols}{', ' + extra.split()[0] if extra else ''})"
            f" SELECT {cols}{', ' + value if extra else ''} FROM journal;"
            "DROP TABLE journal; ALTER TABLE journal_x RENAME TO journal;"
            "CREATE INDEX journal_kind_idx ON journal(kind, journal_id);"
            "CREATE INDEX journal_txn_idx ON journal(txn);"
            "CREATE INDEX journal_state_idx ON journal(state, kind, target);"
            "COMMIT;")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _deck_journal_missing_column(root: Path) -> None:
    """``journal`` without ``txn`` and ``state`` at the current ``user_version``."""
    conn = sqlite3.connect(root / DECK_DB, isolation_level=None)
    try:
        conn.executescript("BEGIN; DROP INDEX IF EXISTS journal_state_idx; DROP INDEX IF EXISTS journal_txn_idx;"
                           "ALTER TABLE journal DROP COLUMN txn; ALTER TABLE journal DROP COLUMN state; COMMIT;")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _deck_read_only(root: Path) -> None:
    os.chmod(root / DECK_DB, 0o400)
    os.chmod(root / "memdeck", 0o555)


def _memories_000(root: Path) -> None:
    os.chmod(root / "memories", 0)


def _no_such_home(root: Path) -> None:
    shutil.rmtree(root)


def _not_a_home(root: Path) -> None:
    shutil.rmtree(root)
    root.mkdir()
    (root / "notes.txt").write_text("someone's directory, not a Hermes home\n")


# --------------------------------------------------------------------------- the catalogue

_MEM, _USER = "memories/MEMORY.md", "memories/USER.md"
#: the panels that show a banner when a source of theirs is broken
_CAP, _CFG, _DB = ("capacity",), ("capacity", "integrity", "anchors"), ("integrity", "recall")
_SESSION, _DECK = ("anchors", "integrity", "drift"), ("history", "capacity")

HOMES: tuple[Hostile, ...] = (
    # MemLock
    Hostile("memlock-name-not-utf8", _memlock_name_not_utf8, "memlock", panels=("anchors",)),
    Hostile("memlock-surrogates", _session_fields(SURROGATES), "memlock", panels=_SESSION),
    Hostile("memlock-control-chars", _session_fields(CONTROLS), "memlock"),
    Hostile("memlock-huge-strings", _session_fields("", huge=True), "memlock"),
    Hostile("memlock-wrong-types", _memlock_wrong_types, "memlock"),
    Hostile("memlock-not-json", _raw_file(live_session_file, b"\x00\xff{not json"), "memlock",
            frozen=(live_session_file,),
            panels=_SESSION),
    Hostile("memlock-session-fifo", _replace_with(live_session_file, "fifo"), "memlock", panels=_SESSION),
    Hostile("memlock-pin-fifo", _replace_with(pin_file, "fifo"), "memlock", panels=("anchors",)),
    Hostile("memlock-is-a-file", _raw_file("memlock", b"not a directory\n"), "memlock", frozen=("memlock",),
            panels=("anchors", "integrity")),
    # pending writes
    Hostile("pending-payload-string", _pending("add deploy notes"), "pending"),
    Hostile("pending-payload-list", _pending(["add", "memory", "deploy"]), "pending"),
    Hostile("pending-payload-null", _pending(None), "pending"),
    Hostile("pending-payload-garbage", _pending({"action": {"add": 1}, "target": ["memory"], "content": {"x": [1]},
                                                 "old_text": 7, "operations": "all of them"}), "pending"),
    Hostile("pending-surrogates", _pending({"action": "add", "target": "memory", "content": SURROGATES}), "pending"),
    Hostile("pending-nested-deep", _raw_file(NEW_PENDING, lambda: _deep(200_000)), "pending"),
    Hostile("pending-record-not-object", _raw_file(NEW_PENDING, b'["a", "list"]'), "pending"),
    Hostile("pending-20mb", _pending_20mb, "pending"),
    Hostile("pending-fifo", _replace_with(NEW_PENDING, "fifo"), "pending"),
    Hostile("pending-symlink-dev-zero", _replace_with(NEW_PENDING, "devzero"), "pending"),
    # MEMORY.md
    Hostile("memory-not-utf8", _raw_file(_MEM, b"caf\xe9 au lait\n\xc2\xa7\nsecond \xff entry\n"), "memory",
            frozen=(_MEM,), panels=_CAP),
    Hostile("memory-bom", lambda r: _write(r / _MEM, b"\xef\xbb\xbf" + (r / _MEM).read_bytes()), "memory"),
    Hostile("memory-nul-bytes", lambda r: _write(r / _MEM, (r / _MEM).read_bytes() + b"\n\xc2\xa7\nnul\x00inside\x00"),
            "memory"),
    Hostile("memory-is-a-directory", _replace_with(_MEM, "dir"), "memory", frozen=(_MEM + "/inside.txt",), panels=_CAP),
    Hostile("memory-fifo", _replace_with(_MEM, "fifo"), "memory", panels=_CAP),
    Hostile("memory-50mb", _big_memory, "memory", frozen=(_MEM,)),
    Hostile("user-symlink-dev-zero", _replace_with(_USER, "devzero"), "user", panels=_CAP),
    # config.yaml
    Hostile("config-alias-bomb", _raw_file("config.yaml", _alias_bomb()), "config", frozen=("config.yaml",),
            panels=_CFG),
    Hostile("config-not-a-mapping", _raw_file("config.yaml", b"- just\n- a\n- list\n"), "config",
            frozen=("config.yaml",), panels=_CFG),
    Hostile("config-huge", _huge_config, "config", frozen=("config.yaml",), panels=_CFG),
    Hostile("config-not-utf8", _raw_file("config.yaml", b"memory:\n  memory_char_limit: 2200 # \xff\xfe\n"), "config",
            frozen=("config.yaml",), panels=_CFG),
    Hostile("config-fifo", _replace_with("config.yaml", "fifo"), "config", panels=_CFG),
    # state.db
    Hostile("statedb-truncated", _statedb_truncated, "statedb", frozen=("state.db",), panels=_DB),
    Hostile("statedb-not-sqlite", _raw_file("state.db", b"this is not an SQLite database\n" * 200), "statedb",
            frozen=("state.db",), panels=_DB),
    Hostile("statedb-zero-bytes", _raw_file("state.db", b""), "statedb", frozen=("state.db",), panels=_DB),
    Hostile("statedb-locked", _statedb_locked_build, "statedb", holder=LockServer, panels=_DB),
    Hostile("statedb-missing-tables", _drop_triggers_then("DROP TABLE messages_fts", "DROP TABLE messages_fts_trigram",
                                                          "DROP TABLE messages"), "statedb",
            frozen=("state.db",), panels=_DB),
    Hostile("statedb-other-columns", _statedb_rebuilt_messages, "statedb", frozen=("state.db",)),
    Hostile("statedb-fts-missing", _drop_triggers_then("DROP TABLE messages_fts", "DROP TABLE messages_fts_trigram"),
            "statedb", frozen=("state.db",)),
    Hostile("statedb-bad-utf8", _statedb_sql(
        "UPDATE messages SET content = CAST(x'6465706c6f7920fffec0206e6f7465' AS TEXT) WHERE id IN"
        " (SELECT id FROM messages ORDER BY id DESC LIMIT 3)",
        "UPDATE sessions SET title = CAST(x'fffe7469746c65' AS TEXT) || id"), "statedb", frozen=("state.db",)),
    Hostile("statedb-sessions-missing-columns", _drop_triggers_then(
        "ALTER TABLE sessions DROP COLUMN title", "ALTER TABLE sessions DROP COLUMN ended_at",
        columns=("title", "ended_at")), "statedb",
        frozen=("state.db",)),
    # memdeck.db
    Hostile("deckdb-newer-version", _deck_sql("PRAGMA user_version = 999"), "deckdb", frozen=(DECK_DB,), panels=_DECK),
    Hostile("deckdb-journal-other-columns", _deck_journal_other_columns(), "deckdb"),
    Hostile("deckdb-journal-missing-columns", _deck_journal_missing_column, "deckdb", frozen=(DECK_DB,), panels=_DECK),
    Hostile("deckdb-journal-extra-not-null", _deck_journal_other_columns(extra="signed_by TEXT NOT NULL",
                                                                         value="'me'"), "deckdb",
            frozen=(DECK_DB,), panels=_DECK),
    Hostile("deckdb-not-a-database", _overwrite(DECK_DB, b"memdeck.db? no: plain text\n" * 300), "deckdb",
            frozen=(DECK_DB,), panels=_DECK),
    Hostile("deckdb-read-only", _deck_read_only, "deckdb", frozen=(DECK_DB,), unprivileged=True, panels=("history",)),
    # the home itself
    Hostile("memories-mode-000", _memories_000, "memory", frozen=(_MEM, _USER), unprivileged=True, panels=_CAP),
    Hostile("no-such-home", _no_such_home, "home"),
    Hostile("not-a-home", _not_a_home, "home", frozen=("notes.txt",)),
)

BY_NAME = {h.name: h for h in HOMES}


def build_hostile(hostile: Hostile, base: Path, dest: Path) -> Path:
    """Copy the base home to ``dest`` and break it with ``hostile.build``. Returns ``dest``."""
    shutil.copytree(base, dest, symlinks=True)
    hostile.build(dest)
    return dest


def copy_home(src: Path, dest: Path) -> Path:
    """A copy of a (hostile) home that keeps FIFOs, symlinks and modes (``cp -a``); a missing
    ``src`` stays missing."""
    if not os.path.lexists(src):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    return dest


def remove_home(path: Path) -> None:
    """Delete a hostile home, restoring the permissions the builders took away first."""
    if not os.path.lexists(path):
        return
    for dirpath, dirnames, _files in os.walk(path):
        for d in dirnames:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(dirpath, d), 0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def holding(hostile: Hostile) -> LockServer | _NoHold:
    """A context manager whose ``hold(home)`` holds the home's live condition for a block (for a
    home without one: nothing)."""
    return hostile.holder() if hostile.holder is not None else _NoHold()


def unprivileged_prefix() -> list[str] | None:
    """The command prefix that runs a process without root's permission override
    (``setpriv`` dropping ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` from the bounding
    set: a root process then obeys file modes), ``[]`` when not root, or None when that is
    not possible here (no setpriv, or not allowed)."""
    if os.geteuid() != 0:
        return []
    exe = shutil.which("setpriv")
    if exe is None:
        return None
    prefix = [exe, "--bounding-set", "-dac_override,-dac_read_search"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    return prefix if probe.returncode == 0 else None


# --------------------------------------------------------------------------- files of a home


def memdeck_owned(rel: str) -> bool:
    """Whether ``rel`` (home-relative) is a file every command may legitimately write: memdeck's
    own directory (memdeck.db and its side files: every command records the change history),
    the write protocol's ``*.lock`` sidecars (never deleted, by Hermes' rule), and the side files
    SQLite may leave beside state.db. A temp file of the write protocol is not: none may be left."""
    name = rel.rsplit("/", 1)[-1]
    return (rel == "memdeck" or rel.startswith("memdeck/") or name.endswith(".lock")
            or rel in ("state.db-wal", "state.db-shm", "state.db-journal"))


def fingerprint(root: Path) -> dict[str, tuple[str, object]]:
    """``rel path -> (type, content)`` of everything in a home without following links: a regular
    file's bytes (as a hash), a link's target, a FIFO/dir/other's type and mode. Never opens a
    FIFO or an SQLite file outside SQLite's rules: database files are read through
    ``core/sqlite_files.py`` ``raw_fd`` by hash only."""
    import hashlib
    import stat as _stat

    out: dict[str, tuple[str, object]] = {}
    if not os.path.lexists(root):
        return out
    broot = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(broot):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.fsdecode(os.path.relpath(p, broot))
            st = os.lstat(p)
            mode = _stat.S_IMODE(st.st_mode)
            if _stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.fsdecode(os.readlink(p)))
            elif _stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode)
            elif _stat.S_ISREG(st.st_mode):
                out[rel] = ("file", (mode, _hash_file(p, hashlib)))
            else:
                out[rel] = ("other", (_stat.S_IFMT(st.st_mode), mode))
        # never descend into a directory we cannot read (mode 000): its listing is its content
        dirnames[:] = [d for d in dirnames if os.access(os.path.join(dirpath, d), os.R_OK | os.X_OK)]
    return out


def _hash_file(p: bytes, hashlib: object) -> str:
    h = hashlib.sha256()  # type: ignore[attr-defined]
    base = os.path.basename(os.fsdecode(p))
    for suffix in ("-wal", "-shm", "-journal"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    if base in ("state.db", "memdeck.db"):
        from memdeck.core.sqlite_files import raw_fd

        with raw_fd(Path(os.fsdecode(p))) as fd:
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                h.update(b)
        return h.hexdigest()
    try:
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except PermissionError:
        return "unreadable"
    return h.hexdigest()


__all__ = ["BY_NAME", "HOMES", "Hostile", "Job", "LockServer", "Outcome", "build_base", "build_hostile", "copy_home",
           "drop_dac_override", "fingerprint", "holding", "memdeck_owned", "remove_home", "run_forked", "run_jobs",
           "run_process", "unprivileged_prefix", "warm_up"]


# --------------------------------------------------------------------------- running a command


@dataclass(frozen=True)
class Outcome:
    """One command's run: ``code`` (None: it did not finish within the bound and was killed),
    its stdout and stderr, and ``traceback`` (an exception escaped ``main``: its text)."""

    argv: tuple[str, ...]
    code: int | None
    out: str
    err: str
    traceback: str | None = None


@dataclass
class _Running:
    argv: list[str]
    pid: int
    pipe: int
    out: Any
    err: Any
    deadline: float


def _start_forked(argv: list[str], timeout: float, unprivileged: bool) -> _Running:
    """Fork a child that runs ``memdeck.core.cli.main(argv)`` (the console script's
    ``memdeck.tui.launch.main`` for :data:`CONSOLE_ONLY`; see :func:`run_forked`)."""
    import tempfile
    import time
    import traceback as _tb

    warm_up()
    fout, ferr = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 - the forked child writes them; read after it ends
    r, w = os.pipe()  # not inheritable (PEP 446): a grandchild CMD never holds the end open
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 70
        try:
            os.close(r)
            os.dup2(fout.fileno(), 1)
            os.dup2(ferr.fileno(), 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            import io

            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
            if unprivileged and not drop_dac_override():
                sys.stderr.write("could not drop CAP_DAC_OVERRIDE\n")
                os._exit(71)
            from memdeck.core.cli import command_name, main

            if command_name(argv) in CONSOLE_ONLY:  # run as the `memdeck` console script runs it
                from memdeck.tui.launch import main
            try:
                code = int(main(argv))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
            except BaseException:  # noqa: BLE001 - the finding
                sys.stderr.write("\n" + _TRACEBACK_MARK + "\n" + _tb.format_exc())
                code = 99
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    os.close(w)
    return _Running(argv, pid, r, fout, ferr, time.monotonic() + timeout)


def _finish(run: _Running, killed: bool) -> Outcome:
    if killed:
        os.kill(run.pid, signal.SIGKILL)
    os.close(run.pipe)
    _, st = os.waitpid(run.pid, 0)
    run.out.seek(0)
    run.err.seek(0)
    out = run.out.read().decode("utf-8", "replace")
    err = run.err.read().decode("utf-8", "replace")
    run.out.close()
    run.err.close()
    code: int | None = None if killed else (os.WEXITSTATUS(st) if os.WIFEXITED(st) else -os.WTERMSIG(st))
    tb = None
    if _TRACEBACK_MARK in err:
        err, tb = err.split(_TRACEBACK_MARK, 1)
    elif "Traceback (most recent call last)" in err:
        tb = err
    return Outcome(tuple(run.argv), code, out, err, tb)


def run_forked(argv: list[str], *, timeout: float = 120.0, unprivileged: bool = False) -> Outcome:
    """Run ``memdeck.core.cli.main(argv)`` in a forked child of this process (memdeck is already
    imported: a few ms instead of a process start), stdout/stderr captured through files, killed
    after ``timeout`` seconds (a hang is a finding, never a wait of the suite). The child calls
    ``os._exit``: nothing of the test process (pytest's atexit, buffers) runs twice.
    ``unprivileged``: the child first drops root's permission override (:func:`drop_dac_override`)."""
    import select

    run = _start_forked(argv, timeout, unprivileged)
    ready, _, _ = select.select([run.pipe], [], [], timeout)
    return _finish(run, killed=not ready)


@dataclass
class Job:
    """One command for :func:`run_jobs`: ``prepare()`` runs just before it starts and returns its
    argv; ``done(outcome)`` just after it ended."""

    prepare: Callable[[], list[str]]
    done: Callable[[Outcome], None]


def run_jobs(jobs: list[Job], *, parallel: int = 2, timeout: float = 120.0, unprivileged: bool = False) -> None:
    """Run ``jobs`` as forked children, at most ``parallel`` at once (the suite's process is single-
    threaded; a second core runs the next command meanwhile). Each is killed after ``timeout`` s."""
    import select
    import time

    queue = list(jobs)
    running: dict[int, tuple[_Running, Job]] = {}
    while queue or running:
        while queue and len(running) < max(1, parallel):
            job = queue.pop(0)
            run = _start_forked(job.prepare(), timeout, unprivileged)
            running[run.pipe] = (run, job)
        wait = max(0.0, min(r.deadline for r, _ in running.values()) - time.monotonic())
        ready, _, _ = select.select(list(running), [], [], wait)
        now = time.monotonic()
        for fd in list(running):
            run, job = running[fd]
            if fd in ready or now >= run.deadline:
                del running[fd]
                job.done(_finish(run, killed=fd not in ready))


def drop_dac_override() -> bool:
    """Drop ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` from this process (``capset``): root
    then obeys file modes, so a directory of mode 000 means what it means for a user. True when
    done (or when not root: nothing to drop)."""
    if os.geteuid() != 0:
        return True
    import ctypes

    class _Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class _Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    header = _Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return False
    mask = ~((1 << 1) | (1 << 2)) & 0xFFFFFFFF  # CAP_DAC_OVERRIDE = 1, CAP_DAC_READ_SEARCH = 2
    for field in ("effective", "permitted", "inheritable"):
        setattr(data[0], field, getattr(data[0], field) & mask)
    return libc.capset(ctypes.byref(header), data) == 0


def run_process(argv: list[str], *, prefix: list[str] | None = None, timeout: float = 120.0,
                env: dict[str, str] | None = None) -> Outcome:
    """Run ``python -m memdeck.core.cli ARGV`` as its own process (optionally under ``prefix``,
    e.g. :func:`unprivileged_prefix`), killed after ``timeout`` seconds."""
    cmd = [*(prefix or []), sys.executable, "-m", "memdeck.core.cli", *argv]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired as exc:
        return Outcome(tuple(argv), None, (exc.stdout or b"").decode("utf-8", "replace"),
                       (exc.stderr or b"").decode("utf-8", "replace"))
    err = proc.stderr.decode("utf-8", "replace")
    return Outcome(tuple(argv), proc.returncode, proc.stdout.decode("utf-8", "replace"), err,
                   err if "Traceback (most recent call last)" in err else None)


#: Commands only the ``memdeck`` console script runs (core's ``main`` has no dashboard to serve):
#: their forked runs call :func:`memdeck.tui.launch.main`, as a user's ``memdeck serve`` does.
CONSOLE_ONLY = frozenset({"serve"})

_TRACEBACK_MARK = "<<memdeck-test: an exception escaped main>>"


_warm = False


def warm_up() -> None:
    """Import every module of ``memdeck.core`` (commands import most of theirs lazily) and build
    the CLI's lazy caches in this process once, so a forked child starts with them (the escape
    pattern of ``core/text.py`` alone costs ~0.4 s)."""
    global _warm
    if _warm:
        return
    _warm = True
    import importlib
    import pkgutil

    import memdeck.core

    for mod in pkgutil.walk_packages(memdeck.core.__path__, "memdeck.core."):
        if not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)
    from memdeck.core import cli
    from memdeck.core.cli import memory_cmds
    from memdeck.core.text import visible

    visible("warm\x1b")
    memory_cmds.safe("warm\x1b")
    for name in (None, *cli.COMMANDS):  # main's parsers, built once and inherited by every child
        cli._parser(name)  # noqa: SLF001
    import memdeck.tui.launch
    import memdeck.tui.serve
