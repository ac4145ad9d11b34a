"""Command palette provider: every dashboard action, searchable (Posting's rule)."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .keymap import palette_entries


class DeckCommands(Provider):
    """Yields one command per action of :mod:`tui.keymap` (pin, unpin, archive, ... panels); a
    read-only dashboard lists no write action."""

    def _run(self, action: str) -> None:
        self.app.call_later(self.app.run_action, action)

    def _entries(self) -> list[tuple[str, str, str]]:
        return palette_entries(read_only=bool(getattr(self.app, "read_only", False)))

    async def discover(self) -> Hits:
        for title, help_text, action in self._entries():
            yield DiscoveryHit(title, partial(self._run, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._entries():
            score = max(matcher.match(title), matcher.match(help_text) * 0.8)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, action), text=title, help=help_text)
