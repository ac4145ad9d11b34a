"""One change that rewrites and archives several entries at once, across MEMORY.md and USER.md
(a mixin of :class:`.store.MemoryStore`): what a hygiene proposal applies (``core/hygiene``).

Under the locks of every file it touches (memory before user), after a reload, each named
entry must still be there exactly (``Refused("conflict")`` otherwise: the proposal was made on
what the files held then); the new text is threat-scanned; a file's budget may not grow past its
char limit. Entries taken out go to memdeck's archive (restorable one by one), all in one
write-ahead change (:meth:`.store.MemoryStore._write_ahead`, one ``txn``), so ``memdeck undo``
puts every file and archive row back at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ..deck import archive as _archive
from ..deck import db as deckdb
from ..errors import Refused
from ..home import TARGETS
from .entries import entry_id, overflow_refusal, preview, scan_or_refuse, serialize_entries, usage_chars
from .plumbing import StorePlumbing
from .results import PlannedWrite, WriteResult


class ConsolidateOps(StorePlumbing):
    """The :meth:`consolidate` method of :class:`.store.MemoryStore` (a mixin: it uses its lock,
    load, write-ahead and result plumbing)."""

    def consolidate(self, *, replace: Mapping[tuple[str, str], str] | None = None,
                    archive: Sequence[tuple[str, str]] = (), reason: str = "", op: str = "hygiene") -> WriteResult:
        """Replace entries and archive others in one journaled change.

        Args:
            replace: ``{(target, exact old text): new text}``.
            archive: ``[(target, exact text)]`` entries moved to the archive.
            reason: recorded on each archive row and in the journal.
            op: the journal's op (``hygiene``).

        Returns:
            the result of the first file written; ``details["archive_ids"]`` names the rows.

        Raises:
            Refused: ``empty`` (nothing named), ``conflict`` (a named entry is no longer there
                exactly), ``threat``, ``overflow``, ``delimiter``, ``unwritable``; and the
                store's lock and journal errors (files untouched).
        """
        replace = dict(replace or {})
        archive = list(dict.fromkeys(archive))
        if not replace and not archive:
            raise Refused("nothing to change", code="empty")
        cleaned = {k: self._clean(v, "the merged text") for k, v in replace.items()}
        for text in cleaned.values():
            scan_or_refuse(text)
        targets = sorted({t for t, _ in [*cleaned, *archive]}, key=TARGETS.index)
        for t in targets:
            self.path(t)
        with self._locked(*targets):
            with deckdb.opened(self.home) as conn:
                for t in targets:
                    self._recover_locked(t, conn)
                plans: list[PlannedWrite] = []
                new_of: dict[str, list[str]] = {}
                for t in targets:
                    raw, ents = self._load(t)
                    named = [old for (tt, old) in cleaned if tt == t] + [x for (tt, x) in archive if tt == t]
                    gone = [x for x in named if x not in ents]
                    if gone:
                        raise Refused(f"{t}: the entry {preview(gone[0], 60)!r} is no longer there exactly (another "
                                      "writer changed it since the proposal was made). Nothing was written; look again.",
                                      code="conflict")
                    drop = {x for (tt, x) in archive if tt == t}
                    new = []
                    for e in ents:
                        if e in drop:
                            continue
                        new.append(cleaned.get((t, e), e))
                    new = list(dict.fromkeys(new))
                    total, limit = usage_chars(new), self.limit(t)
                    if total > limit and total > usage_chars(ents):
                        raise overflow_refusal(t, ents, total, limit, "This change")
                    new_of[t] = new
                    detail = {"reason": reason,
                              "replaced": [{"old_id": entry_id(o), "old_text": o, "entry_id": entry_id(n), "text": n}
                                           for (tt, o), n in cleaned.items() if tt == t],
                              "archived": [{"entry_id": entry_id(x), "text": x} for x in drop]}
                    plans.append(PlannedWrite(op, t, raw, serialize_entries(new), detail))
                # a file that gains (a merged text) is written before one that only loses entries
                plans.sort(key=lambda p: 0 if p.detail["replaced"] else 1)
                made: list[int] = []

                def archiving(c: Any) -> dict[str, Any]:
                    for t, text in archive:
                        made.append(_archive.insert(c, kind="memory", target=t, text=text, actor=self.actor,
                                                    reason=reason, payload={"entry_id": entry_id(text)},
                                                    state="archiving"))
                    return {"archive_ids": list(made)}

                def archived(c: Any, _ids: list[int]) -> None:
                    for aid in made:
                        _archive.set_state(c, aid, "archived", expect="archiving")

                ids = self._write_ahead(conn, plans, txn=uuid.uuid4().hex, on_intent=archiving, on_done=archived)
            self._cleanup_temps(targets)
        first = plans[0].target
        return self._result(op, first, new_of[first], f"{len(cleaned)} entr{'y' if len(cleaned) == 1 else 'ies'} "
                            f"rewritten, {len(archive)} archived.", journal_id=ids[-1],
                            details={"archive_ids": list(made), "targets": targets})
