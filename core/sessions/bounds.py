"""Bounded reads of the large texts a home stores: a session's system prompt and a row's ``api_content``.

One concept: how much of a stored text memdeck reads, and what it says when it read less.

Hermes stores the whole system prompt of a session (``sessions.system_prompt`` up to schema 22;
``system_prompts.prompt`` from 23) and what a plugin or a memory provider appended to a user turn
(``messages.api_content``). Nothing bounds either: a hostile or broken writer can store 50 MB, and
reading it whole made ``status`` take 21.8 s and 830 MB (issue 40 item 10). memdeck asks SQLite
for at most :data:`MAX_STORED_TEXT_CHARS` chars (``substr(x, 1, N)``, so Python is never handed
the whole value; one more char than the bound tells a cut), counts a cut value's length through
SQLite's incremental blob reader (:func:`stored_chars`: 1 MiB at a time, never the whole value,
unlike ``length(x)``, which materialises it), and notes each cut (:func:`note_cut`): ``status``
lists them (``cut_reads``) and says so on screen.

1,000,000 chars is about 250,000 tokens by Hermes' rough estimate (``agent/model_metadata.py``
``estimate_tokens_rough``: chars / 4), past any model's usable prompt: a real prompt or turn is
never cut.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

#: The most chars read of one stored system prompt or ``api_content`` value.
MAX_STORED_TEXT_CHARS = 1_000_000

#: How many cuts a process remembers (the newest; one per stored value).
_KEEP = 200


@dataclass(frozen=True)
class Cut:
    """One stored text read only in part.

    Attributes:
        what: ``"system prompt of session <id>"`` or ``"api_content of message <id>"``.
        chars: the stored value's length (chars; bytes for a BLOB value).
        kept: how many were read (the first ``kept``).
    """

    what: str
    chars: int
    kept: int

    @property
    def dropped(self) -> int:
        """Chars not read (``chars - kept``)."""
        return max(0, self.chars - self.kept)

    def to_dict(self) -> dict[str, Any]:
        """``{"what", "chars", "kept", "dropped"}`` (chars)."""
        return {"what": self.what, "chars": self.chars, "kept": self.kept, "dropped": self.dropped}

    def words(self) -> str:
        """One line for a person: what, how long, what was read, how much was cut."""
        return (f"the {self.what} is {self.chars:,} chars: only its first {self.kept:,} were read "
                f"({self.dropped:,} cut)")


_lock = threading.Lock()
_seq = 0
_cuts: dict[str, tuple[int, Cut]] = {}


#: the UTF-8 continuation bytes (0x80-0xBF): a text's chars are its other bytes
_CONTINUATION = bytes(range(0x80, 0xC0))
_CHUNK = 1 << 20


def head_sql(expr: str, limit: int = MAX_STORED_TEXT_CHARS) -> str:
    """SQL for the first ``limit + 1`` chars of ``expr`` (the extra char tells a cut: :func:`bounded`)."""
    return f"substr({expr}, 1, {int(limit) + 1})"


def stored_chars(conn: sqlite3.Connection, table: str, column: str, rowid: int) -> int | None:
    """The length of ``table.column`` at ``rowid`` (chars of a TEXT value, bytes of a BLOB),
    counted 1 MiB at a time through ``Connection.blobopen``, so neither SQLite nor Python holds
    the whole value; falls back to SQL ``length()`` when the row cannot be opened that way (a
    WITHOUT ROWID table). None when the row is gone. Raises ``sqlite3.Error`` as a query does."""
    row = conn.execute(f"SELECT typeof({column}) FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
    if row is None:
        return None
    try:
        blob = conn.blobopen(table, column, rowid, readonly=True)
    except sqlite3.Error:
        got = conn.execute(f"SELECT length({column}) FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        return int(got[0]) if got and isinstance(got[0], int) else None
    with blob:
        if row[0] != "text":
            return len(blob)
        chars = 0
        while chunk := blob.read(_CHUNK):
            chars += len(chunk.translate(None, _CONTINUATION))
        return chars


def bounded(conn: sqlite3.Connection, head: Any, what: str, table: str, column: str, rowid: int,
            limit: int = MAX_STORED_TEXT_CHARS) -> tuple[Any, int | None]:
    """``head`` as read by :func:`head_sql` -> ``(at most limit chars of it, the stored length
    when it was cut else None)``; a cut is noted (:func:`note_cut`)."""
    if not isinstance(head, (str, bytes)) or len(head) <= limit:
        return head, None
    try:
        chars = stored_chars(conn, table, column, rowid)
    except sqlite3.Error:
        chars = None
    total = chars if chars is not None and chars > limit else limit + 1
    note_cut(Cut(what, total, int(limit)))
    return head[:limit], total


def text_parts(conn: sqlite3.Connection, table: str, column: str, rowid: int, head: int,
               tail: int) -> tuple[int | None, str | None, str | None]:
    """``(length, first head chars, last tail chars)`` of a TEXT value as SQL's ``length``,
    ``substr(x, 1, head)`` and ``substr(x, -tail)`` give them; a value over
    :data:`MAX_STORED_TEXT_CHARS` bytes is read through the blob reader (bounded memory; invalid
    UTF-8 is dropped, not replaced as SQLite does). ``(None, None, None)`` for NULL or no row."""
    size = None
    try:
        with conn.blobopen(table, column, rowid, readonly=True) as blob:
            size = len(blob)
            if size > MAX_STORED_TEXT_CHARS:
                first = blob.read(head * 4).decode("utf-8", "ignore")[:head]
                blob.seek(max(0, size - tail * 4))
                last = blob.read(tail * 4).decode("utf-8", "ignore")[-tail:]
                blob.seek(0)
                chars = 0
                while chunk := blob.read(_CHUNK):
                    chars += len(chunk.translate(None, _CONTINUATION))
                return chars, first, last
    except sqlite3.Error:
        pass  # NULL, a number, or a WITHOUT ROWID table: SQL reads it (a small value, or as before)
    row = conn.execute(f"SELECT length({column}), substr({column}, 1, {int(head)}), substr({column}, -{int(tail)}) "
                       f"FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
    return (row[0], row[1], row[2]) if row else (None, None, None)


def note_cut(cut: Cut) -> None:
    """Remember ``cut`` (the newest :data:`_KEEP` distinct values are kept). Thread-safe."""
    global _seq
    with _lock:
        _seq += 1
        _cuts.pop(cut.what, None)
        _cuts[cut.what] = (_seq, cut)
        while len(_cuts) > _KEEP:
            _cuts.pop(next(iter(_cuts)))


def cut_mark() -> int:
    """A mark for :func:`cuts_since`: the cuts noted so far are before it."""
    with _lock:
        return _seq


def cuts_since(mark: int = 0) -> list[Cut]:
    """The cuts noted (again) after ``mark``, oldest first."""
    with _lock:
        return [c for s, c in _cuts.values() if s > mark]


__all__ = ["MAX_STORED_TEXT_CHARS", "Cut", "bounded", "cut_mark", "cuts_since", "head_sql", "note_cut", "stored_chars",
           "text_parts"]
