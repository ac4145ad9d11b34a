"""Toasts drawn in place: one persistent widget instead of two mounted widgets per toast.

Textual's toasts mount a ``ToastHolder`` and a ``Toast`` for each notification and remove them
when it expires: CSS matching, composition and layout passes of the whole screen each time.
Beside a live Hermes every external replace or remove of a memory entry is toasted (it says how
to revert it). Measured in a pty on the Capacity panel, CPU per external memory write (one write
every 3 s, idle included): no toast 33-37 ms, Textual's toast 78-95 ms, this stack 40-44 ms.

:class:`ToastStack` is mounted once, in :class:`ToastRack` (a bottom-docked overlay layer, as
Textual's own rack). It draws the newest :data:`MAX_SHOWN` live toasts as lines (the Line
API), newest at the bottom, each with a bar in its severity's colour, its title and its
message wrapped to the width; more live toasts are counted in a last line that points to the
notifications screen. A single timer removes each toast when its timeout ends; a click removes
the toast under the pointer. Showing or removing a toast lays the screen out once (the stack's
height changed), never twice: Textual asks for a second pass whenever a widget's virtual size
changes, and that second pass drew the tables, the detail pane and every scrollbar again
(:meth:`ToastStack._size_updated`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.containers import Container
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

#: The shortest expiry timer (seconds): Textual's ``Timer`` divides by its interval.
MIN_TIMER_S = 0.01

#: How many live toasts are drawn at once; the rest are counted in a last line.
MAX_SHOWN = 3
#: Lines of one toast's message drawn at most (a refusal can list many candidates); the
#: notifications screen (``N``) shows it whole.
MAX_MESSAGE_LINES = 8

SEVERITIES = ("information", "warning", "error")


@dataclass(frozen=True, eq=False)  # two identical toasts are still two: a click removes the one under it
class Toast:
    """One live toast: ``severity`` is one of :data:`SEVERITIES`; ``expires`` is a
    ``time.monotonic()`` instant (seconds)."""

    title: str
    message: str
    severity: str
    expires: float


class ToastRack(Container):
    """The overlay that holds the stack: docked at the bottom above the footer, hidden (and out
    of the layout) while no toast is live; only the stack inside it is drawn."""

    DEFAULT_CSS = """
    ToastRack {
        layer: notices;
        dock: bottom;
        width: 1fr;
        height: auto;
        margin-bottom: 1;
        align-horizontal: right;
        visibility: hidden;
        display: none;
    }
    """


class ToastStack(Widget, can_focus=False):
    """The live toasts, drawn as lines. :meth:`add` shows one; they expire on their own."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "toast--body", "toast--title", "toast--information", "toast--warning", "toast--error",
    }
    DEFAULT_CSS = """
    ToastStack {
        width: 60;
        max-width: 50%;
        height: auto;
        visibility: visible;
    }
    ToastStack > .toast--body { background: $panel-lighten-1; color: $foreground; }
    ToastStack > .toast--title { text-style: bold; }
    ToastStack > .toast--information { color: $success; }
    ToastStack > .toast--warning { color: $warning; }
    ToastStack > .toast--error { color: $error; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.toasts: list[Toast] = []  # oldest first
        self._timer: Timer | None = None
        self._strips: list[Strip] = []
        self._owners: list[Toast | None] = []  # the toast each line belongs to
        self._drawn_for: tuple[int, int] | None = None  # (width, generation) of _strips
        self._generation = 0

    # ── what is live ────────────────────────────────────────────────────

    def add(self, title: str, message: str, severity: str, timeout: float) -> Toast:
        """Show a toast for ``timeout`` seconds (plain text: the caller escapes it)."""
        toast = Toast(title, message, severity if severity in SEVERITIES else "information",
                      time.monotonic() + max(0.0, timeout))
        self.toasts.append(toast)
        self._changed()
        return toast

    def dismiss(self, toast: Toast) -> None:
        """Remove ``toast`` now (a click on it)."""
        if toast in self.toasts:
            self.toasts.remove(toast)
            self._changed()

    @property
    def shown(self) -> list[Toast]:
        """The toasts drawn now: the newest :data:`MAX_SHOWN`, oldest first."""
        return self.toasts[-MAX_SHOWN:]

    def _expire_due(self) -> None:
        now = time.monotonic()
        live = [t for t in self.toasts if t.expires > now]
        self._timer = None
        if len(live) != len(self.toasts):
            self.toasts = live
            self._changed()
        else:
            self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.toasts:
            delay = min(t.expires for t in self.toasts) - time.monotonic()
            # never a zero interval: Textual's Timer divides by it when it runs late (a busy
            # machine), and the ZeroDivisionError surfaced when the app quit (issue 22 #8)
            self._timer = self.set_timer(max(MIN_TIMER_S, delay), self._expire_due, name="toast-expiry")

    def _changed(self) -> None:
        self._generation += 1
        self._schedule()
        rack = self.parent
        if isinstance(rack, ToastRack) and rack.display != bool(self.toasts):
            rack.display = bool(self.toasts)
        before = len(self._strips)
        width = self.content_size.width
        if width and len(self._draw(width)) == before:
            self.refresh()
        else:
            self.refresh(layout=True)

    # ── drawing (the Line API) ──────────────────────────────────────────

    def _draw(self, width: int) -> list[Strip]:
        if self._drawn_for == (width, self._generation):
            return self._strips
        strips: list[Strip] = []
        owners: list[Toast | None] = []
        body = self.get_component_rich_style("toast--body")
        title_style = self.get_component_rich_style("toast--title", partial=True)
        console = self.app.console
        inner = max(1, width - 3)  # the bar, a space, the text, a space
        for toast in self.shown:
            bar = body + Style(color=self.get_component_rich_style(f"toast--{toast.severity}").color)
            lines: list[Text] = []
            if toast.title:
                title = Text(toast.title, no_wrap=True, overflow="ellipsis")
                title.stylize(bar + title_style)  # a span: wrap() drops a Text's own style
                lines += title.wrap(console, inner)
            message = list(Text(toast.message).wrap(console, inner, overflow="fold"))
            if len(message) > MAX_MESSAGE_LINES:
                cut = len(message) - MAX_MESSAGE_LINES + 1
                message = [*message[:MAX_MESSAGE_LINES - 1],
                           Text(f"… {cut} more lines: N shows it whole", style="italic")]
            lines += message
            blank = Strip([Segment("▌", bar), Segment(" " * (width - 1), body)], width)
            drawn = [blank]
            for line in lines:
                segments = [Segment("▌", bar), Segment(" ", body)]
                segments += list(Segment.apply_style(line.render(console), body))
                drawn.append(Strip(segments).adjust_cell_length(width, body))
            drawn.append(blank)
            strips += drawn
            owners += [toast] * len(drawn)
        hidden = len(self.toasts) - len(self.shown)
        if hidden:
            more = Text(f" +{hidden} more: N lists every notification", style=body)
            strips.append(Strip(list(more.render(console)), width).adjust_cell_length(width, body))
            owners.append(None)
        self._strips, self._owners, self._drawn_for = strips, owners, (width, self._generation)
        return strips

    def get_content_height(self, container, viewport, width: int) -> int:  # type: ignore[override]
        return len(self._draw(width))

    def render_line(self, y: int) -> Strip:
        strips = self._draw(self.content_size.width) if self.content_size.width else []
        return strips[y] if 0 <= y < len(strips) else Strip.blank(self.content_size.width)

    def _size_updated(self, size, virtual_size, container_size, layout: bool = True) -> bool:  # type: ignore[override]
        # The stack never scrolls: its virtual size is its size, and setting it must not ask
        # for a second layout pass of the whole screen (Widget.virtual_size is layout=True).
        return super()._size_updated(size, virtual_size, container_size, layout=False)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drawn_for = None  # a theme change: draw again in its colours

    def on_click(self, event: events.Click) -> None:
        event.stop()
        if 0 <= event.y < len(self._owners):
            toast = self._owners[event.y]
            if toast is not None:
                self.dismiss(toast)
