"""Vim motion in every table and list: ``j``/``k`` (row down / up), ``g``/``G`` (first / last
row), ``ctrl+d``/``ctrl+u`` (half a screen down / up), as in lazygit, Harlequin and Posting.

Each key is a :class:`textual.binding.Binding` with an id (``memdeck.vim.down`` ...), so a user
keymap moves it like any other (``[keymap] "memdeck.vim.top" = "home"``). A motion never takes a
key that already means something where the table is: when a widget around it (its panel, the
screen, the app) binds the same key to another action, the motion steps aside
(:class:`textual.actions.SkipAction`) and that binding runs, so ``g`` in Capacity still shows the
usage charts, and a keymap that gives ``j`` to an action keeps it there.
"""

from __future__ import annotations

from typing import Any

from textual.actions import SkipAction
from textual.binding import Binding

#: (key, motion, binding id, help)
VIM_KEYS: tuple[tuple[str, str, str, str], ...] = (
    ("j", "down", "memdeck.vim.down", "next row"),
    ("k", "up", "memdeck.vim.up", "previous row"),
    ("g", "top", "memdeck.vim.top", "first row"),
    ("G", "bottom", "memdeck.vim.bottom", "last row"),
    ("ctrl+d", "half_down", "memdeck.vim.half_down", "half a screen down"),
    ("ctrl+u", "half_up", "memdeck.vim.half_up", "half a screen up"),
)

VIM_IDS = frozenset(bid for _k, _m, bid, _h in VIM_KEYS)


def vim_bindings() -> list[Binding]:
    """The motions as bindings (not in the footer; ``?`` lists their ids)."""
    return [Binding(key, f"vim('{motion}')", text, id=bid, show=False) for key, motion, bid, text in VIM_KEYS]


def key_taken_above(widget: Any, motion: str) -> bool:
    """True when a key bound to ``motion`` on ``widget`` is also bound, to something that is not
    a vim motion, by a node after it in the screen's binding chain (its panel, the screen, the
    app): that binding keeps the key. Reads the chain as Textual builds it for a key press (the
    user keymap applied)."""
    action = f"vim('{motion}')"
    keys: set[str] = set()
    after = False
    for node, bindings in widget.screen._modal_binding_chain:
        if node is widget:
            keys = {key for key, found in bindings.key_to_bindings.items() if any(b.action == action for b in found)}
            after = True
            continue
        if not after:
            continue
        for key in keys:
            if any(b.id not in VIM_IDS for b in bindings.key_to_bindings.get(key, ())):
                return True
    return False


class VimMotion:
    """Mixin for a table or list widget: ``action_vim(motion)`` for :func:`vim_bindings`. The
    widget gives :meth:`vim_move` (rows by a delta), :meth:`vim_jump` (first / last) and
    :meth:`vim_page` (rows in view)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A motion whose key is taken above is disabled: Textual then runs (and the footer
        shows) the binding that has the key (``g Chart`` in Capacity)."""
        if action == "vim" and parameters and key_taken_above(self, str(parameters[0])):
            return False
        return super().check_action(action, parameters)  # type: ignore[misc]

    def action_vim(self, motion: str) -> None:
        if key_taken_above(self, motion):
            raise SkipAction()
        if motion in ("down", "up"):
            self.vim_move(1 if motion == "down" else -1)
        elif motion in ("top", "bottom"):
            self.vim_jump(motion == "bottom")
        else:
            half = max(1, self.vim_page() // 2)
            self.vim_move(half if motion == "half_down" else -half)

    def vim_move(self, delta: int) -> None:  # pragma: no cover - each widget gives its own
        raise NotImplementedError

    def vim_jump(self, last: bool) -> None:  # pragma: no cover - each widget gives its own
        raise NotImplementedError

    def vim_page(self) -> int:  # pragma: no cover - each widget gives its own
        raise NotImplementedError
