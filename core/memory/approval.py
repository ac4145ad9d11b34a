"""Applying a pending write at most once: the claim on its record, and what the journal says.

One concept: the record of a staged write (``pending/memory/<id>.json``, Hermes 0.19
``tools/write_approval.py`` ``stage_write``, shared/reference/hermes-agent.md §1.9) and the
guarantee that memdeck applies it at most once, whatever the memory file holds later, and that
Hermes' own ``/memory approve`` cannot replay a record memdeck may have applied.

Hermes keeps no claim on a record: its approve reads ``<id>.json`` (``get_pending``), replays the
payload (``apply_memory_pending``) and deletes the file (``discard_pending``); its listing is
``pending/memory/*.json``. So the only thing every reviewer honours is the record's *name*. An
approval by memdeck (``core/memory/pending.py`` ``approve``, writing through
``core/memory/store.py``) runs, under the memory file's lock:

1. the journal row is committed as ``intent`` with the record's id, bytes, their sha256 and
   the names below (:meth:`RecordClaim.journal_fields`), and the staged replacement of the
   file (``core/fsio.py`` ``stage_replace``) already on disk;
2. the record is renamed to ``<id>.json.applying`` (:meth:`RecordClaim.hide`): no reviewer
   lists or finds it any more (neither Hermes' ``*.json`` nor memdeck's);
3. the file is replaced (one rename), the row is committed ``done``;
4. the set-aside record is removed (:meth:`RecordClaim.release`).

Crash windows (a kill between two steps; recovery runs under the same lock before the next
memdeck write, ``core/memory/recovery.py``):

* before 1 committed: no row; the record is where it was; nothing was applied.
* between 1 and 2: the record is still visible (Hermes may approve it meanwhile: then *it* is
  the one application). The staged replacement is still there, so recovery knows the file was
  not written: the row is deleted; :func:`settle` finds no set-aside record to put back.
* between 2 and 3: the record is hidden. The staged replacement is still there: not applied;
  recovery renames ``<id>.json.applying`` back to ``<id>.json`` (staged again for review) and
  deletes the row -- *before* deleting the row, so a kill in between leaves both, and the next
  recovery does the same again.
* between the rename of 3 and its COMMIT: the file holds the write; the replacement's names
  say so; recovery marks the row ``done`` and removes the set-aside record. Hermes writes
  landing in between change nothing: the decision is made on the names, not on the content.
* between 3 and 4: the row is ``done``; the set-aside record is removed by the next recovery
  (:func:`sweep`).

And whatever is left, :func:`applied_row` is checked before every approval: a record whose id
and sha256 match a ``done`` row not undone (or an ``unknown`` one: it may have been applied) is
never replayed. The one window left is Hermes' own: a ``/memory approve`` that read the record
before step 2 and writes after memdeck releases the lock replays it too; Hermes has no claim
protocol to join (its own two reviewers race the same way).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from ..deck import journal
from ..errors import Refused
from ..fsio import atomic_write_text, fsync_dir
from ..home import HermesHome

#: a record set aside while its approval is written: ``<id>.json`` + this suffix
APPLYING_SUFFIX = ".applying"


def record_sha256(raw: str) -> str:
    """The hex sha256 of a record's text (UTF-8): with its id, what identifies one staged write."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _safe_name(name: Any) -> TypeGuard[str]:
    return isinstance(name, str) and name.endswith(".json") and "/" not in name and name not in (".json", "..json")


@dataclass
class RecordClaim:
    """memdeck's hold on one pending record while it applies it (see the module docstring).

    Attributes:
        pending_dir: ``<home>/pending/memory``. record_file: ``<id>.json``. pending_id: the
        record's id. raw: its text as read (kept in the journal so an undo can stage it again).
        origin: the record's ``origin``.
    """

    pending_dir: Path
    record_file: str
    pending_id: str
    raw: str
    origin: str = "foreground"

    @property
    def aside(self) -> Path:
        return self.pending_dir / (self.record_file + APPLYING_SUFFIX)

    def journal_fields(self) -> dict[str, Any]:
        """The fields every journal row of this approval carries (``detail``)."""
        return {"pending_id": self.pending_id, "origin": self.origin, "record": self.raw,
                "record_file": self.record_file, "record_sha256": record_sha256(self.raw),
                "record_aside": self.aside.name}

    def hide(self) -> None:
        """Step 2: rename the record aside (the file's lock and the row's intent are held).

        Raises:
            Refused: ``not_found`` when the record is gone (another reviewer rejected or
                approved it since it was read): the caller's write is abandoned.
        """
        try:
            os.rename(self.pending_dir / self.record_file, self.aside)
        except FileNotFoundError:
            raise Refused(f"pending write {self.pending_id} was handled by another reviewer while it was being "
                          "approved; nothing was applied", code="not_found") from None
        except OSError as exc:
            raise Refused(f"cannot set the pending record {self.record_file} aside: {exc.strerror or exc}; nothing "
                          "was applied", code="unwritable") from exc
        fsync_dir(self.pending_dir)

    def release(self) -> None:
        """Step 4: remove the set-aside record (the row is ``done``). Never raises."""
        with contextlib.suppress(OSError):
            os.unlink(self.aside)


