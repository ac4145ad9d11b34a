"""Compaction events, reconstructed from state.db's rows (Hermes keeps no event table).

One concept: finding compactions. ``CompactionEventReader`` streams a session's rows in id order
(never a whole session in memory), keeps per-session tracks across refreshes, and caches the full
scan until the database changes; the pure functions below it (``_run_window`` and helpers) find
the in-place events and the rotation events in those rows. The traces are those of Hermes 0.19
``hermes_state.archive_and_compact`` (:4421-4471), ``_insert_message_rows`` (:4273-4357) and
``agent/conversation_compression.py:1200-1349``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ..coerce import number_or_zero
from ..deck.db import load_rotation_events, load_session_track, store_rotation_events, store_session_track
from .compaction import CONTENT_JSON_PREFIX, decode_content, history_reinsert_start, match_summary, message_text
from .connection import FRESH_STAMP_TOLERANCE, StateDBConnection
from .read_ahead import read_ahead
from .records import CompactionEvent, Message


class CompactionEventReader(StateDBConnection):
    """The compaction-event queries of :class:`.statedb.StateDB` (on its connection)."""

    # ------------------------------------------------------------------ compactions

    def compactions(self, session_id: str | None = None) -> list[CompactionEvent]:
        """Compaction events, oldest first.

        With ``session_id``: the events whose ``session_id`` or ``child_session_id`` is that
        session (its in-place compactions, the rotation out of it and the rotation into it).

        **In-place** (Hermes ``archive_and_compact``): one transaction flips every live row to
        ``active=0, compacted=1`` and inserts head + summary + tail as new active rows. For each
        session, a *summary row* is a row whose text :func:`core.compaction.match_summary`
        recognises (current, historical or legacy prefix, or the merge-into-tail
        ``[PRIOR CONTEXT`` shape) and whose content is not a copy of an earlier summary row of
        the session. For the k-th summary row at position p (session rows in id order):

        * *head*: if the summary row is still active, the active rows right before it; otherwise
          the longest run right before it that repeats (role, content) the first rows of the
          previous region (Hermes copies the first ``protect_first_n`` messages);
        * *batch*: the ``compacted = 1`` rows from the previous region's start (or the session
          start) up to the head; ``archived_count`` is its size. A candidate with an empty
          batch is not an in-place event (e.g. the handoff summary of a rotation child);
        * *tail*: the rows after the summary with consecutive global ids (one transaction),
          the same flags, and either a fresh stamp (within :data:`FRESH_STAMP_TOLERANCE` plus
          1e-6 s per row of the summary's stamp: ``_insert_message_rows`` stamps new rows
          ``now + i*1e-6``) or the (role, content) of a batch row (copies keep their stamps).

        Limits: a message appended within ~50 µs of the compaction with a consecutive id, or a
        later message repeating a batch message word for word right after the tail, is counted
        in the tail; a compaction whose summary row was later rewound or deleted is missed; a
        head longer than the previous region cannot be told apart.

        **Rotation**: a session with ``end_reason = 'compression'`` and a child whose
        ``parent_session_id`` points at it (the newest such child); the region after it is the
        child's initial rows (found with the same tail rule from the child's summary row).
        """
        def q(conn: sqlite3.Connection) -> list[CompactionEvent]:
            if session_id is None:
                return list(self._events(conn))
            return self._session_events(conn, session_id)

        return self._run(q, [])

    def region_after(self, event: CompactionEvent) -> list[Message]:
        """The active region as it stood right after ``event``: head + summary + tail rows.

        This is what Hermes sent on the next turn (before that turn's new messages) and so what
        MemLock audited. Ordered by id; ``[]`` when unavailable.
        """
        ids = event.region_ids
        if not ids:
            return []

        def q(conn: sqlite3.Connection) -> list[Message]:
            out: list[Message] = []
            chunk = 500
            for i in range(0, len(ids), chunk):
                part = ids[i:i + chunk]
                out += [self._to_message(r) for r in conn.execute(
                    f"SELECT {self._msg_select()} FROM messages m WHERE m.id IN ({','.join('?' * len(part))})", part)]
            return sorted(out, key=lambda m: m.id)

        return self._run(q, [])

    def _events(self, conn: sqlite3.Connection) -> list[CompactionEvent]:
        """Every compaction event, kept until ``PRAGMA data_version`` changes.

        After a change the work is proportional to what changed (:meth:`_changes`): the sessions
        that gained rows or whose ``sessions`` row changed are read again (their new rows, and
        their window only when a new row could change an event); every other compacted
        session's events are taken as they were, with no query. The first pass on a connection,
        and any pass after rows vanished at the top of the table, asks every compacted session.
        """
        dv = conn.execute("PRAGMA data_version").fetchone()[0]
        if self._events_cache is not None and self._events_cache[0] == dv:
            return self._events_cache[2]
        change = self._changes(conn)
        ids = self._compacted_ids if change is not None and self._compacted_ids is not None else None
        if ids is None or change is None:
            ids = self._compacted_ids = set(self._compacted_session_ids(conn))
            touched = ids
        else:
            touched = change.sessions
            for sid in touched:
                if sid in ids or change.may_compact(sid):
                    if self._is_compacted(conn, sid):
                        ids.add(sid)
                    else:
                        ids.discard(sid)
        events: list[CompactionEvent] = []
        for sid in sorted(ids):
            track = self._tracks.get(sid)
            if (sid not in touched and change is not None and track is not None and self._tracks_conn is conn
                    and track.seen_top >= change.since):
                track.data_version = int(dv)  # no new row, same sessions row: its events stand
                track.seen_top = change.top
                events += track.events
            else:
                events += self._inplace_events(conn, sid)
        events += self._rotation_events(conn, None)
        events.sort(key=lambda e: (e.time, e.session_id, e.region_first_id or 0))
        self._events_cache = (dv, 0, events)
        return events

    def _changes(self, conn: sqlite3.Connection) -> _Changes | None:
        """What changed in state.db since the last call on this connection, or None when that is
        not known (the first call, another connection, or rows vanished at the top).

        Two reads, both proportional to the change: the rows with ``id`` above the highest id
        seen last time (``SEARCH messages USING INTEGER PRIMARY KEY (rowid>?)``, the same on
        every Hermes schema; only their session, flags and content are read) and the
        ``sessions`` rows' ``rewind_count``, ``message_count``, ``ended_at``, ``end_reason``
        and ``parent_session_id`` (a rewind, a /new, a rotation or a pruned session changes
        them). Not seen: a row rewritten or deleted in place in a session that gains no row
        and whose ``sessions`` row stays the same (Hermes does neither: ``rewind_to_message``
        bumps ``rewind_count``, ``replace_messages`` and ``archive_and_compact`` insert rows).
        """
        top = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])
        scols = [c for c in ("rewind_count", "message_count", "ended_at", "end_reason", "parent_session_id") if c in self._scols]
        sigs = {str(r[0]): tuple(r[1:]) for r in conn.execute(f"SELECT {', '.join(['id', *scols])} FROM sessions")}
        last = self._change_state
        self._change_state = (conn, top, sigs)
        if last is None or last[0] is not conn or top < last[1]:
            return None
        cols = self._row_columns(("session_id", "active", "compacted", "content"))
        new = conn.execute(f"SELECT {cols} FROM messages WHERE id > ? AND id <= ?", (last[1], top)).fetchall() if top > last[1] else []
        suspects: set[str] = set()
        if new:
            tx = _Texts([(None, None, r[3]) for r in new], self._row_text)
            for i, r in enumerate(new):
                if not r[1] or r[2] or (tx.may_be_summary(i) and match_summary(tx.text(i)) is not None):
                    suspects.add(str(r[0]))
        old = last[2]
        touched = {str(r[0]) for r in new} | {k for k in sigs.keys() | old.keys() if sigs.get(k) != old.get(k)}
        return _Changes(since=last[1], top=top, sessions=touched, suspects=suspects)

    def _is_compacted(self, conn: sqlite3.Connection, session_id: str) -> bool:
        """Whether ``session_id`` belongs to :meth:`_compacted_session_ids` (one indexed probe:
        Hermes' ``idx_messages_session_active``, or ``idx_messages_session`` on older schemas,
        where a compacted session's oldest rows are its compacted ones)."""
        if not self.has_compacted:
            return False
        if self._session_active_index and "active" in self._mcols:
            sql = ("SELECT 1 FROM sessions s WHERE s.id = ? AND EXISTS (SELECT 1 FROM messages m"
                   " WHERE m.session_id = s.id AND m.active = 0 AND m.compacted = 1)")
        else:
            sql = "SELECT 1 FROM messages WHERE session_id = ? AND compacted = 1 LIMIT 1"
        return conn.execute(sql, (session_id,)).fetchone() is not None

    def _compacted_session_ids(self, conn: sqlite3.Connection) -> list[str]:
        """Ids of the sessions holding ``compacted = 1`` rows, sorted.

        With an index on ``messages(session_id, active, ...)`` (Hermes 0.19
        ``idx_messages_session_active``) this is one index probe per session: Hermes'
        ``archive_and_compact`` sets ``active = 0, compacted = 1`` together
        (hermes_state.py:4456), so only the session's ``active = 0`` rows are looked at.
        Without that index (older schemas) it is a scan of ``messages``.
        """
        if not self.has_compacted:
            return []
        if self._session_active_index and "active" in self._mcols:
            sql = ("SELECT s.id FROM sessions s WHERE EXISTS (SELECT 1 FROM messages m"
                   " WHERE m.session_id = s.id AND m.active = 0 AND m.compacted = 1)")
        else:
            sql = "SELECT DISTINCT session_id FROM messages WHERE compacted = 1"
        return sorted(str(r[0]) for r in conn.execute(sql) if r[0] is not None)

    def _session_events(self, conn: sqlite3.Connection, session_id: str) -> list[CompactionEvent]:
        events = self._inplace_events(conn, session_id) if self.has_compacted else []
        events += [e for e in self._rotation_events(conn, session_id)]
        events.sort(key=lambda e: (e.time, e.region_first_id or 0))
        return events

    def _session_rows(self, conn: sqlite3.Connection, session_id: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in conn.execute(
            f"SELECT {self._row_columns()} FROM messages WHERE session_id = ? ORDER BY id", (session_id,))]

    #: What a column missing from an older schema reads as (a row is live, not compacted, unstamped).
    _COLUMN_DEFAULTS = {"active": "1", "compacted": "0", "timestamp": "0.0"}

    def _row_columns(self, names: Sequence[str] = ("id", "role", "content", "active", "compacted", "timestamp")) -> str:
        """The SQL select list of ``names`` from ``messages`` (default: a :data:`_Row`), each
        missing column replaced by its :attr:`_COLUMN_DEFAULTS` value (or NULL)."""
        return ", ".join(c if c in self._mcols else self._COLUMN_DEFAULTS.get(c, "NULL") for c in names)

    @staticmethod
    def _row_text(content: Any) -> str:
        if isinstance(content, bytes):
            content = content.decode("utf-8", "replace")
        return message_text(decode_content(content))

    def _inplace_events(self, conn: sqlite3.Connection, session_id: str) -> list[CompactionEvent]:
        return list(self._tracked_events(conn, session_id))

    #: Rows read per statement while streaming a session (bounds the time between progress calls).
    STREAM_CHUNK_IDS = 20_000

    #: Rows per batch handed to the reconstruction (a list per ``fetchmany``: no Python step per row).
    STREAM_BATCH_ROWS = 2048

    def _stream_batches(self, conn: sqlite3.Connection, session_id: str, from_id: int,
                        progress: Callable[[int, int], None] | None = None, *, top: int | None = None,
                        first_scan: bool = False) -> Iterable[list[_Row]]:
        """A session's rows with ``id >= from_id`` in id order, streamed in batches (lists of
        at most :attr:`STREAM_BATCH_ROWS` rows).

        Read through the primary key (``id`` ranges) with the session test made unindexable
        (``+session_id``), so SQLite walks the table b-tree in id order: no temp b-tree sort,
        nothing written to disk (Hermes' ``idx_messages_session(session_id, timestamp)`` would
        deliver timestamp order and force a sort of the whole session). Rows of other
        sessions in the range are skipped by SQLite without reading their content.
        ``progress(done_ids, total_ids)`` is called before the first chunk (``done_ids`` 0) and
        between chunks; it may raise to abort. ``top``: the highest id to read (default: the
        table's highest id now).
        A long ``first_scan`` (a session's first reconstruction) reads the file ahead meanwhile
        (:mod:`.read_ahead`); the reads of a refresh never do.
        """
        if top is None:
            top = self._top_id(conn)
        sql = f"SELECT {self._row_columns()} FROM messages WHERE id >= ? AND id < ? AND +session_id = ? ORDER BY id"
        lo = int(from_id)
        total = max(0, top - lo + 1)
        if progress is not None:  # before any reading: a caller may stop a long read right here
            progress(0, total)
        with read_ahead(self.path, total if first_scan else 0):  # a long first scan: warm the page cache
            while lo <= top:
                hi = min(lo + self.STREAM_CHUNK_IDS, top + 1)  # never past top: the rows above are not asked for
                cur = conn.execute(sql, (lo, hi, session_id))
                while batch := cur.fetchmany(self.STREAM_BATCH_ROWS):
                    yield batch
                if progress is not None:
                    progress(min(hi, top + 1) - int(from_id), total)
                lo = hi

    #: A walk of more ids than this asks first where the session's rows end (:meth:`_session_end`).
    LONG_WALK_IDS = 50_000

    def _session_end(self, conn: sqlite3.Connection, session_id: str, from_id: int, top: int,
                     track: _Track | None = None) -> int:
        """Where a read of the session's rows from ``from_id`` may stop: ``top`` for a short walk,
        else the session's highest row id (``MAX(id)`` through Hermes' ``idx_messages_session``:
        the session's own index entries, no table row). A later process resuming an older
        session's stored track at its checkpoint walked every id above it to the top of the
        table (at 1M rows, each older session read the table's upper part again). A stored
        ``track`` that had to ask is stored again after its run (with the end found: see
        :meth:`_stored_end`)."""
        if top - from_id <= self.LONG_WALK_IDS:
            return top
        if track is not None and track.loaded:
            track.resave = True  # a later process asked the long way: store where the session ends now
        row = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
        return min(top, int(row[0])) if row is not None and row[0] is not None else from_id - 1

    def _stored_end(self, conn: sqlite3.Connection, session_id: str, track: _Track, top: int) -> int | None:
        """The session's highest row id as a stored track recorded it (``last_id``), when it
        still holds; None when it may not (the caller asks :meth:`_session_end`).

        Only for a track loaded from memdeck.db and not yet read in this process. It holds when
        the session's ``message_count`` is what it was when the track was stored and no active
        row of the session lies above ``last_id``: every Hermes 0.17-0.22 writer of a row inserts
        an active row (``append_message``, ``_insert_message_rows`` for ``archive_and_compact``
        and ``replace_messages``) and sets ``message_count``; a row leaves the active set only
        by a compaction (which inserts the active rows after it) or a rewind (``rewind_count``,
        part of the track's signature: such a track is not loaded). Two index probes: the
        ``sessions`` row by its key and ``MAX(id)`` of the session's *active* rows through
        ``idx_messages_session_active`` (an ended compacted session's last region, tens of
        entries). Hermes 0.19 has no ``(session_id, id)`` index, so ``MAX(id)`` over all the
        session's rows walks all its index entries (~3 MB per older session at 1M rows)."""
        if (track.stored_count is None or not track.loaded or not track.last_id or "message_count" not in self._scols
                or not self._session_active_index or "active" not in self._mcols):
            return None
        row = conn.execute("SELECT message_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None or row[0] != track.stored_count:
            return None
        live_top = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = ? AND active = 1", (session_id,)).fetchone()
        if live_top is not None and live_top[0] is not None and int(live_top[0]) > track.last_id:
            return None
        return min(top, track.last_id)

    def _stored_window_holds(self, conn: sqlite3.Connection, session_id: str, track: _Track) -> bool:
        """Whether a stored track's window is as it was stored (its signature, :meth:`_window_sig`,
        the test :meth:`_appended_only` makes in a running process), so its stored ``pending``
        events stand without reading the window. Only after :meth:`_stored_end` said the session
        has no row above ``last_id``; not seen, as there: a live row rewritten in place to content
        of exactly the same byte length."""
        if track.stored_pending is None or track.window is None:
            return False
        return self._window_sig(conn, session_id, track.window_start_id, track.last_id) == track.window

    def _message_count(self, conn: sqlite3.Connection, session_id: str) -> int | None:
        """``sessions.message_count`` of ``session_id`` (None without the column or the row)."""
        if "message_count" not in self._scols:
            return None
        row = conn.execute("SELECT message_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return int(row[0]) if row is not None and isinstance(row[0], int) else None

    @staticmethod
    def _top_id(conn: sqlite3.Connection) -> int:
        """state.db's highest row id now (0 when empty): one primary-key probe."""
        return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])

    def _session_sig(self, conn: sqlite3.Connection, session_id: str) -> tuple[Any, ...]:
        if "rewind_count" not in self._scols:
            return ()
        row = conn.execute("SELECT rewind_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return tuple(row) if row else ()

    def _tracked_events(self, conn: sqlite3.Connection, session_id: str) -> list[CompactionEvent]:
        """The session's in-place events, found incrementally (see :class:`_Track`).

        First call per session: one streamed pass over its rows, holding only the rows from
        the last-but-one compaction on. Later calls with an unchanged ``PRAGMA data_version``
        return the kept events; when the session only gained rows that cannot change an event,
        only those rows are read (:meth:`_appended_only`); otherwise only the window (the rows
        from the checkpoint's region start, usually the last two compactions' regions plus new
        rows) is re-read with its current flags. A rewind (``rewind_count`` changed) or vanished rows rebuild from
        scratch. The result equals the full-scan rule of :meth:`compactions`.
        """
        dv = int(conn.execute("PRAGMA data_version").fetchone()[0])
        track = self._tracks.get(session_id)
        if track is not None and track.data_version == dv and self._tracks_conn is conn:
            return track.events
        sig = self._session_sig(conn, session_id)
        if track is None or track.sig != sig:
            track = None
        if track is None and session_id not in self._tracks_tried:
            self._tracks_tried.add(session_id)
            track = self._load_track(conn, session_id, sig)
        for _attempt in range(2):
            fresh = track is None
            t = track if track is not None else _Track(sig=sig)
            n_final = len(t.final)
            try:
                # read ahead only on the session's first scan in this process (a rebuild after a
                # rewind reads pages this process has read before)
                self._advance(conn, session_id, t, progress=self.progress if fresh else None,
                              first_scan=fresh and session_id not in self._tracks)
            except _Rebuild:
                track = None
                continue
            t.data_version = dv
            t.loaded = False
            self._tracks[session_id] = t
            self._tracks_conn = conn
            if len(t.final) > n_final or t.resave or (fresh and t.ckpt is not None):  # new, or newly final
                t.resave = False
                self._save_track(conn, session_id, t)
            return t.events
        return []

    def _load_track(self, conn: sqlite3.Connection, session_id: str, sig: tuple[Any, ...]) -> _Track | None:
        """The session's track stored in memdeck.db by an earlier process, or None.

        Used only when it still applies to this state.db: same format version
        (:data:`TRACK_VERSION`), same rewind signature, its first row id still a row of the
        session, and its checkpoint summary row still there with the same (role, content) hash
        (a state.db replaced by another file, a rewind, or a rewritten checkpoint row all fail
        one of these). Rows from the checkpoint's region start on are re-read by ``_advance``,
        whose :class:`_Rebuild` covers rows vanished there. Never raises.
        """
        if self.track_home is None:
            return None
        rec = load_session_track(self.track_home, session_id)
        if rec is None:
            return None
        try:
            if int(rec["version"]) != TRACK_VERSION or json.loads(str(rec["sig"])) != _jsonable(sig):  # type: ignore[call-overload]
                return None
            first = conn.execute("SELECT session_id FROM messages WHERE id = ?", (int(rec["first_id"]),)).fetchone()  # type: ignore[call-overload]
            if first is None or str(first[0]) != session_id:
                return None
            row = conn.execute("SELECT session_id, role, content FROM messages WHERE id = ?",
                               (int(rec["ckpt_id"]),)).fetchone()  # type: ignore[call-overload]
            if row is None or str(row[0]) != session_id or _row_hash(row[1], row[2]) != rec["ckpt_hash"]:
                return None
            t = _track_from_json(str(rec["track"]), sig)
        except (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError):
            return None
        if t.ckpt is None or t.ckpt.summary_message_id != int(rec["ckpt_id"]) or t.first_id != int(rec["first_id"]):  # type: ignore[call-overload]
            return None
        return t

    def _save_track(self, conn: sqlite3.Connection, session_id: str, track: _Track) -> None:
        """Store ``track`` (without ``pending``) into an existing memdeck.db; never raises."""
        ck = track.ckpt
        if self.track_home is None or ck is None or ck.summary_message_id is None or not track.first_id:
            return
        try:
            row = conn.execute("SELECT role, content FROM messages WHERE id = ?", (int(ck.summary_message_id),)).fetchone()
        except sqlite3.Error:
            return
        if row is None:
            return
        try:  # read after the rows: a row appended in between leaves an active row above last_id (see _stored_end)
            count = self._message_count(conn, session_id)
        except sqlite3.Error:
            count = None
        store_session_track(self.track_home, session_id, version=TRACK_VERSION, first_id=track.first_id,
                            ckpt_id=int(ck.summary_message_id), ckpt_hash=_row_hash(row[0], row[1]),
                            sig=json.dumps(_jsonable(track.sig)), track=_track_to_json(track, count), saved_at=time.time())

    @staticmethod
    def _first_row_id(conn: sqlite3.Connection, session_id: str) -> int | None:
        """The session's lowest row id (None when it has no rows): where a read with no checkpoint
        starts. Through Hermes' ``messages(session_id, ...)`` indexes this costs the session's
        own index entries (~50 ms for a 1M-row session), where a primary-key walk from id 0
        would cost every row of the table before it (a new session after ``/new`` on a
        long-lived home: the whole table, on every refresh)."""
        row = conn.execute("SELECT MIN(id) FROM messages WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    def _window_sig(self, conn: sqlite3.Connection, session_id: str, first_id: int, last_id: int) -> tuple[int, int, int, int]:
        """:func:`_rows_sig` of the session's active rows with ``first_id <= id <= last_id``,
        computed by SQLite (nothing is decoded in Python): through Hermes'
        ``idx_messages_session_active(session_id, active, timestamp)`` (every Hermes 0.17-0.22),
        so only the active rows are looked up, the pages :meth:`SessionReader.active_region`
        reads in the same refresh; without that index, through the primary key over the range."""
        compacted = "compacted" if "compacted" in self._mcols else "0"
        cols = f"COUNT(*), TOTAL(id), TOTAL({compacted}), TOTAL(length(CAST(content AS BLOB)))"
        if "active" not in self._mcols:  # every row is live
            sql = f"SELECT {cols} FROM messages WHERE id >= ? AND id <= ? AND +session_id = ?"
        elif self._session_active_index:
            sql = f"SELECT {cols} FROM messages WHERE session_id = ? AND active = 1 AND id >= ? AND id <= ?"
            row = conn.execute(sql, (session_id, first_id, last_id)).fetchone()
            return (int(row[0]), int(row[1]), int(row[2]), int(row[3]))
        else:
            sql = f"SELECT {cols} FROM messages WHERE id >= ? AND id <= ? AND +session_id = ? AND active = 1"
        row = conn.execute(sql, (first_id, last_id, session_id)).fetchone()
        return (int(row[0]), int(row[1]), int(row[2]), int(row[3]))

    def _appended_only(self, conn: sqlite3.Connection, session_id: str, track: _Track) -> bool:
        """Advance ``track`` without re-reading its window when the session only gained rows
        that cannot change any event; False (``track`` untouched) when the window must be re-read.

        The events depend on the window's rows, their flags, order and content. Hermes changes
        only live rows in place (a compaction or a rewind flips them, 0.22's
        ``set_user_message_content`` and ``clean-markers`` rewrite their content,
        ``deactivate_message`` clears one, ``replace_messages`` deletes them), never an archived
        one. When the window's active rows are the same (their count, the sum of their ids, their
        compacted flags and content bytes: :meth:`_window_sig`) and every new
        row is an active, uncompacted row that cannot be a summary and does not continue the
        newest event's tail (the rule of :func:`_tail_end`: it would need the next consecutive
        id), the window run would find the same events: only ``last_id`` moves. Not seen: a
        rewrite to content of exactly the same byte length; the next window run (any change
        of flags, e.g. the next compaction) reads it.
        """
        if track.window is None or not track.last_id:
            return False
        if self._window_sig(conn, session_id, track.window_start_id, track.last_id) != track.window:
            return False
        top = self._top_id(conn)
        # rows of the session between last_id and seen_top do not exist (seen_top: see _Track)
        lo = max(track.last_id, track.seen_top) + 1
        new = [r for batch in self._stream_batches(conn, session_id, lo, top=self._session_end(conn, session_id, lo, top, track))
               for r in batch]
        if not new:
            track.seen_top = top
            return True
        tx = _Texts(new, self._row_text)
        if any(not r[3] or r[4] or tx.may_be_summary(i) for i, r in enumerate(new)):
            return False
        last = track.pending[-1] if track.pending else track.ckpt
        if last is not None and last.region_last_id == track.last_id and int(new[0][0]) == track.last_id + 1:
            return False  # the newest event's tail might continue into the new rows
        added = _rows_sig(new)
        track.last_id = int(new[-1][0])
        track.seen_top = top
        track.window = tuple(a + b for a, b in zip(track.window, added))  # type: ignore[assignment]
        return True

    def _advance(self, conn: sqlite3.Connection, session_id: str, track: _Track,
                 progress: Callable[[int, int], None] | None = None, *, first_scan: bool = False) -> None:
        top = self._top_id(conn)
        if track.loaded:  # a later process
            if track.stored_count is None or track.stored_pending is None:
                track.resave = True  # stored before these facts were kept: store them after this run
            else:
                track.pending = list(track.stored_pending)
                end = self._stored_end(conn, session_id, track, top)
                if end == track.last_id and self._stored_window_holds(conn, session_id, track):
                    track.seen_top = top
                    return  # the session is as its stored track left it: no row read
        if self._appended_only(conn, session_id, track):
            return
        buf: list[_Row] = []
        trim_at = 4096
        start = track.window_start_id or self._first_row_id(conn, session_id)
        end = self._session_end(conn, session_id, start, top, track) if start is not None else None
        batches = (self._stream_batches(conn, session_id, start, progress, top=end,
                                        first_scan=first_scan) if start is not None else ())
        for batch in batches:
            if not track.first_id and not track.ckpt_start_id:
                track.first_id = int(batch[0][0])  # streamed from the start: the session's first row
            buf += batch
            if len(buf) >= trim_at:
                keep = _run_window(session_id, buf, self._row_text, track, complete=False)
                if keep:
                    del buf[:keep]
                trim_at = max(4096, 2 * len(buf))
        if track.ckpt is not None and (not buf or int(buf[0][0]) != track.ckpt_start_id):
            raise _Rebuild()
        _run_window(session_id, buf, self._row_text, track, complete=True)
        track.last_id = int(buf[-1][0]) if buf else 0
        track.seen_top = top
        track.window = _rows_sig([r for r in buf if int(r[0]) >= track.ckpt_start_id])

    def _rotation_events(self, conn: sqlite3.Connection, session_id: str | None) -> list[CompactionEvent]:
        """The rotation events (all, or those of ``session_id``), each pair reconstructed once.

        An event whose child has a row after its handoff region is final: the region cannot
        grow by appended rows (its end is where that row broke the run). It is kept with what
        could still change it: the parent's end, the child's start, both sessions'
        ``rewind_count`` (a rewind flips flags), any new row of the parent, and any new row of
        the child that is not a plain appended one (an in-place compaction or a
        ``replace_messages`` writes a summary row; :meth:`_forget_touched_rotations` looks at
        the rows above the highest id seen so far once, by one range read). An open region (every child row so
        far belongs to the handoff) is kept in this process until either session gains a row
        (a rotation right after a rotation leaves an ended child open for good: reading both
        sessions on every refresh cost the parent's whole history). Rows rewritten in place without a
        new row (Hermes 0.22 ``set_user_message_content``) are not seen, as for the in-place
        history before a checkpoint. Final events are stored in memdeck.db for later
        processes (:meth:`_stored_rotation`).
        """
        if not {"parent_session_id", "end_reason"} <= self._scols:
            return []
        top = self._forget_touched_rotations(conn)
        rewinds = ", p.rewind_count, c.rewind_count" if "rewind_count" in self._scols else ", 0, 0"
        sql = (f"SELECT p.id, p.ended_at, c.id, c.started_at{rewinds} FROM sessions p JOIN sessions c"
               " ON c.parent_session_id = p.id WHERE p.end_reason = 'compression'")
        params: tuple[Any, ...] = ()
        if session_id is not None:
            sql += " AND (p.id = ? OR c.id = ?)"
            params = (session_id, session_id)
        best: dict[str, tuple[Any, ...]] = {}
        for pid, ended, cid, cstart, p_rewinds, c_rewinds in conn.execute(sql + " ORDER BY c.started_at", params):
            best[str(pid)] = (pid, ended, cid, cstart, (ended, cstart, p_rewinds, c_rewinds))  # newest child wins
        out = []
        to_store: list[dict[str, object]] = []
        for pid, ended, cid, cstart, sig in best.values():
            key = (str(pid), str(cid))
            kept = self._rotations.get(key)
            if kept is None or kept[0] != sig:
                kept = self._stored_rotation(conn, key, sig)
            if kept is not None and kept[0] == sig:
                self._rotations[key] = kept
                out.append(kept[1])
                continue
            still_open = self._rotations_open.get(key)
            if still_open is not None and still_open[0] == sig:  # neither session gained a row since
                out.append(still_open[1])
                continue
            parent_rows = self._session_rows(conn, str(pid))
            live_parent = [r for r in parent_rows if r[3]]
            child_rows = self._session_rows(conn, str(cid))
            region, match, summary_id = _initial_region(child_rows, self._row_text, live_parent)
            t = number_or_zero(ended) if ended is not None else number_or_zero(cstart)
            event = CompactionEvent(
                session_id=str(pid), time=t, mode="rotation", summary_message_id=summary_id,
                kind=match.kind if match else None, merged=bool(match and match.merged),
                summary_hash=match.body_hash if match else None, archived_count=len(live_parent),
                child_session_id=str(cid), region_first_id=region[0] if region else None,
                region_last_id=region[-1] if region else None, index=1, region_ids=tuple(region),
            )
            self._rotations_open.pop(key, None)
            if not (region and len(region) < len(child_rows)):  # open: kept until either session gains a row
                self._rotations_open[key] = (sig, event)
            if region and len(region) < len(child_rows):  # a row after the handoff: final
                self._rotations[key] = (sig, event)
                check = child_rows[0]
                rec = {"parent_id": key[0], "child_id": key[1], "version": ROTATION_VERSION,
                       "sig": json.dumps(_jsonable(sig)), "check_id": int(check[0]),
                       "check_hash": _row_hash(check[1], check[2]), "seen_top": top,
                       "event": json.dumps(_event_to_json(event))}
                if not _same_stored(self._rotations_stored.get(key) if self._rotations_stored else None, rec):
                    to_store.append(rec)  # unchanged ones are not written again (nothing written while watching)
            out.append(event)
        if to_store and self.track_home is not None:
            if store_rotation_events(self.track_home, to_store, saved_at=time.time()) and self._rotations_stored is not None:
                for r in to_store:
                    key = (str(r["parent_id"]), str(r["child_id"]))
                    self._rotations_stored[key] = r
                    self._rotations_stale.discard(key)
        return out

    def _forget_touched_rotations(self, conn: sqlite3.Connection) -> int:
        """Drop the kept and stored rotation events that rows added since the last call may
        change (any new row of the parent; a new row of the child that is not a plain appended
        one: inactive, compacted or possibly a summary); returns state.db's highest row id now
        (the rows read after this see at least it)."""
        top = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])
        last = self._rotations_top
        if last is not None and top < last:  # rows at the end vanished: trust nothing kept
            self._rotations.clear()
            self._rotations_open.clear()
            self._rotations_stale.update(self._rotations_stored or {})
        elif last is not None and top > last and (self._rotations or self._rotations_stored or self._rotations_open):
            cols = self._row_columns(("session_id", "active", "compacted", "content"))
            new = conn.execute(f"SELECT {cols} FROM messages WHERE id > ?", (last,)).fetchall()
            tx = _Texts([(None, None, r[3]) for r in new], self._row_text)
            any_row = {str(r[0]) for r in new}
            # a plain appended row (live, not compacted, cannot be a summary) leaves a final
            # region as it is; an in-place compaction or a replace_messages writes a summary row
            changed = {str(r[0]) for i, r in enumerate(new) if not r[1] or r[2] or tx.may_be_summary(i)}
            for key in [k for k in self._rotations if k[0] in any_row or k[1] in changed]:
                del self._rotations[key]
            for key in [k for k in self._rotations_open if k[0] in any_row or k[1] in any_row]:
                del self._rotations_open[key]
            self._rotations_stale.update(k for k in self._rotations_stored or {} if k[0] in any_row or k[1] in changed)
        self._rotations_top = top
        return top

    def _stored_rotation(self, conn: sqlite3.Connection, key: tuple[str, str],
                         sig: tuple[Any, ...]) -> tuple[tuple[Any, ...], CompactionEvent] | None:
        """The final rotation event of the pair ``key`` stored in memdeck.db by an earlier
        process, as ``(sig, event)``, or None. Used only when it still applies to this
        state.db: same format (:data:`ROTATION_VERSION`), same ``sig``, the child's first row
        still there with the same (role, content) hash (a state.db replaced by another file
        fails it), and no row of either session with an id above the ``seen_top`` it was
        built at (the rows added since the oldest stored event are read once, their session
        only). memdeck.db is read once per connection. Never raises."""
        if self.track_home is None:
            return None
        if self._rotations_stored is None:
            stored = load_rotation_events(self.track_home)
            self._rotations_stored, self._rotations_newest = stored, {}
            tops = [top for r in stored.values() if isinstance(top := r.get("seen_top"), int)]
            if tops:
                try:
                    # GROUP BY +session_id: grouped in a temp b-tree over the id range; with a bare
                    # session_id SQLite scans Hermes' whole session index instead (40 ms at 1M rows)
                    self._rotations_newest = {str(r[0]): int(r[1]) for r in conn.execute(
                        "SELECT session_id, MAX(id) FROM messages WHERE id > ? GROUP BY +session_id", (min(tops),))}
                except sqlite3.Error:
                    self._rotations_stored = {}
        rec = self._rotations_stored.get(key)
        if rec is None or key in self._rotations_stale:
            return None
        try:
            seen_top = int(rec["seen_top"])  # type: ignore[call-overload]
            if any(self._rotations_newest.get(s, 0) > seen_top for s in key):
                return None
            if int(rec["version"]) != ROTATION_VERSION or json.loads(str(rec["sig"])) != _jsonable(sig):  # type: ignore[call-overload]
                return None
            row = conn.execute("SELECT session_id, role, content FROM messages WHERE id = ?",
                               (int(rec["check_id"]),)).fetchone()  # type: ignore[call-overload]
            if row is None or str(row[0]) != key[1] or _row_hash(row[1], row[2]) != rec["check_hash"]:
                return None
            event = _event_from_json(json.loads(str(rec["event"])))
        except (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError):
            return None
        if event.session_id != key[0] or event.child_session_id != key[1] or event.mode != "rotation":
            return None
        return sig, event


# --------------------------------------------------------------------------- reconstruction

_Row = tuple[Any, ...]  # (id, role, content, active, compacted, timestamp)


class _Texts:
    """Per-row texts of one session's rows, decoded at most once and only when asked for.

    Most rows are plain strings that cannot start a summary; :meth:`may_be_summary` rejects
    them from the raw column value without decoding, so a reconstruction decodes only the
    candidate rows and the rows it compares (heads, tails).
    """

    __slots__ = ("rows", "text_of", "_cache")

    def __init__(self, rows: Sequence[_Row], text_of: Callable[[Any], str]) -> None:
        self.rows = rows
        self.text_of = text_of
        self._cache: dict[int, str] = {}

    def text(self, i: int) -> str:
        raw = self.rows[i][2]
        if type(raw) is str and not raw.startswith(CONTENT_JSON_PREFIX):
            return raw  # a plain string is its own text (message_text), nothing to decode
        t = self._cache.get(i)
        if t is None:
            t = self._cache[i] = self.text_of(raw)
        return t

    def key(self, i: int) -> tuple[str, str]:
        return (str(self.rows[i][1]), self.text(i))

    def may_be_summary(self, i: int) -> bool:
        """False only for rows whose text cannot be a summary (a summary starts with ``[``
        or whitespace; ``\\x00json:`` and bytes content are decoded first)."""
        raw = self.rows[i][2]
        if isinstance(raw, str) and not raw.startswith(CONTENT_JSON_PREFIX):
            return raw[:1] in _SUMMARY_FIRST_CHARS and raw != ""
        text = self.text(i)
        if not text or text[:1] not in _SUMMARY_FIRST_CHARS:
            return isinstance(raw, str) and raw.startswith(CONTENT_JSON_PREFIX)
        return True


def _batch_copy_test(copies: _BatchCopies, tx: _Texts) -> Callable[[int], bool]:
    """Whether row ``j`` is a copy of the checkpoint batch ``copies`` (built once per batch)."""
    return lambda j: copies(tx.key(j))


class _BatchCopies:
    """Whether a row repeats the (role, text) of a row of one compaction's batch: the copy test
    of :func:`_tail_end`, exact.

    The batch's texts are kept as a list and a row's text is looked for with ``in``, a scan in C
    that compares lengths before characters, so a miss costs microseconds. A set of the batch
    keys would hash every batch row's text: ~0.5 s of a 1M-row first read, where almost every
    compaction asks once (for the first row after its tail) and gets "no".
    """

    __slots__ = ("tx", "idx", "_texts")

    def __init__(self, tx: _Texts, idx: Sequence[int]) -> None:
        self.tx = tx
        self.idx = idx
        self._texts: list[str] | None = None

    def __call__(self, key: tuple[str, str]) -> bool:
        texts = self._texts
        if texts is None:
            texts = self._texts = self._batch_texts()
        role, text = key
        if text not in texts:
            return False
        rows, start = self.tx.rows, 0
        while True:
            try:
                k = texts.index(text, start)
            except ValueError:
                return False
            if str(rows[self.idx[k]][1]) == role:
                return True
            start = k + 1

    def keys(self) -> Iterable[tuple[str, str]]:
        return (self.tx.key(i) for i in self.idx)

    def _batch_texts(self) -> list[str]:
        rows, prefix = self.tx.rows, CONTENT_JSON_PREFIX
        texts = [rows[i][2] for i in self.idx]
        for k, c in enumerate(texts):
            if type(c) is not str or c.startswith(prefix):  # its text is decoded (json, bytes, NULL)
                texts[k] = self.tx.text(self.idx[k])
        return texts


#: The first character of any text :func:`core.compaction.match_summary` accepts.
_SUMMARY_FIRST_CHARS = "[ \t\n\r"


def _tail_end(rows: Sequence[_Row], p: int, stop: int, is_copy: Callable[[int], bool]) -> int:
    """Index one past the last row of the inserted set that contains the summary at ``p``.

    ``is_copy(j)`` tells whether row ``j`` repeats the (role, text) of a batch row; it is
    called only when a row is not freshly stamped (so the batch keys are built only when needed).
    """
    try:
        ts0 = float(rows[p][5] or 0.0)
    except (TypeError, ValueError):
        ts0 = 0.0
    j = p + 1
    while j < stop:
        prev, cur = rows[j - 1], rows[j]
        if int(cur[0]) != int(prev[0]) + 1 or bool(cur[3]) != bool(rows[p][3]) or bool(cur[4]) != bool(rows[p][4]):
            break
        try:
            ts = float(cur[5] or 0.0)
        except (TypeError, ValueError):
            ts = 0.0
        fresh = abs(ts - ts0) <= FRESH_STAMP_TOLERANCE + 1e-6 * (j - p + 1)
        if not fresh and not is_copy(j):
            break
        j += 1
    return j


def _same_stored(stored: dict[str, object] | None, rec: dict[str, object]) -> bool:
    """Whether the stored rotation record ``stored`` holds the event of ``rec`` for the same
    pair state (version, sig, check row): then it need not be written again. Its older
    ``seen_top`` makes a later process re-read only this pair."""
    return stored is not None and all(stored.get(k) == rec[k] for k in ("version", "sig", "check_id", "check_hash", "event"))


def _rows_sig(rows: Sequence[_Row]) -> tuple[int, int, int, int]:
    """``(active rows, sum of their ids, compacted ones among them, their content bytes)`` of
    ``rows``: what :meth:`CompactionEventReader._window_sig` computes in SQL
    (``length(CAST(content AS BLOB))``: UTF-8 bytes of text, bytes of a blob, digits of an
    integer; NULL counts 0). A float content (never written by Hermes) gives -1, so such a
    window is always read again."""
    rows = [r for r in rows if r[3]]
    n_bytes = 0
    for r in rows:
        c = r[2]
        if c is None:
            continue
        if isinstance(c, str):
            n_bytes += len(c.encode("utf-8", "surrogatepass"))
        elif isinstance(c, (bytes, bytearray, memoryview)):
            n_bytes += len(c)
        elif isinstance(c, int) and not isinstance(c, bool):
            n_bytes += len(str(c))
        else:
            return (len(rows), 0, 0, -1)
    return (len(rows), sum(int(r[0]) for r in rows), sum(1 for r in rows if r[4]), n_bytes)


def _lazy_set(build: Callable[[], set[Any]]) -> Callable[[], set[Any]]:
    box: list[set[Any]] = []

    def get() -> set[Any]:
        if not box:
            box.append(build())
        return box[0]
    return get


def _ids_of(first: int, last: int, ids: list[int]) -> Sequence[int]:
    """A region's ids: a ``range`` when consecutive (one transaction, the usual case), else a tuple."""
    return range(first, last + 1) if len(ids) == last - first + 1 else tuple(ids)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _key_hash(key: tuple[str, str]) -> int:
    """A (role, text) key as a 64-bit int, the same in every process (``hash`` of a str is
    salted per process, and ``ckpt_copies`` is stored in memdeck.db)."""
    role, text = key
    h = hashlib.blake2b(f"{len(role)}:{role}".encode("utf-8", "surrogatepass"), digest_size=8)
    h.update(text.encode("utf-8", "surrogatepass"))
    return int.from_bytes(h.digest(), "big")


#: The format of a stored :class:`_Track` (memdeck.db ``session_tracks.version``); bump it when
#: the track's fields or the reconstruction rule change, and older stored tracks are ignored.
TRACK_VERSION = 1

#: The format of a stored rotation event (memdeck.db ``rotation_events.version``); bump it when
#: :class:`CompactionEvent`'s fields or the rotation rule change.
ROTATION_VERSION = 1


def _row_hash(role: Any, content: Any) -> str:
    """sha256 hex of a row's role and raw content (str, bytes or NULL, told apart)."""
    h = hashlib.sha256()
    h.update(repr(role).encode("utf-8", "surrogatepass") + b"\x00")
    if isinstance(content, bytes):
        h.update(b"b" + content)
    elif content is None:
        h.update(b"n")
    else:
        h.update(b"s" + str(content).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _jsonable(value: Any) -> Any:
    """``value`` as JSON would give it back (tuples as lists)."""
    return json.loads(json.dumps(value))


def _event_to_json(e: CompactionEvent) -> dict[str, Any]:
    d = {f.name: getattr(e, f.name) for f in fields(e) if f.name != "region_ids"}
    ids = e.region_ids
    d["region_ids"] = {"range": [ids.start, ids.stop]} if isinstance(ids, range) and ids.step == 1 else list(ids)
    return d


#: The fields of a stored event besides ``region_ids`` (computed once: ``fields()`` per event was a
#: third of reading a stored track).
_EVENT_FIELDS = frozenset(f.name for f in fields(CompactionEvent)) - {"region_ids"}


def _event_from_json(d: dict[str, Any]) -> CompactionEvent:
    d = dict(d)
    ids = d.pop("region_ids", [])
    region: Sequence[int] = range(int(ids["range"][0]), int(ids["range"][1])) if isinstance(ids, dict) else tuple(int(i) for i in ids)
    if d.keys() != _EVENT_FIELDS:
        raise ValueError("stored compaction event has other fields")
    return CompactionEvent(**d, region_ids=region)


def _track_to_json(t: _Track, message_count: int | None = None) -> str:
    """A track as JSON (``pending`` and ``data_version`` left out: recomputed on every run).
    ``message_count``: the session's ``sessions.message_count`` read after its rows up to
    ``last_id`` (``"count"``: what :meth:`CompactionEventReader._stored_end` checks; absent in
    tracks stored before it, which then ask where the session ends)."""
    d: dict[str, Any] = {
        "final": [_event_to_json(e) for e in t.final],
        "ckpt": _event_to_json(t.ckpt) if t.ckpt is not None else None,
        "ckpt_start_id": t.ckpt_start_id, "ckpt_copies": sorted(t.copy_hashes()),
        "seen": {d.hex(): rid for d, rid in t.seen.items()}, "last_id": t.last_id, "first_id": t.first_id,
    }
    if message_count is not None:
        d["count"] = int(message_count)
        if t.window is not None:  # the events after the checkpoint as of last_id, and the window they came from
            d["pending"] = [_event_to_json(e) for e in t.pending]
            d["window"] = list(t.window)
    return json.dumps(d, separators=(",", ":"))


def _track_from_json(text: str, sig: tuple[Any, ...]) -> _Track:
    """The inverse of :func:`_track_to_json`. Raises ValueError/TypeError/KeyError on a bad shape."""
    d = json.loads(text)
    return _Track(
        final=[_event_from_json(e) for e in d["final"]],
        ckpt=_event_from_json(d["ckpt"]) if d["ckpt"] is not None else None,
        ckpt_start_id=int(d["ckpt_start_id"]), ckpt_copies=frozenset(int(h) for h in d["ckpt_copies"]),
        seen={bytes.fromhex(k): int(v) for k, v in d["seen"].items()}, sig=sig,
        last_id=int(d["last_id"]), first_id=int(d["first_id"]),
        stored_count=int(d["count"]) if isinstance(d.get("count"), int) else None, loaded=True,
        stored_pending=[_event_from_json(e) for e in d["pending"]] if isinstance(d.get("pending"), list) else None,
        window=tuple(int(x) for x in d["window"]) if isinstance(d.get("window"), list) and len(d["window"]) == 4 else None,  # type: ignore[arg-type]
    )


@dataclass
class _Accepted:
    p: int                      # index of the summary row in the window
    match: Any                  # SummaryMatch (None for a carried checkpoint: taken from ``event``)
    start: int                  # index of the region's first row (head start)
    batch: list[int] | None     # indices of the batch rows (None for a carried checkpoint)
    archived: int
    event: CompactionEvent | None = None  # the checkpoint's event, carried from the last run


@dataclass
class _Track:
    """The incremental reconstruction state of one session (see :meth:`StateDB._tracked_events`).

    ``final``: events that can no longer change (their summary row is inactive and a later
    event exists). The *checkpoint* is the last event whose summary row is inactive: its
    region start ``ckpt_start_id`` is where the next run's window begins (rows before it are
    never read again); ``ckpt_copies`` holds the hashes of its batch rows' (role, text) keys
    (its tail test needs them and its batch lies before the window). ``seen``: digests of every
    summary candidate text up to the checkpoint's summary row. ``pending``: the checkpoint and
    the events after it, as of the last run (recomputed on every run). ``first_id``: the
    session's first row id (part of what makes a stored track valid, see ``_load_track``).
    ``ckpt_copies`` are :func:`_key_hash` values (stable across processes: the track is stored);
    a checkpoint found in this process keeps its batch rows instead (``ckpt_batch``) and hashes
    their keys only when the track is stored (:meth:`copy_hashes`): a first build passes
    hundreds of checkpoints and would hash every batch (at 1M rows, 258k blake2b digests, ~0.3 s).
    ``window``: :func:`_rows_sig` of the rows from ``ckpt_start_id`` to ``last_id`` as of the
    last run (not stored): an unchanged one lets a refresh after appended messages skip the
    window (:meth:`CompactionEventReader._appended_only`).
    """

    final: list[CompactionEvent] = field(default_factory=list)
    ckpt: CompactionEvent | None = None
    ckpt_start_id: int = 0
    ckpt_copies: frozenset[int] = frozenset()
    ckpt_batch: _BatchCopies | None = None  # the batch rows themselves, this process only
    seen: dict[bytes, int] = field(default_factory=dict)
    pending: list[CompactionEvent] = field(default_factory=list)
    data_version: int | None = None
    sig: tuple[Any, ...] = ()
    last_id: int = 0
    first_id: int = 0
    window: tuple[int, int, int, int] | None = None  # _rows_sig of the rows from ckpt_start_id to last_id
    #: state.db's highest row id when the session's rows were last read (not stored): the
    #: session has no row with ``last_id < id <= seen_top``, so the next read starts above both
    seen_top: int = 0
    #: the session's ``message_count`` stored with the track (None: not stored, or a track built
    #: in this process): with it a later process knows where the session ends (``_stored_end``)
    stored_count: int | None = None
    #: the events after the checkpoint as stored with ``window`` (None: not stored)
    stored_pending: list[CompactionEvent] | None = None
    #: loaded from memdeck.db and not read yet in this process (cleared by the first run)
    loaded: bool = False
    #: store the track again after this run (its stored end was missing or no longer held)
    resave: bool = False

    @property
    def events(self) -> list[CompactionEvent]:
        return self.final + self.pending

    @property
    def window_start_id(self) -> int:
        """Where the window's rows start: the checkpoint's region start, or before any
        checkpoint the session's first row (0 while that is not known yet)."""
        return self.ckpt_start_id or self.first_id

    def copy_hashes(self) -> frozenset[int]:
        """The checkpoint's batch keys as :func:`_key_hash` values (what is stored)."""
        if self.ckpt_batch is not None:
            return frozenset(_key_hash(k) for k in self.ckpt_batch.keys())  # noqa: SIM118 - _BatchCopies.keys(), not a dict
        return self.ckpt_copies

    def is_checkpoint_copy(self, key: tuple[str, str]) -> bool:
        """Whether ``key`` is the (role, text) of a row of the checkpoint's batch."""
        if self.ckpt_batch is not None:
            return self.ckpt_batch(key)
        return _key_hash(key) in self.ckpt_copies


@dataclass(frozen=True)
class _Changes:
    """What changed since the last :meth:`CompactionEventReader._changes` (ids ``> since`` and
    ``<= top`` are the new rows): ``sessions`` gained rows or had their ``sessions`` row
    changed; ``suspects`` gained an inactive, compacted or summary row (only these can become
    compacted sessions)."""

    since: int
    top: int
    sessions: set[str]
    suspects: set[str]

    def may_compact(self, session_id: str) -> bool:
        return session_id in self.suspects


def _run_window(session_id: str, rows: Sequence[_Row], text_of: Callable[[Any], str], track: _Track,
                *, complete: bool) -> int:
    """Run the in-place reconstruction over ``rows`` (the window: the session's rows from
    ``track.ckpt_start_id`` in id order, read with their current flags) and advance ``track``.

    Exactly the rule of :meth:`StateDB.compactions` restricted to the window: the loop state
    at the checkpoint (its region start as ``lower``, the candidate texts seen so far) is all
    the rule needs from the rows before it. Returns the window index from which rows must be
    kept for the next run (the new checkpoint's region start). With ``complete`` the rows are
    the whole window up to the newest row (``pending`` is set); otherwise only events before
    the new checkpoint are committed (a first build that trims its buffer as it goes).
    """
    tx = _Texts(rows, text_of)
    ck = track.ckpt
    p_ck = -1
    accepted: list[_Accepted] = []
    lower = 0
    if ck is not None and ck.summary_message_id is not None:
        p_ck = bisect.bisect_left(_IdView(rows), int(ck.summary_message_id))
        if p_ck >= len(rows) or int(rows[p_ck][0]) != int(ck.summary_message_id):
            raise _Rebuild()
        accepted.append(_Accepted(p_ck, None, 0, None, ck.archived_count, ck))
    seen_local = set(track.seen)
    new_seen: list[tuple[bytes, int]] = []
    # rows whose raw content might start a summary, tested inline (1M rows: one Python call per
    # row was ~0.4 s); the rest of the test is tx.may_be_summary's
    j_prefix, first = CONTENT_JSON_PREFIX, _SUMMARY_FIRST_CHARS
    maybe = [i for i in range(p_ck + 1, len(rows))
             if type(c := rows[i][2]) is not str or (c[:1] in first and c != "") or c.startswith(j_prefix)]
    for i in maybe:
        if not tx.may_be_summary(i):
            continue
        text = tx.text(i)
        m = match_summary(text)
        if m is None:
            continue
        d = _digest(text)
        if d in seen_local:
            continue
        seen_local.add(d)
        new_seen.append((d, int(rows[i][0])))
        p = i
        if p < lower:
            continue
        if rows[p][3]:  # summary still live: the head is the live run right before it
            h = 0
            while p - h - 1 >= lower and rows[p - h - 1][3]:
                h += 1
        else:
            h = 0
            limit = (p - lower) // 2
            k0 = tx.key(lower) if limit > 0 else None
            for j in range(limit, 0, -1):
                if tx.key(p - j) == k0 and all(tx.key(p - j + t) == tx.key(lower + t) for t in range(1, j)):
                    h = j
                    break
        start = p - h
        # rows archived by a proactive tool-result prune (a re-insert, no summary) are not this event's
        batch = [k for k in range(history_reinsert_start(rows, lower, start), start) if rows[k][4]]
        if not batch:
            continue
        accepted.append(_Accepted(p, m, start, batch, len(batch)))
        lower = start
    # the new checkpoint: the last accepted event whose summary row is inactive
    # (and no live row before its start: only live rows change flags later — a compaction or a
    # rewind flips them — so every row before the checkpoint's start is frozen)
    first_live = next((i for i in range(len(rows)) if rows[i][3]), len(rows))
    new_ck = None
    for k in range(len(accepted) - 1, -1, -1):
        if not rows[accepted[k].p][3] and accepted[k].start <= first_live:
            new_ck = k
            break
    if not complete and new_ck is None:
        return 0
    base = len(track.final)
    events: list[CompactionEvent] = []
    upto = len(accepted) if complete else new_ck
    for k in range(upto if upto is not None else 0):
        a = accepted[k]
        stop = accepted[k + 1].start if k + 1 < len(accepted) else len(rows)
        is_copy: Callable[[int], bool]
        if a.batch is None:
            is_copy = lambda j: track.is_checkpoint_copy(tx.key(j))  # noqa: E731
        else:
            is_copy = _batch_copy_test(_BatchCopies(tx, a.batch), tx)
        end = _tail_end(rows, a.p, stop, is_copy)
        region = [int(rows[i][0]) for i in range(a.start, end)]
        stamps = []
        for i in range(a.start, end):
            try:
                stamps.append(float(rows[i][5] or 0.0))
            except (TypeError, ValueError):
                pass
        if a.match is not None:
            kind, merged, shash = a.match.kind, a.match.merged, a.match.body_hash
        else:
            kind, merged, shash = a.event.kind, a.event.merged, a.event.summary_hash  # type: ignore[union-attr]
        events.append(CompactionEvent(
            session_id=session_id, time=max(stamps) if stamps else 0.0, mode="in_place",
            summary_message_id=int(rows[a.p][0]), kind=kind, merged=merged, summary_hash=shash,
            archived_count=a.archived, region_first_id=region[0], region_last_id=region[-1], index=base + k + 1,
            region_ids=_ids_of(region[0], region[-1], region),
        ))
    keep_from = 0
    if new_ck is not None:
        a = accepted[new_ck]
        if a.batch is not None:  # a new checkpoint: remember its batch keys
            batch_rows = [rows[i] for i in a.batch]  # they leave the buffer: kept for the next run
            track.ckpt_batch = _BatchCopies(_Texts(batch_rows, text_of), range(len(batch_rows)))
            track.ckpt_copies = frozenset()
        if complete:
            track.final += events[:new_ck]
            track.ckpt = events[new_ck]
            track.pending = events[new_ck:]
        else:
            track.final += events
            ck_ev = CompactionEvent(
                session_id=session_id, time=0.0, mode="in_place", summary_message_id=int(rows[a.p][0]),
                kind=a.match.kind if a.match is not None else a.event.kind,  # type: ignore[union-attr]
                merged=a.match.merged if a.match is not None else a.event.merged,  # type: ignore[union-attr]
                summary_hash=a.match.body_hash if a.match is not None else a.event.summary_hash,  # type: ignore[union-attr]
                archived_count=a.archived)
            track.ckpt = ck_ev
            track.pending = []
        track.ckpt_start_id = int(rows[a.start][0])
        limit_id = int(rows[a.p][0])
        for d, rid in new_seen:
            if rid <= limit_id:
                track.seen[d] = rid
        keep_from = a.start
    elif complete:
        track.pending = events
    return keep_from


class _IdView:
    """``rows`` seen as their ids, for :func:`bisect.bisect_left`."""

    __slots__ = ("rows",)

    def __init__(self, rows: Sequence[_Row]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> int:
        return int(self.rows[i][0])


class _Rebuild(Exception):
    """The tracked state no longer matches the database (rows vanished): rebuild from scratch."""


def _reconstruct_inplace(session_id: str, rows: Sequence[_Row], text_of: Callable[[Any], str]) -> list[CompactionEvent]:
    """Every in-place event of a session from all its rows in id order (one window run)."""
    track = _Track()
    _run_window(session_id, rows, text_of, track, complete=True)
    return track.events


def _initial_region(rows: Sequence[_Row], text_of: Callable[[Any], str], parent_live: Sequence[_Row]) -> tuple[list[int], Any, int | None]:
    """A rotation child's initial rows (the compacted handoff) and its summary match."""
    if not rows:
        return [], None, None
    tx = _Texts(rows, text_of)
    p = None
    match = None
    for i in range(min(64, len(rows))):
        m = match_summary(tx.text(i))
        if m is not None:
            p, match = i, m
            break
    if p is None:
        # no summary row: the first run of consecutive ids
        end = 1
        while end < len(rows) and int(rows[end][0]) == int(rows[end - 1][0]) + 1:
            end += 1
        return [int(r[0]) for r in rows[:end]], None, None
    copies = _lazy_set(lambda: {(str(r[1]), text_of(r[2])) for r in parent_live})
    end = _tail_end(rows, p, len(rows), lambda j: tx.key(j) in copies())
    return [int(r[0]) for r in rows[:end]], match, int(rows[p][0])

