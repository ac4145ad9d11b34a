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
(``core/memory/recovery.py`` for memory rows: per entry, with the staged replacement's names
as the witness of the file write; ``core/anchors`` for anchor rows): the change happened ->
``done`` (:func:`settle_intents`, with how it was decided in ``detail["recovery"]``); it never
happened -> the row is deleted (:func:`discard_intents`); recovery cannot tell -> ``unknown``
with the reason (kept and shown, never undone automatically). Readers that
expect a change that happened (:func:`entries` and :func:`last_undoable`, history) read
``done`` rows; :func:`entries` also shows ``unknown`` ones.

``target`` is Hermes' memory target, ``"memory"``/``"user"``, on ``kind="memory"`` rows and None
on anchor rows. ``kind="anchor"`` rows name where the anchor lives in MemLock's terms (columns in
``core/deck/db.py``, migration 6): ``scope`` (``"global"`` when the change covers the durable copy
in ``memlock/persist/``, else ``"session"``) and ``session_id`` (the MemLock session whose file
changed, None when only ``persist/`` changed; ``core/anchors/files.py``); the anchor id is in
``detail["anchor_id"]``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..home import HermesHome
from . import db as deckdb

KINDS = ("memory", "anchor", "request")
#: Hermes' memory targets (``core/home.py`` ``TARGETS``), the only values of ``target``
MEMORY_TARGETS = ("memory", "user")
#: MemLock's anchor scopes (shared/reference/memlock.md §1.3, ``guard_pin`` ``scope``)
SCOPES = ("session", "global")
#: a row's ``state``: committed before its change / the change happened / recovery could not tell
STATES = ("intent", "done", "unknown")


@dataclass(frozen=True)
class JournalRow:
    """One row of memdeck's journal (named apart from a memory *entry*; columns in ``core/deck/db.py``).

    ``ts`` is epoch seconds; ``before``/``after`` are whole-file texts for ``kind="memory"``.
    ``target`` is ``"memory"``/``"user"`` on memory rows, None on anchor rows; ``scope``
    (``"session"``/``"global"``) and ``session_id`` (None for a change to ``persist/`` alone)
    are set on anchor rows only (see the module docstring).
    """

    journal_id: int
    ts: float
    actor: str
    op: str
    kind: str
    target: str | None
    before: str | None
    after: str | None
    detail: dict[str, Any] = field(default_factory=dict)
    txn: str | None = None
    undone_by: int | None = None
    state: str = "done"
    scope: str | None = None
    session_id: str | None = None

    @property
    def memory_target(self) -> str:
        """``target`` of a memory row (``"memory"``/``"user"``). Raises ValueError on a row
        without one (an anchor row): callers check ``kind``/``target`` first."""
        if self.target is None:
            raise ValueError(f"journal #{self.journal_id} names no memory file")
        return self.target

    @property
    def where(self) -> str:
        """The row's place as shown: the memory target, the anchor's session id, or ``global``
        (a change to ``persist/`` alone)."""
        if self.kind == "memory":
            return str(self.target)
        return self.session_id or "global"

    def to_dict(self) -> dict[str, Any]:
        return {
            "journal_id": self.journal_id, "ts": self.ts, "actor": self.actor, "op": self.op,
            "kind": self.kind, "target": self.target, "scope": self.scope,
            "session_id": self.session_id, "before": self.before, "after": self.after,
            "detail": self.detail, "txn": self.txn, "undone_by": self.undone_by, "state": self.state,
        }


def _row(r: sqlite3.Row) -> JournalRow:
    try:
        detail = json.loads(r["detail"] or "{}")
    except ValueError:
        detail = {"_raw": r["detail"]}
    return JournalRow(r["journal_id"], r["ts"], r["actor"], r["op"], r["kind"], r["target"], r["before"],
                        r["after"], detail if isinstance(detail, dict) else {"_raw": detail}, r["txn"], r["undone_by"],
                        r["state"], r["scope"], r["session_id"])


def row_of(r: sqlite3.Row) -> JournalRow:
    """The :class:`JournalRow` of one ``SELECT * FROM journal`` row (a ``detail`` that is not a
    JSON object is kept under ``"_raw"``)."""
    return _row(r)


