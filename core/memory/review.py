"""The review queue: every pending write with who staged it, its state and its age, and the bulk
actions that keep the queue short.

One concept: deciding many staged writes at once without ever half-applying one.

* :func:`review_queue` lists the records (oldest first) with :class:`QueueItem`: who staged it
  (:attr:`.pending.PendingWrite.staged_by`: Hermes' own gate, or a memory provider / another
  subsystem, whose records are never applied), its state (:mod:`.staleness`: ``clean``,
  ``stale`` with Hermes' words, ``refused``; or ``foreign``, ``malformed``) and its age.
* :func:`approve_all_clean` approves each ``clean`` record, oldest first, each through the one
  approval path (:func:`.pending.approve`, ``strict``): one record, one journaled write of its own
  (set aside, applied, journaled ``done``, removed: ``core/memory/approval.py``), so a bulk never
  half-applies one record, and a kill between two records leaves every record either applied and
  journaled or still staged. Each is re-checked under the file's lock as it is applied: a record
  that turned stale (or into a no-op) because of an earlier one, or of another writer, is refused,
  not applied. Every outcome is reported as it happens (``on_outcome``), so what was printed before
  a kill is exact; the journal rows carry the bulk's id (``detail["bulk"]``).
* :func:`reject_all_stale` rejects each ``stale`` record (re-assessed just before: one that is no
  longer stale is left), each journaled and undoable (``memdeck undo`` stages it again).
* :func:`oldest_unreviewed` is the age the Review badge and ``watch`` watch.

The bulk functions take the records' files' current state; nothing is cached between records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import Config, load_config
from ..errors import Refused
from ..home import TARGETS, HermesHome
from .pending import APPLYING_WORDS, Edit, PendingWrite, approve, list_pending, reject
from .reader import MemoryFileState, read_memory
from .staleness import Assessment, assess

#: Seconds an unreviewed record may wait before the badge and ``watch`` say so (the default of the
#: settings' ``alerts.pending_age_hours``: 24 h).
DEFAULT_PENDING_AGE_S = 24 * 3600.0


@dataclass(frozen=True)
class QueueItem:
    """One pending write in the review queue.

    Attributes:
        record: the :class:`.pending.PendingWrite`.
        assessment: what approving it would do now (:class:`.staleness.Assessment`).
        provider: the configured memory provider, to name a record it staged.
    """

    record: PendingWrite
    assessment: Assessment
    provider: str | None = None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def state(self) -> str:
        """``foreign`` (staged by a provider or another subsystem), ``malformed``, else the
        assessment's ``clean`` / ``stale`` / ``refused``."""
        if self.record.applying:
            return "applying"
        if self.record.staged_by is not None:
            return "foreign"
        if self.record.malformed:
            return "malformed"
        return self.assessment.state

    @property
    def reason(self) -> str | None:
        """Why it is not clean, in words (Hermes' own for a stale or refused record)."""
        if self.state == "applying":
            return APPLYING_WORDS
        if self.state == "foreign":
            return staged_by_words(self.record, self.provider) + ": never applied by memdeck"
        if self.state == "malformed":
            return str(self.record.malformed)
        return self.assessment.reason

    def age(self, now: float) -> float | None:
        """Seconds since it was staged (None when the record has no ``created_at``)."""
        return max(0.0, now - self.record.created_at) if self.record.created_at else None

    def to_dict(self, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        age = self.age(now)
        return {**self.record.to_dict(), "state": self.state, "reason": self.reason,
                "assessment": self.assessment.to_dict(), "age_s": round(age, 1) if age is not None else None}


def staged_by_words(rec: PendingWrite, provider: str | None) -> str:
    """``staged by the memory provider kiokuko`` / ``staged by cron-sync (not Hermes' memory tool)`` /
    ``staged by Hermes (background_review)``."""
    who = rec.staged_by
    if who is None:
        return f"staged by Hermes ({rec.origin})"
    if provider is not None and who == provider:
        return f"staged by the memory provider {who}"
    return f"staged by {who} (not Hermes' memory tool)"


def assess_record(rec: PendingWrite, memory: Mapping[str, MemoryFileState | None]) -> Assessment:
    """:func:`.staleness.assess` of one record against the files as read (``memory``: target ->
    :class:`.reader.MemoryFileState`, as :func:`.reader.read_memory` or a snapshot holds them)."""
    if rec.applying:
        return Assessment("refused", APPLYING_WORDS, "applying")
    if rec.malformed:
        return Assessment("refused", f"malformed: {rec.malformed}", "malformed")
    target = rec.target if rec.target in TARGETS else "memory"
    st = memory.get(target)
    if st is None:
        return Assessment("refused", f"{target}: the file could not be read", "unreadable")
    if st.error:
        return Assessment("refused", f"{st.path.name} cannot be read ({st.error}): nothing can be applied to it",
                          "unreadable")
    return assess(rec.payload, [e.text for e in st.entries], st.limit, drift=st.drift)


def queue_of(records: Sequence[PendingWrite], memory: Mapping[str, MemoryFileState | None],
             provider: str | None = None) -> list[QueueItem]:
    """:class:`QueueItem` of each record (in the given order) against ``memory``. Pure."""
    return [QueueItem(r, assess_record(r, memory), provider) for r in records]


def review_queue(home: HermesHome, config: Config | None = None, provider: str | None = None) -> list[QueueItem]:
    """Every pending write, oldest first, assessed against the files now. Never raises."""
    config = config or load_config(home)
    memory = {t: read_memory(home, config, t) for t in TARGETS}
    return queue_of(list_pending(home), memory, provider)


def oldest_unreviewed(items: Sequence[QueueItem], now: float) -> QueueItem | None:
    """The oldest record waiting for a reviewer (one staged by Hermes: another subsystem's records
    are not memdeck's to review), or None. ``now``: epoch seconds."""
    mine = [i for i in items if i.record.staged_by is None and i.record.created_at]
    return min(mine, key=lambda i: (i.record.created_at, i.id)) if mine else None


@dataclass(frozen=True)
class Outcome:
    """What a bulk action did with one record.

    Attributes:
        id: the pending id. outcome: ``applied`` / ``rejected`` (done), ``refused`` (tried and
            refused: nothing written) or ``skipped`` (not tried: its state excluded it).
        reason: why it was refused or skipped (Hermes' words where they exist).
        code: the refusal code or the state that excluded it. journal_id: the row of what was done.
    """

    id: str
    outcome: str
    reason: str | None = None
    code: str | None = None
    journal_id: int | None = None
    target: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "outcome": self.outcome, "reason": self.reason, "code": self.code,
                "journal_id": self.journal_id, "target": self.target}

    def line(self) -> str:
        """One line for a person: ``applied 1a2b3c4d (journal #12)``, ``refused 5e6f7a8b: ...``,
        ``skipped 9c0d1e2f (Hermes would refuse it): ...``."""
        if self.outcome in ("applied", "rejected"):
            return f"{self.outcome} {self.id}" + (f" (journal #{self.journal_id})" if self.journal_id else "")
        if self.outcome == "skipped":
            return f"skipped {self.id} ({_SKIP_ONE.get(self.code or '', self.code or 'not tried')}): {self.reason or ''}"
        return f"{self.outcome} {self.id}: {self.reason or self.code or ''}"


