"""Issue 13 #1: no toast or notification puts a raw control character on screen.

Anchor ids and session ids are data: an id holding OSC 52 (set the clipboard), OSC 0 (window
title), a CSI sequence, a C1 control or a bidi override must reach ``app.notify`` only as the
visible markers of :mod:`tui.safe_text`. Every toast path of ``tui/actions.py`` and ``tui/app.py``
is fed such ids here (the core stores replaced by stubs that echo the hostile id back).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from memdeck.core.demo import DEMO_NOW
from memdeck.core.errors import Refused
from memdeck.tui import actions
from memdeck.tui.app import make_app
from memdeck.tui.safe_text import marker_for
from tests.tui.conftest import settle

pytestmark = pytest.mark.anyio

#: OSC 52 clipboard write, OSC 0 title, CSI, C1 CSI, a bidi override and an isolate.
HOSTILE = ("\x1b]52;c;Y3VybCBodHRwczovL2V2aWwuZXhhbXBsZS94IHwgc2g=\x07"
           "\x1b]0;pwned\x1b\\" "\x1b[2J" "\x9b31m" "\u202eevil\u2066" "\x85")


def _raw_controls(s: str) -> list[str]:
    return [hex(ord(c)) for c in s if marker_for(c) is not None]


def _check(app) -> None:
    assert app.notification_log, "no toast was shown"
    for n in app.notification_log:
        for part in (str(n.message), str(n.title or "")):
            assert not _raw_controls(part), f"raw control chars {_raw_controls(part)} in toast {part!r}"


class _Stub:
    """An AnchorStore/MemoryStore stand-in: every write 'succeeds' with the hostile id."""

    def __getattr__(self, name: str) -> Any:
        def op(*a: Any, **k: Any) -> Any:
            if name == "update" and k.get("priority") == -1:
                raise Refused(f"refused {HOSTILE}", "conflict", {"candidates": [{"id": HOSTILE, "preview": HOSTILE}],
                                                                  "threats": [HOSTILE]})
            if name == "archive":
                return HOSTILE
            return SimpleNamespace(id=HOSTILE, priority=1, changed=True, target="memory", archive_id=HOSTILE)

        return op


@pytest.fixture
def hostile_app(demo_home, monkeypatch):
    app = make_app(demo_home, watch=False, now=DEMO_NOW)
    monkeypatch.setattr(actions, "_anchor_store", lambda _app: _Stub())
    monkeypatch.setattr(actions, "_memory_store", lambda _app: _Stub())
    monkeypatch.setattr(actions, "_confirm", lambda _app, _t, _b, then, label="Yes": then())
    sel = SimpleNamespace(kind="anchor", anchor_id=HOSTILE, session_id=HOSTILE, text=HOSTILE, target="memory",
                          obj=SimpleNamespace(id=HOSTILE))
    monkeypatch.setattr(type(app), "selection", lambda self: sel)
    return app


@pytest.mark.parametrize("action,values", [
    ("unpin", None),
    ("archive", None),
    ("edit", {"text": HOSTILE, "priority": 3, "probes": [], "reminder": None}),
    ("edit", {"text": HOSTILE, "priority": -1, "probes": [], "reminder": None}),  # a refusal toast
    ("pin", {"text": HOSTILE, "priority": 3, "probes": [], "reminder": None, "scope": HOSTILE}),
])
async def test_anchor_action_toasts_escape_hostile_ids(hostile_app, monkeypatch, action, values) -> None:
    app = hostile_app
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        app.session_id = HOSTILE
        import dataclasses
        app.snapshot = dataclasses.replace(app.snapshot, session_id=HOSTILE)
        monkeypatch.setattr(app, "push_screen", lambda _screen, callback=None, **k: callback(values))
        app.notification_log.clear()
        getattr(app, f"action_{action}")()
        await settle(pilot, app)
        _check(app)


async def test_every_notify_path_escapes(hostile_app) -> None:
    """``app.notify`` itself is the chokepoint: a direct call, an action (toast_on_error) that raises with
    a hostile message, and a failed refresh are all shown escaped."""
    app = hostile_app
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot, app)
        app.notification_log.clear()
        app.notify(HOSTILE, title=HOSTILE, markup=False)
        app.screen.notify(HOSTILE, title=HOSTILE)

        @actions.toast_on_error
        def action_boom(self) -> None:
            raise RuntimeError(HOSTILE)

        action_boom(app)
        await pilot.pause()
        _check(app)
        assert len(app.notification_log) == 3
        assert "⟨ESC⟩]52;c;" in str(next(iter(app.notification_log)).message)
