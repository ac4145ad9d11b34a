"""The archive: entries (or anchors) moved out of their file into memdeck.db, restorable.

Generic table API (any ``kind``; the anchors area reuses it): :func:`insert`,
:func:`set_state`, :func:`get`, :func:`items`, :func:`count`. The memory operations
themselves are ``MemoryStore.archive`` / ``MemoryStore.restore`` (``core/memory/archiving.py``).

Crash safety (archive and restore are atomic with respect to each other). Every step runs
while holding the target file's sidecar lock:

* archive: (1) insert the row with ``state="archiving"`` and commit; (2) atomically rewrite
  the file without the entry; (3) set ``state="archived"`` + journal, commit.
* restore: (1) ``archived`` -> ``restoring``, commit; (2) atomically rewrite the file with the
  entry appended (budget + threat scan first; a refusal returns the row to ``archived``);
  (3) ``restoring`` -> ``restored`` + journal, commit.

A process killed between steps leaves an intent row. :func:`memdeck.core.memory.store.recover_intents` (run by every
archive/restore/listing, under the same lock, so never while a live writer is mid-way)
resolves it by looking at the file: ``archiving`` + entry still in the file -> the row is
deleted (nothing was archived), or, for the intent of an undo of a restore (``restored_at``
kept), set back to ``restored`` (the undo did not happen; issue 13: deleting it lost the entry
once the undo was retried); ``archiving`` + entry gone -> ``archived``; ``restoring`` +
entry in the file -> ``restored``; ``restoring`` + entry absent -> back to ``archived``. So an
entry is never both in the file and ``archived``, and never in neither (unless someone else
removed it from the file, in which case the archive copy is kept).
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
from .journal import SCOPES

STATES = ("archiving", "archived", "restoring", "restored")


@dataclass(frozen=True)
class ArchivedItem:
    """One archive row. ``archived_at``/``restored_at`` are epoch seconds.

    ``target`` is ``"memory"``/``"user"`` on memory rows, None on anchor rows; anchor rows carry
    ``anchor_id``, ``scope`` (``"session"``/``"global"``: a global pin's durable copy was
    archived with it) and ``session_id`` (the MemLock session it was archived from) instead
    (columns in ``core/deck/db.py``, migration 6).
    """

    archive_id: int
    kind: str
    target: str | None
    text: str
    payload: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    actor: str = "cli"
    archived_at: float = 0.0
    state: str = "archived"
    restored_at: float | None = None
    anchor_id: str | None = None
    scope: str | None = None
    session_id: str | None = None

    @property
    def where(self) -> str:
        """The row as listed: the memory target, or the archived anchor's id."""
        return str(self.target if self.kind == "memory" else self.anchor_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "archive_id": self.archive_id, "kind": self.kind, "target": self.target,
            "anchor_id": self.anchor_id, "scope": self.scope, "session_id": self.session_id, "text": self.text,
            "payload": self.payload, "reason": self.reason, "actor": self.actor,
            "archived_at": self.archived_at, "state": self.state, "restored_at": self.restored_at,
        }


def _item(r: sqlite3.Row) -> ArchivedItem:
    try:
        payload = json.loads(r["payload"] or "{}")
    except ValueError:
        payload = {}
    return ArchivedItem(r["archive_id"], r["kind"], r["target"], r["text"], payload if isinstance(payload, dict) else {},
                        r["reason"], r["actor"], r["archived_at"], r["state"], r["restored_at"], r["anchor_id"],
                        r["scope"], r["session_id"])