#: why a record was skipped, in words that never reuse an outcome's name (a record whose state is
#: ``refused`` was not tried, so it is no refusal of the bulk: exit 0, ``"refused": 0``)
_SKIP_MANY = {"refused": "Hermes would refuse", "clean": "clean", "foreign": "not Hermes' own",
              "malformed": "unreadable", "stopped": "not tried"}
_SKIP_ONE = {"refused": "Hermes would refuse it", "clean": "clean, not stale", "foreign": "not Hermes' own",
             "malformed": "unreadable", "stopped": "not tried", "stale": "stale"}


@dataclass(frozen=True)
class BulkSummary:
    """The exact account of one bulk action (:func:`approve_all_clean`, :func:`reject_all_stale`)."""

    action: str
    bulk_id: str
    outcomes: tuple[Outcome, ...] = ()

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes if o.outcome == outcome)

    @property
    def done(self) -> int:
        return self.count("applied") + self.count("rejected")

    def message(self) -> str:
        """``approved 45 of 50 pending writes; refused 1; skipped 4: 3 stale, 1 Hermes would refuse``.

        ``refused`` counts only records tried and refused (what ``"refused"`` of :meth:`to_dict`
        counts and the CLI's exit 5 / 1 reports); a record skipped for its state says why in
        other words."""
        verb = "approved" if self.action == "approve" else "rejected"
        total = len(self.outcomes)
        out = f"{verb} {self.done} of {total} pending write{'s' if total != 1 else ''}"
        if self.count("refused"):
            out += f"; refused {self.count('refused')}"
        kinds = self.skipped_by_state()
        if kinds:
            out += f"; skipped {sum(kinds.values())}: " + ", ".join(
                f"{n} {_SKIP_MANY.get(k, k)}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
        return out

    def skipped_by_state(self) -> dict[str, int]:
        """``state or stop code -> records skipped for it`` (``{"stale": 3}``)."""
        kinds: dict[str, int] = {}
        for o in self.outcomes:
            if o.outcome == "skipped":
                kinds[o.code or "?"] = kinds.get(o.code or "?", 0) + 1
        return kinds

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "bulk_id": self.bulk_id, "message": self.message(),
                "applied": self.count("applied"), "rejected": self.count("rejected"),
                "refused": self.count("refused"), "skipped": self.count("skipped"),
                "skipped_by_state": self.skipped_by_state(),
                "outcomes": [o.to_dict() for o in self.outcomes]}


OutcomeHook = Callable[[Outcome], None]

