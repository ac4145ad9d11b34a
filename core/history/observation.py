"""Observation: recording what changed in the watched files since memdeck last saw them.

memdeck keeps, in memdeck.db's ``history_seen`` (``core/deck/db.py`` step 2), the last canonical
content it saw of every watched file (``core/history/watched.py``). :func:`observe` stats every
watched file (one ``stat`` each, one SELECT) and reads and diffs (``core/history/diff.py``) only
the files whose stamp changed; each difference becomes a ``history`` row with a window
``since .. until`` (epoch seconds: when memdeck last saw the old content .. when it saw the new)
and the best attribution it can make: first memdeck's own journal (memory rows are chained from
the last seen content: a row whose ``before`` equals the current text explains the step to its
``after``; the change gets the row's ``actor`` (cli/tui/plugin), ``journal_id`` and ``op``, and the
``archive_id`` of an archive or a restore; an anchor row explains an anchor's change when it
changed this file (its ``session_id``, or ``persist/`` for a row with ``global_after``) and left the
anchor as the file holds it now: place and content, never the clock), then
``core/history/attribution.py`` (pending, hermes, external). A row still ``intent`` counts too
when the file holds its result: the watcher may look between a writer's file replace and its
``done`` commit (issue 22 #9). :func:`reattribute` retries the state.db attribution of recent
``external`` rows.

The first observation of a file only records it (no change). Changes made while memdeck was
closed are found at the next observation. The history is bounded to :data:`MAX_CHANGES` rows
(the oldest are dropped).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..deck import db as deckdb
from ..home import HOME_MARKERS, HermesHome
from ..sessions.statedb import StateDB
from .attribution import hermes_attribution, pending_attribution, remember_pending
from .watched import WatchedFile, anchor_fields, canonical_anchors, canonical_memory, read_text, stamp_of, watched_files

if TYPE_CHECKING:
    from .changes import Change

# The entry parser, the diff and the Change record are imported where a file changed (issue 23:
# every CLI command observes first, and with nothing changed that is a stat per file and one
# SELECT: a ``recall`` process paid ~25 ms importing the diff machinery it never ran).

#: at most this many change rows are kept (the oldest are dropped first)
MAX_CHANGES = 100_000
#: ``external`` changes younger than this many seconds are re-attributed by :func:`reattribute`
REATTRIBUTE_WINDOW = 900.0


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
        self.ids.append(int(cur.lastrowid or 0))

    def claim_memory(self, target: str, row: sqlite3.Row, before: str, after: str) -> None:
        """Give memdeck's journal row the changes already recorded for it as another writer's:
        its file was observed between the file write and the row's ``done`` (a dashboard
        refresh in that instant, or a write killed there and settled later by recovery,
        ``core/memory/recovery.py``). Matched per entry: the newest unclaimed change of that
        target with the same op and texts, seen no earlier than the row was written."""
        from ..memory.entries import parse_entries
        from .diff import diff_entries

        attr = _journal_attribution(row)
        for op, b, a in diff_entries(parse_entries(before), parse_entries(after)):
            hit = self.conn.execute(
                "SELECT change_id FROM history WHERE kind = 'memory' AND target = ? AND op = ? AND before IS ? "
                "AND after IS ? AND actor IN ('external', 'pending', 'hermes') AND until >= ? "
                "ORDER BY change_id DESC LIMIT 1", (target, op, b, a, row["ts"] - 1.0)).fetchone()
            if hit is not None:
                self.conn.execute("UPDATE history SET actor = ?, attribution = ? WHERE change_id = ?",
                                  (row["actor"], json.dumps(attr, ensure_ascii=False), hit[0]))

    def external_memory(self, target: str, rel: str, old: str, new: str, since: float | None, until: float) -> None:
        from ..memory.entries import parse_entries
        from .diff import diff_entries

        for op, b, a in diff_entries(parse_entries(old), parse_entries(new)):
            attr = pending_attribution(self.conn, self.home, target, op, b, a)
            actor = "pending"
            if attr is None:
                attr = hermes_attribution(self.db, target, op, b, a, since, until)
                actor = "hermes"
            if attr is None:
                attr, actor = {}, "external"
            self.add("memory", target, rel, op, b, a, since, until, actor, attr)


def _journal_attribution(r: sqlite3.Row, **extra: Any) -> dict[str, Any]:
    """The attribution of a change memdeck's journal row ``r`` explains: its id and op, the archive
    row it names (an archive or a restore) and the pending write an approval applied, so History
    can say "archived (archive #3)" or "added (approved 1a2b3c4d)"; ``recovered`` when the row was
    settled by recovery after an interrupted write (``core/memory/recovery.py``)."""
    out: dict[str, Any] = {**extra, "journal_id": r["journal_id"], "op": r["op"]}
    try:
        detail = json.loads(r["detail"] or "{}")
    except ValueError:
        detail = {}
    if isinstance(detail, dict) and isinstance(detail.get("archive_id"), int):
        out["archive_id"] = detail["archive_id"]
    if isinstance(detail, dict) and isinstance(detail.get("pending_id"), str):  # an approval (memory/pending.py)
        out["pending_id"] = detail["pending_id"]
        if detail.get("edited") and isinstance(detail.get("staged_text"), str):  # edited before approval
            out["staged_text"], out["applied_text"] = detail["staged_text"], detail.get("applied_text")
    if isinstance(detail, dict) and isinstance(detail.get("recovery"), dict):  # settled by core/memory/recovery.py
        out["recovered"] = True
    return out


def _observe_memory(rec: _Recorder, f: WatchedFile, seen: sqlite3.Row, content: str, now: float) -> int:
    """Chain memdeck's journal rows from the last seen content; returns the new journal mark.

    A row whose ``before`` is the content seen is memdeck's next change. A row whose effect is
    already in the content seen (``core/memory/effects.py``: its entries are there, per entry,
    whatever else changed) was seen before its row was ``done``: the changes recorded then are
    given to it (:meth:`_Recorder.claim_memory`). Otherwise another writer changed the file
    first: that difference is recorded as theirs, then the row's.
    What the ``done`` rows leave unexplained may be a memdeck write still in flight (its row is
    ``intent`` until the file is replaced, the watcher can look in between): ``intent`` rows whose
    before/after chain from there to the file's content explain it (:func:`_chain_in_flight`).
    The mark stays below them, so when they are ``done`` they are claimed as already seen.
    """
    from ..memory.effects import EntryEffect
    from ..memory.entries import parse_entries
    from .diff import diff_entries

    if f.target is None:  # a memory file always names its target (watched.py)
        return int(seen["journal_mark"])
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
        if rb != cur:
            eff = EntryEffect.of(rb, ra)
            if cur == ra or (eff.entry_level and eff.status(parse_entries(cur)) == "present"):
                rec.claim_memory(f.target, r, rb, ra)  # already seen, before its row was done
                continue
            rec.external_memory(f.target, f.rel, cur, rb, since, _after(since, r["ts"]))
        until = _after(since, r["ts"])
        for op, b, a in diff_entries(parse_entries(rb), parse_entries(ra)):
            rec.add("memory", f.target, f.rel, op, b, a, since, until, r["actor"], _journal_attribution(r))
        cur, since = ra, until
    if cur != content:
        cur, since = _chain_in_flight(rec, f, cur, content, since, mark)
    if cur != content:
        rec.external_memory(f.target, f.rel, cur, content, since, now)
    return mark


def _after(since: float | None, ts: float) -> float:
    """The end of a change's window: a journal row's ``ts`` (when its writer took the lock), never
    before ``since`` (the content seen then did not hold it yet: it landed after). A history row
    never ends before it starts (issue 40 item 4)."""
    return ts if since is None else max(since, ts)


def _chain_in_flight(rec: _Recorder, f: WatchedFile, cur: str, content: str, since: float | None,
                     mark: int) -> tuple[str, float | None]:
    """Record the steps of the ``intent`` rows of ``f.target`` that lead from ``cur`` towards
    ``content`` (memdeck writes whose ``done`` commit has not landed yet, or a killed writer's,
    settled later by recovery); returns the content and time reached, from which the rest is
    another writer's.

    A step counts when its row's ``before`` is the content reached so far and its effect is in
    ``content`` (:class:`..memory.effects.EntryEffect`: its entries are there): so a memdeck
    write followed by a Hermes write on top (a writer killed between its file replace and its
    ``done``) is recorded as two rows, memdeck's and Hermes', never merged into one ``replaced``
    row that a revert would undo both of (issue 40 item 4). A row whose file replace has not
    happened (its effect is not in ``content``) is not a step."""
    from ..memory.effects import EntryEffect
    from ..memory.entries import parse_entries
    from .diff import diff_entries

    rows = rec.conn.execute("SELECT * FROM journal WHERE kind = 'memory' AND target = ? AND journal_id > ? "
                            "AND state = 'intent' ORDER BY journal_id", (f.target, mark)).fetchall()
    steps: list[tuple[sqlite3.Row, str, str]] = []
    at = cur
    final = parse_entries(content)
    for r in rows:
        if r["after"] is None:
            continue
        rb, ra = canonical_memory(r["before"]), canonical_memory(r["after"])
        if rb != at or ra == at:
            continue
        eff = EntryEffect.of(rb, ra)
        if ra != content and not (eff.entry_level and eff.status(final) == "present"):
            continue
        steps.append((r, rb, ra))
        at = ra
    if not steps:
        return cur, since
    for r, rb, ra in steps:
        until = _after(since, r["ts"])
        for op, b, a in diff_entries(parse_entries(rb), parse_entries(ra)):
            rec.add("memory", f.target, f.rel, op, b, a, since, until, r["actor"], _journal_attribution(r))
        since = until
    return at, since


def _anchor_rows(conn: sqlite3.Connection, f: WatchedFile, session_id: str | None, mark: int) -> list[sqlite3.Row]:
    """memdeck's anchor journal rows after ``mark`` that changed file ``f``, newest first, ``done``
    or still in flight (``intent``): a session file's rows name its ``session_id``; a global pin's
    file in ``persist/`` is changed by the rows that carry ``global_before``/``global_after``
    (``core/anchors/files.py`` ``apply_change``; migration 6 of ``core/deck/db.py``)."""
    q = ("SELECT journal_id, actor, op, after, detail FROM journal WHERE kind = 'anchor' AND journal_id > ? "
         "AND state IN ('done', 'intent') AND ")
    if f.scope == "global":
        q += "scope = 'global' AND json_valid(detail) AND json_type(detail, '$.global_after') IS NOT NULL"
        args: tuple[Any, ...] = (mark,)
    else:
        q += "session_id = ?"
        args = (mark, session_id)
    return conn.execute(q + " ORDER BY journal_id DESC", args).fetchall()


def _row_result(r: sqlite3.Row, persist: bool) -> tuple[str | None, dict[str, Any] | None]:
    """``(anchor id, the anchor's fields after row r)`` for the file the row changed (fields None:
    the row removed it), as :func:`anchor_fields` gives them, so they compare with the diff."""
    try:
        detail = json.loads(r["detail"] or "{}")
        after = detail.get("global_after") if persist else (json.loads(r["after"]) if r["after"] else None)
    except (ValueError, AttributeError):
        return None, None
    aid = detail.get("anchor_id") if isinstance(detail, dict) else None
    if persist and isinstance(after, dict):
        aid = str(after.get("id") or aid)
    try:
        return (str(aid) if aid is not None else None), (anchor_fields(after) if isinstance(after, dict) else None)
    except (TypeError, ValueError):
        return None, None


def _observe_anchor(rec: _Recorder, f: WatchedFile, session_id: str | None, seen: sqlite3.Row, content: str,
                    now: float) -> int:
    """Diff one anchor file and attribute each anchor's change: to the newest of memdeck's rows
    for this file (its session, or ``persist/``) and this anchor whose result is what the file
    holds now (matched by place and content, never by clock: the dashboard's clock may be fixed);
    else ``external``. Returns the new journal mark (:func:`_mark_now`)."""
    from .diff import diff_anchors

    since = seen["seen_at"]
    mark = seen["journal_mark"]
    persist = f.scope == "global"
    rows = [(r, *_row_result(r, persist)) for r in _anchor_rows(rec.conn, f, session_id, mark)]
    for op, b, a, aid in diff_anchors(seen["content"], content):
        want = json.loads(a) if a is not None else None
        r = next((r for r, raid, fields in rows if raid == aid and fields == want), None)
        if r is not None:
            rec.add("anchor", None, f.rel, op, b, a, since, now, r["actor"], _journal_attribution(r, anchor_id=aid),
                    scope=f.scope, session_id=session_id)
        else:
            rec.add("anchor", None, f.rel, op, b, a, since, now, "external", {"anchor_id": aid}, scope=f.scope,
                    session_id=session_id)
    return max(mark, _mark_now(rec.conn, f))


def _mark_now(conn: sqlite3.Connection, f: WatchedFile) -> int:
    """The journal mark an observation of ``f`` may advance to (rows at or below it are never
    looked at again for ``f``).

    A memory file: its target's newest ``done`` row (its writers hold the file's lock, so a row
    still in flight is newer than every ``done`` one). An anchor file: the newest ``done`` row,
    but never past an anchor row still in flight (``intent``): rows of different sessions commit
    in any order, and a row whose file change comes after this observation must still be found.
    """
    if f.kind == "memory":
        return conn.execute("SELECT MAX(journal_id) FROM journal WHERE kind = 'memory' AND target = ? AND state = 'done'",
                            (f.target,)).fetchone()[0] or 0
    top = conn.execute("SELECT MAX(journal_id) FROM journal WHERE state = 'done'").fetchone()[0] or 0
    low = conn.execute("SELECT MIN(journal_id) FROM journal WHERE state = 'intent' AND kind = 'anchor'").fetchone()[0]
    return top if low is None else min(top, low - 1)


def _trim(conn: sqlite3.Connection, keep: int) -> None:
    """Drop the oldest changes past the newest ``keep`` (at least the newest one is kept: without
    ``AUTOINCREMENT``, memdeck.db migration 9, a new change's id is the highest id plus one, so
    the newest row is what keeps ids from being used twice)."""
    keep = max(1, int(keep))
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
    stamps = {f.rel: stamp_of(f.path) for f in files}
    if conn is None and not any((home.path / m).exists() for m in HOME_MARKERS):
        return []  # never create memdeck.db in a directory that is not a Hermes home (a mistyped --home)
    with deckdb.opened(home, conn) as c:
        seen = {r["path"]: r for r in c.execute(_SEEN_SQL)}
        # files seen before that are gone now (a deleted session file) count as changed
        gone = [r for rel, r in seen.items() if rel not in stamps and r["kind"] in kinds and r["stamp"] is not None]
        # so do memory files with memdeck changes done since (e.g. settled by recovery after
        # the file was seen): their history rows are claimed for memdeck
        changed = [f for f in files if rel_changed(seen.get(f.rel), stamps[f.rel]) or _journal_ahead(seen.get(f.rel))]
        for r in gone:
            changed.append(WatchedFile(r["path"], r["kind"], r["target"], home.path / r["path"], r["session_id"]))
        pending_dir = home.pending_dir
        if not changed:
            if "memory" in kinds and pending_dir.is_dir():
                with deckdb.transaction(c):
                    remember_pending(c, home, time.time() if now is None else now)
            return []
        own_db = statedb is None and home.state_db.exists()
        db = StateDB(home.state_db) if own_db else statedb
        try:
            rec = _Recorder(c, home, db)
            with deckdb.transaction(c):
                # the clock is read once memdeck.db's write lock is held (BEGIN IMMEDIATE): an
                # observer that waited for another one's transaction must not stamp its rows with
                # a time from before that one's ``seen_at`` (rows that end before they start)
                t = time.time() if now is None else now
                for f in changed:
                    _observe_one(rec, f, t)
                remember_pending(c, home, t)
                if rec.ids:
                    _trim(c, keep)
            if not rec.ids:
                return []
            from .changes import change_from_row

            q = f"SELECT * FROM history WHERE change_id IN ({','.join('?' * len(rec.ids))}) ORDER BY change_id"
            return [change_from_row(r) for r in c.execute(q, rec.ids)]
        finally:
            if own_db and db is not None:
                db.close()


#: every seen file, and for memory files the newest ``done`` journal row of their target (one
#: SELECT; the subquery walks ``journal_state_idx``)
_SEEN_SQL = ("SELECT hs.*, CASE WHEN hs.kind = 'memory' THEN (SELECT MAX(j.journal_id) FROM journal j "
             "WHERE j.state = 'done' AND j.kind = 'memory' AND j.target = hs.target) END AS top_done "
             "FROM history_seen hs WHERE hs.kind != 'pending'")


def rel_changed(seen: sqlite3.Row | None, stamp: str | None) -> bool:
    return seen is None or seen["stamp"] != stamp


def _journal_ahead(seen: sqlite3.Row | None) -> bool:
    """A seen memory file whose target has ``done`` journal rows past its mark."""
    return seen is not None and seen["kind"] == "memory" and (seen["top_done"] or 0) > (seen["journal_mark"] or 0)


def _observe_one(rec: _Recorder, f: WatchedFile, now: float) -> None:
    c = rec.conn
    seen = c.execute(_SEEN_SQL + " AND hs.path = ?", (f.rel,)).fetchone()  # re-read under the lock
    stamp = stamp_of(f.path)
    if seen is not None and seen["stamp"] == stamp and not _journal_ahead(seen):
        return  # another observer recorded it meanwhile
    try:
        raw = read_text(f.path)
        session_id: str | None = None
        if f.kind == "memory":
            content = canonical_memory(raw)
        else:
            session_id, content = canonical_anchors(raw, f.rel, seen["session_id"] if seen is not None else f.session_id)
    except (OSError, UnicodeError, ValueError):
        return  # unreadable now: look again next time
    mark = seen["journal_mark"] if seen is not None else _mark_now(c, f)
    if seen is not None and f.kind == "memory":
        mark = _observe_memory(rec, f, seen, content, now)  # also with the content unchanged: rows done since
    elif seen is not None and seen["content"] != content:
        mark = _observe_anchor(rec, f, session_id, seen, content, now)
    if raw is None and f.kind == "anchor":
        c.execute("DELETE FROM history_seen WHERE path = ?", (f.rel,))
        return
    # an upsert updates the row where it is (one leaf page); INSERT OR REPLACE deleted it and inserted
    # it anew under a new rowid: its old page, its new page, its path index entry and the freelist
    # (page 1) were all written on every change (issue 23: 11 pages per external memory change)
    c.execute("INSERT INTO history_seen (path, kind, target, scope, session_id, stamp, content, seen_at, journal_mark)"
              " VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET kind = excluded.kind,"
              " target = excluded.target, scope = excluded.scope, session_id = excluded.session_id,"
              " stamp = excluded.stamp, content = excluded.content, seen_at = excluded.seen_at,"
              " journal_mark = excluded.journal_mark",
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
        from .changes import change_from_row

        try:
            done = 0
            for r in rows:
                ch = change_from_row(r)
                if ch.target is None:  # kind = 'memory' rows always name their file
                    continue
                attr = hermes_attribution(db, ch.target, ch.op, ch.before, ch.after, ch.since, ch.until)
                if attr is not None:
                    c.execute("UPDATE history SET actor = 'hermes', attribution = ? WHERE change_id = ? AND actor = 'external'",
                              (json.dumps(attr, ensure_ascii=False), ch.change_id))
                    done += 1
            return done
        finally:
            if statedb is None:
                db.close()


__all__ = ["MAX_CHANGES", "REATTRIBUTE_WINDOW", "observe", "reattribute"]
