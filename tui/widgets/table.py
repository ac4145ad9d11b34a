"""DataTable updated in place (Memray): rows keep their lines, cursor and scroll survive every refresh."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.coordinate import Coordinate
from textual.geometry import Region
from textual.widgets import DataTable

from .vim import VimMotion, vim_bindings

#: Drawings kept per cell: one per state it was drawn in (row style, cursor, hover, focus), in
#: the column's current width; more than this and the cell starts again.
STATES_PER_CELL = 8


class DeckTable(VimMotion, DataTable):
    """A DataTable that shows a list of keyed rows and updates them in place (Memray's live TUI).

    Row ``i`` of the table is always the ``i``-th row given to :meth:`sync` (the DataTable's own
    row keys are positions); :attr:`keys` maps positions to the caller's stable keys. A refresh
    changes only the cells that differ, adds or removes rows at the end, and moves the cursor
    to the row that now holds the key it was on: nothing is cleared, so a changed entry costs a
    repaint of its line, and a layout of the screen only when a column must grow or shrink or
    the row count changes. DataTable's ``update_cell`` asks to draw every line again; a change
    that leaves every column's width as it was is stored without it, and only its row's line is
    drawn again (the lines on screen are kept).

    Rendered cells are kept across updates: DataTable keys every render by a table-wide update
    count, so one changed cell made it render every visible cell again (measured: the Capacity
    table took ~17 ms of the ~28 ms a memory write costs to paint). A kept drawing is reused only
    while the table still holds the very same value object at that position, in the same width,
    row style, cursor, hover and focus state; a new value drops the old one's drawings, so what
    is kept is bounded by the table's own cells. Rows are one line high (``sync`` adds them so).
    """

    DEFAULT_CSS = """
    DeckTable { height: 1fr; }
    """

    #: vim motion (:mod:`.vim`): j/k, g/G, ctrl+d/ctrl+u, each stepping aside for a key the panel
    #: or the app already binds
    BINDINGS = vim_bindings()

    def __init__(self, columns: Sequence[tuple[str, str]], **kwargs: Any) -> None:
        # (row, column) -> (the value drawn, its width, {state: lines}); only cells of the
        # current rows, in the current width (set first: DataTable's watchers clear it)
        self._kept_cells: dict[tuple[int, int], tuple[Any, int, dict[tuple[Any, ...], list[list[Segment]]]]] = {}
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
        whole = False  # True once a change repaints every line (a row added or removed, a width)
        lines: set[int] = set()  # rows whose changed cells keep every column's width
        for i in range(shown - 1, len(rows) - 1, -1):
            self.remove_row(str(i))
            whole = True
        if len(rows) < shown:  # the kept drawings of removed rows go with them
            self._kept_cells = {rc: kept for rc, kept in self._kept_cells.items() if rc[0] < len(rows)}
        for i, (_, cells) in enumerate(rows):
            if i >= shown:
                self.add_row(*cells, key=str(i))
                whole = True
                continue
            current = self.get_row(str(i))
            for ck, old, new in zip(col_keys, current, cells):
                if old == new:
                    continue
                if self._keeps_width(ck, old, new):
                    self._set_cell(str(i), ck, new)
                    lines.add(i)
                else:
                    self.update_cell(str(i), ck, new, update_width=True)
                    whole = True
        self.keys = [k for k, _ in rows]
        if self._update_count != before:
            # Every render cached so far is keyed by the old update count and can never be hit
            # again; DataTable's LRU caches would keep up to 10,000 of them per table (measured:
            # +56 MiB over 450 refreshes on the demo home), so drop them now. Both names are
            # DataTable internals of Textual 8 (pinned <9); tests/tui/test_deck_table.py guards them.
            # The kept cells stay: each is checked against the value it was rendered from.
            if whole:
                DataTable._clear_caches(self)
            else:  # the lines on screen stay; only the changed rows are drawn again
                self._drop_dead_renders()
                self._refresh_lines(sorted(lines))
        if not rows:
            return
        if cursor_key is not None and cursor_key in self.keys:
            target = self.keys.index(cursor_key)
        else:
            target = min(max(cursor_index, 0), len(rows) - 1)
        if target != self.cursor_row:
            self.move_cursor(row=target, animate=False, scroll=False)
            self.call_after_refresh(self._ensure_cursor_visible)

    # ── cells changed without a whole-table repaint (DataTable internals of Textual 8, pinned <9) ──

    def _keeps_width(self, column_key: str, old: Any, new: Any) -> bool:
        """True when putting ``new`` where ``old`` was leaves the column's width as it is: the
        new value is as wide as the column, or narrower while the old one was not the widest
        (DataTable computes ``content_width`` as the widest cell or the label,
        ``_update_column_widths``)."""
        from ..textual_private import ColumnKey, cell_measure, default_cell_formatter

        column = self.columns.get(ColumnKey(column_key))
        if column is None or column.auto_width is False:
            return False
        console = self.app.console
        width = column.content_width

        def measured(value: Any) -> int:
            return cell_measure(console, default_cell_formatter(value, wrap=False, height=1), 1)

        new_width = measured(new)
        return new_width == width or (new_width < width and measured(old) < width)

    def _set_cell(self, row_key: str, column_key: str, value: Any) -> None:
        """``DataTable.update_cell`` without its repaint of every line (the caller refreshes
        the row's line): the value is stored and the update count moves on, as there."""
        from ..textual_private import ColumnKey, RowKey

        self._data[RowKey(row_key)][ColumnKey(column_key)] = value
        self._update_count += 1

    def _refresh_lines(self, rows: list[int]) -> None:
        """Ask for the lines of ``rows`` (positions; one line each) to be drawn again. A table
        with no window on screen (a hidden tab, or one not laid out yet) forgets all its lines:
        a region refresh outside the window does nothing, and the kept line would be stale when
        the table shows again at the same size. More changed rows than lines shown: one refresh."""
        window = self.window_region
        if not window or len(rows) > window.height:
            self.refresh()
            return
        top = self.header_height if self.show_header else 0
        width = max(self.size.width, self.virtual_size.width)
        for i in rows:  # rows are one line high (sync adds them so): no sum over earlier rows
            self._refresh_region(Region(0, top + i, width, 1))

    def _drop_dead_renders(self) -> None:
        """DataTable's render caches keyed by an update count that is gone, but not the widget's
        lines on screen (``DataTable._clear_caches`` drops those too)."""
        for cache in (self._row_render_cache, self._cell_render_cache, self._row_renderable_cache,
                      self._line_cache, self._offset_cache, self._ordered_row_cache):
            cache.clear()

    # ── column widths settled on idle (DataTable internals of Textual 8, pinned <9) ──

    def _column_widths(self) -> list[int]:
        return [c.content_width for c in self.columns.values()]

    def _update_column_widths(self, updated_cells: Any) -> None:
        before = self._column_widths()
        super()._update_column_widths(updated_cells)
        self._forget_lines_if_widths_moved(before)

    def _update_dimensions(self, new_rows: Any) -> None:
        before = self._column_widths()
        super()._update_dimensions(new_rows)
        self._forget_lines_if_widths_moved(before)

    def _forget_lines_if_widths_moved(self, before: list[int]) -> None:
        """DataTable settles column widths when it is idle, after a row was added or a cell
        widened or narrowed, but keys its drawn rows and lines by its update count only, not
        by the widths: a screen painted between the change and that idle kept rows drawn in
        the old widths, and they stayed (a filter cleared in History left ``background
        review`` cut to ``background`` and ``memdeck tui`` to ``memdeck``; issue 39 #8). When a
        width moved, those drawings go and the table is drawn again (the kept cells stay: each
        is keyed by its width)."""
        if self._column_widths() != before:
            DataTable._clear_caches(self)
            self.refresh()

    # ── rendered cells kept across updates (DataTable internals of Textual 8, pinned <9) ──

    def _clear_caches(self) -> None:
        """DataTable clears its renders when the cursor, header or columns change: so do we."""
        super()._clear_caches()
        self._kept_cells.clear()

    def notify_style_update(self) -> None:
        """A theme or CSS change restyles every cell."""
        super().notify_style_update()
        self._kept_cells.clear()

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False) -> list[list[Segment]]:
        if row_index < 0 or column_index < 0:  # the header and row labels: DataTable's own cache
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self.get_cell_at(Coordinate(row_index, column_index))
        state = (base_style, cursor, hover, self.show_cursor, self._show_hover_cursor, self._pseudo_class_state)
        kept = self._kept_cells.get((row_index, column_index))
        if (kept is None or kept[0] is not value or kept[1] != width
                or (len(kept[2]) >= STATES_PER_CELL and state not in kept[2])):
            kept = (value, width, {})  # a new value or width: the earlier drawings are dropped
            self._kept_cells[(row_index, column_index)] = kept
        lines = kept[2].get(state)
        if lines is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            kept[2][state] = lines
        return lines

    def _ensure_cursor_visible(self) -> None:
        try:
            self._scroll_cursor_into_view(animate=False)
        except Exception:  # noqa: BLE001 - Textual's private scroll helper: a failure leaves the cursor where it is
            pass

    # ── vim motion (:class:`.vim.VimMotion`) ──

    def vim_move(self, delta: int) -> None:
        """Move the cursor ``delta`` rows (clamped to the table)."""
        if self.row_count:
            self.move_cursor(row=min(max(self.cursor_row + delta, 0), self.row_count - 1), animate=False)

    def vim_jump(self, last: bool) -> None:
        """Put the cursor on the first or the last row."""
        if self.row_count:
            self.move_cursor(row=self.row_count - 1 if last else 0, animate=False)

    def vim_page(self) -> int:
        """Rows in view (the header left out)."""
        return max(1, self.scrollable_content_region.height - (self.header_height if self.show_header else 0))

    def select_key(self, key: str) -> bool:
        """Put the cursor on the row with ``key``; False when there is none."""
        if key in self.keys:
            self.move_cursor(row=self.keys.index(key), animate=False)
            return True
        return False