#: Refusal codes that say the file system failed, not the record (``unwritable``: a full disk, a
#: read-only file system): a bulk action stops there, since every later write would meet the same
#: disk, and reports each record it did not try as ``skipped`` (code ``stopped``).
STOP_CODES = frozenset({"unwritable"})


def _run_bulk(action: str, items: Iterable[QueueItem], act: Callable[[QueueItem, str], Outcome],
              on_outcome: OutcomeHook | None) -> BulkSummary:
    """``act`` on each item in turn (each its own write), reporting each outcome as it happens;
    after a refusal with a :data:`STOP_CODES` code the rest are not tried."""
    bulk = uuid.uuid4().hex[:12]
    outcomes: list[Outcome] = []
    stopped: str | None = None
    for item in items:
        rec = item.record
        o = (Outcome(rec.id, "skipped", f"not tried: {stopped}", "stopped", target=rec.target) if stopped
             else act(item, bulk))
        outcomes.append(o)
        if on_outcome is not None:
            on_outcome(o)
        if stopped is None and o.outcome == "refused" and o.code in STOP_CODES:
            stopped = f"the {action} stopped when {o.id} could not be written ({o.reason})"
    return BulkSummary(action, bulk, tuple(outcomes))


def approve_all_clean(home: HermesHome, config: Config | None = None, actor: str = "cli", *,
                      origin: dict[str, Any] | None = None,
                      provider: str | None = None, on_outcome: OutcomeHook | None = None) -> BulkSummary:
    """Approve every ``clean`` record, oldest first, each on its own (module docstring).

    Records that are not clean are reported ``skipped`` with their state and reason; a clean
    record whose approval is refused now (it turned stale, or a refusal of the write path) is
    ``refused``, its record kept. Never raises for one record's refusal; a refusal of the file
    system (:data:`STOP_CODES`) stops the bulk (the rest ``skipped``, code ``stopped``).
    ``on_outcome`` is called after each record; ``origin`` goes into each journal row
    (:func:`.pending.approve`).
    """
    config = config or load_config(home)

    def act(item: QueueItem, bulk: str) -> Outcome:
        rec = item.record
        if item.state != "clean":
            return Outcome(rec.id, "skipped", item.reason, item.state, target=rec.target)
        try:
            res = approve(home, config, rec.id, actor=actor, strict=True, bulk=bulk, origin=origin)
        except Refused as exc:
            return Outcome(rec.id, "refused", exc.reason, exc.code, target=rec.target)
        return Outcome(rec.id, "applied", getattr(res, "message", None), None, getattr(res, "journal_id", None),
                       rec.target)

    return _run_bulk("approve", review_queue(home, config, provider), act, on_outcome)


def reject_all_stale(home: HermesHome, config: Config | None = None, actor: str = "cli", *,
                     origin: dict[str, Any] | None = None,
                     provider: str | None = None, on_outcome: OutcomeHook | None = None) -> BulkSummary:
    """Reject every ``stale`` record, each journaled on its own and undoable (module docstring).
    A record is assessed again against the files just before it is rejected: one that is no
    longer stale is ``skipped``. A refusal of the file system stops the bulk, as in
    :func:`approve_all_clean`."""
    config = config or load_config(home)

    def act(item: QueueItem, bulk: str) -> Outcome:
        rec = item.record
        if item.state != "stale":
            return Outcome(rec.id, "skipped", item.reason or "not stale", item.state, target=rec.target)
        memory = {t: read_memory(home, config, t) for t in TARGETS}
        now = assess_record(rec, memory)
        if not now.stale:
            return Outcome(rec.id, "skipped", "no longer stale: " + (now.reason or "it applies now"), now.state,
                           target=rec.target)
        try:
            res = reject(home, rec.id, actor=actor, bulk=bulk, origin=origin)
        except Refused as exc:
            return Outcome(rec.id, "refused", exc.reason, exc.code, target=rec.target)
        return Outcome(rec.id, "rejected", item.reason, "stale", res.get("journal_id"), rec.target)

    return _run_bulk("reject", review_queue(home, config, provider), act, on_outcome)


def edit_and_approve(home: HermesHome, config: Config | None, pending_id: str, text: str, *, op: int | None = None,
                     actor: str = "cli", origin: dict[str, Any] | None = None) -> Any:
    """Apply a pending write with the reviewer's ``text`` in place of the staged one (Hermes PR
    #44966): :func:`.pending.approve` with an :class:`.pending.Edit`; the journal and History keep
    the staged and the applied text. Raises what ``approve`` raises (the threat scan and the char
    limit apply to the edited text). ``origin``: as :func:`.pending.approve`."""
    return approve(home, config, pending_id, actor=actor, edited=Edit(text, op), origin=origin)


__all__ = ["STOP_CODES", "BulkSummary", "DEFAULT_PENDING_AGE_S", "Outcome", "QueueItem", "approve_all_clean", "assess_record",
           "edit_and_approve", "oldest_unreviewed", "queue_of", "reject_all_stale", "review_queue", "staged_by_words"]
