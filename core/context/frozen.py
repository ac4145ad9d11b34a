"""The frozen memory of a running session: the MEMORY and USER blocks of its stored system prompt,
and how they differ, entry by entry, from the memory files now.

One concept. Hermes renders each store as a block when a session's prompt is built (session
start, and again after a compaction: 0.19 ``agent/system_prompt.py:481-498``,
``invalidate_system_prompt`` :553-561) and never re-renders it mid-session, so every write since
is invisible to that session until the next build. The block is
``═×46 \\n <header> [<pct>% — <chars:,>/<limit:,> chars] \\n ═×46 \\n <entries joined by "\\n§\\n">``
in every Hermes 0.17-0.22 (0.17 ``tools/memory_tool.py:608-624``, 0.19 :674-691, 0.20 :731-746,
0.22 ``tools/memory_tool_store.py:638-643``); the header's char count is the exact length of the
joined entries, so the block is cut out of the prompt exactly, whatever its entries hold. A
threat-matching entry is in the block as Hermes' ``[BLOCKED: <file> entry contained threat
pattern(s): <ids>. ...]`` placeholder (0.19 ``_sanitize_entries_for_snapshot`` :218-251; 0.22 adds
the target to its advice): it is matched against a file entry that the same Hermes rules would
block with the same pattern ids.

Pure functions of text: nothing here reads a file or the database.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..history.diff import SIMILAR
from ..memory.entries import ENTRY_DELIMITER
from ..memory.prompt_block import BLOCK_SEPARATOR, MEMORY_BLOCK_HEADERS

#: change kinds, as ``memory.changes[].change`` says them
CHANGES = ("added", "removed", "replaced")

_TARGET_OF_HEADER = {v: k for k, v in MEMORY_BLOCK_HEADERS.items()}
_HEADER_RE = re.compile(
    BLOCK_SEPARATOR + r"\n(" + "|".join(re.escape(h) for h in MEMORY_BLOCK_HEADERS.values()) + r")"
    r" \[(\d+)% — ([\d,]+)/([\d,]+) chars\][^\n]*\n" + BLOCK_SEPARATOR + r"\n")
_BLOCKED_RE = re.compile(r"\[BLOCKED: (?:MEMORY|USER)\.md entry contained threat pattern\(s\): ([^.\]]*)\.")
# Where a block whose header count does not fit the text (a prompt Hermes rewrote: 0.19 strips
# non-ASCII on a provider's encoding error, conversation_loop.py:2547) is taken to end instead.
_BLOCK_END_RE = re.compile(r"\n\n(?:" + BLOCK_SEPARATOR + r"\n|Conversation started: |Active Hermes profile: |"
                           r"# Hermes runtime environment)")


@dataclass(frozen=True)
class FrozenBlock:
    """One store's block as it sits in a stored system prompt.

    Attributes:
        target: ``"memory"`` or ``"user"``.
        entries: the entries in the block, in order (``[BLOCKED: ...]`` placeholders as they are).
        start, end: the block's span in the prompt (from its first separator to its last entry
            char), in chars.
        chars, limit, pct: the header's usage, char limit and percent.
        exact: True when the header's char count matched the text (the usual case); False when
            the block's end was found by the next part of the prompt instead.
    """

    target: str
    entries: tuple[str, ...]
    start: int
    end: int
    chars: int
    limit: int
    pct: int
    exact: bool = True


@dataclass(frozen=True)
class MemoryChange:
    """One difference between a session's frozen block and the file now.

    Attributes:
        target: ``"memory"`` or ``"user"``.
        change: ``added`` (in the file, the running agent does not see it), ``removed`` (the
            agent still sees and obeys it) or ``replaced`` (the agent sees ``before``, the file
            holds ``after``).
        before: the entry as the session sees it (None for ``added``).
        after: the entry in the file now (None for ``removed``).
        blocked: the session's side is a ``[BLOCKED: ...]`` placeholder, or the file's entry is
            one the next session will get as a placeholder.
    """

    target: str
    change: str
    before: str | None
    after: str | None
    blocked: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "change": self.change, "before": self.before, "after": self.after,
                "blocked": self.blocked}


def find_blocks(prompt: str) -> dict[str, FrozenBlock]:
    """The MEMORY and USER blocks of a stored system prompt, by target (absent targets are missing).

    Headers are found by their exact form (separator, ``MEMORY_BLOCK_HEADERS``, usage, separator);
    the content is the header's char count of text after it, accepted when it ends the prompt or
    is followed by a blank line. A header inside an accepted block (an entry quoting one) is
    skipped. Never raises.
    """
    out: dict[str, FrozenBlock] = {}
    pos = 0
    while True:
        m = _HEADER_RE.search(prompt, pos)
        if m is None:
            return out
        target = _TARGET_OF_HEADER[m.group(1)]
        try:
            chars = int(m.group(3).replace(",", ""))
            limit = int(m.group(4).replace(",", ""))
        except ValueError:
            pos = m.end()
            continue
        body = m.end()
        end = body + chars
        exact = end <= len(prompt) and (end == len(prompt) or prompt.startswith("\n\n", end))
        if not exact:
            nxt = _BLOCK_END_RE.search(prompt, body)
            end = nxt.start() if nxt is not None else len(prompt.rstrip())
        if target not in out:
            content = prompt[body:end]
            entries = tuple(e for e in (p.strip() for p in content.split(ENTRY_DELIMITER)) if e)
            out[target] = FrozenBlock(target, entries, m.start(), end, chars, limit, int(m.group(2)), exact)
        pos = max(end, m.end())


def blocked_ids(entry: str) -> tuple[str, ...] | None:
    """The sorted pattern ids of a ``[BLOCKED: ...]`` placeholder, or None for any other entry."""
    if not entry.startswith("[BLOCKED:"):
        return None
    m = _BLOCKED_RE.match(entry)
    if m is None:
        return ()
    return tuple(sorted(i.strip() for i in m.group(1).split(",") if i.strip()))


Verdict = Callable[[str], Sequence[str]]


def diff_frozen(target: str, frozen: Sequence[str], disk: Sequence[str], verdict: Verdict) -> list[MemoryChange]:
    """The differences between a session's frozen entries and the file's entries now, in order.

    Hermes' prompt block is the set of a store's entries in file order, so an entry is a
    difference only when its text is not on the other side: an entry the file holds at another
    place than the block (a restore, an undone archive, a revert that puts it back) is *moved*,
    never a difference (:func:`moved_entries` counts them). Entries are compared by text; a
    ``[BLOCKED: ...]`` placeholder is equal to a file entry that ``verdict`` (the pattern ids the
    Hermes of this home reports for a text) blocks with the same ids.

    The entries on one side only are then paired into replacements:

    1. a frozen and a file entry at least :data:`~memdeck.core.history.diff.SIMILAR` alike
       (best first, wherever each sits) are one ``replaced``, as in the change history;
    2. the entries in order on both sides (moved ones set aside) are aligned
       (``difflib.SequenceMatcher``); in a run of unequal entries followed by an unchanged entry,
       every file entry left replaced one of the frozen entries left (Hermes appends additions
       at the end: 0.19 ``MemoryStore.add`` :346-396, ``apply_batch`` :507-612; ``replace``
       keeps the entry's place :398-465), best match first;
    3. in the final run, one frozen and one file entry left at the same place are a
       ``replaced``; the rest are ``removed`` and ``added``.

    So the changes are exactly the set difference of the two sides, with each replacement's two
    entries as one change: ``len(result) == |frozen - disk| + |disk - frozen| - replaced``.

    Args:
        target: ``"memory"`` or ``"user"``.
        frozen: the block's entries (:attr:`FrozenBlock.entries`; ``[]`` for a store that was
            empty when the prompt was built).
        disk: the file's entries as Hermes loads them now.
        verdict: text -> pattern ids (empty when the text is clean).

    Returns:
        the changes; ``[]`` when the session sees exactly the file's entries, in any order.
    """
    return _diff(target, frozen, disk, verdict)[0]


def moved_entries(frozen: Sequence[str], disk: Sequence[str], verdict: Verdict) -> int:
    """How many entries the file holds, same text, at another place than the frozen block
    (not differences: see :func:`diff_frozen`); 0 when the order is the same."""
    return _diff("memory", frozen, disk, verdict)[1]


def _diff(target: str, frozen: Sequence[str], disk: Sequence[str], verdict: Verdict) -> tuple[list[MemoryChange], int]:
    """:func:`diff_frozen`'s changes and :func:`moved_entries`' count, from one alignment."""
    frozen_set = set(frozen)

    def fkey(e: str) -> Any:
        ids = blocked_ids(e)
        return ("blocked", ids) if ids is not None else ("text", e)

    def dkey(e: str) -> tuple[Any, bool]:
        if e in frozen_set:
            return ("text", e), False
        ids = tuple(sorted(set(verdict(e))))
        return (("blocked", ids), True) if ids else (("text", e), False)

    fk = [fkey(e) for e in frozen]
    dk = [dkey(e) for e in disk]
    dkeys = [k for k, _ in dk]
    # entries on both sides (as a multiset: each file entry stands for one frozen entry at most)
    waiting: dict[Any, list[int]] = {}
    for j, k in enumerate(dkeys):
        waiting.setdefault(k, []).append(j)
    both: list[tuple[int, int]] = []
    for i, k in enumerate(fk):
        if waiting.get(k):
            both.append((i, waiting[k].pop(0)))
    # the ones in the same order on both sides stay as anchors; the rest are moved
    in_order = _increasing([j for _i, j in both])
    anchors = [both[n] for n in in_order]
    moved_f = {i for i, _j in both} - {i for i, _j in anchors}
    moved_d = {j for _i, j in both} - {j for _i, j in anchors}
    fi = [i for i in range(len(frozen)) if i not in moved_f]
    dj = [j for j in range(len(disk)) if j not in moved_d]
    ops = difflib.SequenceMatcher(None, [fk[i] for i in fi], [dkeys[j] for j in dj], autojunk=False).get_opcodes()
    runs = [([fi[i] for i in range(i1, i2)], [dj[j] for j in range(j1, j2)], j2 == len(dj) and i2 == len(fi))
            for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    alike = _pair_alike(frozen, disk, [i for r, _a, _t in runs for i in r], [j for _r, a, _t in runs for j in a])
    alike_r = {i for i, _ in alike}
    alike_a = {j for _, j in alike}
    by_i = dict(alike)
    out: list[MemoryChange] = []
    for rem, add, tail in runs:
        pairs = _pair(frozen, disk, rem, add, alike_r, alike_a, tail)
        by_i.update(pairs)
        paired_a = alike_a | {j for _, j in pairs}
        for i in rem:  # in frozen order, each replacement where its old entry was
            if i in by_i:
                j = by_i[i]
                out.append(MemoryChange(target, "replaced", frozen[i], disk[j],
                                        blocked=fk[i][0] == "blocked" or dk[j][1]))
            else:
                out.append(MemoryChange(target, "removed", frozen[i], None, blocked=fk[i][0] == "blocked"))
        for j in add:
            if j not in paired_a:
                out.append(MemoryChange(target, "added", None, disk[j], blocked=dk[j][1]))
    return out, len(moved_f)


def _increasing(seq: Sequence[int]) -> list[int]:
    """The positions of one longest strictly increasing subsequence of ``seq`` (patience sorting)."""
    tails: list[int] = []  # tails[k]: position in seq of the smallest tail of an increasing run of length k+1
    prev: list[int] = [-1] * len(seq)
    for n, v in enumerate(seq):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if seq[tails[mid]] < v:
                lo = mid + 1
            else:
                hi = mid
        prev[n] = tails[lo - 1] if lo else -1
        if lo == len(tails):
            tails.append(n)
        else:
            tails[lo] = n
    out: list[int] = []
    n = tails[-1] if tails else -1
    while n != -1:
        out.append(n)
        n = prev[n]
    return out[::-1]


def _pair_alike(frozen: Sequence[str], disk: Sequence[str], rem: list[int], add: list[int]) -> list[tuple[int, int]]:
    """Pairs ``(frozen index, file index)`` at least :data:`SIMILAR` alike, best first (rule 1)."""
    if not rem or not add:
        return []
    scored = sorted((-_ratio(frozen[i], disk[j]), i, j) for i in rem for j in add)
    pairs: list[tuple[int, int]] = []
    used_r: set[int] = set()
    used_a: set[int] = set()
    for neg, i, j in scored:
        if -neg >= SIMILAR and i not in used_r and j not in used_a:
            pairs.append((i, j))
            used_r.add(i)
            used_a.add(j)
    return pairs


def _pair(frozen: Sequence[str], disk: Sequence[str], rem: list[int], add: list[int], used_r: set[int],
          used_a: set[int], tail: bool) -> list[tuple[int, int]]:
    """Pairs ``(frozen index, file index)`` of one run that are one ``replaced`` by place (rules 2
    and 3 of :func:`diff_frozen`); ``used_r``/``used_a`` are the entries rule 1 already paired."""
    left_r = [i for i in rem if i not in used_r]
    left_a = [j for j in add if j not in used_a]
    if not left_r or not left_a:
        return []
    if tail:
        if len(left_r) == 1 and len(left_a) == 1 and rem.index(left_r[0]) == add.index(left_a[0]):
            return [(left_r[0], left_a[0])]
        return []
    pairs: list[tuple[int, int]] = []
    taken_r: set[int] = set()
    taken_a: set[int] = set()
    for _neg, i, j in sorted((-_ratio(frozen[i], disk[j]), i, j) for i in left_r for j in left_a):
        if i not in taken_r and j not in taken_a:
            pairs.append((i, j))
            taken_r.add(i)
            taken_a.add(j)
    return pairs


def _ratio(a: str, b: str) -> float:
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if sm.real_quick_ratio() < SIMILAR or sm.quick_ratio() < SIMILAR:
        return sm.quick_ratio() / 2  # an order for unlike texts, without the full comparison
    return sm.ratio()


@dataclass(frozen=True)
class FrozenMemory:
    """What one session's prompt holds of the memory, against the files.

    Attributes:
        in_prompt: the prompt has a MEMORY or a USER block (False: memory disabled when it was
            built, a provider-only setup, or no prompt stored yet: see :attr:`reason`).
        reason: why there is nothing to compare, or None.
        blocks: the blocks found, by target.
        changes: every difference, MEMORY first then USER.
        notes: targets compared against an empty store (no block: the store was empty or off
            when the prompt was built), entries moved (same text, another place: not a change)
            and other plain facts.
    """

    in_prompt: bool
    reason: str | None = None
    blocks: dict[str, FrozenBlock] = field(default_factory=dict)
    changes: tuple[MemoryChange, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def differences(self) -> int:
        return len(self.changes)


def compare(prompt: str | None, disk: dict[str, Sequence[str]], enabled: dict[str, bool], verdict: Verdict,
            blocks: dict[str, FrozenBlock] | None = None) -> FrozenMemory:
    """Compare a stored prompt's frozen memory with the files' entries now.

    Args:
        prompt: the stored system prompt (None or ``""``: none stored yet).
        disk: target -> the file's entries as Hermes loads them now.
        enabled: target -> the store is enabled in config.yaml (``memory.memory_enabled``,
            ``memory.user_profile_enabled``); a disabled store is not compared.
        verdict: text -> pattern ids of the home's Hermes threat rules.
        blocks: :func:`find_blocks` of ``prompt`` when already known (a cache).

    Returns:
        a :class:`FrozenMemory`. A prompt with neither block says so in ``reason`` and lists no
        change (never "everything removed"); with one block, the other target is compared as an
        empty store when it is enabled (it was empty when the prompt was built, so every entry
        of its file is ``added``), which ``notes`` says.
    """
    if not prompt:
        return FrozenMemory(False, "no system prompt is stored for this session yet (Hermes stores it at the "
                                   "first turn)")
    found = find_blocks(prompt) if blocks is None else blocks
    if not found:
        return FrozenMemory(False, "its system prompt has no MEMORY or USER block (memory was off or empty when "
                                   "it was built, or a memory provider replaces the built-in memory)")
    changes: list[MemoryChange] = []
    notes: list[str] = []
    for target in ("memory", "user"):
        if not enabled.get(target, True):
            notes.append(f"{'MEMORY.md' if target == 'memory' else 'USER.md'} is disabled in config.yaml: not compared")
            continue
        block = found.get(target)
        if block is None and disk.get(target):
            notes.append(f"no {'MEMORY' if target == 'memory' else 'USER'} block in the prompt: the store was empty "
                         "when it was built")
        if block is not None and not block.exact:
            notes.append(f"the {target} block's size did not match its header: its end was found by the next part")
        found_changes, moved = _diff(target, block.entries if block else (), list(disk.get(target) or ()), verdict)
        changes += found_changes
        if moved:
            notes.append(f"{moved} {'MEMORY' if target == 'memory' else 'USER'} "
                         f"{'entry sits' if moved == 1 else 'entries sit'} at another place in the file, same text: "
                         "moved, not a difference")
    return FrozenMemory(True, None, dict(found), tuple(changes), tuple(notes))


__all__ = ["CHANGES", "FrozenBlock", "FrozenMemory", "MemoryChange", "blocked_ids", "compare", "diff_frozen",
           "find_blocks", "moved_entries"]
