"""Every private name of Textual, textual-serve and textual-plotext the dashboard touches, in one place.

memdeck pins ``textual>=8.2,<9`` and ``textual-serve>=1.1.3,<1.2``, but a private name may move in
any release. Each one the app uses is listed here, with where it lives and why memdeck needs it;
``tests/tui/test_textual_private.py`` fails naming the entry when an upgrade moves one (as
Memray keeps its Textual internals in one module). The private *modules* are imported through
this module (``from memdeck.tui.textual_private import XTermParser``): the import happens when a
caller asks for the name, so the launch imports nothing earlier than before.

* :data:`PRIVATE_IMPORTS`: name -> (private module, attribute) the app imports.
* :data:`PRIVATE_ATTRIBUTES`: (module, class) -> the private attributes and methods of that
  class the app reads, writes, calls or overrides, each with the memdeck module that does.
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> (module, attribute): what ``from memdeck.tui.textual_private import <name>`` gives.
PRIVATE_IMPORTS: dict[str, tuple[str, str]] = {
    # tui/driver.py, tui/web_driver.py: the input threads parse keys as Textual's drivers do
    "get_time": ("textual._time", "get_time"),
    "XTermParser": ("textual._xterm_parser", "XTermParser"),
    # tui/web_driver.py: the browser's packets, framed as textual-serve sends them
    "ByteStream": ("textual.drivers._byte_stream", "ByteStream"),
    # tui/web_driver.py: the exception WebDriver's input loop ends on
    "_ExitInput": ("textual.drivers.web_driver", "_ExitInput"),
    # tui/textual_mends.py: the lru_cache that holds removed widgets' lines (textual#6665)
    "StylesCache": ("textual._styles_cache", "StylesCache"),
    # tui/widgets/table.py: the cell formatting and measuring DataTable uses for its own cells
    "default_cell_formatter": ("textual.widgets._data_table", "default_cell_formatter"),
    "cell_measure": ("textual.widgets._data_table", "measure"),
    "ColumnKey": ("textual.widgets._data_table", "ColumnKey"),
    "RowKey": ("textual.widgets._data_table", "RowKey"),
    # tui/widgets/footer.py: the footer's key labels, keys and key groups (the keys that fit, by priority)
    "FooterLabel": ("textual.widgets._footer", "FooterLabel"),
    "FooterKey": ("textual.widgets._footer", "FooterKey"),
    "KeyGroup": ("textual.widgets._footer", "KeyGroup"),
}

#: (module, class) -> {private name: the memdeck module that uses it, and how}
PRIVATE_ATTRIBUTES: dict[tuple[str, str], dict[str, str]] = {
    ("textual.app", "App"): {
        "_bindings": "tui/app.py: hides the write keys and relabels pause in the footer",
        "_notifications": "tui/app.py: moves Textual's toasts onto memdeck's toast stack",
        "_refresh_notifications": "tui/app.py: lets Textual's rack drop the moved toasts",
        "_disable_notifications": "tui/app.py: notify honours App.run_test(notifications=False)",
        "_exit": "tui/app.py: a panel mounted while quitting is not drawn",
        "_loop": "tui/app.py: notify from another thread is handed to the app's loop",
        "_thread_id": "tui/app.py: notify knows when it is called off the app's thread",
        "_keymap": "tui/widgets/overview.py: the key a user keymap gave each panel, shown in the overview",
    },
    ("textual.widgets._footer", "Footer"): {
        "_bindings_ready": "tui/widgets/footer.py: the keys are composed once the screen has bindings, as Footer does",
    },
    ("textual.screen", "Screen"): {
        "_modal_binding_chain": "tui/widgets/vim.py: a vim motion steps aside for a key its panel or the app binds",
    },
    ("textual.dom", "DOMNode"): {
        "_bindings": "tui/widgets/overview.py: the panel jumps' keys, read from the app's bindings",
    },
    ("textual.widgets._tabs", "Tab"): {
        "_label": "tui/app.py: a badge of the same width is drawn in place, without Tab.label's layout pass",
    },
    ("textual.widgets._data_table", "DataTable"): {
        "_clear_caches": "tui/widgets/table.py: overridden to keep the unchanged rows' lines",
        "_render_cell": "tui/widgets/table.py: overridden to cache a cell's lines by its state",
        "_data": "tui/widgets/table.py: one cell updated in place",
        "_row_render_cache": "tui/widgets/table.py: dropped for the changed rows only",
        "_cell_render_cache": "tui/widgets/table.py: dropped for the changed rows only",
        "_row_renderable_cache": "tui/widgets/table.py: dropped for the changed rows only",
        "_line_cache": "tui/widgets/table.py: dropped for the changed rows only",
        "_offset_cache": "tui/widgets/table.py: dropped for the changed rows only",
        "_ordered_row_cache": "tui/widgets/table.py: dropped for the changed rows only",
        "_refresh_region": "tui/widgets/table.py: repaints the changed rows only",
        "_show_hover_cursor": "tui/widgets/table.py: part of a cell's cache key",
        "_pseudo_class_state": "tui/widgets/table.py: part of a cell's cache key",
        "_scroll_cursor_into_view": "tui/widgets/table.py: keeps the cursor row on screen without animation",
        "_update_column_widths": "tui/widgets/table.py: overridden to drop rows drawn in the old widths when a width moved",
        "_update_dimensions": "tui/widgets/table.py: overridden to drop rows drawn in the old widths when a width moved",
    },
    ("textual.widgets._tabbed_content", "TabbedContent"): {
        "_on_tab_pane_focused": "tui/app.py: overridden so focusing a panel does not switch tabs twice",
    },
    ("textual.widget", "Widget"): {
        "_size_updated": "tui/widgets/toasts.py: overridden so the toast stack never triggers a layout",
    },
    ("textual.driver", "Driver"): {
        "_debug": "tui/driver.py, tui/web_driver.py: passed to the XTermParser as Textual's drivers do",
        "_app": "tui/web_driver.py: posts ExitApp when the browser goes",
    },
    ("textual.drivers.web_driver", "WebDriver"): {
        "_on_meta": "tui/web_driver.py: the browser's meta packets (resize, focus, quit)",
        "_key_thread": "tui/web_driver.py: joined when application mode stops",
    },
    ("textual._xterm_parser", "XTermParser"): {
        "_timeout_time": "tui/driver.py: the escape-sequence deadline the input thread waits for (read with hasattr)",
    },
    ("textual._styles_cache", "StylesCache"): {
        "get_inner_outer": "tui/textual_mends.py: its lru_cache is cleared (a public name of a private class)",
    },
    ("textual_serve.app_service", "AppService"): {
        "_build_environment": "tui/serve.py: overridden to add the tab's token to the dashboard's environment",
        "_open_app_process": "tui/serve.py: overridden to start the dashboard in its own process group",
        "_process": "tui/serve.py: the dashboard process of one browser tab",
        "_task": "tui/serve.py: the task reading that process, awaited on close",
    },
    ("textual_plotext.plotext_plot", "Plot"): {
        "_set_size": "tui/widgets/chart.py: sizes the figure as textual-plotext itself does (its issue #5)",
    },
}


def __getattr__(name: str) -> Any:
    """``from memdeck.tui.textual_private import XTermParser``: the private module is imported now."""
    try:
        module, attribute = PRIVATE_IMPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), attribute)
