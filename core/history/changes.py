"""The change record and reading the history.

A :class:`Change` is one row of memdeck.db's ``history`` table (``core/deck/db.py`` step 2;
step 6: ``target`` is the memory target only, anchor rows carry MemLock's ``scope`` and
``session_id``). :func:`list_changes` and :func:`get_change` read them; they never observe
(``core/history/observation.py`` records, ``list_changes`` only reads what is recorded).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from ..deck import db as deckdb
from ..home import HermesHome

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


def change_from_row(r: sqlite3.Row) -> Change:
    """The :class:`Change` of one ``history`` row (an unreadable ``attribution`` is ``{}``)."""
    try:
        attr = json.loads(r["attribution"] or "{}")
    except ValueError:
        attr = {}
    return Change(r["change_id"], r["kind"], r["target"], r["path"], r["op"], r["before"], r["after"], r["since"],
                  r["until"], r["actor"], attr if isinstance(attr, dict) else {}, r["reverted_by"], r["scope"],
                  r["session_id"])


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
    q = "SELECT * FROM history"
    args: list[str | float | int] = []
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
        return [change_from_row(r) for r in c.execute(q, args)]


def get_change(home: HermesHome, change_id: int, *, conn: sqlite3.Connection | None = None) -> Change | None:
    """One change by id, or None."""
    with deckdb.opened(home, conn) as c:
        r = c.execute("SELECT * FROM history WHERE change_id = ?", (int(change_id),)).fetchone()
    return change_from_row(r) if r else None


@dataclass(frozen=True)
class HistorySummary:
    """The change history in figures (the fleet view and ``memdeck metrics``).

    Attributes:
        total: recorded changes (rows of ``history``; the observer bounds the table, so this can
            go down when old rows are dropped).
        by_actor: actor (``cli``/``tui``/``plugin``/``pending``/``hermes``/``external``/...) ->
            recorded changes, over the same rows.
        last: the newest change, or None when nothing is recorded.
    """

    total: int = 0
    by_actor: dict[str, int] = field(default_factory=dict)
    last: Change | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``changes`` key of ``status --json``: ``{"total": int, "by_actor": {actor: int},
        "last": {"id", "time" (epoch s: the change's ``until``), "actor", "kind", "target",
        "where", "op"} | null}``."""
        last = None
        if self.last is not None:
            c = self.last
            last = {"id": c.change_id, "time": c.until, "actor": c.actor, "kind": c.kind, "target": c.target,
                    "where": c.where, "op": c.op}
        return {"total": self.total, "by_actor": dict(self.by_actor), "last": last}


def history_summary(home: HermesHome, *, conn: sqlite3.Connection | None = None) -> HistorySummary:
    """Count the recorded changes by actor and read the newest one (two indexed queries).

    Returns an empty :class:`HistorySummary` when memdeck.db does not exist yet (nothing is
    created). Raises what :func:`memdeck.core.deck.db.opened` raises for a database that exists
    but cannot be read.
    """
    if conn is None and not deckdb.db_path(home).exists():
        return HistorySummary()
    with deckdb.opened(home, conn) as c:
        counts = {str(a): int(n) for a, n in c.execute("SELECT actor, COUNT(*) FROM history GROUP BY actor ORDER BY actor")}
        r = c.execute("SELECT * FROM history ORDER BY change_id DESC LIMIT 1").fetchone()
    return HistorySummary(total=sum(counts.values()), by_actor=counts, last=change_from_row(r) if r else None)


__all__ = ["ANCHOR_OPS", "Change", "HistorySummary", "MEMORY_OPS", "change_from_row", "get_change", "history_summary",
           "list_changes"]
