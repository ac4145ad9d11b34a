"""The dashboard raises a toast when a writer other than memdeck removes an entry."""

from __future__ import annotations

import pytest

from memdeck.core.config import Config
from memdeck.core.memory.entries import parse_entries, serialize_entries
from memdeck.core.memory.store import MemoryStore
from memdeck.tui.app import make_app
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.anyio


async def test_external_removal_raises_a_toast_memdeck_own_does_not(hermes_home) -> None:
    s = MemoryStore(hermes_home, Config())
    s.add("memory", "Rule kept.")
    s.add("memory", "Rule [bold]gone[/bold].")
    app = make_app(hermes_home, watch=True)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        s.remove("memory", "Rule kept.")  # memdeck's own write: no toast
        path = hermes_home.memory_file("memory")
        path.write_text(serialize_entries([e for e in parse_entries(path.read_text()) if "gone" not in e]))
        await wait_for(pilot, lambda: any("removed in memory" in n.message for n in app.notification_log))
        msgs = [n.message for n in app.notification_log if "removed in memory" in n.message]
        assert len(msgs) == 1 and "Rule [bold]gone[/bold]." in msgs[0] and "a writer other than memdeck" in msgs[0]


async def test_a_toast_removed_before_its_holder_leaves_no_holder_behind(hermes_home) -> None:
    """Textual 8.2's ToastRack removes a toast whose notification expired before its timer
    fired, but not the ToastHolder around it; the empty holder kept the toast alive (an hour
    beside Hermes grew the dashboard 15 MiB, one toast at a time). The app drops such holders
    each time it shows a notification."""
    from textual.widgets._toast import Toast

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
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
