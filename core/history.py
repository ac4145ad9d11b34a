"""The change history of every writer: what changed in the watched files, who did it, and revert.

memdeck keeps, in memdeck.db (tables ``history_seen`` and ``history``, ``core/deck/db.py``
step 2; step 6: ``target`` is the memory target only, anchor rows carry MemLock's ``scope`` and
``session_id``), the last canonical content it saw of every watched file:

* ``memories/MEMORY.md`` / ``memories/USER.md`` (kind ``memory``; content = the canonical file
  text, ``parse_entries`` + ``serialize_entries``, so whitespace drift is not a change);
* MemLock session files ``memlock/*.json`` and global pins ``memlock/persist/*.json`` (kind
  ``anchor``; content = JSON ``{"session_id", "anchors": {id: {text, reminder, priority,
  probes}}}``: audit bookkeeping such as ``drifted`` or ``last_alive_turn`` is not a change).

:func:`observe` stats every watched file (one ``stat`` each, one SELECT) and reads and diffs only
the files whose stamp (``mtime_ns:size:ino``) changed. Each difference becomes a change row:

* memory: ``added`` / ``removed`` / ``replaced`` (``before`` = old entry text, ``after`` = new).
  A removal and an addition of the same observation are one ``replaced`` when the texts are
  similar (``difflib.SequenceMatcher.ratio() >= 0.5``) or when exactly one entry left and one
  arrived at the same index (Hermes' ``replace`` keeps the entry's place; 0.19
  ``tools/memory_tool.py`` ``replace`` :398-437). Otherwise they stay separate rows.
* anchor: ``anchor_added`` / ``anchor_removed`` / ``anchor_changed`` (before/after = the
  anchor's fields as JSON text).

Each change has a window ``since .. until`` (epoch seconds: when memdeck last saw the old
content .. when it saw the new) and the best attribution it can make, in this order:

1. memdeck's own journal: memory rows are chained from the last seen content (a row whose
   ``before`` equals the current text explains the step to its ``after``); the change gets the
   row's ``actor`` (cli/tui/plugin) and ``journal_id``. Anchor rows match by ``anchor_id`` and time.
2. ``pending``: a Hermes pending write (``pending/memory/<id>.json``) memdeck saw earlier,
   now gone, whose payload explains the change (an approval applied by Hermes).
3. ``hermes``: an assistant message in state.db whose ``tool_calls`` call the ``memory`` tool
   with a matching action/target/content/old_text (``StateDB.memory_tool_calls``), within
   :data:`ATTRIBUTION_SLACK` seconds of the window; with its session id and ``source``.
   Hermes writes messages at the end of a turn, possibly after memdeck saw the change, so
   :func:`reattribute` retries recent ``external`` rows (``list_changes`` calls it).
4. ``external``: nothing explained it (a manual edit, the background review, cron...).

The first observation of a file only records it (no change). Changes made while memdeck was
closed are found at the next observation. The history is bounded to :data:`MAX_CHANGES` rows
(the oldest are dropped). :func:`revert` reverses one change through the stores
(``MemoryStore.revert_entry``; ``AnchorFiles.apply_change`` for session files), journaled as
``op="revert"``, write-ahead like every writer (the row is committed in state ``intent`` before
the file is replaced).

Hermes' ``memories/ARCHIVE.jsonl`` is not read: no Hermes 0.17-0.22 writes it
(docs/HERMES_VERSIONS.md §2), so there is no format to follow.
"""

from __future__ import annotations

import difflib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .anchors.files import AnchorChange
from .anchors.model import Anchor, SessionAnchors
from .anchors.store import AnchorStore
from .anchors.model import scan_or_refuse as _scan_anchor
from .config import Config, load_config
from .deck import db as deckdb
from .errors import Refused
from .fsio import read_regular_bytes
from .home import HOME_MARKERS, TARGET_FILES, TARGETS, HermesHome
from .memory.entries import parse_entries, serialize_entries
from .memory.store import MemoryStore
from .sessions.statedb import StateDB

