"""What each session was sent: memdeck.db ``live_deliveries`` (migration 10 of
:data:`memdeck.core.deck.db.MIGRATIONS`), one row per session and entry hash.

Every memdeck process and the plugin read the same rows, so a change is delivered once per session
whichever process serves it, and ``memdeck context`` can say "delivered at turn N".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..deck import db as deckdb
from ..home import HermesHome

STATES = ("delivered", "withheld")


@dataclass(frozen=True)
class Delivery:
    """One row: ``session_id``, ``key`` (entry hash), ``target``, ``change``, ``state``
    (:data:`STATES`), ``mode`` (``notice``/``delta``), ``reason`` (why withheld, else None),
    ``turn`` (the session's user turn number), ``turn_id`` (Hermes' turn id or None), ``at`` (epoch s)."""

    session_id: str
    key: str
    target: str
    change: str
    state: str
    mode: str
    reason: str | None
    turn: int | None
    turn_id: str | None
    at: float

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "change": self.change, "state": self.state, "mode": self.mode,
                "reason": self.reason, "turn": self.turn, "turn_id": self.turn_id, "at": self.at}


_COLS = "session_id, entry_hash, target, change, state, mode, reason, turn, turn_id, at"


def _row(r: Any) -> Delivery:
    return Delivery(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5]),
                    None if r[6] is None else str(r[6]), None if r[7] is None else int(r[7]),
                    None if r[8] is None else str(r[8]), float(r[9]))


def load_deliveries(home: HermesHome | Path, session_id: str) -> dict[str, Delivery]:
    """``{entry hash: Delivery}`` of ``session_id``; ``{}`` when memdeck.db does not exist, predates
    migration 10 or cannot be read. Opens memdeck.db read-only: never creates or migrates. Never raises."""
    rows: list[Any] = deckdb.read_quietly(home, lambda conn: conn.execute(
        f"SELECT {_COLS} FROM live_deliveries WHERE session_id = ?", (session_id,)).fetchall(), [])
    return {d.key: d for d in map(_row, rows)}


def load_all(home: HermesHome | Path, session_ids: Iterable[str]) -> Mapping[str, dict[str, Delivery]]:
    """``{session_id: {entry hash: Delivery}}`` for ``session_ids`` (as :func:`load_deliveries`)."""
    return {sid: load_deliveries(home, sid) for sid in session_ids}


def load_recorded(home: HermesHome | Path, state: str | None = None) -> list[Delivery]:
    """Every row of every session (only those of ``state``, one of :data:`STATES`, when given),
    oldest ``at`` first; ``[]`` as :func:`load_deliveries` when memdeck.db cannot be read. Read-only;
    never raises."""
    where, params = ("WHERE state = ?", (state,)) if state is not None else ("", ())
    rows: list[Any] = deckdb.read_quietly(home, lambda conn: conn.execute(
        f"SELECT {_COLS} FROM live_deliveries {where} ORDER BY at, session_id, entry_hash", params).fetchall(), [])
    return [_row(r) for r in rows]


def record(home: HermesHome | Path, rows: Iterable[Delivery], *, timeout: float = 0.5) -> bool:
    """Insert ``rows`` (an existing ``(session_id, entry_hash)`` row is kept: the first delivery
    wins) in one transaction, creating and migrating memdeck.db when needed; ``timeout``: seconds
    to wait for another writer's lock (a hook must not hold the agent's turn). True when written;
    False (never an exception) when memdeck.db is locked, read-only or unusable."""
    rows = list(rows)
    if not rows:
        return True

    def write(conn: sqlite3.Connection) -> None:
        with deckdb.transaction(conn):
            conn.executemany(
                f"INSERT OR IGNORE INTO live_deliveries ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(d.session_id, d.key, d.target, d.change, d.state, d.mode, d.reason, d.turn, d.turn_id, d.at)
                 for d in rows])

    return deckdb.write_quietly(home, write, timeout=timeout)


__all__ = ["STATES", "Delivery", "load_all", "load_deliveries", "load_recorded", "record"]
