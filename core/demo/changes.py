"""The demo's change history: what each writer changed in the memory files and the anchors, and when.

A newcomer's History panel should hold changes by every kind of writer memdeck tells apart
(issue 22 #13), so the demo home is built along a timeline, and memdeck's own history records it
the way it records a real home: :func:`replay` writes each change as its writer would (Hermes'
memory tool, a hand edit, Hermes applying a background-review pending write, MemLock editing a
pin, memdeck approving a pending write and archiving an entry through the real core) and runs
``core/history/observation.py`` ``observe`` after each, at the timeline's clock. The result:

========================================  ===============================  =====================
change                                    writer (History's "who")         when (before ``now``)
========================================  ===============================  =====================
the local Postgres entry added            Hermes' memory tool (review)     4 days
USER.md's name entry corrected            a hand edit (external)           43 h
a USER.md entry added                     a background-review pending      21 h
                                          write Hermes applied (pending)
the push pin reworded, 80 -> 90           MemLock (external)               the live session
the rate-limit entry added                Hermes' memory tool (live)       the live session
a MEMORY.md entry added                   memdeck approving a pending      15 min
                                          write (memdeck cli)
the stale deploy entry archived           memdeck (cli), archive #1        10 min
========================================  ===============================  =====================

:func:`demo_changes` is pure (the plan's times and texts); :func:`memory_at` gives the entries a
file held at any time of the timeline (the frozen system prompt of each session is built from it).
memdeck's journal and archive rows are stamped with the timeline's times (the core stamps the wall
clock), so the same seed and clock give the same journal, archive and history rows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from ..anchors.model import dump_json
from ..config import load_config
from ..deck import db as deckdb
from ..history.observation import observe
from ..home import HermesHome
from ..memory.pending import approve
from ..memory.store import MemoryStore
from ..sessions.statedb import StateDB
from .plan import DemoPlan, live_schedule
from .story import (
    ARCHIVED_MEMORY_ENTRY,
    ARCHIVED_REASON,
    ENTRY_SEP,
    MEMORY_CALL_AT,
    MEMORY_FIXED,
    PHASE_A,
    PINS_AFTER,
    USER_FIXED,
    USER_NAME_BEFORE,
)


@dataclass(frozen=True)
class DemoChanges:
    """The timeline of the demo's changes (epoch seconds) and the entries they concern.

    Attributes:
        hermes_review_at: Hermes' memory tool adds MEMORY_FIXED[2] (the review session's call).
        manual_edit_at: the user corrects USER.md's name entry by hand.
        background_staged_at, background_applied_at: the background review stages a USER.md
            entry (:attr:`background_entry`); Hermes applies it.
        memlock_edit_at: MemLock rewords the push pin (its version history says so).
        hermes_live_at: Hermes' memory tool adds MEMORY_FIXED[1] (the live session's call).
        approve_staged_at, approved_at: a MEMORY.md write is staged; memdeck approves it
            (:attr:`approved_entry`).
        archived_at: memdeck archives :data:`ARCHIVED_MEMORY_ENTRY`.
    """

    hermes_review_at: float
    manual_edit_at: float
    background_staged_at: float
    background_applied_at: float
    memlock_edit_at: float
    hermes_live_at: float
    approve_staged_at: float
    approved_at: float
    archived_at: float
    background_entry: str
    approved_entry: str


def _last_not_in(entries: tuple[str, ...], fixed: tuple[str, ...]) -> str:
    return next(e for e in reversed(entries) if e not in fixed)


def memory_call_offset(seed: int) -> float:
    """Seconds from the live session's start to its memory tool call (the assistant row that
    calls it; ``core/demo/build.py`` stamps rows from :func:`live_schedule` in this order)."""
    index = len(PHASE_A) + 2 * sum(len(v) for v in PINS_AFTER.values()) + 1 + MEMORY_CALL_AT
    return live_schedule(seed)[index]


def session_start(session_id: str) -> float:
    """Epoch seconds of a Hermes session id ``YYYYMMDD_HHMMSS_xxxxxx`` (UTC)."""
    from datetime import datetime

    stamp = session_id.rsplit("_", 1)[0]
    return datetime.strptime(stamp, "%Y%m%d_%H%M%S").replace(tzinfo=UTC).timestamp()


#: Seconds after the review session's start at which its memory tool call is stamped (build.py).
REVIEW_CALL_OFFSET = 66.0


def demo_changes(plan: DemoPlan) -> DemoChanges:
    """The timeline of the demo's changes for ``plan`` (pure)."""
    n = plan.now
    return DemoChanges(
        hermes_review_at=session_start(plan.session_ids["review"]) + REVIEW_CALL_OFFSET + 0.5,
        manual_edit_at=n - 43 * 3600 + 17.25,
        background_staged_at=n - 21 * 3600 - 1800.5,
        background_applied_at=n - 21 * 3600,
        memlock_edit_at=plan.live_started_at + 1500.0,
        hermes_live_at=plan.live_started_at + memory_call_offset(plan.seed) + 0.5,
        approve_staged_at=n - 1800.25,
        approved_at=n - 900.0,
        archived_at=n - 600.0,
        background_entry=_last_not_in(plan.user_entries, USER_FIXED),
        approved_entry=_last_not_in(plan.memory_entries, MEMORY_FIXED),
    )