#: at most this many change rows are kept (the oldest are dropped first)
MAX_CHANGES = 100_000
#: seconds around a change's window in which a Hermes memory tool call may explain it
ATTRIBUTION_SLACK = 300.0
#: ``external`` changes younger than this many seconds are re-attributed by :func:`reattribute`
REATTRIBUTE_WINDOW = 900.0
#: similarity at or above which a removal + addition is one ``replaced`` change
SIMILAR = 0.5
#: anchor fields whose change is a change (the audit's bookkeeping is not)
ANCHOR_FIELDS = ("text", "reminder", "priority", "probes")

MEMORY_OPS = ("added", "removed", "replaced")
ANCHOR_OPS = ("anchor_added", "anchor_removed", "anchor_changed")


@dataclass(frozen=True)
class Change:
    """One recorded change.

    Attributes:
        change_id: monotonic id. kind: ``memory`` or ``anchor``. target: ``memory``/``user``
            for memory, None for anchors. scope, session_id: anchors only (None for memory):
            ``session`` and the MemLock session id for a session file, ``global`` and None for
            a global pin in ``persist/`` (``core/deck/db.py`` migration 6).
        path: the file, relative to the home. op: one of :data:`MEMORY_OPS`/:data:`ANCHOR_OPS`.
        before, after: the old/new entry text (memory) or anchor fields as JSON (anchor); None
            for the side that does not exist.
        since, until: the window in which it happened (epoch seconds; ``since`` None when
            unknown). actor: ``cli``/``tui``/``plugin`` (memdeck), ``pending``, ``hermes`` or
            ``external``. attribution: details (``journal_id``, ``op``; ``pending_id``,
            ``origin``; ``session_id``, ``source``, ``message_id``, ``tool_call_id``).
        reverted_by: the journal id of the revert that reversed it, or None.
    """

    change_id: int
    kind: str
    target: str | None
    path: str
    op: str
    before: str | None
    after: str | None
    since: float | None
    until: float
    actor: str
    attribution: dict[str, Any] = field(default_factory=dict)
    reverted_by: int | None = None
    scope: str | None = None
    session_id: str | None = None

    @property
    def where(self) -> str:
        """The file's place as shown: the memory target, the anchor's session id, or ``global``."""
        if self.kind == "memory":
            return str(self.target)
        return self.session_id or "global"

    @property
    def anchor_id(self) -> str | None:
        return self.attribution.get("anchor_id") if self.kind == "anchor" else None

    @property
    def by_memdeck(self) -> bool:
        return "journal_id" in self.attribution

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.change_id, "kind": self.kind, "target": self.target, "scope": self.scope,
            "session_id": self.session_id, "path": self.path, "op": self.op,
            "before": self.before, "after": self.after, "since": self.since, "until": self.until,
            "actor": self.actor, "attribution": self.attribution, "reverted_by": self.reverted_by,
        }


def _row(r: sqlite3.Row) -> Change:
    try:
        attr = json.loads(r["attribution"] or "{}")
    except ValueError:
        attr = {}
    return Change(r["change_id"], r["kind"], r["target"], r["path"], r["op"], r["before"], r["after"], r["since"],
                  r["until"], r["actor"], attr if isinstance(attr, dict) else {}, r["reverted_by"], r["scope"],
                  r["session_id"])


# ---------------------------------------------------------------------------------------
# What is watched, and its canonical content


@dataclass(frozen=True)
class _File:
    """A watched file: ``target`` for memory files; for anchor files ``session_id`` (provisional:
    the file stem until the file is read; None for ``persist/``)."""

    rel: str
    kind: str
    target: str | None
    path: Path
    session_id: str | None = None

    @property
    def scope(self) -> str | None:
        if self.kind != "anchor":
            return None
        return "global" if self.rel.startswith("memlock/persist/") else "session"


def watched_files(home: HermesHome) -> list[_File]:
    """MEMORY.md, USER.md, ``memlock/*.json`` and ``memlock/persist/*.json`` (manifest excluded)."""
    out = [_File(f"memories/{TARGET_FILES[t]}", "memory", t, home.memory_file(t)) for t in TARGETS]
    root = home.memlock_dir
    for sub in ("", "persist"):
        d = root / sub if sub else root
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".json") or name.startswith(".") or name == "manifest.json":
                continue
            rel = f"memlock/{sub + '/' if sub else ''}{name}"
            out.append(_File(rel, "anchor", None, d / name, None if sub else name[:-5]))
    return out


