"""A Static that repaints only when what it shows changed (Memray's live TUI: update in place).

A live home refreshes every few seconds, and most of what a panel shows is the same as before.
``Static.update`` always repaints and, by default, lays out the whole screen again: on a
120x40 terminal that is a full-screen write for a one-character change. :class:`Readout`
compares the new content with the shown one (Rich ``Text`` compares text and styles) and does
nothing when they are equal, and asks for a layout pass only when its height changed: a
readout drawn to the widget's width by its producer (a bar, the status line) counts its lines;
any other measures the new content at its width with Textual's own ``get_content_height`` (the
number the layout pass would compute).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static


class Readout(Static):
    """``Readout(fits_width=True)`` when the content is drawn to the width, one line per ``\n``."""

    def __init__(self, *args: Any, fits_width: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fits_width = fits_width
        self._shown: Any = None

    def show(self, content: Any, *, keep_height: bool = False) -> bool:
        """Show ``content`` (a Rich renderable or a string); returns False when it was already
        shown and nothing was repainted. ``keep_height``: content that needs no more lines than
        the height laid out now is drawn in that height (blank lines under it until the next
        layout pass), without a layout pass of the screen; only more lines lay out (a refresh's
        new detail text, whose wrapped height goes up and down by a line: issue 38 #2)."""
        if self._shown is not None and _same(content, self._shown):
            return False
        self._shown = content
        width, height = self.content_size
        if not width:
            self.update(content)  # not laid out yet: the layout pass measures it
            return True
        # Compared with the height laid out now, not with the previous content's: a layout
        # requested for an earlier content may not have run yet (the first paint and the full
        # snapshot can arrive in one frame).
        if self.fits_width:
            self.update(content, layout=_lines(content) != height)
            return True
        self.update(content, layout=False)
        needed = self.get_content_height(self.container_size, self.app.size, width)
        if needed > height or (needed < height and not keep_height):
            self.refresh(layout=True)
        return True


def _same(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` draw the same. Rich ``Text.__eq__`` compares only the text and
    the spans, not the style of the whole text; other renderables compare by identity."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Text):
        return (a.plain == b.plain and a.spans == b.spans and a.style == b.style and a.justify == b.justify
                and a.overflow == b.overflow and a.no_wrap == b.no_wrap and a.end == b.end)
    return bool(a == b) if isinstance(a, str) else a is b


def _lines(content: Any) -> int | None:
    """Lines of a string or Rich Text drawn without wrapping; None when unknown."""
    plain = getattr(content, "plain", content)
    return plain.count("\n") + 1 if isinstance(plain, str) else None
