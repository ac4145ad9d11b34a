"""Apply one hygiene proposal through the locked core (:meth:`core.memory.store.MemoryStore.consolidate`),
only when a person asks, as one journaled change ``memdeck undo`` puts back byte for byte.

The finding is looked up again on the files as they are now (its id is stable for the same kind
and entries), so a proposal made on entries that changed since is refused, never applied to
something else.
"""

from __future__ import annotations

from typing import Any

from ..errors import Refused
from .detect import hygiene_report
from .findings import Finding


def find(home: Any, config: Any, finding_id: str, **report_kw: Any) -> Finding:
    """The finding ``finding_id`` of the home as it is now.

    Raises:
        Refused: ``no_match`` when no current finding has that id (the entries changed since,
            or the id is wrong).
    """
    fid = finding_id.strip().lower()
    for f in hygiene_report(home, config, **report_kw).findings:
        if f.id == fid:
            return f
    raise Refused(f"no hygiene finding {finding_id!r} on the files as they are now (they may have changed since): "
                  "run `memdeck hygiene` again", code="no_match")


def apply_finding(home: Any, config: Any, finding_id: str, *, text: str | None = None, keep: int | None = None,
                  actor: str = "cli", **report_kw: Any) -> Any:
    """Apply the proposal of finding ``finding_id``.

    Args:
        text: a duplicate group's merged text (default: the proposal's, its longest entry).
        keep: a contradiction's side to keep, 1 or 2 (required for contradictions: the other
            side is archived).
        actor: the journal's actor.

    Returns:
        the store's :class:`core.memory.results.WriteResult`.

    Raises:
        Refused: ``no_match`` (see :func:`find`), ``usage`` (``--keep`` missing or out of range, or
            given for another kind), and every refusal of the store (conflict, threat,
            overflow, unwritable, locks).
    """
    from ..memory.store import MemoryStore

    f = find(home, config, finding_id, **report_kw)
    reason = f"hygiene {f.id}: {f.kind}"
    store = MemoryStore(home, config, actor=actor)
    if f.kind == "contradiction":
        if keep not in (1, 2):
            raise Refused(f"finding {f.id} is a contradiction: say which entry stays with --keep 1 or --keep 2 "
                          "(the other is archived; the newer is not assumed right)", code="usage")
        other = f.entries[1 if keep == 1 else 0]
        return store.consolidate(archive=[(other.target, other.text)], reason=f"{reason}, kept #{keep}")
    if keep is not None:
        raise Refused(f"--keep is for contradictions; finding {f.id} is a {f.kind}", code="usage")
    p = f.proposal
    if p.action == "merge" and p.keep is not None:
        merged = text if text is not None else (p.text or p.keep.text)
        rest = [(e.target, e.text) for e in p.entries if e != p.keep]
        return store.consolidate(replace={(p.keep.target, p.keep.text): merged}, archive=rest, reason=reason)
    if text is not None:
        raise Refused(f"--text is for a duplicate's merged entry; finding {f.id} is a {f.kind}", code="usage")
    return store.consolidate(archive=[(e.target, e.text) for e in p.entries], reason=reason)
