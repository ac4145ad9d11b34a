"""The driver of a dashboard served in a browser tab (``memdeck serve``): Textual's ``WebDriver``
with an input thread that sleeps until there is input, and that quits when the server is gone.

Textual 8.2's ``WebDriver`` reads the server's packets (keys as ``D`` packets, resize/focus/
quit as ``M`` packets) through ``InputReader``, which polls ``select`` every 0.1 s: ten wake-ups
a second per open tab while nothing happens. :class:`QuietWebDriver` reads the same packets with
the same parsers and hands on the same events, but waits in ``select`` with no timeout unless
the key parser waits for the rest of a sequence (then until its deadline, as
:mod:`memdeck.tui.driver` does for the terminal), and the app's stop wakes it through a pipe.

The end of its standard input means the server went away (killed, or its pipe closed): the app
quits then, so a dashboard never outlives the server that started it (Textual's ``WebDriver``
only stops reading and leaves the app running).

``memdeck serve`` selects this driver with ``TEXTUAL_DRIVER=memdeck.tui.web_driver:QuietWebDriver``
(Textual's own way to choose a driver, :func:`memdeck.tui.driver.driver_class` defers to it).
"""

from __future__ import annotations

import os
import selectors
import sys
from codecs import getincrementaldecoder
from typing import Any

from textual import messages
from textual.drivers.web_driver import WebDriver

from .driver import _WakingEvent, input_timeout
from .textual_private import ByteStream, XTermParser, _ExitInput, get_time

_READ_BYTES = 4096


class QuietWebDriver(WebDriver):
    """``WebDriver`` whose input thread wakes only for input, a parser deadline or the stop,
    and which quits the app at the end of its input."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.exit_event = _WakingEvent()
        self._wake_read = self._wake_write = -1
        self._stdin_fd = sys.__stdin__.fileno()  # the server's pipe (WebDriver's InputReader reads it too)
        self._open_wake_pipe()

    def _open_wake_pipe(self) -> None:
        if self._wake_read >= 0:
            return
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self.exit_event.use_pipe(self._wake_write)

    def run_input_thread(self) -> None:
        """Read the server's packets until the app stops; keys and meta as ``WebDriver`` reads them."""
        parser = XTermParser(debug=self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        byte_stream = ByteStream()
        selector = selectors.DefaultSelector()
        selector.register(self._stdin_fd, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        try:
            while not self.exit_event.is_set():
                for key, _mask in selector.select(input_timeout(parser, get_time())):
                    if key.fd == self._wake_read:
                        self._drain_wake_pipe()
                        continue
                    data = os.read(self._stdin_fd, _READ_BYTES)
                    if not data:  # the server is gone: nothing can reach this app again
                        self._app.post_message(messages.ExitApp())
                        return
                    for packet_type, payload in byte_stream.feed(data):
                        if packet_type == "D":
                            text = decode(payload)
                            if text:  # the parser takes "" as the end of input
                                for event in parser.feed(text):
                                    self.process_message(event)
                        else:
                            self._on_meta(packet_type, payload)
                for event in parser.tick():
                    self.process_message(event)
        except _ExitInput:  # the server said "exit"
            pass
        finally:
            selector.close()
            self._drain_wake_pipe()

    def _drain_wake_pipe(self) -> None:
        try:
            while os.read(self._wake_read, _READ_BYTES):
                pass
        except (BlockingIOError, OSError, ValueError):
            pass

    def stop_application_mode(self) -> None:
        super().stop_application_mode()  # sets exit_event: the pipe wakes the input thread
        thread = self._key_thread
        if thread.is_alive():
            thread.join(timeout=2.0)

    def close(self) -> None:
        super().close()
        self.exit_event.use_pipe(-1)
        for fd in (self._wake_read, self._wake_write):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._wake_read = self._wake_write = -1
