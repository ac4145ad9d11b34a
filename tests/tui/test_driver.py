"""The terminal driver (tui/driver.py): the input thread sleeps until there is input.

The thread is driven through a pipe standing in for the terminal, with the real parser, and in a
real pty with the real ``memdeck`` command. Each wait is for an event (a key reaching the app, a
thread ending, the process exiting), bounded so that a failure fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("termios", reason="Textual's LinuxDriver (and so memdeck's) runs on POSIX terminals")

from textual import events
from textual._xterm_parser import XTermParser

from memdeck.tui import driver as driver_module
from memdeck.tui.app import make_app
from memdeck.tui.driver import POLL_SECONDS, QuietLinuxDriver, input_timeout

BOUND = 20.0  # seconds: a bound on each wait, never reached when the driver works


def test_the_thread_may_sleep_without_limit_while_the_parser_waits_for_nothing() -> None:
    parser = XTermParser()
    assert input_timeout(parser, now=0.0) is None
    list(parser.feed("a"))
    assert input_timeout(parser, now=0.0) is None


def test_a_lone_escape_limits_the_sleep_to_the_parsers_deadline() -> None:
    parser = XTermParser()
    list(parser.feed("\x1b"))
    deadline = parser._timeout_time
    assert deadline is not None
    assert input_timeout(parser, now=deadline - 0.04) == pytest.approx(0.04)
    assert input_timeout(parser, now=deadline + 5) == 0.0


def test_a_parser_without_a_deadline_attribute_gets_textuals_poll() -> None:
    """If Textual renames the attribute, the driver polls as Textual does instead of sleeping
    through a lone Escape; the first test above fails then, so the rename is noticed."""
    assert input_timeout(object(), now=0.0) == POLL_SECONDS


class _Harness:
    """A QuietLinuxDriver reading a pipe instead of the terminal, its events collected."""

    def __init__(self, driver: QuietLinuxDriver, write_fd: int) -> None:
        self.driver = driver
        self.write_fd = write_fd
        self.events: list[events.Event] = []
        self.timeouts: list[float | None] = []
        self.changed = threading.Condition()

    def collect(self, event: events.Event) -> None:
        with self.changed:
            self.events.append(event)
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
        return [e.key for e in self.events if isinstance(e, events.Key)]


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch):
    loop = asyncio.new_event_loop()
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    read_fd, write_fd = os.pipe()

    async def build() -> QuietLinuxDriver:
        return QuietLinuxDriver(app=None)  # the app is only used by methods not run here

    driver = loop.run_until_complete(build())
    for sig, handler in saved.items():  # LinuxDriver installs its Ctrl+Z handlers
        signal.signal(sig, handler)
    h = _Harness(driver, write_fd)
    driver.fileno = read_fd
    driver.process_message = h.collect  # type: ignore[method-assign]
    monkeypatch.setattr(driver_module, "input_timeout", h.record_timeout)
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    h.thread = thread  # type: ignore[attr-defined]
    try:
        yield h
    finally:
        driver.exit_event.set()
        h.thread.join(BOUND)  # the thread a test may have started again
        driver.close()
        for fd in (read_fd, h.write_fd):  # a test that closed its end set it to -1
            if fd >= 0:
                os.close(fd)
        loop.close()


def test_keys_arrive_and_then_the_thread_sleeps_without_a_timeout(harness) -> None:
    os.write(harness.write_fd, b"ab")
    harness.wait(lambda: harness.keys() == ["a", "b"], "the keys never arrived")
    harness.wait(lambda: harness.timeouts and harness.timeouts[-1] is None,
                 f"the thread did not go to sleep without a timeout: {harness.timeouts[-5:]}")
    assert POLL_SECONDS not in harness.timeouts  # it never polled


def test_a_lone_escape_arrives_once_the_parsers_deadline_passes(harness) -> None:
    os.write(harness.write_fd, b"\x1b")
    harness.wait(lambda: harness.keys() == ["escape"], f"no escape key: {harness.keys()}")
    assert any(t is not None for t in harness.timeouts)  # it slept until the deadline, not for ever
    harness.wait(lambda: harness.timeouts and harness.timeouts[-1] is None, "the thread did not go back to sleep")


def test_a_character_split_across_two_reads_arrives_whole(harness) -> None:
    encoded = "é".encode()
    os.write(harness.write_fd, encoded[:1])
    harness.wait(lambda: len(harness.timeouts) >= 2 and harness.timeouts[-1] is None, "no read")
    os.write(harness.write_fd, encoded[1:] + b"x")
    harness.wait(lambda: harness.keys() == ["é", "x"], f"keys: {harness.keys()}")


def test_stopping_input_wakes_the_sleeping_thread(harness) -> None:
    harness.wait(lambda: harness.timeouts and harness.timeouts[-1] is None, "never slept")
    harness.driver.exit_event.set()
    harness.thread.join(BOUND)
    assert not harness.thread.is_alive()


def test_the_end_of_input_stops_reading_instead_of_spinning(harness) -> None:
    os.write(harness.write_fd, b"q")
    harness.wait(lambda: harness.keys() == ["q"], "no key")
    os.close(harness.write_fd)  # stdin piped from a finished program
    harness.write_fd = -1
    harness.wait(lambda: harness.timeouts[-1] is None, "never slept")
    calls = len(harness.timeouts)
    os.write(harness.driver._wake_write, b"x")  # one more wake-up: it must sleep again at once
    harness.wait(lambda: len(harness.timeouts) > calls and harness.timeouts[-1] is None, "no wake")
    assert len(harness.timeouts) <= calls + 2  # a spinning thread would be far past this


def test_the_app_runs_with_the_quiet_driver(demo_home, monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_app(demo_home, watch=False).driver_class is QuietLinuxDriver
    monkeypatch.setattr(driver_module.constants, "DRIVER", "textual.drivers.linux_driver:LinuxDriver")
    assert make_app(demo_home, watch=False).driver_class is not QuietLinuxDriver  # the user's choice


def _read_until(fd: int, needle: bytes, proc: subprocess.Popen) -> bytes:
    seen = b""
    deadline = time.monotonic() + 60
    while needle not in seen:
        assert time.monotonic() < deadline and proc.poll() is None, seen[-2000:]
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


def _read_until_exit(fd: int, proc: subprocess.Popen) -> None:
    """Drain the terminal (a full pty would block the app's last writes) until ``proc`` ends."""
    deadline = time.monotonic() + BOUND
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the app did not exit"
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:  # the child's side closed
                proc.wait(timeout=BOUND)


def _wakeups(pid: int) -> dict[str, int]:
    """Voluntary context switches (a thread blocking again after it woke) per thread id."""
    counts = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                counts[task.name] = int(line.split()[1])
    return counts


def _most_wakeups_of_a_thread(pid: int, window: float) -> int:
    """The most wake-ups of any one thread of ``pid`` during ``window`` seconds (a measurement
    window, not a wait for something)."""
    before = _wakeups(pid)
    time.sleep(window)
    after = _wakeups(pid)
    return max(after[t] - before.get(t, 0) for t in after)


WINDOW = 1.5  # seconds: Textual's driver wakes 15 times in it, a blinking cursor 3 times


def _quietest_window(pid: int, tries: int = 4) -> int:
    """The fewest wake-ups of the busiest thread over up to ``tries`` windows (the first quiet
    one ends the search: a window may still hold the end of the last repaint)."""
    counts = []
    for _ in range(tries):
        counts.append(_most_wakeups_of_a_thread(pid, window=WINDOW))
        if counts[-1] <= 1:
            break
    return min(counts)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc: Linux only")
def test_in_a_real_terminal_keys_work_no_thread_polls_and_q_quits(demo_home) -> None:
    """The real command in a pty: the panel key switches panels; once it is drawn and nothing
    changes, no thread wakes (Textual's driver polls 10 times a second, a focused Input's cursor
    blinks twice a second); and ctrl+q ends the process (the stop must wake the input thread,
    which sleeps with no timeout)."""
    import pty

    main_fd, child_fd = pty.openpty()
    os.set_blocking(main_fd, True)
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
    env.pop("TEXTUAL_DRIVER", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memdeck.tui", "--home", str(demo_home.path)],
        stdin=child_fd, stdout=child_fd, stderr=child_fd, env=env, close_fds=True,
        start_new_session=True,
    )
    os.close(child_fd)
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(main_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        _read_until(main_fd, b"Integrity", proc)
        os.write(main_fd, b"4")
        _read_until(main_fd, b"frozen prompt", proc)  # only the Capacity panel shows it
        quietest = _quietest_window(proc.pid)
        assert quietest <= 1, f"a thread woke {quietest} times in {WINDOW} s while nothing happened"
        os.write(main_fd, b"5")  # Recall: its query box takes the focus; its cursor must not blink
        _read_until(main_fd, b"results as you type", proc)
        quietest = _quietest_window(proc.pid)
        assert quietest <= 1, f"with the query box focused a thread woke {quietest} times in {WINDOW} s"
        os.write(main_fd, b"\x11")  # ctrl+q: in the query box, q is a letter
        _read_until_exit(main_fd, proc)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main_fd)


def test_after_close_stopping_input_writes_to_no_file(harness) -> None:
    """A closed pipe's number can be reused by the next file opened; a late stop must not
    write a byte into it."""
    harness.driver.exit_event.set()
    harness.thread.join(BOUND)
    harness.driver.close()
    reused_r, reused_w = os.pipe()  # likely the numbers the driver just closed
    try:
        harness.driver.exit_event.clear()
        harness.driver.exit_event.set()
        os.set_blocking(reused_r, False)
        with pytest.raises(BlockingIOError):
            os.read(reused_r, 1)
    finally:
        os.close(reused_r)
        os.close(reused_w)


def test_input_stopped_closed_and_started_again_still_arrives(harness) -> None:
    """Ctrl+Z then ``fg``: Textual's suspend stops the input thread (``disable_input``: set,
    join, clear) and *closes* the driver; the resume starts a new input thread on the same
    driver, which must open a new pipe and take keys."""
    harness.wait(lambda: harness.timeouts and harness.timeouts[-1] is None, "never slept")
    harness.driver.exit_event.set()
    harness.thread.join(BOUND)
    assert not harness.thread.is_alive()
    harness.driver.close()  # Driver.suspend_application_mode
    harness.driver.exit_event.clear()
    calls = len(harness.timeouts)
    again = threading.Thread(target=harness.driver.run_input_thread, daemon=True)
    again.start()  # LinuxDriver.start_application_mode, on resume
    harness.thread = again
    os.write(harness.write_fd, b"z")
    harness.wait(lambda: harness.keys() == ["z"], f"keys after the resume: {harness.keys()}")
    harness.wait(lambda: len(harness.timeouts) > calls and harness.timeouts[-1] is None,
                 "the new thread did not go to sleep")
    harness.driver.exit_event.set()  # and its stop wakes it through the new pipe
    again.join(BOUND)
    assert not again.is_alive()
