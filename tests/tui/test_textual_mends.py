"""The mends for Textual 8.2's leaks (tui/textual_mends.py): removed widgets are let go.

Each test fails without its mend, and fails loudly if an upgrade renames the internal it mends.
"""

from __future__ import annotations

import gc
import weakref

import pytest
from textual.widgets import Static

from memdeck.core.config import Config
from memdeck.core.memory.store import MemoryStore
from memdeck.tui.app import make_app
from memdeck.tui.screens.help import HelpScreen
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.anyio


def _collected(ref: weakref.ref) -> bool:
    gc.collect()
    return ref() is None


def _holders(ref: weakref.ref) -> str:
    """What still holds ``ref``'s object (for the failure message)."""
    obj = ref()
    if obj is None:
        return "collected"
    return ", ".join(type(r).__name__ for r in gc.get_referrers(obj) if type(r).__name__ != "frame")


async def test_a_toast_removed_before_its_holder_leaves_no_holder_behind(hermes_home) -> None:
    """Textual 8.2's ToastRack removes a toast whose notification expired before its timer
    fired, but not the ToastHolder around it; the empty holder kept the toast alive (an hour
    beside Hermes grew the dashboard 15 MiB, one toast at a time). The app drops such holders
    each time it shows a notification (Textual's toasts show over a modal screen)."""
    from textual.widgets._toast import Toast

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)  # no alert toast to come
        await app.push_screen(HelpScreen())
        app.notify("first", timeout=60)
        await wait_for(pilot, lambda: len(app.screen.query(Toast)) == 1)
        toast = app.screen.query_one(Toast)
        holder = toast.parent
        await toast.remove()  # what ToastRack.show does to a stale toast
        assert holder is not None and holder.is_attached and not holder.children
        app.notify("second", timeout=60)
        await wait_for(pilot, lambda: not holder.is_attached)
        holders = list(app.screen.query("ToastHolder"))
        assert holders and all(len(h.children) == 1 for h in holders)  # each holds a live toast


async def test_a_notification_releases_the_styles_of_expired_toasts(hermes_home) -> None:
    """Textualize/textual#6665: an lru_cache on an instance method kept the style caches (every
    line drawn) of up to 1,024 removed widgets alive: a toast per memory write. After the next
    notification, an expired toast's style cache is gone (Textual's toasts show over a modal)."""
    from textual.widgets._toast import Toast

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)  # no alert toast to come
        await app.push_screen(HelpScreen())
        # A long timeout, then an explicit expiry: a 0.3 s toast could come and go between two
        # looks of the test on a busy machine (CI failed so, stop 18).
        app.notify("memory changed", timeout=60)
        await wait_for(pilot, lambda: len(app.screen.query(Toast)) == 1)
        toast = next(iter(app.screen.query(Toast)))  # not query_one: its cache would keep the toast
        await wait_for(pilot, lambda: bool(toast._styles_cache._cache))  # noqa: F821 - called before the del; it has drawn its lines
        ref = weakref.ref(toast._styles_cache)
        del toast
        app.clear_notifications()  # what its expiry timer does: the rack removes the toast
        await wait_for(pilot, lambda: not app.screen.query(Toast))
        app.notify("memory changed again", timeout=60)
        await wait_for(pilot, lambda: len(app.screen.query(Toast)) == 1)
        await wait_for(pilot, lambda: _collected(ref), describe=lambda: _holders(ref))


async def test_a_refresh_releases_the_styles_of_replaced_widgets(hermes_home) -> None:
    """Widgets replaced without a notification (the footer recomposes its keys after each focus
    change) are released by the next refresh of the home."""
    from textual.containers import Vertical

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        old = Static("a key that will be replaced")
        box = Vertical(old, id="recomposed")
        await app.screen.mount(box)
        await wait_for(pilot, lambda: bool(old._styles_cache._cache))  # noqa: F821 - called before the del; it has drawn its lines
        ref = weakref.ref(old._styles_cache)
        del old
        await box.remove_children()
        new = Static("the key that replaced it")
        await box.mount(new)
        await wait_for(pilot, lambda: bool(new._styles_cache._cache))
        MemoryStore(hermes_home, Config()).add("memory", "A rule added after the keys changed.")
        n = app.refresh_count
        app.request_refresh()
        await wait_for(pilot, lambda: app.refresh_count > n and app.idle)
        await wait_for(pilot, lambda: _collected(ref), describe=lambda: _holders(ref))


def test_the_mended_textual_internals_still_exist() -> None:
    """An upgrade that renames either internal must fail here, not turn a mend into a no-op."""
    from textual._styles_cache import StylesCache
    from textual.widgets._toast import ToastHolder

    assert hasattr(StylesCache.get_inner_outer, "cache_clear")
    assert ToastHolder.__name__ == "ToastHolder"
