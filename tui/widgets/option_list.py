"""An ``OptionList`` with vim motion (:mod:`.vim`): the list of every picker."""

from __future__ import annotations

from textual.widgets import OptionList

from .vim import VimMotion, vim_bindings


class DeckOptionList(VimMotion, OptionList):
    """Textual's ``OptionList`` plus j/k, g/G, ctrl+d/ctrl+u (each a binding with an id)."""

    BINDINGS = vim_bindings()

    def vim_move(self, delta: int) -> None:
        """Highlight the option ``delta`` below (above when negative) the highlighted one."""
        if self.option_count:
            now = self.highlighted if self.highlighted is not None else 0
            self.highlighted = min(max(now + delta, 0), self.option_count - 1)

    def vim_jump(self, last: bool) -> None:
        """Highlight the first or the last option."""
        if self.option_count:
            self.highlighted = self.option_count - 1 if last else 0

    def vim_page(self) -> int:
        """Options in view (one line each, as the pickers draw them)."""
        return max(1, self.scrollable_content_region.height)
