"""Usage over time: the chars of MEMORY.md / USER.md after each recorded change.

memdeck.db keeps the last canonical content it saw of each memory file (``history_seen``) and one
``history`` row per entry added, removed or replaced, by any writer (``core/history/``). The
usage after every change is reconstructed backwards from the content last seen: undo the newest
change, then the one before, ... Entries are a set (Hermes 0.19 ``MemoryStore`` dedupes them on
load, and so do ``parse_entries`` and ``diff_entries``), so each undo is exact and checked: a
row whose entry is not where it must be (``added`` but the text is not in the set) ends the
series there, and the series says so (:attr:`UsageSeries.complete`).

Usage is Hermes' rule (``usage_chars``: the entries joined by ``"\\n§\\n"``, delimiters counted).
A change is drawn at its ``until`` (when memdeck saw the new content; a change by another writer
happened within ``since .. until``). The char limit is not part of the history: the series is
plotted against today's limit.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ..deck import db as deckdb
from ..home import TARGET_FILES, TARGETS, HermesHome
from ..memory.entries import ENTRY_DELIMITER, parse_entries

#: The most history rows one series walks back through (the newest first): a chart is a few
#: hundred columns wide, and the history keeps up to 100,000 rows of every file.
USAGE_CHANGES = 5_000


@dataclass(frozen=True)
class UsagePoint:
    """The usage of one memory file from :attr:`time` until the next point.

    Attributes:
        time: epoch seconds (a change's ``until``; the first point: the oldest change's ``since``,
            when the file held what that change found; the last: when memdeck last looked).
        chars: usage in chars, Hermes' rule (delimiters counted).
        entries: how many entries the file held.
        change_id: the newest ``history`` row this point is after (None for the first point and
            for the last one, the content as last seen).
    """

    time: float
    chars: int
    entries: int
    change_id: int | None = None


@dataclass(frozen=True)
class UsageSeries:
    """The usage of one memory file over time, oldest first.

    Attributes:
        target: ``memory`` or ``user``.
        points: oldest first; empty when memdeck has not seen the file yet.
        complete: False when older changes exist that the series does not reach (more than
            the rows walked, or a row that does not chain with the content after it).
        note: why the series is incomplete or empty, in words ("" otherwise).
    """

    target: str
    points: tuple[UsagePoint, ...] = ()
    complete: bool = True
    note: str = ""


def _chars(n: int, total: int) -> int:
    """Hermes' usage of ``n`` entries of ``total`` chars: they are joined by the delimiter."""
    return total + len(ENTRY_DELIMITER) * (n - 1) if n else 0


def usage_series(home: HermesHome, target: str, *, limit: int = USAGE_CHANGES,
                 conn: sqlite3.Connection | None = None) -> UsageSeries:
    """The usage of ``target``'s file after each of its recorded changes (at most ``limit``,
    the newest), from memdeck.db's change history. Reads only; never observes.

    Args:
        home: the Hermes home. target: ``memory`` or ``user``. limit: the most ``history`` rows
            walked (:data:`USAGE_CHANGES`). conn: a memdeck.db connection (else the held one, or
            a fresh one).

    Returns:
        the series, oldest first; an empty one (with a note) before memdeck.db exists or before
        memdeck first saw the file.

    Raises:
        ValueError: ``target`` is not ``memory`` or ``user``.
        sqlite3.Error, deckdb.DeckDBError: memdeck.db cannot be read.
    """
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (memory or user)")
    if conn is None and not deckdb.db_path(home).exists():
        return UsageSeries(target, note="no change history yet (memdeck.db does not exist)")
    rel = f"memories/{TARGET_FILES[target]}"
    with deckdb.opened(home, conn) as c:
        seen = c.execute("SELECT content, seen_at FROM history_seen WHERE path = ?", (rel,)).fetchone()
        if seen is None:
            return UsageSeries(target, note=f"memdeck has not seen {TARGET_FILES[target]} yet")
        rows = c.execute(
            "SELECT change_id, op, before, after, since, until FROM history WHERE kind = 'memory' AND target = ? "
            "ORDER BY change_id DESC LIMIT ?", (target, int(limit) + 1)).fetchall()
    entries = set(parse_entries(seen["content"]))
    n, total = len(entries), sum(map(len, entries))
    now = UsagePoint(float(seen["seen_at"]), _chars(n, total), n)
    complete, note = len(rows) <= limit, ""
    if not complete:
        rows = rows[:limit]
        note = f"the series starts {limit:,} changes back; older ones are not drawn"
    points: list[UsagePoint] = []  # newest first
    broken = False
    i = 0
    while i < len(rows) and not broken:
        until = rows[i]["until"]
        group = []
        while i < len(rows) and rows[i]["until"] == until:  # one observation, or one journal step
            group.append(rows[i])
            i += 1
        points.append(UsagePoint(float(until), _chars(n, total), n, int(group[0]["change_id"])))
        for r in group:  # undo, newest first
            op, before, after = r["op"], r["before"], r["after"]
            if not ((op == "added" and after in entries)
                    or (op == "removed" and before is not None and before not in entries)
                    or (op == "replaced" and after in entries and before is not None and before not in entries)):
                broken, complete = True, False
                note = (f"change #{r['change_id']} ({op}) does not chain with the content after it; "
                        "the series starts after it")
                break
            if after is not None:
                entries.discard(after)
                n, total = n - 1, total - len(after)
            if before is not None:
                entries.add(before)
                n, total = n + 1, total + len(before)
    if rows and not broken:  # what the file held before the oldest change walked
        oldest = rows[-1]
        start = float(oldest["since"]) if oldest["since"] is not None else float(oldest["until"])
        points.append(UsagePoint(min(start, points[-1].time), _chars(n, total), n))
    points.reverse()
    if not points or now.time > points[-1].time:
        points.append(now)
    return UsageSeries(target, tuple(points), complete, note)


__all__ = ["USAGE_CHANGES", "UsagePoint", "UsageSeries", "usage_series"]
