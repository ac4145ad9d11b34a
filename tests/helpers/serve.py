"""A real ``memdeck serve`` in a subprocess for the serve tests (HTTP, WebSocket, Chromium), and
what they read from it: the printed URL, the session cookie, the dashboards it started, the
terminal bytes a tab sends.

Nothing here sleeps as synchronisation: each wait is for an event (a line, a process, bytes on
the socket, a file) bounded by a timeout that only fails a test that would hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: A bound for waits on a busy machine (a dashboard's first paint takes ~2 s idle).
WAIT_S = 60.0


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from ``/proc``; zombies left out)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[0] != "Z" and int(fields[1]) == pid:
            out.append(int(entry))
    return sorted(out)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def cmdline(pid: int) -> list[str]:
    """``pid``'s argv as the kernel holds it."""
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return [os.fsdecode(a) for a in raw.split(b"\0")[:-1]]


def wait_until(predicate, timeout: float = WAIT_S, describe: str = "") -> None:
    """Poll ``predicate`` (every 20 ms) until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {describe or predicate}")
        time.sleep(0.02)


@dataclass
class Served:
    """One running ``memdeck serve``: its process, the URL it printed, its stderr file."""

    proc: subprocess.Popen
    url: str
    stderr_path: Path
    dashboards_seen: set[int] = field(default_factory=set)

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.split("token=", 1)[1]

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    @property
    def host_header(self) -> str:
        return self.base.split("://", 1)[1]

    def dashboards(self) -> list[int]:
        """The dashboard processes the server runs now (its children)."""
        pids = children_of(self.proc.pid)
        self.dashboards_seen.update(pids)
        return pids

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def next_url(self) -> str:
        """The next URL the server printed (it prints one each time a token is exchanged: a
        token works once), which becomes :attr:`url`."""
        assert self.proc.stdout is not None
        line = read_line(self.proc.stdout.fileno())
        assert line.startswith("http"), f"no next URL on stdout: {line!r}; stderr: {self.stderr()}"
        self.url = line
        return line

    def stop(self, sig: int = signal.SIGTERM, timeout: float = WAIT_S) -> int:
        """Send ``sig`` and wait for the server to exit; returns its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


def read_line(fd: int, timeout: float = WAIT_S) -> str:
    """One line from ``fd``, read a byte at a time (nothing is left in a buffer for the next
    call), waiting at most ``timeout`` seconds for each byte; ``""`` at the end or the timeout."""
    out = bytearray()
    deadline = time.monotonic() + timeout
    while True:
        ready, _w, _x = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        b = os.read(fd, 1)
        if not b or b == b"\n":
            break
        out += b
    return out.decode(errors="replace").strip()


def serve_argv(home: Path | str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "memdeck.tui", f"--home={home}", "serve", "--port", "0", *extra]


@contextlib.contextmanager
def served(home: Path | str, *extra: str, tmp: Path, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Start ``memdeck --home=HOME serve --port 0 EXTRA...``; yield once it printed its URL;
    stop it (SIGTERM) and every dashboard it left (none should be left: tests assert that) after."""
    err = tmp / f"serve-stderr-{time.monotonic_ns()}.txt"
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "TZ": "UTC", **(env or {})}
    with open(err, "wb") as err_f:
        proc = subprocess.Popen(serve_argv(home, *extra), stdout=subprocess.PIPE, stderr=err_f, stdin=subprocess.DEVNULL,
                                cwd=tmp, env=full_env)
    s: Served | None = None
    try:
        assert proc.stdout is not None
        line = read_line(proc.stdout.fileno())  # the URL line, or the exit
        if not line.startswith("http"):
            proc.wait(timeout=WAIT_S)
            raise AssertionError(f"memdeck serve did not print a URL: {line!r}; stderr: {err.read_text()}")
        s = Served(proc, line, err)
        yield s
    finally:
        leftovers = set(children_of(proc.pid)) | (s.dashboards_seen if s else set())
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in leftovers:  # only if a test failed half-way: never leave a dashboard running
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if proc.stdout is not None:
            proc.stdout.close()


def session_cookie(served_: Served) -> str:
    """``name=value`` of a new session's cookie, got the way a browser gets it (``/?token=``);
    the URL's token works once, so ``served_.url`` becomes the next URL the server printed."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):  # noqa: ANN002, ANN003
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(served_.url, timeout=WAIT_S)
        raise AssertionError("the token URL did not redirect")
    except urllib.error.HTTPError as exc:
        assert exc.code == 303, exc.code
        served_.next_url()
        return exc.headers["Set-Cookie"].split(";", 1)[0]


class TabClient:
    """One tab as a plain WebSocket client (aiohttp): sends keys, collects the terminal bytes."""

    def __init__(self, served_: Served, *, width: int = 140, height: int = 40, cookie: str | None = None) -> None:
        self.served = served_
        self.size = (width, height)
        self.cookie = cookie if cookie is not None else session_cookie(served_)
        self.data = bytearray()
        self._session = None
        self.ws = None
        self._reader: asyncio.Task | None = None
        self.closed = asyncio.Event()

    async def __aenter__(self) -> TabClient:
        import aiohttp

        self._session = aiohttp.ClientSession()
        w, h = self.size
        self.ws = await self._session.ws_connect(f"{self.served.base}/ws?width={w}&height={h}",
                                                 headers={"Origin": self.served.base, "Cookie": self.cookie})
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        import aiohttp

        try:
            async for m in self.ws:
                if m.type == aiohttp.WSMsgType.BINARY:
                    self.data.extend(m.data)
        finally:
            self.closed.set()

    async def wait_for(self, needle: bytes, *, since: int = 0, timeout: float = WAIT_S) -> int:
        """Wait until ``needle`` is in the bytes received after offset ``since``; returns the
        offset where it starts."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.data.find(needle, since)
            if at >= 0:
                return at
            if self.closed.is_set():
                raise AssertionError(f"the tab closed before {needle!r} arrived")
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} did not arrive within {timeout} s")
            await asyncio.sleep(0.02)

    async def press(self, keys: str) -> None:
        await self.ws.send_str(json.dumps(["stdin", keys]))

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._reader, WAIT_S)
        if self._session is not None:
            await self._session.close()
