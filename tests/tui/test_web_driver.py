"""The driver of a served tab (tui/web_driver.py): Textual's WebDriver packets, read by a thread
that sleeps until there is input, and an app that quits when the server's pipe ends.

The thread is driven through a pipe with textual-serve's packet framing; then a real served tab
is watched for wake-ups while nothing happens. Waits are for events, bounded."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path

import pytest
from textual import events, messages

from memdeck.tui import web_driver as web_driver_module
from memdeck.tui.driver import POLL_SECONDS, input_timeout
from memdeck.tui.web_driver import QuietWebDriver
from tests.helpers.serve import TabClient, served
from tests.tui.test_driver import _quietest_window

BOUND = 20.0


def _packet(kind: bytes, payload: bytes) -> bytes:
    """textual-serve's framing (``AppService.encode_packet``): type, 4-byte big-endian size, payload."""
    return kind + len(payload).to_bytes(4, "big") + payload


class _App:
    """Stands in for the app: collects what the driver posts."""

    def __init__(self, sink) -> None:
        self.sink = sink

    def post_message(self, message) -> bool:
        self.sink(message)
        return True


class _Harness:
    def __init__(self) -> None:
        self.posted: list[object] = []
        self.timeouts: list[float | None] = []
        self.changed = threading.Condition()

    def collect(self, message) -> None:
        with self.changed:
            self.posted.append(message)
            self.changed.notify_all()

    def record_timeout(self, parser, now):
        value = input_timeout(parser, now)
        with self.changed:
            self.timeouts.append(value)
            self.changed.notify_all()
        return value

    def wait(self, predicate, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, timeout=BOUND), what

    def keys(self) -> list[str]:
        return [e.key for e in self.posted if isinstance(e, events.Key)]


class _NoInputReader:
    """WebDriver's own reader (never iterated by QuietWebDriver) registers stdin with epoll,
    which refuses pytest's stdin (a file); the harness reads a pipe instead."""

    def close(self) -> None:
        pass


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch):
    import textual.drivers.web_driver as textual_web_driver

    monkeypatch.setattr(textual_web_driver, "InputReader", _NoInputReader)
    loop = asyncio.new_event_loop()
    read_fd, write_fd = os.pipe()
    h = _Harness()

    async def build() -> QuietWebDriver:
        return QuietWebDriver(_App(h.collect))

    driver = loop.run_until_complete(build())
    driver._stdin_fd = read_fd
    driver.process_message = h.collect  # type: ignore[method-assign]
    monkeypatch.setattr(web_driver_module, "input_timeout", h.record_timeout)
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    h.driver, h.thread, h.write_fd = driver, thread, write_fd  # type: ignore[attr-defined]
    try:
        yield h
    finally:
        driver.exit_event.set()
        thread.join(BOUND)
        driver.close()
        for fd in (read_fd, h.write_fd):
            if fd >= 0:
                os.close(fd)
        loop.close()


def test_keys_arrive_and_the_thread_sleeps_without_a_timeout(harness) -> None:
    os.write(harness.write_fd, _packet(b"D", b"ab") + _packet(b"D", "é".encode()[:1]))
    os.write(harness.write_fd, _packet(b"D", "é".encode()[1:]))
    harness.wait(lambda: harness.keys() == ["a", "b", "é"], f"keys: {harness.keys()}")
    harness.wait(lambda: harness.timeouts and harness.timeouts[-1] is None, "never slept without a timeout")
    assert POLL_SECONDS not in harness.timeouts  # never polled (Textual's InputReader waits 0.1 s at a time)


def test_meta_packets_resize_and_quit(harness) -> None:
    os.write(harness.write_fd, _packet(b"M", json.dumps({"type": "resize", "width": 101, "height": 33}).encode()))
    harness.wait(lambda: any(isinstance(m, events.Resize) for m in harness.posted), "no resize")
    resize = next(m for m in harness.posted if isinstance(m, events.Resize))
    assert (resize.size.width, resize.size.height) == (101, 33)
    os.write(harness.write_fd, _packet(b"M", b'{"type": "quit"}'))
    harness.wait(lambda: any(isinstance(m, messages.ExitApp) for m in harness.posted), "no quit")


def test_the_end_of_input_quits_the_app(harness) -> None:
    """The server is gone (killed, or its pipe closed): the app quits instead of running on."""
    os.close(harness.write_fd)
    harness.write_fd = -1
    harness.wait(lambda: any(isinstance(m, messages.ExitApp) for m in harness.posted), "the app was not told to quit")
    harness.thread.join(BOUND)
    assert not harness.thread.is_alive()


def test_the_servers_exit_packet_and_the_stop_end_the_thread(harness) -> None:
    harness.wait(lambda: harness.timeouts and harness.timeouts[-1] is None, "never slept")
    harness.driver.exit_event.set()  # what stop_application_mode does: the pipe wakes it
    harness.thread.join(BOUND)
    assert not harness.thread.is_alive()


def test_an_exit_packet_ends_the_thread(harness) -> None:
    os.write(harness.write_fd, _packet(b"M", b'{"type": "exit"}'))
    harness.thread.join(BOUND)
    assert not harness.thread.is_alive()


@pytest.mark.anyio
async def test_a_served_tab_and_its_server_sleep_while_nothing_changes(demo_home, tmp_path: Path) -> None:
    """One tab open on a quiet home: neither the dashboard nor the server wakes (Textual's
    WebDriver would wake its dashboard 10 times a second)."""
    with served(demo_home.path, tmp=tmp_path) as s:
        async with TabClient(s) as tab:
            await tab.wait_for(b"Integrity")
            mark = len(tab.data)
            await tab.press("4")
            await tab.wait_for(b"frozen prompt", since=mark)  # only the Capacity panel shows it
            (pid,) = s.dashboards()
            dashboard = await asyncio.to_thread(_quietest_window, pid)
            server = await asyncio.to_thread(_quietest_window, s.proc.pid)
            assert dashboard <= 1, f"a thread of the dashboard woke {dashboard} times in a quiet window"
            assert server <= 1, f"a thread of the server woke {server} times in a quiet window"
        s.stop(signal.SIGTERM)