def settle(home: HermesHome, detail: dict[str, Any], applied: bool | None) -> None:
    """Bring the record of an approval row to what recovery decided (never raises).

    Args:
        detail: the journal row's detail (:meth:`RecordClaim.journal_fields`).
        applied: True (the row is ``done``: remove the set-aside record), False (the write
            never happened: put the set-aside record back under its name, staged again,
            unless that name is taken), None (``unknown``: leave it aside, never replayed).
    """
    name, aside = detail.get("record_file"), detail.get("record_aside")
    if applied is None or not _safe_name(name) or not isinstance(aside, str) or aside != f"{name}{APPLYING_SUFFIX}":
        return
    d = home.pending_dir
    with contextlib.suppress(OSError):
        if applied:
            os.unlink(d / aside)
        elif os.path.lexists(d / aside):
            if os.path.lexists(d / name):
                os.unlink(d / aside)
            else:
                os.rename(d / aside, d / name)
            fsync_dir(d)


def restage(home: HermesHome, detail: dict[str, Any]) -> str | None:
    """Stage an approved record again (after its approval was undone) from the journal's copy
    of its text, unless a record of that name exists; a set-aside copy is removed. Returns the
    pending id, or None when ``detail`` is not an approval's or the record cannot be written."""
    rec, name = detail.get("record"), detail.get("record_file")
    if not isinstance(rec, str) or not _safe_name(name):
        return None
    path = home.pending_dir / name
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, rec)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        os.unlink(home.pending_dir / f"{name}{APPLYING_SUFFIX}")
    return str(detail.get("pending_id") or name[:-5])


def applied_row(conn: sqlite3.Connection, pending_id: str, raw: str) -> journal.JournalRow | None:
    """The journal row of an earlier approval of exactly this record (same id, same sha256 of
    its text), ``done`` or ``unknown`` and not undone, newest first; None when there is none.

    Rows written before the sha256 was recorded are matched on their copy of the text."""
    sha = record_sha256(raw)
    rows = conn.execute(
        "SELECT * FROM journal WHERE kind = 'memory' AND state IN ('done', 'unknown') AND undone_by IS NULL "
        "AND json_valid(detail) AND json_extract(detail, '$.pending_id') = ? ORDER BY journal_id DESC",
        (pending_id,)).fetchall()
    for r in rows:
        row = journal.row_of(r)
        if row.detail.get("record_sha256") == sha or row.detail.get("record") == raw:
            return row
    return None


def sweep(home: HermesHome, conn: sqlite3.Connection) -> int:
    """Settle set-aside records that no ``intent`` row owns any more, by the newest row that
    names them: ``done`` (a kill after the approval's COMMIT, before
    :meth:`RecordClaim.release`) -> removed; ``unknown`` -> kept aside (never replayed); no row
    (its intent was deleted: not applied) -> put back under its name. Call under the memory
    files' locks, after their intents are resolved. Returns how many it looked at."""
    d = home.pending_dir
    try:
        names = [n for n in os.listdir(d) if n.endswith(".json" + APPLYING_SUFFIX)]
    except OSError:
        return 0
    done = 0
    for n in names:
        record_file = n[:-len(APPLYING_SUFFIX)]
        rows = conn.execute(
            "SELECT state FROM journal WHERE kind = 'memory' AND json_valid(detail) "
            "AND json_extract(detail, '$.record_aside') = ? ORDER BY journal_id DESC LIMIT 1", (n,)).fetchall()
        state = rows[0][0] if rows else None
        if state == "intent":
            continue  # another target's write still owns it
        settle(home, {"record_file": record_file, "record_aside": n},
               True if state == "done" else None if state == "unknown" else False)
        done += 1
    return done


__all__ = ["APPLYING_SUFFIX", "RecordClaim", "applied_row", "record_sha256", "restage", "settle", "sweep"]
