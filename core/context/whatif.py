"""What a write would do to the next session's frozen block, before anything is written.

One concept: the block Hermes would put in a new session's system prompt
(:func:`memdeck.core.memory.prompt_block.render_block` of the entries as Hermes loads them, threat
matches as ``[BLOCKED: ...]``), now and after a proposed edit, archive or new entry; its size in
chars, Hermes' token estimate and the usage against the char limit. A pin changes no memory
file: what it moves is MemLock's reminder budget, when the anchor is re-injected (``max_slots``
lines of ``len(reminder) + 4`` chars within ``max_reminder_chars``, MemLock
``_select_casualties``).

Pure functions of values; nothing here reads or writes a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..home import TARGET_FILES
from ..memory.entries import usage_chars
from ..memory.prompt_block import render_block, sanitize_entries_for_snapshot
from ..text import percent, percent_text
from .tokens import hermes_estimate


@dataclass(frozen=True)
class BlockSize:
    """One store's next-session block: ``chars`` of the rendered block, Hermes' ``tokens``, the
    store's ``usage`` (chars) against its ``limit`` and its ``pct`` (memdeck's one rule,
    :func:`memdeck.core.text.percent`: Hermes' truncation, past 100 when over the limit)."""

    chars: int
    tokens: int
    usage: int
    limit: int
    pct: int


@dataclass(frozen=True)
class WhatIf:
    """The next session's block of one store now and after a proposed write.

    Attributes:
        target: ``"memory"`` or ``"user"``.
        before, after: :class:`BlockSize` now and after.
        over_limit: the write would put the store over its char limit (the write is refused).
    """

    target: str
    before: BlockSize
    after: BlockSize
    over_limit: bool

    def lines(self) -> list[str]:
        """Plain-text lines for a dialog: the block's size, tokens and usage, before -> after."""
        name = TARGET_FILES[self.target]
        b, a = self.before, self.after

        def sign(n: int) -> str:
            return f"{n:+,}" if n else "±0"

        out = [f"next session's {name} block: {b.chars:,} -> {a.chars:,} chars ({sign(a.chars - b.chars)}), "
               f"~{b.tokens:,} -> ~{a.tokens:,} tokens ({sign(a.tokens - b.tokens)})",
               f"usage: {b.usage:,} -> {a.usage:,}/{a.limit:,} chars ({b.pct}% -> {a.pct}% of the limit)"]
        if self.over_limit:
            out.append(f"over the {a.limit:,}-char limit: this write would be refused")
        return out


def block_size(target: str, entries: Sequence[str], limit: int, line: str = "0.19") -> BlockSize:
    """The next-session block of ``entries`` (as Hermes loads them) under ``limit``."""
    block = render_block(target, sanitize_entries_for_snapshot(entries, TARGET_FILES[target]), limit)
    used = usage_chars(entries)
    return BlockSize(len(block), hermes_estimate(block, line), used, limit, percent(used, limit))


def what_if(target: str, entries: Sequence[str], limit: int, *, remove: str | None = None,
            replace_with: str | None = None, add: str | None = None, line: str = "0.19") -> WhatIf:
    """The block now and after removing ``remove`` (an archive), replacing it with
    ``replace_with`` (an edit: the entry keeps its place, as Hermes' ``replace``), or appending
    ``add`` (a new entry; a copy of an existing entry changes nothing, as Hermes' ``add``).

    Raises:
        ValueError: ``target`` is not ``"memory"`` or ``"user"``.
    """
    if target not in TARGET_FILES:
        raise ValueError(f"invalid target {target!r}: use 'memory' or 'user'")
    now = list(entries)
    after = list(now)
    if remove is not None and remove in after:
        i = after.index(remove)
        new = (replace_with or "").strip()
        if new:
            after[i] = new
        else:
            del after[i]
    if add is not None and add.strip() and add.strip() not in after:
        after.append(add.strip())
    after = list(dict.fromkeys(after))  # Hermes drops exact duplicates on load
    b, a = block_size(target, now, limit, line), block_size(target, after, limit, line)
    return WhatIf(target, b, a, a.usage > limit)


@dataclass(frozen=True)
class PinWhatIf:
    """A pin's effect: the memory files (and so the frozen block) do not change; the reminder
    block grows by one line when MemLock re-injects the anchor."""

    line_chars: int
    line_tokens: int
    budget_chars: int
    max_slots: int

    def lines(self) -> list[str]:
        return ["next session's frozen memory block: unchanged (a pin is a MemLock anchor, not a memory entry)",
                f"reminder block when it is re-injected: +{self.line_chars:,} chars (~{self.line_tokens:,} tokens), "
                f"{percent_text(self.line_chars, self.budget_chars)} of MemLock's {self.budget_chars:,}-char budget, "
                f"1 of {self.max_slots} slots"]


def pin_what_if(reminder: str, memlock: Any, line: str = "0.19") -> PinWhatIf:
    """:class:`PinWhatIf` of an anchor whose reminder is ``reminder``, with MemLock config ``memlock``
    (``max_reminder_chars``, ``max_slots``)."""
    text = f"  - {reminder.strip()}"
    return PinWhatIf(len(reminder.strip()) + 4, hermes_estimate(text, line),
                     int(getattr(memlock, "max_reminder_chars", 600)), int(getattr(memlock, "max_slots", 8)))


__all__ = ["BlockSize", "PinWhatIf", "WhatIf", "block_size", "pin_what_if", "what_if"]