def memory_at(plan: DemoPlan, target: str, t: float) -> list[str]:
    """The entries of ``target`` (``memory``/``user``) at epoch ``t``, in file order: the plan's
    final entries before the changes of the timeline after ``t`` (an entry added later is absent,
    the archived entry is still there, the name entry has its old text)."""
    ch = demo_changes(plan)
    if target == "memory":
        added = {MEMORY_FIXED[2]: ch.hermes_review_at, MEMORY_FIXED[1]: ch.hermes_live_at,
                 ch.approved_entry: ch.approved_at}
        out = [e for e in plan.memory_entries if added.get(e, t) <= t]
        if t < ch.archived_at:
            out.insert(1, ARCHIVED_MEMORY_ENTRY)
        return out
    out = [e for e in plan.user_entries if not (e == ch.background_entry and t < ch.background_applied_at)]
    if t < ch.manual_edit_at:
        out = [USER_NAME_BEFORE if e == USER_FIXED[0] else e for e in out]
    return out


def pending_record(pid: str, action: str, target: str, content: str, old_text: str | None, origin: str,
                   created: float) -> dict[str, Any]:
    """A staged memory write in Hermes 0.19's format (``tools/write_approval.py`` ``stage_write``
    and ``tools/memory_tool.py`` ``_apply_write_gate``: ``summary = f"{summary}: {detail[:120]}"``)."""
    label = "user profile" if target == "user" else "memory"
    if action == "add":
        summary, detail = f"add to {label}", content
    else:
        summary, detail = f"replace in {label}", f"old: {old_text}\nnew: {content}"
    return {
        "id": pid,
        "subsystem": "memory",
        "action": action,
        "summary": f"{summary}: {detail[:120]}".strip(),
        "origin": origin,
        "created_at": created,
        "payload": {"action": action, "target": target, "content": content, "old_text": old_text},
    }


def _write_entries(home: HermesHome, target: str, entries: list[str]) -> None:
    """Replace a memory file the way Hermes does (a temp file in the directory, then rename)."""
    path = home.memory_file(target)
    tmp = path.with_name(f".{path.name}.demo.tmp")
    tmp.write_bytes(ENTRY_SEP.join(entries).encode("utf-8"))
    os.replace(tmp, path)


def _stage(home: HermesHome, record: dict[str, Any]) -> Path:
    path = home.pending_dir / f"{record['id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dump_json(record).encode("utf-8"))
    return path


def _stamp_last_journal_row(home: HermesHome, ts: float) -> None:
    """Stamp memdeck's newest journal row (and the archive row it names) with the timeline's time."""
    with deckdb.opened(home) as conn, deckdb.transaction(conn):
        jid, detail = conn.execute("SELECT journal_id, detail FROM journal ORDER BY journal_id DESC LIMIT 1").fetchone()
        conn.execute("UPDATE journal SET ts = ? WHERE journal_id = ?", (ts, jid))
        archive_id = json.loads(detail or "{}").get("archive_id")
        if archive_id is not None:
            conn.execute("UPDATE archive SET archived_at = ? WHERE archive_id = ?", (ts, archive_id))


