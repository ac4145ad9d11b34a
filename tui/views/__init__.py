"""Pure functions from a :class:`memdeck.core.overview.snapshot.DeckSnapshot` to table rows and
Rich renderables, one module per panel (``integrity``, ``anchors``, ``drift``, ``capacity``,
``recall``, ``review``, ``history``) plus ``common`` (time words, titled blocks, threat-finding
text, the tab badges).

No I/O and no Textual here (an import-linter contract checks it): the widgets in
:mod:`memdeck.tui.widgets` draw what these functions return. Every data string goes through
:func:`memdeck.tui.safe_text.safe_text`; labels written here are constants.
"""