def record(
    home: HermesHome | Path,
    *,
    actor: str,
    op: str,
    kind: str,
    target: str | None = None,
    scope: str | None = None,
    session_id: str | None = None,
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
        op: the operation name (see ``core/deck/db.py``).
        kind: ``"memory"`` or ``"anchor"``.
        target: ``"memory"``/``"user"``: required on memory rows, None on anchor rows.
        scope: anchor rows only (required there): ``"global"`` when the change covers the
            durable copy in ``persist/``, else ``"session"``.
        session_id: anchor rows only: the MemLock session whose file changed; None when only
            ``persist/`` changed (then ``scope`` must be ``"global"``). The anchor id goes in
            ``detail["anchor_id"]``.
        before, after: the state before/after (memory: whole canonical file text).
        detail: a JSON-serialisable dict (entry id, text, archive id, ...).
        txn: a group id shared by the rows of one multi-target operation.
        conn: an open connection (its transaction, if any, is joined); else one is opened.
        ts: epoch seconds (default: now).
        state: ``"done"``, or ``"intent"`` for a row committed before its file change (then
            :func:`mark_done` it after the change, in the writer's lock).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`, or ``state`` of :data:`STATES`; a
            memory row without a :data:`MEMORY_TARGETS` target or with a scope/session id; an
            anchor row with a target, without a :data:`SCOPES` scope, or with scope
            ``"session"`` and no session id. Nothing is written.
        deckdb.DeckDBError / sqlite3.OperationalError: memdeck.db is unusable or stays locked
            past its busy timeout.
    """
    if kind not in KINDS:
        raise ValueError(f"invalid journal kind {kind!r}: use one of {KINDS}")
    if state not in STATES:
        raise ValueError(f"invalid journal state {state!r}: use one of {STATES}")
    _check_place(kind, target, scope, session_id)
    with deckdb.opened(home, conn) as c:
        cur = c.execute(
            "INSERT INTO journal (ts, actor, op, kind, target, scope, session_id, before, after, detail, txn, state) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (time.time() if ts is None else ts, actor, op, kind, target, scope, session_id, before, after,
             json.dumps(detail or {}, ensure_ascii=False), txn, state),
        )
        return int(cur.lastrowid or 0)


def _check_place(kind: str, target: str | None, scope: str | None, session_id: str | None) -> None:
    """Refuse a row whose target/scope/session id does not fit its ``kind`` (ValueError)."""
    if kind == "memory":
        if target not in MEMORY_TARGETS or scope is not None or session_id is not None:
            raise ValueError(f"a memory journal row has target {MEMORY_TARGETS} and no scope/session_id; got "
                             f"target={target!r}, scope={scope!r}, session_id={session_id!r}")
    elif kind == "request":
        if target is not None or scope != "session" or not session_id:
            raise ValueError(f"a request journal row has no target, scope 'session' and the session id; got "
                             f"target={target!r}, scope={scope!r}, session_id={session_id!r}")
    elif target is not None or scope not in SCOPES or (scope == "session" and not session_id) or session_id == "":
        raise ValueError(f"an anchor journal row has no target, a scope in {SCOPES} and a session id unless the "
                         f"scope is 'global'; got target={target!r}, scope={scope!r}, session_id={session_id!r}")


def entries(home: HermesHome | Path, limit: int = 50, kind: str | None = None, *,
            conn: sqlite3.Connection | None = None) -> list[JournalRow]:
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
    Undo rows and rows already undone are skipped, so repeated undos walk back in time. A
    ``reject`` row (a pending record removed, no file change) is undone by staging the record
    again (``core/memory/pending.py`` ``unreject``). Returns ``[]`` when nothing is left to undo.
    """
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        q = "SELECT * FROM journal WHERE undone_by IS NULL AND state = 'done' AND op != 'undo'"
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


def settle_intents(conn: sqlite3.Connection, state: str, notes: dict[int, dict[str, Any]]) -> None:
    """Resolve ``intent`` rows as recovery decided (call inside a transaction): ``state``
    ``"done"`` or ``"unknown"``, and each row's note (how it was decided, and why; for
    ``unknown`` the reason shown to the user) kept in ``detail["recovery"]``.

    Raises:
        ValueError: ``state`` is not ``done``/``unknown``.
    """
    if state not in ("done", "unknown"):
        raise ValueError(f"an intent settles as 'done' or 'unknown', not {state!r}")
    conn.executemany(
        "UPDATE journal SET state = ?, detail = CASE WHEN json_valid(detail) AND json_type(detail) = 'object' "
        "THEN json_set(detail, '$.recovery', json(?)) ELSE detail END WHERE journal_id = ? AND state = 'intent'",
        [(state, json.dumps(note, ensure_ascii=False), j) for j, note in notes.items()])


def set_texts(conn: sqlite3.Connection, journal_id: int, before: str | None, after: str | None) -> None:
    """Replace an ``intent`` row's ``before``/``after`` texts with what recovery really wrote
    when it finished the change on a file other writers had changed since."""
    conn.execute("UPDATE journal SET before = ?, after = ? WHERE journal_id = ? AND state = 'intent'",
                 (before, after, journal_id))


def discard_intents(conn: sqlite3.Connection, journal_ids: list[int]) -> None:
    """Delete ``intent`` rows whose change never happened (the only rows ever deleted)."""
    conn.executemany("DELETE FROM journal WHERE journal_id = ? AND state = 'intent'", [(j,) for j in journal_ids])


def intents(home: HermesHome | Path, kind: str, target: str | None = None, *,
            conn: sqlite3.Connection | None = None) -> list[JournalRow]:
    """Rows of ``kind`` (and, for memory rows, ``target``) still in ``intent``, oldest first ([]
    without memdeck.db). Anchor rows are grouped by their ``session_id`` by the caller
    (``core/anchors/files.py``)."""
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        q, args = "SELECT * FROM journal WHERE state = 'intent' AND kind = ?", [kind]
        if target is not None:
            q += " AND target = ?"
            args.append(target)
        return [_row(r) for r in c.execute(q + " ORDER BY journal_id", args).fetchall()]
