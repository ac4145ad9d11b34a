"""The seven panels, one module each, over the shared base classes in :mod:`.base`.

Each panel renders a :class:`memdeck.core.overview.snapshot.DeckSnapshot` and nothing else;
the text it draws comes from the matching module of :mod:`memdeck.tui.views`.
"""