def _stamp(path: Path) -> str | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"


def _read(path: Path) -> str | None:
    try:
        data = read_regular_bytes(path)
    except FileNotFoundError:
        return None
    return data.decode("utf-8")  # UnicodeDecodeError / OSError: the caller skips the file


def canonical_memory(raw: str | None) -> str:
    """The canonical text of a memory file (Hermes' parse then join; BOM/CRLF tolerated)."""
    if raw is None:
        return ""
    return serialize_entries(parse_entries(raw.lstrip("\ufeff").replace("\r\n", "\n")))


def _fields(rec: dict[str, Any]) -> dict[str, Any]:
    a = Anchor.from_dict(rec)
    return {"text": a.text, "reminder": a.reminder, "priority": a.priority, "probes": list(a.probes)}


def canonical_anchors(raw: str | None, rel: str, fallback: str | None) -> tuple[str | None, str]:
    """``(session_id, content JSON)`` of a MemLock session file, or ``(None, content JSON)`` of a
    global pin in ``persist/`` (``fallback``: the session id when the file says none, by default
    the file stem; unused for ``persist/``). Raises ValueError if not JSON.
    The content's ``"session_id"`` is ``"global"`` for ``persist/`` (the stored content format,
    unchanged since migration 2)."""
    persist = rel.startswith("memlock/persist/")
    fallback = fallback or Path(rel).stem
    if raw is None:
        return (None if persist else fallback), json.dumps(
            {"session_id": "global" if persist else fallback, "anchors": {}}, sort_keys=True)
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if persist:
        aid = str(data.get("id") or "global")
        return None, json.dumps({"session_id": "global", "anchors": {aid: _fields(data)}}, sort_keys=True)
    s = SessionAnchors.from_dict(data, fallback)
    anchors = {aid: _fields(a.to_dict()) for aid, a in s.anchors.items()}
    return s.session_id or fallback, json.dumps({"session_id": s.session_id or fallback, "anchors": anchors},
                                                sort_keys=True)


# ---------------------------------------------------------------------------------------
# Diffs


def diff_entries(old: Sequence[str], new: Sequence[str]) -> list[tuple[str, str | None, str | None]]:
    """``[(op, before, after)]`` turning entry list ``old`` into ``new`` (see the module docstring
    for when a removal and an addition are one ``replaced``). Order: replaced, removed, added."""
    oldset, newset = set(old), set(new)
    removed = [e for e in old if e not in newset]
    added = [e for e in new if e not in oldset]
    pairs: list[tuple[str, str | None, str | None]] = []
    if len(removed) == 1 and len(added) == 1 and list(old).index(removed[0]) == list(new).index(added[0]):
        return [("replaced", removed[0], added[0])]
    scored = []
    for i, r in enumerate(removed):
        for j, a in enumerate(added):
            sm = difflib.SequenceMatcher(None, r, a, autojunk=False)
            if sm.real_quick_ratio() >= SIMILAR and sm.quick_ratio() >= SIMILAR:
                ratio = sm.ratio()
                if ratio >= SIMILAR:
                    scored.append((-ratio, i, j))
    used_r: set[int] = set()
    used_a: set[int] = set()
    for _neg, i, j in sorted(scored):
        if i in used_r or j in used_a:
            continue
        used_r.add(i)
        used_a.add(j)
        pairs.append(("replaced", removed[i], added[j]))
    pairs += [("removed", r, None) for i, r in enumerate(removed) if i not in used_r]
    pairs += [("added", None, a) for j, a in enumerate(added) if j not in used_a]
    return pairs