def insert(conn: sqlite3.Connection, *, kind: str, text: str, actor: str, target: str | None = None,
           anchor_id: str | None = None, scope: str | None = None, session_id: str | None = None, reason: str = "",
           payload: dict[str, Any] | None = None, state: str = "archiving", ts: float | None = None) -> int:
    """Insert an archive row and return its ``archive_id`` (joins ``conn``'s transaction).

    Args:
        target: memory rows: ``"memory"``/``"user"`` (required); None on anchor rows.
        anchor_id, scope, session_id: anchor rows: the anchor id (required), ``"session"`` or
            ``"global"`` (required), the MemLock session it came from; None on memory rows.

    Raises:
        ValueError: ``state`` is not one of :data:`STATES`; the target/anchor fields do not fit
            ``kind`` (nothing is written).
    """
    if state not in STATES:
        raise ValueError(f"invalid archive state {state!r}")
    if kind == "anchor":
        if target is not None or not anchor_id or scope not in SCOPES:
            raise ValueError(f"an anchor archive row has no target, an anchor id and a scope in {SCOPES}; "
                             f"got target={target!r}, anchor_id={anchor_id!r}, scope={scope!r}")
    elif target is None or anchor_id is not None or scope is not None or session_id is not None:
        raise ValueError(f"a {kind} archive row has a target and no anchor fields; got target={target!r}, "
                         f"anchor_id={anchor_id!r}, scope={scope!r}, session_id={session_id!r}")
    cur = conn.execute(
        "INSERT INTO archive (kind, target, anchor_id, scope, session_id, text, payload, reason, actor, archived_at,"
        " state) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (kind, target, anchor_id, scope, session_id, text, json.dumps(payload or {}, ensure_ascii=False), reason or "", actor,
         time.time() if ts is None else ts, state),
    )
    return int(cur.lastrowid or 0)


def set_state(conn: sqlite3.Connection, archive_id: int, state: str, *, expect: str | None = None,
              keep_restored_at: bool = False) -> bool:
    """Set a row's state (``restored`` also stamps ``restored_at``; any other state clears it,
    unless ``keep_restored_at``: the undo of a restore keeps it on its ``archiving`` intent, which
    is how recovery tells that intent from a fresh archive's).

    With ``expect``, only a row currently in that state changes (compare-and-set).

    Returns:
        True when a row changed.
    """
    if state not in STATES:
        raise ValueError(f"invalid archive state {state!r}")
    if keep_restored_at:
        q = "UPDATE archive SET state = ? WHERE archive_id = ?"
        args: tuple[str | float | int | None, ...] = (state, archive_id)
    else:
        restored_at = time.time() if state == "restored" else None
        q = "UPDATE archive SET state = ?, restored_at = ? WHERE archive_id = ?"
        args = (state, restored_at, archive_id)
    if expect is not None:
        q += " AND state = ?"
        args += (expect,)
    return conn.execute(q, args).rowcount > 0


def delete_intent(conn: sqlite3.Connection, archive_id: int) -> bool:
    """Delete a row still in ``archiving`` (an archive that never happened). A row that was
    restored before (``restored_at`` set: the intent of an undo of a restore) is never deleted."""
    return conn.execute("DELETE FROM archive WHERE archive_id = ? AND state = 'archiving' AND restored_at IS NULL",
                        (archive_id,)).rowcount > 0


def get(home: HermesHome | Path, archive_id: int, *, conn: sqlite3.Connection | None = None) -> ArchivedItem | None:
    """One row by id, or None (also None when memdeck.db does not exist)."""
    if conn is None and not deckdb.db_path(home).exists():
        return None
    with deckdb.opened(home, conn) as c:
        r = c.execute("SELECT * FROM archive WHERE archive_id = ?", (int(archive_id),)).fetchone()
    return _item(r) if r else None


def items(home: HermesHome | Path, *, kind: str | None = "memory", state: str | None = "archived",
          limit: int | None = None, conn: sqlite3.Connection | None = None) -> list[ArchivedItem]:
    """Archive rows, newest first, filtered by ``kind`` and ``state`` (None = any)."""
    if conn is None and not deckdb.db_path(home).exists():
        return []
    q = "SELECT * FROM archive WHERE 1=1"
    args: list[Any] = []
    if kind is not None:
        q += " AND kind = ?"
        args.append(kind)
    if state is not None:
        q += " AND state = ?"
        args.append(state)
    q += " ORDER BY archive_id DESC"
    if limit is not None:
        q += " LIMIT ?"
        args.append(int(limit))
    with deckdb.opened(home, conn) as c:
        return [_item(r) for r in c.execute(q, args).fetchall()]


