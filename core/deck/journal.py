"""The journal: every mutation made through memdeck's core, appended to memdeck.db.

Generic over ``kind`` (``"memory"``, ``"anchor"``): the anchors area records its own rows
with the same :func:`record` and registers an undo handler with
:func:`register_undo_handler`. Rows are never deleted; an undo is itself a row (``op="undo"``,
``detail={"undoes": [ids]}``) and marks the reverted rows' ``undone_by``.

Write-ahead (issue 13): every writer commits its row in state ``intent`` *before* the file
change it describes (:func:`record` with ``state="intent"``), replaces the file, then marks the
row ``done`` (:func:`mark_done`), all while it holds the file's lock: the order of rows for one
file is the order of its changes, and a locked or unusable memdeck.db refuses the write before
the file is touched. A process killed between the two commits leaves an ``intent`` row, which
the next write on that file resolves under the same lock by looking at the disk
(:func:`resolve_file_intents` for whole-file rows; ``core/anchors`` for anchor rows): the file
holds the row's ``after`` -> ``done``; its ``before`` -> the row is deleted (the change never
happened); neither -> ``unknown`` (kept and shown, never undone automatically). Readers that
expect a change that happened (:func:`entries` and :func:`last_undoable`, history) read
``done`` rows; :func:`entries` also shows ``unknown`` ones.

``target`` is ``"memory"``/``"user"`` for ``kind="memory"`` rows; for ``kind="anchor"`` rows it
is the MemLock session id whose file changed, or ``"global"`` when only the durable copy in
``persist/`` changed (``core/anchors.py``); the anchor id is in ``detail["anchor_id"]``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import db as deckdb
from ..errors import Refused
from ..home import HermesHome

KINDS = ("memory", "anchor")
#: a row's ``state``: committed before its change / the change happened / recovery could not tell
STATES = ("intent", "done", "unknown")


@dataclass(frozen=True)
class JournalRow:
    """One row of memdeck's journal (named apart from a memory *entry*; columns in ``core/deck/db.py``).

    ``ts`` is epoch seconds; ``before``/``after`` are whole-file texts for ``kind="memory"``.
    """

    journal_id: int
    ts: float
    actor: str
    op: str
    kind: str
    target: str
    before: str | None
    after: str | None
    detail: dict[str, Any] = field(default_factory=dict)
    txn: str | None = None
    undone_by: int | None = None
    state: str = "done"

    def to_dict(self) -> dict[str, Any]:
        return {
            "journal_id": self.journal_id, "ts": self.ts, "actor": self.actor, "op": self.op,
            "kind": self.kind, "target": self.target, "before": self.before, "after": self.after,
            "detail": self.detail, "txn": self.txn, "undone_by": self.undone_by, "state": self.state,
        }


def _row(r: sqlite3.Row) -> JournalRow:
    try:
        detail = json.loads(r["detail"] or "{}")
    except ValueError:
        detail = {"_raw": r["detail"]}
    return JournalRow(r["journal_id"], r["ts"], r["actor"], r["op"], r["kind"], r["target"], r["before"],
                        r["after"], detail if isinstance(detail, dict) else {"_raw": detail}, r["txn"], r["undone_by"],
                        r["state"] if "state" in r.keys() else "done")


def record(
    home: HermesHome | Path,
    *,
    actor: str,
    op: str,
    kind: str,
    target: str,
    before: str | None,
    after: str | None,
    detail: dict[str, Any] | None = None,
    txn: str | None = None,
    conn: sqlite3.Connection | None = None,
    ts: float | None = None,
    state: str = "done",
) -> int:
    """Append one journal row and return its ``journal_id``.

    Args:
        actor: ``"cli"``, ``"tui"`` or ``"plugin"`` (free text is accepted).
        op: the operation name (see ``core/deckdb.py``).
        kind: ``"memory"`` or ``"anchor"``.
        target: ``"memory"``/``"user"`` for memory rows; for anchor rows the session id (or
            ``"global"``), with the anchor id in ``detail["anchor_id"]``.
        before, after: the state before/after (memory: whole canonical file text).
        detail: a JSON-serialisable dict (entry id, text, archive id, ...).
        txn: a group id shared by the rows of one multi-target operation.
        conn: an open connection (its transaction, if any, is joined); else one is opened.
        ts: epoch seconds (default: now).
        state: ``"done"``, or ``"intent"`` for a row committed before its file change (then
            :func:`mark_done` it after the change, in the writer's lock).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`, or ``state`` of :data:`STATES`.
        deckdb.DeckDBError / sqlite3.OperationalError: memdeck.db is unusable or stays locked
            past its busy timeout.
    """
    if kind not in KINDS:
        raise ValueError(f"invalid journal kind {kind!r}: use one of {KINDS}")
    if state not in STATES:
        raise ValueError(f"invalid journal state {state!r}: use one of {STATES}")
    with deckdb.opened(home, conn) as c:
        cur = c.execute(
            "INSERT INTO journal (ts, actor, op, kind, target, before, after, detail, txn, state) "
            "VALUES (?,?,?,?,?,?,?,?,?,?)",
            (time.time() if ts is None else ts, actor, op, kind, target, before, after,
             json.dumps(detail or {}, ensure_ascii=False), txn, state),
        )
        return int(cur.lastrowid)


def entries(home: HermesHome | Path, limit: int = 50, kind: str | None = None, *, conn: sqlite3.Connection | None = None) -> list[JournalRow]:
    """The most recent ``limit`` journal rows, newest first (optionally only one ``kind``):
    ``done`` rows and ``unknown`` ones (a change recovery could not place); never ``intent``
    rows (a change that may not have happened).

    Returns an empty list when memdeck.db does not exist yet (it is not created by reading).
    """
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        q = "SELECT * FROM journal WHERE state != 'intent'"
        if kind is None:
            rows = c.execute(q + " ORDER BY journal_id DESC LIMIT ?", (int(limit),)).fetchall()
        else:
            rows = c.execute(q + " AND kind = ? ORDER BY journal_id DESC LIMIT ?", (kind, int(limit))).fetchall()
    return [_row(r) for r in rows]


def db_exists(home: HermesHome | Path) -> bool:
    """Whether memdeck.db exists (reading never creates it)."""
    return deckdb.db_path(home).exists()


def get(home: HermesHome | Path, journal_id: int, *, conn: sqlite3.Connection | None = None) -> JournalRow | None:
    """One row by id, or None."""
    with deckdb.opened(home, conn) as c:
        r = c.execute("SELECT * FROM journal WHERE journal_id = ?", (journal_id,)).fetchone()
    return _row(r) if r else None


def last_undoable(home: HermesHome | Path, kind: str | None = None, *, conn: sqlite3.Connection | None = None) -> list[JournalRow]:
    """The rows of the most recent change that can be undone (all rows of its ``txn``).

    Only ``done`` rows count (an ``intent`` or ``unknown`` row is never undone automatically).
    Undo rows and rows already undone are skipped, so repeated undos walk back in time.
    ``reject`` rows (pending records, not file changes) are skipped too. Returns ``[]`` when
    nothing is left to undo.
    """
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        q = "SELECT * FROM journal WHERE undone_by IS NULL AND state = 'done' AND op NOT IN ('undo', 'reject')"
        args: tuple[Any, ...] = ()
        if kind is not None:
            q += " AND kind = ?"
            args = (kind,)
        r = c.execute(q + " ORDER BY journal_id DESC LIMIT 1", args).fetchone()
        if r is None:
            return []
        if r["txn"]:
            rows = c.execute("SELECT * FROM journal WHERE txn = ? AND state = 'done' ORDER BY journal_id",
                             (r["txn"],)).fetchall()
            return [_row(x) for x in rows]
        return [_row(r)]


def mark_undone(conn: sqlite3.Connection, journal_ids: list[int], undo_id: int) -> None:
    """Set ``undone_by = undo_id`` on the given rows (call inside the undo's transaction)."""
    conn.executemany("UPDATE journal SET undone_by = ? WHERE journal_id = ?", [(undo_id, j) for j in journal_ids])


def mark_done(conn: sqlite3.Connection, journal_ids: list[int]) -> None:
    """Mark ``intent`` rows ``done`` (call in the writer's second transaction, after the file change)."""
    conn.executemany("UPDATE journal SET state = 'done' WHERE journal_id = ? AND state = 'intent'",
                     [(j,) for j in journal_ids])


def mark_unknown(conn: sqlite3.Connection, journal_ids: list[int]) -> None:
    """Mark ``intent`` rows ``unknown``: the disk holds neither their before nor their after."""
    conn.executemany("UPDATE journal SET state = 'unknown' WHERE journal_id = ? AND state = 'intent'",
                     [(j,) for j in journal_ids])


def discard_intents(conn: sqlite3.Connection, journal_ids: list[int]) -> None:
    """Delete ``intent`` rows whose change never happened (the only rows ever deleted)."""
    conn.executemany("DELETE FROM journal WHERE journal_id = ? AND state = 'intent'", [(j,) for j in journal_ids])


def intents(home: HermesHome | Path, kind: str, target: str | None = None, *,
            conn: sqlite3.Connection | None = None) -> list[JournalRow]:
    """Rows of ``kind`` (and ``target``) still in ``intent``, oldest first ([] without memdeck.db)."""
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        q, args = "SELECT * FROM journal WHERE state = 'intent' AND kind = ?", [kind]
        if target is not None:
            q += " AND target = ?"
            args.append(target)
        return [_row(r) for r in c.execute(q + " ORDER BY journal_id", args).fetchall()]
