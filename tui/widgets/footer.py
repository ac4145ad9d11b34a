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

from typing import Any

from textual.app import ComposeResult
from textual.widgets import Footer

from ..textual_private import FooterLabel


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
        """What :meth:`Footer.compose` reads, as a comparable tuple: one
        ``(key, key display, description, action, enabled, tooltip, group)`` per shown binding,
        then the command-palette and group settings."""
        app = self.app
        keys = tuple(
            (b.key, app.get_key_display(b), b.description, b.action, enabled, tooltip, b.group)
            for _namespace, b, enabled, tooltip in self.screen.active_bindings.values()
            if b.show
        )
        return keys, self.show_command_palette, self.combine_groups

    def compose(self) -> ComposeResult:
        if self.read_only:
            yield FooterLabel("READ-ONLY", classes="-read-only")
        yield from super().compose()

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