def count(home: HermesHome | Path, *, kind: str | None = "memory", state: str = "archived") -> int:
    """How many rows are in ``state`` (0 when memdeck.db does not exist)."""
    if not deckdb.db_path(home).exists():
        return 0
    with deckdb.opened(home) as c:
        if kind is None:
            return int(c.execute("SELECT COUNT(*) FROM archive WHERE state = ?", (state,)).fetchone()[0])
        return int(c.execute("SELECT COUNT(*) FROM archive WHERE kind = ? AND state = ?", (kind, state)).fetchone()[0])


def unfinished_archive_intents(home: HermesHome | Path, kind: str = "memory", *,
                               conn: sqlite3.Connection | None = None) -> list[ArchivedItem]:
    """Rows left in ``archiving``/``restoring`` (an interrupted archive or restore)."""
    if conn is None and not deckdb.db_path(home).exists():
        return []
    with deckdb.opened(home, conn) as c:
        rows = c.execute("SELECT * FROM archive WHERE kind = ? AND state IN ('archiving','restoring') ORDER BY archive_id",
                         (kind,)).fetchall()
    return [_item(r) for r in rows]


# ---------------------------------------------------------------------------------------
# One-call helpers (own connection + transaction each) for kinds whose write is a single
# file step, e.g. anchors: ``archive_record`` before removing the record, ``discard_record``
# if that removal fails, ``mark_restored`` after putting it back.


def archive_record(home: HermesHome | Path, *, anchor_id: str, payload: dict[str, Any] | None = None,
                   reason: str = "", actor: str = "cli", text: str | None = None) -> int:
    """Insert an ``archived`` anchor row (``kind="anchor"``) for ``anchor_id``.

    ``scope`` and ``session_id`` come from ``payload["scope"]`` (``"global"``, else
    ``"session"``) and ``payload["session_id"]`` (as :meth:`AnchorStore.archive` writes them).
    ``text`` defaults to ``payload["anchor"]["text"]`` when present, else ``anchor_id``.
    Returns the new ``archive_id``.
    """
    pl = payload or {}
    if text is None:
        inner = pl.get("anchor")
        text = str(inner.get("text", anchor_id)) if isinstance(inner, dict) else str(anchor_id)
    scope = "global" if pl.get("scope") == "global" else "session"
    sid = pl.get("session_id")
    with deckdb.opened(home) as c, deckdb.transaction(c):
        return insert(c, kind="anchor", anchor_id=anchor_id, scope=scope, session_id=None if sid is None else str(sid),
                      text=text, actor=actor, reason=reason, payload=payload, state="archived")


def _as_id(archive_id: Any) -> int | None:
    try:
        return int(str(archive_id).strip())
    except (TypeError, ValueError):
        return None


def discard_record(home: HermesHome | Path, archive_id: Any) -> bool:
    """Delete an archive row outright (the archive step it belonged to did not happen)."""
    aid = _as_id(archive_id)
    if aid is None or not deckdb.db_path(home).exists():
        return False
    with deckdb.opened(home) as c, deckdb.transaction(c):
        return c.execute("DELETE FROM archive WHERE archive_id = ?", (aid,)).rowcount > 0


def get_record(home: HermesHome | Path, archive_id: Any, *, kind: str | None = None,
               state: str | None = "archived") -> ArchivedItem | None:
    """The row ``archive_id`` if it has ``kind`` and ``state`` (None = any); else None.

    A non-numeric id gives None rather than an error.
    """
    aid = _as_id(archive_id)
    if aid is None:
        return None
    item = get(home, aid)
    if item is None or (kind is not None and item.kind != kind) or (state is not None and item.state != state):
        return None
    return item


def mark_restored(home: HermesHome | Path, archive_id: Any, *, actor: str = "cli") -> bool:
    """Set an ``archived`` row to ``restored`` (stamps ``restored_at``). Returns True if it changed."""
    aid = _as_id(archive_id)
    if aid is None:
        return False
    with deckdb.opened(home) as c, deckdb.transaction(c):
        return set_state(c, aid, "restored", expect="archived")
