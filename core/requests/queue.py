"""The queue of requests to running sessions: memdeck.db ``agent_requests`` (see ``core/deck/db.py``).

A request is queued with its journal row (``kind="request"``, ``op`` ``rebuild`` / ``correction``,
``scope="session"``, the session id) in one transaction, so ``memdeck undo`` (and the dashboard's
``u``) takes back the newest one like any other change: :func:`cancel_rows` turns a ``queued`` row
``cancelled`` and nothing reaches the agent. A row the plugin already claimed is ``delivered`` and
cannot be undone (``Refused(code="conflict")``): what the agent was sent stays sent.

The plugin claims a row with one ``UPDATE ... WHERE state = 'queued'`` (:func:`claim`): whichever
of the claim and the undo commits first wins, so a request is delivered at most once and a cancelled
one never. Reads and writes memdeck.db only.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..deck import db as deckdb
from ..deck import journal
from ..errors import Refused
from ..home import HermesHome

KINDS = ("rebuild", "correction")
STATES = ("queued", "delivered", "cancelled", "failed")
_COLS = "request_id, session_id, kind, text, detail, state, actor, queued_at, journal_id, turn, turn_id, at, reason"


def correction_line(instruction: str) -> str:
    """The one-time correction of a promoted summary line (issue 34 #3), one line:
    ``The instruction '<instruction>' applied to one operation only; it is not a standing rule.``
    (newlines inside the instruction become spaces)."""
    words = " ".join(str(instruction).split())
    return f"The instruction '{words}' applied to one operation only; it is not a standing rule."


@dataclass(frozen=True)
class AgentRequest:
    """One row: ``request_id``; ``session_id``; ``kind`` (:data:`KINDS`); ``text`` (a correction's
    line, None for a rebuild); ``detail`` (JSON object: a rebuild's ``prompt_tokens``, a correction's
    ``compaction_id``/``summary_line``); ``state`` (:data:`STATES`); ``actor``; ``queued_at`` (epoch s);
    ``journal_id``; once delivered: ``turn`` (the session's user turn number), ``turn_id`` (Hermes'),
    ``at`` (epoch s); ``reason`` why it failed."""

    request_id: int
    session_id: str
    kind: str
    text: str | None
    state: str
    actor: str
    queued_at: float
    journal_id: int | None = None
    turn: int | None = None
    turn_id: str | None = None
    at: float | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "session_id": self.session_id, "kind": self.kind, "text": self.text,
                "state": self.state, "actor": self.actor, "queued_at": self.queued_at, "journal_id": self.journal_id,
                "turn": self.turn, "turn_id": self.turn_id, "at": self.at, "reason": self.reason,
                "detail": self.detail}


def _row(r: Any) -> AgentRequest:
    try:
        detail = json.loads(r[4]) if r[4] else {}
    except ValueError:
        detail = {}
    return AgentRequest(int(r[0]), str(r[1]), str(r[2]), None if r[3] is None else str(r[3]), str(r[5]), str(r[6]),
                        float(r[7]), None if r[8] is None else int(r[8]), None if r[9] is None else int(r[9]),
                        None if r[10] is None else str(r[10]), None if r[11] is None else float(r[11]),
                        None if r[12] is None else str(r[12]), detail if isinstance(detail, dict) else {})


def _queue(home: HermesHome | Path, session_id: str, kind: str, text: str | None, detail: dict[str, Any],
           actor: str) -> AgentRequest:
    if not session_id:
        raise Refused("a request needs a session id", code="invalid")
    now = time.time()
    with deckdb.opened(home) as conn, deckdb.transaction(conn):
        dup = conn.execute(f"SELECT {_COLS} FROM agent_requests WHERE session_id = ? AND kind = ? AND state = 'queued' "
                           "AND coalesce(text, '') = ?", (session_id, kind, text or "")).fetchone()
        if dup is not None:
            raise Refused(f"session {session_id} already has this {kind} request queued (#{dup[0]}); it is sent at the "
                          "session's next turn", code="duplicate", request_id=int(dup[0]))
        cur = conn.execute("INSERT INTO agent_requests (session_id, kind, text, detail, state, actor, queued_at) "
                           "VALUES (?, ?, ?, ?, 'queued', ?, ?)",
                           (session_id, kind, text, json.dumps(detail, ensure_ascii=False), actor, now))
        rid = int(cur.lastrowid or 0)
        jid = journal.record(home, actor=actor, op=kind, kind="request", scope="session", session_id=session_id,
                             before=None, after=text, detail={"request_id": rid, **detail}, conn=conn, ts=now)
        conn.execute("UPDATE agent_requests SET journal_id = ? WHERE request_id = ?", (jid, rid))
    return AgentRequest(rid, session_id, kind, text, "queued", actor, now, jid, detail=dict(detail))


def queue_rebuild(home: HermesHome | Path, session_id: str, *, actor: str = "cli",
                  prompt_tokens: int | None = None) -> AgentRequest:
    """Queue a ``rebuild`` of ``session_id``'s system prompt (the caller has checked the session is
    open). ``prompt_tokens``: the prompt's size by Hermes' estimator, the cost stated to the user.

    Raises:
        Refused: ``code="duplicate"`` when one is already queued for the session; ``code="invalid"``
            for an empty session id. deckdb.DeckDBError: memdeck.db is unusable.
    """
    return _queue(home, session_id, "rebuild", None, {"prompt_tokens": prompt_tokens}, actor)


def queue_correction(home: HermesHome | Path, session_id: str, instruction: str, *, actor: str = "cli",
                     compaction_id: Any = None, summary_line: str | None = None) -> AgentRequest:
    """Queue a one-time correction of ``instruction`` (a promoted summary line's source rule) for
    ``session_id``'s next user turn; its text is :func:`correction_line`.

    Raises:
        Refused: ``code="empty"`` for an empty instruction; ``code="duplicate"`` when the same
            correction is already queued for the session. deckdb.DeckDBError: memdeck.db is unusable.
    """
    if not str(instruction).strip():
        raise Refused("a correction needs the instruction it corrects", code="empty")
    return _queue(home, session_id, "correction", correction_line(instruction),
                  {"compaction_id": compaction_id, "summary_line": summary_line}, actor)


def list_requests(home: HermesHome | Path, session_id: str | None = None, *, limit: int = 200) -> list[AgentRequest]:
    """The newest ``limit`` requests (of ``session_id`` when given), newest first; ``[]`` when
    memdeck.db does not exist or predates the queue. Read-only; never raises."""
    where, args = ("WHERE session_id = ?", (session_id,)) if session_id is not None else ("", ())
    rows: list[Any] = deckdb.read_quietly(home, lambda conn: conn.execute(
        f"SELECT {_COLS} FROM agent_requests {where} ORDER BY request_id DESC LIMIT ?", (*args, int(limit))).fetchall(), [])
    return [_row(r) for r in rows]


def queued_for(conn: sqlite3.Connection, session_id: str) -> list[AgentRequest]:
    """The ``queued`` requests of ``session_id``, oldest first, through ``conn`` (the plugin's
    read connection; the partial index ``agent_requests_queued``). Raises sqlite3.Error."""
    rows = conn.execute(f"SELECT {_COLS} FROM agent_requests WHERE session_id = ? AND state = 'queued' "
                        "ORDER BY request_id", (session_id,)).fetchall()
    return [_row(r) for r in rows]


def claim(home: HermesHome | Path, request_id: int, *, turn: int | None, turn_id: str | None,
          at: float | None = None, timeout: float = 0.5) -> bool:
    """Mark a ``queued`` request ``delivered`` at ``turn`` (the plugin, before it sends or acts).
    True when this call claimed it; False when it was cancelled, already delivered, or memdeck.db
    could not be written within ``timeout`` seconds (then nothing is sent: at most once). Never raises."""
    try:
        conn = deckdb.connect(home, timeout=timeout)
    except (deckdb.DeckDBError, OSError, sqlite3.Error):
        return False
    try:
        with deckdb.transaction(conn):
            cur = conn.execute("UPDATE agent_requests SET state = 'delivered', turn = ?, turn_id = ?, at = ? "
                               "WHERE request_id = ? AND state = 'queued'",
                               (turn, turn_id, time.time() if at is None else at, int(request_id)))
            return cur.rowcount == 1
    except (deckdb.DeckDBError, sqlite3.Error, OSError):
        return False
    finally:
        conn.close()


def finish(home: HermesHome | Path, request_id: int, *, failed: str | None = None,
           detail: dict[str, Any] | None = None) -> bool:
    """After a claimed request ran: record ``failed`` (with the reason) or merge ``detail`` (what
    the rebuild did). True when written; never raises."""
    try:
        conn = deckdb.connect(home, timeout=0.5)
    except (deckdb.DeckDBError, OSError, sqlite3.Error):
        return False
    try:
        with deckdb.transaction(conn):
            r = conn.execute("SELECT detail FROM agent_requests WHERE request_id = ?", (int(request_id),)).fetchone()
            try:
                d = json.loads(r[0]) if r and r[0] else {}
            except ValueError:
                d = {}
            d.update(detail or {})
            if failed is not None:
                conn.execute("UPDATE agent_requests SET state = 'failed', reason = ?, detail = ? WHERE request_id = ?",
                             (failed, json.dumps(d, ensure_ascii=False), int(request_id)))
            else:
                conn.execute("UPDATE agent_requests SET detail = ? WHERE request_id = ?",
                             (json.dumps(d, ensure_ascii=False), int(request_id)))
        return True
    except (deckdb.DeckDBError, sqlite3.Error, OSError):
        return False
    finally:
        conn.close()


def cancel_rows(home: HermesHome | Path, rows: Sequence[journal.JournalRow], actor: str) -> dict[str, Any]:
    """Undo of ``kind="request"`` journal rows: each queued request ``cancelled`` and an ``undo``
    journal row marking them undone, in one transaction. Returns ``{"undone": "request",
    "cancelled": [request ids], "session_id", "journal_id"}``.

    Raises:
        Refused: ``code="conflict"`` when a request was already delivered (or failed): what the
            agent was sent stays sent; nothing is changed.
    """
    ids = [int(r.detail.get("request_id", 0)) for r in rows]
    with deckdb.opened(home) as conn, deckdb.transaction(conn):
        for rid in ids:
            st = conn.execute("SELECT state, turn FROM agent_requests WHERE request_id = ?", (rid,)).fetchone()
            if st is None or st[0] != "queued":
                state = "missing" if st is None else st[0]
                when = f" at turn {st[1]}" if st is not None and st[1] is not None else ""
                raise Refused(f"cannot undo request #{rid}: it is {state}{when}; what the agent was sent stays sent",
                              code="conflict", request_id=rid)
        conn.executemany("UPDATE agent_requests SET state = 'cancelled', reason = 'undone before delivery' "
                         "WHERE request_id = ?", [(rid,) for rid in ids])
        sid = rows[0].session_id
        uid = journal.record(home, actor=actor, op="undo", kind="request", scope="session", session_id=sid,
                             before=rows[-1].after, after=None,
                             detail={"undoes": [r.journal_id for r in rows], "request_ids": ids}, conn=conn)
        journal.mark_undone(conn, [r.journal_id for r in rows], uid)
    return {"undone": "request", "cancelled": ids, "session_id": sid, "journal_id": uid}


__all__ = ["KINDS", "STATES", "AgentRequest", "cancel_rows", "claim", "correction_line", "finish", "list_requests",
           "queue_correction", "queue_rebuild", "queued_for"]
