"""The base of every dialog: a ``ModalScreen`` that is dismissed once, whatever is typed ahead.

Two Enters in one input batch on a picker (``s Enter Enter``, ``P Enter Enter``) reached the
picker's list before its first choice was handled: the second choice dismissed again, and
Textual's ``Screen.dismiss`` pops whatever screen is on top, here the dashboard itself
(``ScreenStackError``, issue 40 #3; a served tab died the same way). A :class:`Dialog` is dismissed
once, and only while it is the screen on top; a second dismiss does nothing. The keys that arrive
while it is being taken down (typed ahead, still queued) are dropped by the app
(:meth:`memdeck.tui.app.MemdeckApp.on_event`): every key queued when it was dismissed, never
delivered to the screen below as if typed there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from textual.await_complete import AwaitComplete
from textual.screen import ModalScreen

if TYPE_CHECKING:
    from textual.app import App

ResultT = TypeVar("ResultT")


def dropping_keys(app: App[Any]) -> bool:
    """Whether ``app`` is taking a dialog down (the keys that arrive now are dropped)."""
    return bool(getattr(app, "_memdeck_dialog_closing", 0))


def _closing(app: App[Any], delta: int) -> None:
    app._memdeck_dialog_closing = max(0, int(getattr(app, "_memdeck_dialog_closing", 0)) + delta)


class Dialog(ModalScreen[ResultT]):
    """A ``ModalScreen`` dismissed at most once, only while it is on top (module docstring)."""

    _dismissed = False

    def dismiss(self, result: ResultT | None = None) -> AwaitComplete:
        """Dismiss with ``result`` (the callback of ``push_screen`` gets it), once.

        Returns:
            Textual's awaitable of the pop; an already completed one when the dialog was
            dismissed before or is not the screen on top (nothing is popped, no callback runs).
        """
        app = self.app
        if self._dismissed or not self.is_attached or app.screen is not self:
            return AwaitComplete.nothing()
        self._dismissed = True
        _closing(app, +1)
        try:
            return super().dismiss(result)
        finally:
            # a callback queued behind every key already queued: those keys were typed into this dialog
            app.call_later(_closing, app, -1)

    @property
    def is_attached(self) -> bool:
        """Whether this dialog is on the app's screen stack."""
        try:
            return self in self.app.screen_stack
        except Exception:  # noqa: BLE001 - no app (being torn down): not attached
            return False
