"""The journal: every mutation made through memdeck's core, appended to memdeck.db.

Generic over ``kind`` (``"memory"``, ``"anchor"``): the anchors area records its own rows
with the same :func:`record` and registers an undo handler with
:func:`register_undo_handler`. Rows are never deleted; an undo is itself a row (``op="undo"``,
``detail={"undoes": [ids]}``) and marks the reverted rows' ``undone_by``.

A memory row is inserted in a ``BEGIN IMMEDIATE`` transaction opened *before* the file change
it describes and committed right after it, all while the writer holds the file's lock: the
order of rows for one file is the order of its changes, a locked or unusable memdeck.db
refuses the write before the file is touched, and a failed file write leaves no row. A process
killed between the file write and the commit leaves that one change unjournaled (the file
itself is always consistent); archive/restore use intent records instead (``core/archive.py``).

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


@dataclass(frozen=True)
class JournalEntry:
    """One journal row (see ``core/deckdb.py`` for column meanings).

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "journal_id": self.journal_id, "ts": self.ts, "actor": self.actor, "op": self.op,
            "kind": self.kind, "target": self.target, "before": self.before, "after": self.after,
            "detail": self.detail, "txn": self.txn, "undone_by": self.undone_by,
        }


def _row(r: sqlite3.Row) -> JournalEntry:
    try:
        detail = json.loads(r["detail"] or "{}")
    except ValueError:
        detail = {"_raw": r["detail"]}
    return JournalEntry(r["journal_id"], r["ts"], r["actor"], r["op"], r["kind"], r["target"], r["before"],
                        r["after"], detail if isinstance(detail, dict) else {"_raw": detail}, r["txn"], r["undone_by"])


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

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
        deckdb.DeckDBError / sqlite3.OperationalError: memdeck.db is unusable or stays locked
            past its busy timeout.
    """
    if kind not in KINDS:
        raise ValueError(f"invalid journal kind {kind!r}: use one of {KINDS}")
    with deckdb.opened(home, conn) as c:
        cur = c.execute(
            "INSERT INTO journal (ts, actor, op, kind, target, before, after, detail, txn) VALUES (?,?,?,?,?,?,?,?,?)",
            (time.time() if ts is None else ts, actor, op, kind, target, before, after,
             json.dumps(detail or {}, ensure_ascii=False), txn),
        )
        return int(cur.lastrowid)


def entries(home: HermesHome | Path, limit: int = 50, kind: str | None = None, *, conn: sqlite3.Connection | None = None) -> list[JournalEntry]:
    """The most recent ``limit`` journal rows, newest first (optionally only one ``kind``).

    Returns an empty list when memdeck.db does not exist yet (it is not created by reading).
    """
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        if kind is None:
            rows = c.execute("SELECT * FROM journal ORDER BY journal_id DESC LIMIT ?", (int(limit),)).fetchall()
        else:
            rows = c.execute("SELECT * FROM journal WHERE kind = ? ORDER BY journal_id DESC LIMIT ?", (kind, int(limit))).fetchall()
    return [_row(r) for r in rows]


def db_exists(home: HermesHome | Path) -> bool:
    """Whether memdeck.db exists (reading never creates it)."""
    return deckdb.db_path(home).exists()


def get(home: HermesHome | Path, journal_id: int, *, conn: sqlite3.Connection | None = None) -> JournalEntry | None:
    """One row by id, or None."""
    with deckdb.opened(home, conn) as c:
        r = c.execute("SELECT * FROM journal WHERE journal_id = ?", (journal_id,)).fetchone()
    return _row(r) if r else None


def last_undoable(home: HermesHome | Path, kind: str | None = None, *, conn: sqlite3.Connection | None = None) -> list[JournalEntry]:
    """The rows of the most recent change that can be undone (all rows of its ``txn``).

    Undo rows and rows already undone are skipped, so repeated undos walk back in time.
    ``reject`` rows (pending records, not file changes) are skipped too. Returns ``[]`` when
    nothing is left to undo.
    """
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        q = "SELECT * FROM journal WHERE undone_by IS NULL AND op NOT IN ('undo', 'reject')"
        args: tuple[Any, ...] = ()
        if kind is not None:
            q += " AND kind = ?"
            args = (kind,)
        r = c.execute(q + " ORDER BY journal_id DESC LIMIT 1", args).fetchone()
        if r is None:
            return []
        if r["txn"]:
            rows = c.execute("SELECT * FROM journal WHERE txn = ? ORDER BY journal_id", (r["txn"],)).fetchall()
            return [_row(x) for x in rows]
        return [_row(r)]


def mark_undone(conn: sqlite3.Connection, journal_ids: list[int], undo_id: int) -> None:
    """Set ``undone_by = undo_id`` on the given rows (call inside the undo's transaction)."""
    conn.executemany("UPDATE journal SET undone_by = ? WHERE journal_id = ?", [(undo_id, j) for j in journal_ids])