def diff_anchors(old: str, new: str) -> list[tuple[str, str | None, str | None, str]]:
    """``[(op, before, after, anchor_id)]`` between two canonical anchor contents."""
    a = json.loads(old).get("anchors") or {}
    b = json.loads(new).get("anchors") or {}
    out: list[tuple[str, str | None, str | None, str]] = []
    for aid in a:
        if aid not in b:
            out.append(("anchor_removed", json.dumps(a[aid], sort_keys=True), None, aid))
        elif a[aid] != b[aid]:
            out.append(("anchor_changed", json.dumps(a[aid], sort_keys=True), json.dumps(b[aid], sort_keys=True), aid))
    for aid in b:
        if aid not in a:
            out.append(("anchor_added", None, json.dumps(b[aid], sort_keys=True), aid))
    return out


# ---------------------------------------------------------------------------------------
# Attribution of changes memdeck did not journal


def _explains(args: dict[str, Any], target: str, op: str, before: str | None, after: str | None) -> bool:
    """Whether memory-tool arguments (or a pending payload) ``args`` produce this change
    (Hermes 0.19 semantics: ``old_text`` is a substring of the entry; ``content`` is stripped)."""
    if (args.get("target") or "memory") != target:
        return False
    action = args.get("action")
    if action == "batch" or isinstance(args.get("operations"), list):
        return any(isinstance(o, dict) and _explains({"target": target, **o}, target, op, before, after)
                   for o in args.get("operations") or [])
    content = str(args.get("content") or "").strip()
    old_text = str(args.get("old_text") or "").strip()
    if op == "added":
        return action == "add" and content == after
    if op == "removed":
        return action == "remove" and bool(old_text) and old_text in (before or "")
    if op == "replaced":
        return action == "replace" and bool(old_text) and old_text in (before or "") and content == after
    return False


def _hermes_attribution(db: StateDB | None, target: str, op: str, before: str | None, after: str | None,
                        since: float | None, until: float) -> dict[str, Any] | None:
    if db is None:
        return None
    lo = (since if since is not None else until - 86400.0) - ATTRIBUTION_SLACK
    for call in db.memory_tool_calls(lo, until + ATTRIBUTION_SLACK):
        if _explains(call["args"], target, op, before, after):
            return {"session_id": call["session_id"], "source": call["source"], "message_id": call["message_id"],
                    "tool_call_id": call["tool_call_id"], "timestamp": call["timestamp"],
                    "action": call["args"].get("action")}
    return None


def _pending_attribution(conn: sqlite3.Connection, home: HermesHome, target: str, op: str, before: str | None,
                         after: str | None) -> dict[str, Any] | None:
    rows = conn.execute("SELECT path, content FROM history_seen WHERE kind = 'pending'").fetchall()
    for r in rows:
        if (home.path / r["path"]).exists():
            continue  # still staged: not applied
        try:
            rec = json.loads(r["content"] or "{}")
        except ValueError:
            continue
        payload = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
        if _explains(payload, target, op, before, after):
            return {"pending_id": rec.get("id"), "origin": rec.get("origin")}
    return None


