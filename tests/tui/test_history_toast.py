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
        await wait_for(pilot, lambda: any("removed in MEMORY.md" in n.message for n in app.notification_log))
        msgs = [n.message for n in app.notification_log if "removed in MEMORY.md" in n.message]
        assert len(msgs) == 1 and "Rule [bold]gone[/bold]." in msgs[0] and "a writer other than memdeck" in msgs[0]
