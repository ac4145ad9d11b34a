"""DeckTable updates its rows in place (issue 8: a changed entry repaints a line, not the table).

Each test drives a bare app holding one DeckTable and asserts on the table's public state:
what it shows per key, where the cursor is, and that a refresh never clears the table.
"""

from __future__ import annotations

from typing import Any

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate

from memdeck.tui.widgets.table import DeckTable

pytestmark = pytest.mark.anyio

COLUMNS = [("n", "#"), ("text", "text")]


def rows(*pairs: tuple[str, str]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(k, (Text(str(i)), Text(t))) for i, (k, t) in enumerate(pairs, 1)]


class TableApp(App):
    def compose(self) -> ComposeResult:
        yield DeckTable(COLUMNS, id="t")


def shown(table: DeckTable) -> dict[str, str]:
    return {k: table.cells(k)[1].plain for k in table.keys}


async def _setup(pilot, first):
    table = pilot.app.query_one(DeckTable)
    table.sync(first)
    await pilot.pause()
    clears: list[int] = []
    real = table.clear

    def counting_clear(*a, **k):
        clears.append(1)
        return real(*a, **k)
    table.clear = counting_clear  # type: ignore[method-assign]
    return table, clears


async def test_a_replaced_row_is_updated_in_place_and_the_cursor_stays() -> None:
    async with TableApp().run_test() as pilot:
        table, clears = await _setup(pilot, rows(("a", "alpha"), ("b", "beta"), ("c", "gamma")))
        assert table.select_key("c")
        table.sync(rows(("a", "alpha"), ("b2", "beta, replaced by Hermes"), ("c", "gamma")))
        await pilot.pause()
        assert shown(table) == {"a": "alpha", "b2": "beta, replaced by Hermes", "c": "gamma"}
        assert table.selected_key == "c" and table.cursor_row == 2
        assert clears == [] and table.row_count == 3


async def test_an_entry_added_above_the_cursor_moves_the_cursor_with_its_row() -> None:
    async with TableApp().run_test() as pilot:
        table, clears = await _setup(pilot, rows(("a", "alpha"), ("b", "beta")))
        assert table.select_key("b")
        table.sync(rows(("new", "a new first entry"), ("a", "alpha"), ("b", "beta")))
        await pilot.pause()
        assert table.keys == ["new", "a", "b"] and table.row_count == 3
        assert shown(table)["new"] == "a new first entry"
        assert table.selected_key == "b" and table.cursor_row == 2
        assert clears == []


async def test_removed_rows_leave_from_the_end_and_a_lost_cursor_keeps_its_place() -> None:
    async with TableApp().run_test() as pilot:
        table, clears = await _setup(pilot, rows(("a", "alpha"), ("b", "beta"), ("c", "gamma"), ("d", "delta")))
        assert table.select_key("c")
        table.sync(rows(("a", "alpha"), ("b", "beta"), ("d", "delta")))   # c removed
        await pilot.pause()
        assert table.keys == ["a", "b", "d"] and table.row_count == 3
        assert shown(table) == {"a": "alpha", "b": "beta", "d": "delta"}
        assert table.cursor_row == 2 and table.selected_key == "d"
        table.sync([])
        await pilot.pause()
        assert table.row_count == 0 and table.keys == [] and table.selected_key is None
        assert clears == []


async def test_a_longer_cell_widens_its_column_and_a_shorter_one_narrows_it() -> None:
    async with TableApp().run_test(size=(200, 20)) as pilot:
        table, _ = await _setup(pilot, rows(("a", "short"), ("b", "tiny")))
        col = table.columns[table.ordered_columns[1].key]
        assert col.content_width == len("short")
        long = "a much longer entry text than before"
        table.sync(rows(("a", long), ("b", "tiny")))
        await pilot.pause()
        assert col.content_width == len(long)  # not cropped to the old width
        table.sync(rows(("a", "short"), ("b", "tiny")))
        await pilot.pause()
        assert col.content_width == len("short")