def _remember_pending(conn: sqlite3.Connection, home: HermesHome, now: float) -> None:
    """Keep a copy of each staged pending write (so a later apply by Hermes can be attributed);
    forget copies older than 7 days whose file is gone."""
    d = home.pending_dir  # <home>/pending/memory
    try:
        names = [n for n in os.listdir(d) if n.endswith(".json")]
    except OSError:
        names = []
    known = {r[0] for r in conn.execute("SELECT path FROM history_seen WHERE kind = 'pending'")}
    for n in names:
        rel = f"pending/memory/{n}"
        if rel in known:
            continue
        try:
            rec = json.loads(read_regular_bytes(d / n).decode("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict):
            conn.execute("INSERT OR REPLACE INTO history_seen (path, kind, target, stamp, content, seen_at) "
                         "VALUES (?, 'pending', ?, NULL, ?, ?)",
                         (rel, str((rec.get("payload") or {}).get("target") or "memory"),
                          json.dumps(rec, ensure_ascii=False), now))
    conn.execute("DELETE FROM history_seen WHERE kind = 'pending' AND seen_at < ?", (now - 7 * 86400.0,))


# ---------------------------------------------------------------------------------------
# Observation


class _Recorder:
    def __init__(self, conn: sqlite3.Connection, home: HermesHome, db: StateDB | None) -> None:
        self.conn, self.home, self.db = conn, home, db
        self.ids: list[int] = []

    def add(self, kind: str, target: str | None, rel: str, op: str, before: str | None, after: str | None,
            since: float | None, until: float, actor: str, attribution: dict[str, Any], *,
            scope: str | None = None, session_id: str | None = None) -> None:
        cur = self.conn.execute(
            "INSERT INTO history (kind, target, scope, session_id, path, op, before, after, since, until, actor,"
            " attribution) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (kind, target, scope, session_id, rel, op, before, after, since, until, actor,
             json.dumps(attribution, ensure_ascii=False)))
        self.ids.append(int(cur.lastrowid))

    def external_memory(self, target: str, rel: str, old: str, new: str, since: float | None, until: float) -> None:
        for op, b, a in diff_entries(parse_entries(old), parse_entries(new)):
            attr = _pending_attribution(self.conn, self.home, target, op, b, a)
            actor = "pending"
            if attr is None:
                attr = _hermes_attribution(self.db, target, op, b, a, since, until)
                actor = "hermes"
            if attr is None:
                attr, actor = {}, "external"
            self.add("memory", target, rel, op, b, a, since, until, actor, attr)


def _observe_memory(rec: _Recorder, f: _File, seen: sqlite3.Row, content: str, now: float) -> int:
    """Chain memdeck's journal rows from the last seen content; returns the new journal mark."""
    cur = seen["content"] or ""
    since = seen["seen_at"]
    mark = seen["journal_mark"]
    rows = rec.conn.execute("SELECT * FROM journal WHERE kind = 'memory' AND target = ? AND journal_id > ? AND state = 'done' "
                            "ORDER BY journal_id", (f.target, mark)).fetchall()
    for r in rows:
        mark = max(mark, r["journal_id"])
        if r["after"] is None:
            continue
        rb, ra = canonical_memory(r["before"]), canonical_memory(r["after"])
        if cur == ra:
            continue  # already seen (observed between the file write and the row's commit)
        if rb != cur:
            rec.external_memory(f.target, f.rel, cur, rb, since, r["ts"])
        for op, b, a in diff_entries(parse_entries(rb), parse_entries(ra)):
            rec.add("memory", f.target, f.rel, op, b, a, since, r["ts"], r["actor"],
                    {"journal_id": r["journal_id"], "op": r["op"]})
        cur, since = ra, r["ts"]
    if cur != content:
        rec.external_memory(f.target, f.rel, cur, content, since, now)
    return mark


def _observe_anchor(rec: _Recorder, f: _File, session_id: str | None, seen: sqlite3.Row, content: str,
                    now: float) -> int:
    since = seen["seen_at"]
    mark = seen["journal_mark"]
    for op, b, a, aid in diff_anchors(seen["content"], content):
        r = rec.conn.execute(
            "SELECT journal_id, actor, op FROM journal WHERE kind = 'anchor' AND state = 'done' AND journal_id > ? "
            "AND ts >= ? AND ts <= ? "
            "AND json_extract(detail, '$.anchor_id') = ? ORDER BY journal_id DESC LIMIT 1",
            (mark, since - 1.0, now + 1.0, aid)).fetchone()
        if r is not None:
            rec.add("anchor", None, f.rel, op, b, a, since, now, r["actor"],
                    {"anchor_id": aid, "journal_id": r["journal_id"], "op": r["op"]}, scope=f.scope,
                    session_id=session_id)
        else:
            rec.add("anchor", None, f.rel, op, b, a, since, now, "external", {"anchor_id": aid}, scope=f.scope,
                    session_id=session_id)
    top = rec.conn.execute("SELECT MAX(journal_id) FROM journal WHERE state = 'done'").fetchone()[0]
    return max(mark, top or 0)


def _trim(conn: sqlite3.Connection, keep: int) -> None:
    top = conn.execute("SELECT MAX(change_id) FROM history").fetchone()[0]
    if top is not None and top > keep:
        conn.execute("DELETE FROM history WHERE change_id <= ?", (top - keep,))


def observe(home: HermesHome, *, conn: sqlite3.Connection | None = None, statedb: StateDB | None = None,
            now: float | None = None, only_kinds: Iterable[str] | None = None, keep: int = MAX_CHANGES) -> list[Change]:
    """Record what changed in the watched files since memdeck last saw them.

    Cheap when nothing changed: one ``stat`` per watched file and one SELECT; files whose stamp
    is unchanged are not read. A file seen for the first time is only recorded (baseline).
    An unreadable file (not UTF-8, not JSON) is skipped and looked at again next time.

    Args:
        home: the Hermes home. conn: a memdeck.db connection (else one is opened; memdeck.db
            is created if missing). statedb: a reader for attribution (else one is opened on
            ``home.state_db`` when an external change needs it). now: epoch seconds (default
            ``time.time()``). only_kinds: restrict to ``memory`` and/or ``anchor`` files.
            keep: the bound on stored changes.

    Returns:
        the changes recorded by this call, oldest first.

    Raises:
        deckdb.DeckDBError: memdeck.db is unusable or locked past its busy timeout.
    """
    kinds = set(only_kinds) if only_kinds is not None else {"memory", "anchor"}
    files = [f for f in watched_files(home) if f.kind in kinds]
    stamps = {f.rel: _stamp(f.path) for f in files}
    if conn is None and not any((home.path / m).exists() for m in HOME_MARKERS):
        return []  # never create memdeck.db in a directory that is not a Hermes home (a mistyped --home)
    with deckdb.opened(home, conn) as c:
        seen = {r["path"]: r for r in c.execute("SELECT * FROM history_seen WHERE kind != 'pending'")}
        # files seen before that are gone now (a deleted session file) count as changed
        gone = [r for rel, r in seen.items() if rel not in stamps and r["kind"] in kinds and r["stamp"] is not None]
        changed = [f for f in files if rel_changed(seen.get(f.rel), stamps[f.rel])]
        for r in gone:
            changed.append(_File(r["path"], r["kind"], r["target"], home.path / r["path"], r["session_id"]))
        pending_dir = home.pending_dir
        if not changed:
            if "memory" in kinds and pending_dir.is_dir():
                with deckdb.transaction(c):
                    _remember_pending(c, home, time.time() if now is None else now)
            return []
        t = time.time() if now is None else now
        own_db = statedb is None and home.state_db.exists()
        db = StateDB(home.state_db) if own_db else statedb
        try:
            rec = _Recorder(c, home, db)
            with deckdb.transaction(c):
                for f in changed:
                    _observe_one(rec, f, t)
                _remember_pending(c, home, t)
                if rec.ids:
                    _trim(c, keep)
            if not rec.ids:
                return []
            q = f"SELECT * FROM history WHERE change_id IN ({','.join('?' * len(rec.ids))}) ORDER BY change_id"
            return [_row(r) for r in c.execute(q, rec.ids)]
        finally:
            if own_db and db is not None:
                db.close()


def rel_changed(seen: sqlite3.Row | None, stamp: str | None) -> bool:
    return seen is None or seen["stamp"] != stamp


def _observe_one(rec: _Recorder, f: _File, now: float) -> None:
    c = rec.conn
    seen = c.execute("SELECT * FROM history_seen WHERE path = ?", (f.rel,)).fetchone()  # re-read under the lock
    stamp = _stamp(f.path)
    if seen is not None and seen["stamp"] == stamp:
        return  # another observer recorded it meanwhile
    try:
        raw = _read(f.path)
        session_id: str | None = None
        if f.kind == "memory":
            content = canonical_memory(raw)
        else:
            session_id, content = canonical_anchors(raw, f.rel, seen["session_id"] if seen is not None else f.session_id)
    except (OSError, UnicodeError, ValueError):
        return  # unreadable now: look again next time
    mark = seen["journal_mark"] if seen is not None else (c.execute("SELECT MAX(journal_id) FROM journal WHERE state = 'done'").fetchone()[0] or 0)
    if seen is not None and seen["content"] != content:
        if f.kind == "memory":
            mark = _observe_memory(rec, f, seen, content, now)
        else:
            mark = _observe_anchor(rec, f, session_id, seen, content, now)
    elif seen is not None and f.kind == "memory":
        top = c.execute("SELECT MAX(journal_id) FROM journal WHERE kind = 'memory' AND target = ? AND state = 'done'", (f.target,)).fetchone()[0]
        mark = max(mark, top or 0)
    if raw is None and f.kind == "anchor":
        c.execute("DELETE FROM history_seen WHERE path = ?", (f.rel,))
        return
    c.execute("INSERT OR REPLACE INTO history_seen (path, kind, target, scope, session_id, stamp, content, seen_at,"
              " journal_mark) VALUES (?,?,?,?,?,?,?,?,?)",
              (f.rel, f.kind, f.target, f.scope, session_id, stamp, content, now, mark))


def reattribute(home: HermesHome, *, conn: sqlite3.Connection | None = None, statedb: StateDB | None = None,
                now: float | None = None, window: float = REATTRIBUTE_WINDOW) -> int:
    """Retry the state.db attribution of ``external`` memory changes younger than ``window`` s
    (Hermes may write the tool call after memdeck saw its effect). Returns how many were updated."""
    t = time.time() if now is None else now
    with deckdb.opened(home, conn) as c:
        rows = c.execute("SELECT * FROM history WHERE actor = 'external' AND kind = 'memory' AND until >= ?",
                         (t - window,)).fetchall()
        if not rows or (statedb is None and not home.state_db.exists()):
            return 0
        db = statedb or StateDB(home.state_db)
        try:
            done = 0
            for r in rows:
                ch = _row(r)
                attr = _hermes_attribution(db, ch.target, ch.op, ch.before, ch.after, ch.since, ch.until)
                if attr is not None:
                    c.execute("UPDATE history SET actor = 'hermes', attribution = ? WHERE change_id = ? AND actor = 'external'",
                              (json.dumps(attr, ensure_ascii=False), ch.change_id))
                    done += 1
            return done
        finally:
            if statedb is None:
                db.close()


# ---------------------------------------------------------------------------------------
# Reading


def list_changes(home: HermesHome, *, target: str | None = None, session_id: str | None = None,
                 scope: str | None = None, since: float | None = None, limit: int = 50,
                 conn: sqlite3.Connection | None = None) -> list[Change]:
    """The most recent ``limit`` changes, newest first, optionally only of one memory ``target``
    (``memory``/``user``), of one MemLock ``session_id``'s file, of one anchor ``scope``
    (``session``/``global``: ``global`` = the pins in ``persist/``), and/or with
    ``until >= since`` (epoch seconds). The filters combine with AND.

    Returns ``[]`` when memdeck.db does not exist yet. Uses the primary key (and
    ``history_target_idx`` / ``history_session_idx``), so the cost does not grow with the history.
    """
    if conn is None and not deckdb.db_path(home).exists():
        return []
    q, args = "SELECT * FROM history", []
    where = []
    for col, val in (("target", target), ("session_id", session_id), ("scope", scope)):
        if val is not None:
            where.append(f"{col} = ?")
            args.append(val)
    if since is not None:
        where.append("until >= ?")
        args.append(float(since))
    if where:
        q += " WHERE " + " AND ".join(where)
    q += " ORDER BY change_id DESC LIMIT ?"
    args.append(int(limit))
    with deckdb.opened(home, conn) as c:
        return [_row(r) for r in c.execute(q, args)]


def get_change(home: HermesHome, change_id: int, *, conn: sqlite3.Connection | None = None) -> Change | None:
    """One change by id, or None."""
    with deckdb.opened(home, conn) as c:
        r = c.execute("SELECT * FROM history WHERE change_id = ?", (int(change_id),)).fetchone()
    return _row(r) if r else None


# ---------------------------------------------------------------------------------------
# Revert


def revert(home: HermesHome, config: Config | None, change_id: int, actor: str = "cli") -> dict[str, Any]:
    """Reverse one change through the core (lock, reload, threat scan, budget), journaled as
    ``op="revert"`` with ``detail.change_id``; the change's ``reverted_by`` is set to that
    journal row. The files are observed first so the check runs against what is on disk.

    Returns:
        ``{"message", "change_id", "journal_id", "kind", "target", "scope", "session_id"}``
        (the change's fields; memory: plus the ``WriteResult`` as ``result``).

    Raises:
        Refused: ``not_found`` (no such change); ``conflict`` (already reverted, or it no longer
            applies: the removed entry is already back, the replaced-with text is gone);
            ``overflow`` (with ``current_entries`` you could archive); ``threat``;
            ``unsupported`` (global pins in ``persist/``: revert them with ``memdeck anchor``).
    """
    config = config or load_config(home)
    observe(home)
    ch = get_change(home, change_id)
    if ch is None:
        raise Refused(f"no change #{change_id} in the history (see `memdeck history`)", code="not_found")
    if ch.reverted_by is not None:
        raise Refused(f"change #{change_id} was already reverted (journal #{ch.reverted_by})", code="conflict")
    detail = {"change_id": ch.change_id, "change_op": ch.op}
    if ch.kind == "memory":
        res = MemoryStore(home, config, actor=actor).revert_entry(ch.target, remove=ch.after, add=ch.before,
                                                                   detail=detail)
        jid = res.journal_id
        out: dict[str, Any] = {"message": f"Reverted change #{ch.change_id} ({ch.op}) in {ch.target}.",
                               "result": res.to_dict()}
    else:
        jid = _revert_anchor(home, config, ch, actor, detail)
        out = {"message": f"Reverted change #{ch.change_id} ({ch.op}) of anchor {ch.anchor_id} in {ch.where}."}
    with deckdb.opened(home) as c, deckdb.transaction(c):
        c.execute("UPDATE history SET reverted_by = ? WHERE change_id = ?", (jid, ch.change_id))
    observe(home)
    out.update({"change_id": ch.change_id, "journal_id": jid, "kind": ch.kind, "target": ch.target, "scope": ch.scope,
                "session_id": ch.session_id})
    return out


def _revert_anchor(home: HermesHome, config: Config, ch: Change, actor: str, detail: dict[str, Any]) -> int:
    if ch.session_id is None or ch.path.startswith("memlock/persist/"):
        raise Refused(f"change #{ch.change_id} is to a global pin in persist/; revert it with `memdeck anchor` commands",
                      code="unsupported")
    aid = ch.anchor_id or ""
    before = json.loads(ch.before) if ch.before else None
    after = json.loads(ch.after) if ch.after else None
    if before:
        _scan_anchor(str(before.get("text", "")), str(before.get("reminder", "")))
    store = AnchorStore(home, config, actor=actor)

    def build(s: SessionAnchors | None) -> AnchorChange:
        assert s is not None
        cur = s.anchors.get(aid)
        if after is None:  # anchor_removed: put it back
            if cur is not None:
                raise Refused(f"cannot revert: anchor {aid} is already back in session {ch.session_id}. Nothing was changed.",
                              code="conflict")
            s.add(Anchor.from_dict({**before, "id": aid, "pinned": True}))
        elif cur is None or _fields(cur.to_dict()) != after:
            raise Refused(f"cannot revert: anchor {aid} in session {ch.session_id} changed since. Nothing was changed.",
                          code="conflict")
        elif before is None:  # anchor_added: take it out
            del s.anchors[aid]
            s.recount()
        else:
            cur.text, cur.reminder = str(before["text"]), str(before["reminder"])
            cur.priority, cur.probes = int(before["priority"]), list(before["probes"])
        return AnchorChange("revert", aid, dict(detail))

    # write-ahead like every anchor writer: intent row, session file, done (AnchorFiles.apply_change)
    made = store.apply_change(ch.session_id, build)
    if made.journal_id is None:
        raise Refused(f"cannot revert: anchor {aid} in session {ch.session_id} already holds what it held before "
                      f"change #{ch.change_id}. Nothing was changed.", code="conflict")
    return made.journal_id


__all__ = ["ANCHOR_OPS", "Change", "MAX_CHANGES", "MEMORY_OPS", "canonical_anchors", "canonical_memory",
           "diff_anchors", "diff_entries", "get_change", "list_changes", "observe", "reattribute", "revert",
           "watched_files"]
