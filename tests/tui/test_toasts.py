"""Toasts drawn in place on the main screen (tui/widgets/toasts.py): no widget is mounted per
toast, they expire and can be clicked away, and they never ask for a second layout pass."""

from __future__ import annotations

import pytest
from textual.geometry import Size
from textual.widget import Widget

from memdeck.tui.app import make_app
from memdeck.tui.screens.help import HelpScreen
from memdeck.tui.widgets.toasts import MAX_SHOWN, ToastStack
from tests.tui.conftest import wait_for

pytestmark = pytest.mark.anyio


def _lines(stack: ToastStack) -> list[str]:
    return [stack.render_line(y).text for y in range(stack.size.height)]


async def test_a_toast_on_the_main_screen_is_drawn_in_place_and_expires(hermes_home) -> None:
    from textual.widgets._toast import Toast as TextualToast

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        assert not stack.toasts and not stack.parent.display  # nothing live: out of the layout
        app.notify("replaced in memory by Hermes: the old rule (memdeck revert c-1)",
                   title="memory changed", severity="warning", timeout=60)
        assert [t.title for t in stack.toasts] == ["memory changed"]  # shown at once, no mount
        await wait_for(pilot, lambda: stack.size.height > 0)
        text = "\n".join(_lines(stack))
        assert "▌ memory changed" in text and "revert c-1)" in text  # title, then the message wrapped
        title = next(seg for seg in stack.render_line(1) if "memory changed" in seg.text)
        assert title.style is not None and title.style.bold  # the title stands out (a span: wrap() keeps it)
        assert not list(app.screen.query(TextualToast))  # Textual's toast widgets stay unused
        assert app.notification_log[-1].message.endswith("(memdeck revert c-1)")
        app.notify("a short one", timeout=0.05)  # observed at its end, never in between
        await wait_for(pilot, lambda: [t.title for t in stack.toasts] == ["memory changed"])
        assert [n.message for n in app.notification_log][-1] == "a short one"  # the log keeps it


async def test_a_click_dismisses_the_toast_under_the_pointer(hermes_home) -> None:
    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        app.notify("first", title="one", timeout=60)
        app.notify("second", title="two", timeout=60)
        await wait_for(pilot, lambda: stack.size.height > 0 and "second" in "".join(_lines(stack)))
        y = next(i for i, line in enumerate(_lines(stack)) if "second" in line)
        await pilot.click(stack, offset=(5, y))
        await wait_for(pilot, lambda: [t.title for t in stack.toasts] == ["one"])


async def test_more_live_toasts_than_shown_are_counted(hermes_home) -> None:
    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        for i in range(MAX_SHOWN + 2):
            app.notify(f"toast number {i}", timeout=60)
        await wait_for(pilot, lambda: "+2 more" in "".join(_lines(stack)))
        text = "\n".join(_lines(stack))
        assert "toast number 0" not in text and f"toast number {MAX_SHOWN + 1}" in text
        assert "N lists every notification" in text


async def test_over_a_modal_screen_textuals_toasts_show(hermes_home) -> None:
    """The stack lives on the main screen; a toast raised while a modal is on top must show
    above the modal, so it goes to Textual's toasts there."""
    from textual.widgets._toast import Toast as TextualToast

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        await app.push_screen(HelpScreen())
        app.notify("raised over the help screen", timeout=60)
        await wait_for(pilot, lambda: len(app.screen.query(TextualToast)) == 1)
        assert not stack.toasts


async def test_a_toast_from_a_thread_reaches_the_stack(hermes_home) -> None:
    """Textual's notify may be called from any thread; the stack is touched on the app's only."""
    import asyncio

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        await asyncio.get_running_loop().run_in_executor(None, lambda: app.notify("from a worker", timeout=60))
        await wait_for(pilot, lambda: [t.message for t in stack.toasts] == ["from a worker"])


async def test_the_stack_never_asks_for_a_second_layout_pass(hermes_home) -> None:
    """Textual's ``Widget.virtual_size`` asks for another layout of the whole screen whenever a
    widget's size changes. A toast's size always changes, and that second pass cost ~30 ms of
    CPU per external memory write in a pty (tables, the detail pane and scrollbars drawn again)."""
    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        app.notify("one", timeout=60)
        await wait_for(pilot, lambda: stack.size.height > 0 and not stack._layout_required)
        grown = Size(stack.size.width, stack.size.height + 4)
        assert stack._size_updated(grown, grown, app.screen.size)  # the size did change
        assert stack.virtual_size == grown and not stack._layout_required


def test_the_textual_internal_the_stack_relies_on_still_exists() -> None:
    import inspect

    assert "layout" in inspect.signature(Widget._size_updated).parameters
    assert hasattr(Widget, "_layout_required") or "_layout_required" in inspect.getsource(Widget.__init__)


async def test_a_long_toast_is_cut_and_points_to_the_notifications_screen(hermes_home) -> None:
    from memdeck.tui.widgets.toasts import MAX_MESSAGE_LINES

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        candidates = "\n".join(f"candidate {i}: an entry that could be archived" for i in range(30))
        app.notify(candidates, title="the file is full", severity="error", timeout=60)
        await wait_for(pilot, lambda: stack.size.height > 0)
        text = "\n".join(_lines(stack))
        assert stack.size.height == MAX_MESSAGE_LINES + 3  # a blank, the title, the lines, a blank
        assert "candidate 0:" in text and "candidate 29" not in text
        assert f"… {30 - MAX_MESSAGE_LINES + 1} more lines: N shows it whole" in text
        assert app.notification_log[-1].message.count("candidate") == 30  # the log keeps it whole


async def test_toasts_raised_over_a_modal_move_to_the_stack_when_it_closes(hermes_home) -> None:
    """Textual would draw them again on the main screen's own rack, over the stack's spot."""
    from textual.widgets._toast import Toast as TextualToast

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1 and app.idle)
        stack = app.screen.query_one("#toasts", ToastStack)
        await app.push_screen(HelpScreen())
        app.notify("raised over the help screen", timeout=60)
        await wait_for(pilot, lambda: len(app.screen.query(TextualToast)) == 1)
        app.pop_screen()
        await wait_for(pilot, lambda: [t.message for t in stack.toasts] == ["raised over the help screen"])
        await wait_for(pilot, lambda: not app.screen.query(TextualToast))
        app.notify("raised on the main screen", timeout=60)
        assert [t.message for t in stack.toasts] == ["raised over the help screen", "raised on the main screen"]
        assert not list(app._notifications)


async def test_a_toast_already_due_never_arms_a_zero_second_timer(hermes_home) -> None:
    """Issue 22 #8: an expiry that is already due (a busy machine, a zero timeout) armed
    ``set_timer(0)``; Textual's Timer divides by its interval when it runs late, and the
    ZeroDivisionError surfaced as a traceback when the app quit."""
    import dataclasses
    import time

    app = make_app(hermes_home, watch=False)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.refresh_count >= 1)
        stack = app.screen.query_one("#toasts", ToastStack)
        app.notify("due already", timeout=60)
        stack.toasts = [dataclasses.replace(t, expires=time.monotonic() - 1) for t in stack.toasts]
        stack._schedule()
        assert stack._timer is not None and stack._timer._interval > 0
        app.call_later(lambda: time.sleep(0.05))  # the loop is late for the timer, as on a loaded machine
        await wait_for(pilot, lambda: not stack.toasts)
    # leaving run_test stops every timer: this raised ZeroDivisionError before the fix