async def test_renders_of_earlier_refreshes_are_not_kept() -> None:
    """DataTable keys its render caches by an update counter that every ``update_cell`` bumps, so
    each refresh's renders are dead the next time; DeckTable drops them (else up to 10,000 per
    table stay: the dashboard's RSS grew 56 MiB over 450 refreshes)."""
    async with TableApp().run_test() as pilot:
        table, _ = await _setup(pilot, rows(*((f"k{i}", f"entry {i}") for i in range(5))))
        for n in range(60):
            table.sync(rows(*((f"k{i}", f"entry {i}" + ("!" if i == n % 5 else "")) for i in range(5))))
            await pilot.pause()
        cells_shown = (5 + 1) * len(COLUMNS)  # rows and the header
        assert 0 < len(table._cell_render_cache) <= 2 * cells_shown
        assert len(table._row_render_cache) <= 2 * 6
        # the kept drawings are those of the current values only, and go with removed rows
        assert 0 < len(table._kept_cells) <= 5 * len(COLUMNS)
        current = {(r, c): table.get_cell_at(Coordinate(r, c)) for r in range(5) for c in range(len(COLUMNS))}
        assert all(kept[0] is current[rc] and len(kept[2]) <= 2 for rc, kept in table._kept_cells.items())
        table.sync(rows(("k0", "entry 0")))
        await pilot.pause()
        assert {r for r, _ in table._kept_cells} <= {0}


def _line(table: DeckTable, y: int):
    """The strip the table draws on its line ``y`` (0 is the header)."""
    return table.render_line(y)


async def test_after_one_changed_cell_only_that_cell_is_rendered_again(monkeypatch) -> None:
    """DataTable renders every visible cell again after any update (its caches are keyed by a
    table-wide counter); DeckTable keeps the cells whose values did not change (a memory write
    repainted the whole Capacity table: ~17 of the ~28 ms it cost to paint)."""
    from textual.widgets import DataTable

    async with TableApp().run_test() as pilot:
        table, _ = await _setup(pilot, rows(*((f"k{i}", f"entry {i}") for i in range(10))))
        for y in range(11):
            _line(table, y)
        rendered: list[tuple[int, int]] = []
        real = DataTable._render_cell

        def counting(self, row_index, column_index, *a, **k):
            rendered.append((row_index, column_index))
            return real(self, row_index, column_index, *a, **k)
        monkeypatch.setattr(DataTable, "_render_cell", counting)
        # same width, so the column keeps its width and every other cell its value
        table.sync(rows(*((f"k{i}", "entry X" if i == 4 else f"entry {i}") for i in range(10))))
        for y in range(11):
            _line(table, y)
        body = sorted({rc for rc in rendered if rc[0] >= 0})
        assert body == [(4, 1)], body  # only the changed text cell (its # cell kept its value)
        assert "entry X" in _line(table, 5).text and "entry 3" in _line(table, 4).text


def _drawn_with_kept_cells_and_afresh(table: DeckTable) -> tuple[list, list]:
    """Every line as drawn with the kept cells, and as DataTable draws it from nothing."""
    from textual.widgets import DataTable

    DataTable._clear_caches(table)  # DataTable's own caches only: the kept cells are used
    kept = [list(table.render_line(y)) for y in range(table.row_count + 1)]
    table._clear_caches()  # everything
    afresh = [list(table.render_line(y)) for y in range(table.row_count + 1)]
    return kept, afresh


async def test_kept_cells_draw_what_datatable_draws_in_every_state() -> None:
    """A kept cell is reused only in the state it was drawn in: cursor, focus, hover state and
    theme each draw it differently, and each line must equal DataTable's own drawing."""
    async with TableApp().run_test() as pilot:
        table, _ = await _setup(pilot, rows(*((f"k{i}", f"entry {i}") for i in range(4))))
        app = pilot.app
        states = []

        async def check(what: str) -> None:
            await pilot.pause()
            kept, afresh = _drawn_with_kept_cells_and_afresh(table)
            assert kept == afresh, what
            states.append(kept)

        table.focus()  # the only focusable widget: it may have focus already
        await check("focused")
        assert table.select_key("k2")
        await check("cursor moved")
        table.sync(rows(*((f"k{i}", "entry X" if i == 1 else f"entry {i}") for i in range(4))))
        await check("a cell changed")
        table.blur()
        await check("blurred")
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await check("theme changed")
        table.focus()
        assert table.select_key("k0")
        await check("focused again in the other theme")
        assert len({repr(s) for s in states}) == len(states)  # each state draws differently


