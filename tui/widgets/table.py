"""DataTable updated in place (Memray): rows keep their lines, cursor and scroll survive every refresh."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.widgets import DataTable


class DeckTable(DataTable):
    """A DataTable that shows a list of keyed rows and updates them in place (Memray's live TUI).

    Row ``i`` of the table is always the ``i``-th row given to :meth:`sync` (the DataTable's own
    row keys are positions); :attr:`keys` maps positions to the caller's stable keys. A refresh
    changes only the cells that differ, adds or removes rows at the end, and moves the cursor
    to the row that now holds the key it was on: nothing is cleared, so a changed entry costs a
    repaint of its line, and a layout of the screen only when a column must grow or shrink or
    the row count changes.
    """

    DEFAULT_CSS = """
    DeckTable { height: 1fr; }
    """

    def __init__(self, columns: Sequence[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._columns = list(columns)
        self.keys: list[str] = []

    def on_mount(self) -> None:
        for key, label in self._columns:
            self.add_column(label, key=key)

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor, or ``None`` when the table is empty."""
        if not self.keys or self.row_count == 0:
            return None
        row = self.cursor_row
        if 0 <= row < len(self.keys):
            return self.keys[row]
        return None

    def cells(self, key: str) -> list[Any]:
        """The cells shown in the row with ``key`` (raises ``KeyError`` when there is none)."""
        if key not in self.keys:
            raise KeyError(key)
        return self.get_row(str(self.keys.index(key)))

    def sync(self, rows: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Make the table show ``rows`` (``(key, cells)`` in display order)."""
        cursor_key = self.selected_key
        cursor_index = self.cursor_row
        col_keys = [k for k, _ in self._columns]
        shown = self.row_count
        before = self._update_count
        for i in range(shown - 1, len(rows) - 1, -1):
            self.remove_row(str(i))
        for i, (_, cells) in enumerate(rows):
            if i >= shown:
                self.add_row(*cells, key=str(i))
                continue
            current = self.get_row(str(i))
            for ck, old, new in zip(col_keys, current, cells):
                if old != new:
                    self.update_cell(str(i), ck, new, update_width=True)
        self.keys = [k for k, _ in rows]
        if self._update_count != before:
            # Every render cached so far is keyed by the old update count and can never be hit
            # again; DataTable's LRU caches would keep up to 10,000 of them per table (measured:
            # +56 MiB over 450 refreshes on the demo home), so drop them now. Both names are
            # DataTable internals of Textual 8 (pinned <9); tests/tui/test_deck_table.py guards them.
            self._clear_caches()
        if not rows:
            return
        if cursor_key is not None and cursor_key in self.keys:
            target = self.keys.index(cursor_key)
        else:
            target = min(max(cursor_index, 0), len(rows) - 1)
        if target != self.cursor_row:
            self.move_cursor(row=target, animate=False, scroll=False)
            self.call_after_refresh(self._ensure_cursor_visible)

    def _ensure_cursor_visible(self) -> None:
        try:
            self._scroll_cursor_into_view(animate=False)
        except Exception:
            pass

    def select_key(self, key: str) -> bool:
        """Put the cursor on the row with ``key``; False when there is none."""
        if key in self.keys:
            self.move_cursor(row=self.keys.index(key), animate=False)
            return True
        return False
