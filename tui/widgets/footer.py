"""Textual's Footer, composed again only when the keys it shows changed.

Textual 8.2's ``Footer`` removes and composes all of its keys on every ``bindings_updated``
signal, and the screen sends one on every focus change. The dashboard's footer has ~28 keys,
and each ``FooterKey`` is styled with two component classes: at launch the five recomposes were
half of all style applications (1,372 -> 692 without them), for the same keys each time, and
every panel switch paid one more. :class:`DeckFooter` compares what the footer would show (key, its display, label, action,
enabled, tooltip, group, for every binding with ``show``) with what it composed last, and does
nothing when they are equal.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import groupby
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer

from ..textual_private import FooterKey, FooterLabel, KeyGroup


class DeckFooter(Footer):
    """A :class:`textual.widgets.Footer` that skips a recompose which would show the same keys,
    and that starts with ``READ-ONLY`` on a read-only dashboard (its write keys are hidden)."""

    DEFAULT_CSS = """
    DeckFooter FooterLabel.-read-only {
        text-style: bold;
        color: $text-warning;
        background: $warning-muted;
        padding: 0 1;
        margin: 0 1 0 0;
    }
    """

    def __init__(self, *args: Any, read_only: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_only = read_only
        #: what the keys were last composed from (None: not yet; the first compose, at mount,
        #: runs before the screen has bindings and shows none)
        self._shown: tuple[Any, ...] | None = None

    def shown_keys(self) -> tuple[Any, ...]:
        """What :meth:`compose` draws, as a comparable tuple: one
        ``(key, key display, description, action, enabled, tooltip, group)`` per key that fits
        (:meth:`chosen`), then the command-palette and group settings."""
        app = self.app
        keys = tuple(
            (b.key, app.get_key_display(b), b.description, b.action, enabled, tooltip, group)
            for group, found in self.chosen() for b, enabled, tooltip in found
        )
        return keys, self.show_command_palette, self.combine_groups

    def _panel(self) -> str | None:
        """The panel shown (its keys come first), or None (no panels: a dialog, the overview)."""
        if getattr(self.app, "overview_shown", False):
            return None
        try:
            return self.app.current_panel_id
        except Exception:  # noqa: BLE001 - no panels on this screen (a test app, shutdown)
            return None

    def _room(self) -> int:
        """Columns the keys may take (the footer's width, else the terminal's)."""
        width = self.size.width or (self.app.size.width if self.is_attached else 0) or 80
        return width - (len("READ-ONLY") + 3 if self.read_only else 0)

    def on_resize(self, _event: events.Resize) -> None:
        """What fits changed: compose again (nothing when the same keys still fit)."""
        self.call_after_refresh(self.recompose)

    def chosen(self) -> list[tuple[Any, list[tuple[Any, bool, str]]]]:
        """The keys that fit the footer's width, by priority
        (:func:`memdeck.tui.keymap.footer_rank`): the pause state, help, quit, the palette and
        the overview first, then the keys of the panel shown, then the rest; a key that does not
        fit is left out whole, never cut (``?`` and the palette list every key). One
        ``(group or None, [(binding, enabled, tooltip)])`` per footer item, in order."""
        from ..keymap import footer_rank

        panel = self._panel()
        app = self.app
        by_action: dict[str, list[tuple[Any, bool, str]]] = defaultdict(list)
        for _namespace, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                by_action[binding.action].append((binding, enabled, tooltip))
        # (rank, first seen, group, [(binding, enabled, tooltip)]); a group's keys go together
        items: list[tuple[int, int, Any, list[tuple[Any, bool, str]]]] = []
        for order, (group, members) in enumerate(groupby(by_action.values(), lambda m: m[0][0].group)):
            found = [m[0] for m in members]
            if group is not None and len(found) > 1:
                items.append((footer_rank(found[0][0].action, grouped=True), order, group, found))
            else:
                items += [(footer_rank(b.action, panel=panel), order, None, [(b, e, t)]) for b, e, t in found]
        room = self._room()
        chosen: list[tuple[Any, list[tuple[Any, bool, str]]]] = []
        for _rank, _order, group, found in sorted(items, key=lambda it: (it[0], it[1])):
            if group is not None:
                width = sum(Text(app.get_key_display(b)).cell_len for b, _e, _t in found) + len(found) + 1
                width += Text(group.description).cell_len + 1
            else:
                b = found[0][0]
                width = Text(app.get_key_display(b)).cell_len + 1 + Text(b.description).cell_len + 1
            if width <= room:
                chosen.append((group, found))
                room -= width
        return chosen

    def compose(self) -> ComposeResult:
        """:meth:`chosen`, as Textual's Footer draws its keys (a group's keys under its label)."""
        if self.read_only:
            yield FooterLabel("READ-ONLY", classes="-read-only")
        if not self._bindings_ready:
            return
        app = self.app
        chosen = self.chosen()
        self.styles.grid_size_columns = len(chosen)
        for group, found in chosen:
            if group is not None:
                with KeyGroup(classes="-compact" if group.compact else ""):
                    for binding, enabled, tooltip in found:
                        yield FooterKey(binding.key, app.get_key_display(binding), "", binding.action,
                                        disabled=not enabled, tooltip=tooltip or binding.description,
                                        classes="-grouped").data_bind(compact=Footer.compact)
                yield FooterLabel(group.description)
            else:
                binding, enabled, tooltip = found[0]
                yield FooterKey(binding.key, app.get_key_display(binding), binding.description, binding.action,
                                disabled=not enabled, tooltip=tooltip).data_bind(compact=Footer.compact)

    async def recompose(self) -> None:
        if not self.is_attached:
            return
        shown = self.shown_keys()
        if shown == self._shown:
            return
        # what compose() will read; should the bindings change again before it runs, their
        # signal asks for one more recompose, which then finds them different from this
        self._shown = shown
        await super().recompose()