def _on_screen(table: DeckTable) -> list[str]:
    """The table's lines as the screen has them (the widget's line cache, drawn only when dirty)."""
    from textual.geometry import Region

    return [s.text for s in table.render_lines(Region(0, 0, table.size.width, table.size.height))]


def _drawn_afresh(table: DeckTable) -> list[str]:
    table._clear_caches()
    return _on_screen(table)


@pytest.mark.parametrize(("new", "lines_drawn"), [
    ("entry X", 1),  # as wide as before: only the row's line is drawn again
    ("entry 4, now much wider than any other", None),  # its column widens: every line
])
async def test_a_changed_cell_draws_its_line_again_or_every_line_when_a_width_changes(new, lines_drawn) -> None:
    """A memory write changes one row of the Capacity table. DataTable's ``update_cell`` asks to
    draw every line again; DeckTable draws only the changed row's line when every column keeps
    its width, and what is on screen is what the table draws from nothing."""
    async with TableApp().run_test(size=(80, 20)) as pilot:
        table, _ = await _setup(pilot, rows(*((f"k{i}", f"entry {i}") for i in range(10))))
        await pilot.pause()
        drawn: list[int] = []
        real = table.render_line

        def counting(y: int):
            drawn.append(y)
            return real(y)
        table.render_line = counting  # type: ignore[method-assign]
        table.sync(rows(*((f"k{i}", new if i == 4 else f"entry {i}") for i in range(10))))
        await pilot.pause()
        shown_now = _on_screen(table)
        if lines_drawn is None:
            assert set(range(11)) <= set(drawn)  # the header and the ten rows
        else:
            assert sorted(set(drawn)) == [5]  # the header is line 0: row 4 is line 5
        assert any(new in line for line in shown_now)
        assert shown_now == _drawn_afresh(table)


async def test_a_changed_cell_in_a_scrolled_table_reaches_the_right_line() -> None:
    async with TableApp().run_test(size=(80, 12)) as pilot:
        table, _ = await _setup(pilot, rows(*((f"k{i}", f"entry {i:02}") for i in range(40))))
        assert table.select_key("k35")
        await pilot.pause()
        assert table.scroll_offset.y > 0
        table.sync(rows(*((f"k{i}", "entry XX" if i == 34 else f"entry {i:02}") for i in range(40))))
        await pilot.pause()
        shown_now = _on_screen(table)
        assert any("entry XX" in line for line in shown_now)
        assert shown_now == _drawn_afresh(table)


async def test_a_change_while_the_table_is_hidden_is_shown_when_it_comes_back() -> None:
    """A line refresh outside the table's window does nothing (its tab hidden: the container is
    not displayed, the table keeps its size and its lines): the table then forgets its lines, or
    it would show the old value when it comes back."""
    from textual.widgets import Static, TabbedContent, TabPane

    class TabbedTableApp(App):
        def compose(self) -> ComposeResult:
            with TabbedContent(id="tabs"):
                with TabPane("table", id="a"):
                    yield DeckTable(COLUMNS, id="t")
                with TabPane("other", id="b"):
                    yield Static("another panel")

    async with TabbedTableApp().run_test(size=(80, 20)) as pilot:
        table, _ = await _setup(pilot, rows(*((f"k{i}", f"entry {i}") for i in range(10))))
        await pilot.pause()
        assert any("entry 4" in line for line in _on_screen(table))
        tabs = pilot.app.query_one("#tabs", TabbedContent)
        tabs.active = "b"
        await pilot.pause()
        table.sync(rows(*((f"k{i}", "entry X" if i == 4 else f"entry {i}") for i in range(10))))
        await pilot.pause()
        tabs.active = "a"
        await pilot.pause()
        shown_now = _on_screen(table)
        assert any("entry X" in line for line in shown_now)
        assert shown_now == _drawn_afresh(table)
