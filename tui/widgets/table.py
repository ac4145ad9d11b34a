"""DataTable updated in place by row key (Memray): cursor and scroll survive every refresh."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist


class DeckTable(DataTable):
    """A DataTable whose rows are replaced with :meth:`sync`, keyed by a stable string.

    Unchanged rows are not touched; changed cells are updated with ``update_cell``; when the
    set or order of keys changes the table is rebuilt and the cursor is put back on the row
    with the same key (or the same index), with the scroll offset kept.
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

    def sync(self, rows: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Make the table show ``rows`` (``(key, cells)`` in display order)."""
        new_keys = [k for k, _ in rows]
        col_keys = [k for k, _ in self._columns]
        if new_keys == self.keys:
            for key, cells in rows:
                try:
                    current = self.get_row(key)
                except RowDoesNotExist:
                    current = None
                for ck, old, new in zip(col_keys, current or [None] * len(cells), cells):
                    if current is None or old != new:
                        self.update_cell(key, ck, new)
            return
        cursor_key = self.selected_key
        cursor_index = self.cursor_row
        scroll_y = self.scroll_y
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        self.keys = new_keys
        if not rows:
            return
        if cursor_key is not None and cursor_key in new_keys:
            target = new_keys.index(cursor_key)
        else:
            target = min(max(cursor_index, 0), len(rows) - 1)
        self.move_cursor(row=target, animate=False, scroll=False)
        self.scroll_to(y=scroll_y, animate=False)
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
