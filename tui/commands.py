"""Command palette provider: every dashboard action that applies where the palette was opened,
searchable (Posting's rule).

What the palette lists (``ctrl+p``): Textual's system commands that memdeck keeps
(:data:`memdeck.tui.app.TEXTUAL_COMMANDS_KEPT`: Maximize / Minimize, and memdeck's own Screenshot)
and one entry per action of :mod:`tui.keymap` that applies on the panel shown
(:func:`memdeck.tui.keymap.palette_entries`): Unpin only on Anchors, Approve only on Review, no
"Show Capacity" on Capacity. Each title appears once: Textual's Quit, Theme and Keys duplicate
memdeck's Quit, Theme and Help and are left out. A read-only dashboard lists no write action;
over a dialog only the actions that do not act on a panel are listed.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.css.query import NoMatches
from textual.widgets import TabbedContent

from .keymap import palette_entries


class DeckCommands(Provider):
    """Yields one command per action of :mod:`tui.keymap` that applies on the shown panel (pin,
    unpin, archive, ... panels); a read-only dashboard lists no write action."""

    def _run(self, action: str) -> None:
        self.app.call_later(self.app.run_action, action)

    def _entries(self) -> list[tuple[str, str, str]]:
        read_only = bool(getattr(self.app, "read_only", False))
        try:  # the screen the palette was opened from: the panels, or a dialog over them
            panel = self.screen.query_one("#panels", TabbedContent).active or None
        except NoMatches:
            return palette_entries(read_only=read_only, over_dialog=True)
        return palette_entries(read_only=read_only, panel=panel)

    async def discover(self) -> Hits:
        for title, help_text, action in self._entries():
            yield DiscoveryHit(title, partial(self._run, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._entries():
            score = max(matcher.match(title), matcher.match(help_text) * 0.8)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, action), text=title, help=help_text)
