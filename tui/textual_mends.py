"""Mends for two Textual 8.2 leaks that only a dashboard left open for days runs into.

Each one kept removed widgets (a toast per memory write, the footer's keys after each focus
change) in memory for the life of the app. The main screen now draws its toasts in place
(:mod:`.widgets.toasts`); Textual's toasts still show over modal screens, and the style cache
mend covers every removed widget. Both are Textual internals (Textual is pinned
``<9``); ``tests/tui/test_textual_mends.py`` fails when either name changes, so an upgrade
cannot silently turn a mend into a no-op.
"""

from __future__ import annotations

from typing import Any


def drop_empty_toast_holders(screen: Any) -> int:
    """Remove the empty ``ToastHolder`` widgets of ``screen``; returns how many.

    Textual 8.2's ``ToastRack.show`` removes a toast whose notification expired before its own
    timer fired, but not the ``ToastHolder`` around it, and the empty holder keeps the removed
    toast alive through its child-list cache (measured: a bare Textual app notifying every
    0.2 s kept 128 of 150 expired toasts; the hour-long soak grew 2.5 MiB every 10 minutes).
    """
    dropped = 0
    for holder in list(screen.query("ToastHolder")):
        if not holder.children:
            holder.remove()
            dropped += 1
    return dropped


def release_removed_widget_styles() -> None:
    """Let go of the style caches of widgets that were removed.

    Textual 8.2 decorates the *instance* method ``StylesCache.get_inner_outer`` with
    ``functools.lru_cache(1024)``, so the cache's keys hold up to 1,024 ``StylesCache``
    objects, each with every rendered line of its widget and the lines derived from them, long
    after the widget is gone (Textualize/textual#6665, open). Measured in a pty beside a live
    writer: the strips of removed toasts and footer keys grew by ~1,300 every 30 s while the
    live widgets' strips stayed at 3,262. Clearing the cache costs nothing that matters: a
    live widget recomputes two ``Style`` objects the next time it draws a line.
    """
    from .textual_private import StylesCache

    StylesCache.get_inner_outer.cache_clear()
