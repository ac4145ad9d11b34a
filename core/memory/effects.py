"""The entry-level effect of one journaled memory change, and where a file stands against it.

One concept: what a change did to *entries* (not to the file's bytes), so that a change can be
recognised, finished or reverted in a file that other writers changed since. A memory journal
row holds the whole file text before and after its change (``core/deck/journal.py``); its
effect is the entries the change took out (``removed``) and the entries it put in (``added``),
each side compared as Hermes compares entries: the file split on ``"\\n§\\n"``, each piece
stripped, empties dropped, exact duplicates dropped keeping the first (Hermes 0.19
``_read_file`` :693-712 and the dedupe of ``load_from_disk`` :202-203, shared/reference/
hermes-agent.md §1.2). Because a store never holds the same text twice, an effect is a pair of
*sets* of texts; adding a text the file already holds is no effect at all (Hermes ``add``:
"Entry already exists"), and a replacement is one removal plus one addition.

Another writer (Hermes' ``add``/``replace``/``remove``/``apply_batch``, the background review, a
hand edit) changes entries it names; it does not undo memdeck's change by accident unless it
names the same texts. So, in a file read later:

* ``present``: every added text is there and no removed text is: the change is in the file;
* ``absent``: every removed text is there and no added text is: the file is as before it;
* ``mixed``: anything else (some added text is gone, or some removed text is back): another
  writer touched the very entries of this change, and the entries alone cannot say whether
  it happened.

A change with no entry-level effect (``normalize``, or an undo of one: the same entries in
another form) cannot be told per entry: :meth:`EntryEffect.status` says ``"formatting"``
and the caller compares whole texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .entries import parse_entries, preview

#: :meth:`EntryEffect.status` values
STATUSES = ("present", "absent", "mixed", "formatting")


@dataclass(frozen=True)
class EntryEffect:
    """What one change did to the entries of one file.

    Attributes:
        removed: entry texts in the file before the change and not after, in their old order.
        added: entry texts in the file after the change and not before, in their new order.
    """

    removed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()

    @classmethod
    def of(cls, before: str | None, after: str | None) -> EntryEffect:
        """The effect of a change from file text ``before`` to file text ``after`` (None: no file)."""
        b, a = parse_entries(before), parse_entries(after)
        bs, as_ = set(b), set(a)
        return cls(tuple(e for e in b if e not in as_), tuple(e for e in a if e not in bs))

    @property
    def entry_level(self) -> bool:
        """False for a change of form only (same entries): :meth:`status` cannot judge it."""
        return bool(self.removed or self.added)

    def status(self, entries: Sequence[str]) -> str:
        """Where ``entries`` (a file's entries now) stand against this change: one of
        :data:`STATUSES` (see the module docstring)."""
        if not self.entry_level:
            return "formatting"
        have = set(entries)
        if all(e in have for e in self.added) and not any(e in have for e in self.removed):
            return "present"
        if all(e in have for e in self.removed) and not any(e in have for e in self.added):
            return "absent"
        return "mixed"

    def why_mixed(self, entries: Sequence[str]) -> str:
        """In words, which of this change's entries disagree with both sides (for a journal
        row's recovery reason)."""
        have = set(entries)
        gone = [e for e in self.added if e not in have]
        back = [e for e in self.removed if e in have]
        parts = []
        if gone:
            parts.append("the entr" + ("y" if len(gone) == 1 else "ies") + " it added "
                         + ", ".join(repr(preview(e, 40)) for e in gone) + (" is" if len(gone) == 1 else " are")
                         + " not in the file")
        if back:
            parts.append("the entr" + ("y" if len(back) == 1 else "ies") + " it removed "
                         + ", ".join(repr(preview(e, 40)) for e in back) + (" is" if len(back) == 1 else " are")
                         + " in the file")
        return " and ".join(parts) or "the file holds neither side of the change"

    def apply(self, entries: Sequence[str]) -> list[str]:
        """``entries`` with this change made: the removed texts taken out, the added texts
        appended (where not already there). Idempotent."""
        gone = set(self.removed)
        out = [e for e in entries if e not in gone]
        have = set(out)
        out.extend(e for e in self.added if e not in have)
        return out

    def revert(self, entries: Sequence[str], before: Sequence[str]) -> list[str]:
        """``entries`` with this change undone: the added texts taken out, the removed texts
        put back, each where it stood in ``before`` (the file's entries before the change):
        after the nearest earlier entry of ``before`` still present, else first. A removed
        text that replaced nothing and follows nothing goes to the front, as it stood.

        Args:
            entries: the file's entries now (the change ``present`` in them).
            before: the entries before the change (the journal row's ``before``, parsed).
        """
        added = set(self.added)
        out = [e for e in entries if e not in added]
        for e in before:
            if e not in self.removed or e in out:
                continue
            i = list(before).index(e)
            anchor = next((before[j] for j in range(i - 1, -1, -1) if before[j] in out), None)
            out.insert(out.index(anchor) + 1 if anchor is not None else 0, e)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"removed": list(self.removed), "added": list(self.added)}


__all__ = ["STATUSES", "EntryEffect"]
