"""A list picker (sessions, profiles, archive records): ``ModalScreen[str | None]``."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .modal import Dialog


class PickerScreen(Dialog["str | None"]):
    """Choose one of ``options`` (``(value, label)``; labels must already be safe Text).

    Enter picks, escape cancels. Dismisses with the chosen value or ``None``.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="picker.cancel")]

    def __init__(self, title: str, options: Sequence[tuple[str, Text]], *, selected: str | None = None) -> None:
        super().__init__()
        self._title = title
        self._options = list(options)
        self._selected = selected

    @property
    def values(self) -> tuple[str, ...]:
        """The values offered, top to bottom (what the screen dismisses with)."""
        return tuple(v for v, _ in self._options)

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box", classes="dialog"):
            yield Static(Text(self._title, style="bold"), classes="dialog-title")
            yield OptionList(*[Option(label, id=f"o{i}") for i, (_v, label) in enumerate(self._options)], id="picker-list")
            yield Static(Text("enter: choose · esc: cancel", style="dim"))

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        ol.focus()
        values = list(self.values)
        if self._selected in values:
            ol.highlighted = values.index(self._selected)
        elif values:
            ol.highlighted = 0

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self._options[event.option_index][0])

    def action_cancel(self) -> None:
        self.dismiss(None)
