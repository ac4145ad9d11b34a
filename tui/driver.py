"""The terminal driver: Textual's, with an input thread that sleeps until there is input.

Textual 8.2's ``LinuxDriver`` (macOS and Linux) reads the terminal in a thread that polls
``select`` every 0.1 s, so that a lone Escape can be told apart from the start of an escape
sequence and so that the thread notices when the app stops. Measured beside a live Hermes
(``/proc/PID/task/*/status``, a 200k home, the dashboard idle): that thread was the only one that
woke, 10.0 times a second, and its 0.15 % of a core was all of the dashboard's idle CPU.

:class:`QuietLinuxDriver` reads the same bytes with the same parser and hands on the same events,
but waits in ``select`` with no timeout unless the parser is waiting for the rest of a sequence
(then until the parser's own deadline), and the app's stop wakes it through a pipe. Idle, the
dashboard's process then does not wake at all.
"""

from __future__ import annotations

import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual import constants
from textual.drivers.linux_driver import LinuxDriver

from .textual_private import XTermParser, get_time

POLL_SECONDS = 0.1
"""Textual's own poll interval: used when the parser does not say when it next needs a tick."""

_READ_BYTES = 4096


class _WakingEvent(threading.Event):
    """A ``threading.Event`` that also writes a byte to a pipe, when it has one, when it is set."""

    def __init__(self) -> None:
        super().__init__()
        self._wake_fd = -1

    def set(self) -> None:
        super().set()
        if self._wake_fd < 0:
            return  # no pipe (closed: its number may already name another file)
        try:
            os.write(self._wake_fd, b"x")
        except (BlockingIOError, OSError):
            pass  # the pipe is full: a wake-up is pending anyway

    def use_pipe(self, wake_fd: int) -> None:
        """Write to ``wake_fd`` when set; ``-1`` for no pipe (before the driver closes it)."""
        self._wake_fd = wake_fd


def input_timeout(parser: Any, now: float) -> float | None:
    """How long the input thread may wait in ``select``, in seconds; ``None`` for no limit.

    ``None`` while ``parser`` waits for nothing; the time left until its deadline while it holds
    part of a sequence (a lone Escape is an Escape once that deadline passes); Textual's 0.1 s
    poll if the parser does not expose a deadline (a Textual that renamed ``_timeout_time``).
    """
    if not hasattr(parser, "_timeout_time"):
        return POLL_SECONDS
    deadline = parser._timeout_time
    if deadline is None:
        return None
    return max(0.0, deadline - now)


class QuietLinuxDriver(LinuxDriver):
    """``LinuxDriver`` whose input thread wakes only for input, a parser deadline or the stop."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._wake_read = self._wake_write = -1
        self.exit_event = _WakingEvent()

    def _open_wake_pipe(self) -> None:
        """Open the pipe that :attr:`exit_event` wakes the input thread through, unless open.

        Each input thread opens it (the first, and one after a suspend: Ctrl+Z or
        ``App.suspend`` stops application mode and *closes* the driver, and the resume starts
        a new input thread on the same driver); :meth:`close` closes it."""
        if self._wake_read >= 0:
            return
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self.exit_event.use_pipe(self._wake_write)

    def run_input_thread(self) -> None:
        """Read the terminal until the app stops input; the same events as ``LinuxDriver``'s."""
        self._open_wake_pipe()  # before the first look at exit_event: a stop from now on wakes it
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        selector = selectors.SelectSelector()  # as Textual: kqueue and epoll refuse some ttys
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        try:
            while not self.exit_event.is_set():
                for key, _mask in selector.select(input_timeout(parser, get_time())):
                    if key.fd == self._wake_read:
                        self._drain_wake_pipe()
                    else:
                        data = os.read(self.fileno, _READ_BYTES)
                        if not data:  # end of input (stdin piped): stop asking for it
                            selector.unregister(self.fileno)
                            continue
                        text = decode(data)  # "" while a character's bytes are incomplete
                        if text:  # the parser takes "" as the end of input
                            for event in parser.feed(text):
                                self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:  # what the parser still holds is dropped, as Textual's own thread drops it
            selector.close()
            self._drain_wake_pipe()

    def _drain_wake_pipe(self) -> None:
        try:
            while os.read(self._wake_read, _READ_BYTES):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        super().close()
        self.exit_event.use_pipe(-1)
        for fd in (self._wake_read, self._wake_write):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._wake_read = self._wake_write = -1  # closing twice must not close a reused number


def driver_class() -> type[LinuxDriver] | None:
    """The driver the app runs with: :class:`QuietLinuxDriver`, or ``None`` for Textual's choice.

    ``None`` (Textual decides) when ``TEXTUAL_DRIVER`` names another driver. This module is
    imported only where Textual's ``LinuxDriver`` runs (not on Windows: see ``MemdeckApp``).
    """
    if constants.DRIVER is not None:
        return None
    return QuietLinuxDriver
