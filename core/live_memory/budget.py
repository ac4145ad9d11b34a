"""What one turn's block carries within ``live_memory_max_chars``: the newest changes that fit.

Newest first: a higher :attr:`.changes.LiveChange.order` is newer (Hermes appends new entries at the
end of a file, 0.19 ``MemoryStore.add``; MEMORY's changes come before USER's). The kept changes are
the longest newest-first prefix whose block, with its ``N more wait for /new`` line, fits; the rest
wait for a new session. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .changes import LiveChange

#: (changes to show, how many more wait) -> the block's text
Render = Callable[[Sequence[LiveChange], int], str]


@dataclass(frozen=True)
class Fitted:
    """A budgeted block: ``text`` (len <= the budget, or ``""``), ``sent`` the changes it shows,
    ``over`` the changes left out (over budget: they wait for /new)."""

    text: str
    sent: tuple[LiveChange, ...]
    over: tuple[LiveChange, ...]


def fit(changes: Sequence[LiveChange], max_chars: int, render: Render) -> Fitted:
    """Keep the newest changes whose rendered block fits ``max_chars`` chars.

    Args:
        changes: the changes to deliver (any order).
        max_chars: the budget in chars (Python ``len``).
        render: builds the block from the kept changes and the count left out.

    Returns:
        a :class:`Fitted`; when not even the block without a change fits, ``text`` is ``""`` and
        every change is ``over``.
    """
    newest = sorted(changes, key=lambda c: c.order, reverse=True)
    kept: list[LiveChange] = []
    text = render((), len(newest)) if newest else ""
    if len(text) > max_chars:
        return Fitted("", (), tuple(newest))
    for i, c in enumerate(newest):
        trial = render([*kept, c], len(newest) - i - 1)
        if len(trial) > max_chars:
            break
        kept.append(c)
        text = trial
    left = tuple(newest[len(kept):])
    return Fitted(text, tuple(kept), left)


__all__ = ["Fitted", "Render", "fit"]