def replay(home: HermesHome, plan: DemoPlan, live_file: Path, live_before: dict[str, Any],
           live_after: dict[str, Any]) -> None:
    """Write the timeline's changes into ``home`` and record them in memdeck.db's history.

    Call it after state.db is written (Hermes' memory tool calls attribute two changes) and before
    the final MemLock files and the four pending writes of ``now``. Leaves MEMORY.md and USER.md
    holding :func:`memory_at` ``now`` (the caller rewrites them in the plan's order: the approved
    entry is appended by the core) and the live session's MemLock file holding ``live_after``.

    Args:
        live_file: the live session's MemLock file; ``live_before`` / ``live_after``: its content
            before and after MemLock's edit of the push pin (JSON objects).

    Raises:
        MemdeckError, OSError: the home could not be written (the build fails as a whole).
    """
    ch = demo_changes(plan)
    # One memdeck.db connection and one state.db reader for every observation (a generated home:
    # no fsync per commit, as state.db is written); memdeck's own writes open theirs, as always.
    conn = deckdb.connect(home)
    conn.execute("PRAGMA synchronous=OFF")
    statedb = StateDB(home.state_db)
    try:
        _replay(home, plan, ch, live_file, live_before, live_after,
                lambda t: observe(home, conn=conn, statedb=statedb, now=t))
    finally:
        statedb.close()
        conn.close()


def _replay(home: HermesHome, plan: DemoPlan, ch: DemoChanges, live_file: Path, live_before: dict[str, Any],
            live_after: dict[str, Any], look: Any) -> None:
    """The body of :func:`replay`; ``look(t)`` is memdeck's observation at epoch ``t``."""
    for target in ("memory", "user"):
        _write_entries(home, target, memory_at(plan, target, ch.hermes_review_at - 1))
    look(ch.hermes_review_at - 6.0)  # memdeck's first look: the baseline

    # Hermes' memory tool (the review session's call) adds the Postgres entry.
    _write_entries(home, "memory", memory_at(plan, "memory", ch.hermes_review_at))
    look(ch.hermes_review_at + 4.0)

    # The user corrects USER.md by hand.
    _write_entries(home, "user", memory_at(plan, "user", ch.manual_edit_at))
    look(ch.manual_edit_at + 40.0)

    # The background review stages a USER.md entry; Hermes applies it (the record is removed).
    bg_pid, approve_pid = plan.applied_pending_ids
    staged = _stage(home, pending_record(bg_pid, "add", "user", ch.background_entry, None, "background_review",
                                         ch.background_staged_at))
    look(ch.background_staged_at + 30.0)
    _write_entries(home, "user", memory_at(plan, "user", ch.background_applied_at))
    staged.unlink()
    look(ch.background_applied_at + 20.0)

    # MemLock rewords the push pin in the live session (memdeck saw the file just before).
    live_file.parent.mkdir(parents=True, exist_ok=True)
    live_file.write_bytes(dump_json(live_before).encode("utf-8"))
    look(ch.memlock_edit_at - 100.0)
    live_file.write_bytes(dump_json(live_after).encode("utf-8"))
    look(ch.memlock_edit_at + 10.0)

    # Hermes' memory tool (the live session's call) adds the rate-limit entry.
    _write_entries(home, "memory", memory_at(plan, "memory", ch.hermes_live_at))
    look(ch.hermes_live_at + 5.0)

    # A write staged for approval, approved through memdeck (`memdeck pending approve`).
    _stage(home, pending_record(approve_pid, "add", "memory", ch.approved_entry, None, "foreground",
                                ch.approve_staged_at))
    look(ch.approve_staged_at + 30.0)
    config = load_config(home)
    approve(home, config, approve_pid, actor="cli")
    _stamp_last_journal_row(home, ch.approved_at)
    look(ch.approved_at + 5.0)

    # memdeck archives the stale deploy entry (`memdeck archive`): archive #1.
    MemoryStore(home, config, actor="cli").archive("memory", ARCHIVED_MEMORY_ENTRY, reason=ARCHIVED_REASON)
    _stamp_last_journal_row(home, ch.archived_at)
    look(ch.archived_at + 5.0)


__all__ = ["DemoChanges", "REVIEW_CALL_OFFSET", "demo_changes", "memory_at", "memory_call_offset", "pending_record",
           "replay", "session_start"]
