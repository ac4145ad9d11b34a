"""Benchmark ``memdeck serve`` idle: the CPU of the server and its dashboard with one tab open
and nothing changing, against its peers in the same run.

    python bench/bench_serve.py [--seconds 30] [--quick] [--no-browser]

Rows (each a fresh demo home, one tab on the Capacity panel, then ``--seconds`` of nothing):

* ``memdeck serve`` with a real headless Chromium tab (Debian's chromium through Playwright);
* ``memdeck serve`` with a plain WebSocket client as the tab (what the browser sends while idle:
  nothing; the heartbeat is the server's);
* the same server with Textual's own ``WebDriver`` in the tab (polls its input 10 times a second);
* textual-serve's own ``Server`` running the same dashboard command (no gate, Textual's driver).

CPU is the ``utime + stime`` of the server and every dashboard it started (``/proc``), over the
window, in percent of one core; the browser's own CPU is not memdeck's and is not counted.
Wake-ups are voluntary context switches of all their threads per second. Prints a markdown table
and the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memdeck.core.demo import DEMO_NOW, build_demo_home  # noqa: E402
from tests.helpers.serve import children_of  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

STOCK_DRIVER = """
import sys
import memdeck.tui.serve as serve
serve.TAB_DRIVER = "textual.drivers.web_driver:WebDriver"  # Textual's own driver in each tab
from memdeck.tui.launch import main
raise SystemExit(main(sys.argv[1:]))
"""

TEXTUAL_SERVE = """
import shlex, sys
from textual_serve.server import Server
port = int(sys.argv[1])
Server(shlex.join([sys.executable, "-m", "memdeck.tui", "--home=" + sys.argv[2]]), host="127.0.0.1", port=port).serve()
"""


def descendants(pid: int) -> list[int]:
    """``pid``'s children, their children, ... (textual-serve runs its command through ``sh``)."""
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def wakeups(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
            except OSError:
                pass
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_memdeck(home: Path, stock_driver: bool) -> tuple[subprocess.Popen, str]:
    args = [f"--home={home}", "serve", "--port", "0"]
    argv = ([sys.executable, "-c", STOCK_DRIVER, *args] if stock_driver
            else [sys.executable, "-m", "memdeck.tui", *args])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    ready, _w, _x = select.select([proc.stdout], [], [], 60)
    url = proc.stdout.readline().decode().strip() if ready else ""
    if not url.startswith("http"):
        proc.kill()
        raise SystemExit(f"memdeck serve did not start: {url!r}")
    return proc, url


def start_textual_serve(home: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", TEXTUAL_SERVE, str(port), str(home)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError as exc:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("textual-serve did not start") from exc
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}/"


async def ws_tab(url: str, hold: asyncio.Future[None], ready: asyncio.Future[None]) -> None:
    """One tab as a WebSocket client: the cookie from the URL's token (if any), Capacity shown."""
    import aiohttp

    base = url.split("/?", 1)[0].rstrip("/")
    headers = {"Origin": base}
    async with aiohttp.ClientSession() as session:
        if "token=" in url:
            r = await session.get(url, allow_redirects=False)
            headers["Cookie"] = r.headers["Set-Cookie"].split(";", 1)[0]
        ws = await session.ws_connect(f"{base}/ws?width=140&height=40", headers=headers)
        data = bytearray()

        async def until(needle: bytes, since: int = 0) -> None:
            while data.find(needle, since) < 0:
                msg = await asyncio.wait_for(ws.receive(), 60)
                if msg.type == aiohttp.WSMsgType.BINARY:
                    data.extend(msg.data)
                elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    raise SystemExit("the tab closed")

        await until(b"Integrity")
        mark = len(data)
        await ws.send_str(json.dumps(["stdin", "4"]))
        await until(b"frozen prompt", mark)
        ready.set_result(None)
        reader = asyncio.ensure_future(_drain(ws))
        await hold
        reader.cancel()
        await ws.close()


async def _drain(ws) -> None:
    async for _m in ws:
        pass


def browser_tab(url: str, profile: Path):
    """A real Chromium tab on ``url``, on Capacity; returns the Playwright objects to close."""
    from tests.helpers.browser import chromium, press, wait_for_text

    cm = chromium(profile)
    ctx = cm.__enter__()
    page = ctx.new_page()
    page.goto(url)
    wait_for_text(page, "1 Integrity")
    press(page, "4")
    wait_for_text(page, "frozen prompt")
    return cm


def measure(pids_of, seconds: float) -> tuple[float, float]:
    """``(CPU % of one core, wake-ups per second)`` of the processes over ``seconds``."""
    time.sleep(3.0)  # let the last repaint and the first-refresh caches settle (not measured)
    pids = pids_of()
    c0, w0, t0 = cpu_ticks(pids), wakeups(pids), time.monotonic()
    time.sleep(seconds)  # the measurement window: nothing happens in it by design
    pids = pids_of()
    c1, w1, t1 = cpu_ticks(pids), wakeups(pids), time.monotonic()
    return 100.0 * (c1 - c0) / TICK / (t1 - t0), (w1 - w0) / (t1 - t0)


def _dashboards(pid: int) -> int:
    """How many dashboard processes (``-m memdeck.tui``) run under ``pid``."""
    n = 0
    for p in descendants(pid):
        try:
            argv = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:3] == [b"-m", b"memdeck.tui"]:
            n += 1
    return n


def run_row(name: str, start, seconds: float, browser: bool, tmp: Path) -> dict:
    home = build_demo_home(tmp / f"home-{abs(hash(name))}", seed=7, now=DEMO_NOW).path
    proc, url = start(home)
    pids_of = lambda: [proc.pid, *descendants(proc.pid)]  # noqa: E731
    try:
        if browser:
            cm = browser_tab(url, tmp / f"profile-{abs(hash(name))}")
            try:
                cpu, wake = measure(pids_of, seconds)
                tabs = _dashboards(proc.pid)
            finally:
                cm.__exit__(None, None, None)
        else:
            loop = asyncio.new_event_loop()
            hold, ready = loop.create_future(), loop.create_future()
            task = loop.create_task(ws_tab(url, hold, ready))
            loop.run_until_complete(ready)
            result: dict = {}

            async def window() -> None:
                result["m"] = await asyncio.to_thread(measure, pids_of, seconds)
                result["tabs"] = _dashboards(proc.pid)
                hold.set_result(None)

            loop.run_until_complete(window())
            loop.run_until_complete(task)
            loop.close()
            (cpu, wake), tabs = result["m"], result["tabs"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(home, ignore_errors=True)
    return {"name": name, "cpu": cpu, "wake": wake, "tabs": tabs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0, help="measurement window per row")
    ap.add_argument("--quick", action="store_true", help="10 s windows")
    ap.add_argument("--no-browser", action="store_true", help="skip the Chromium row")
    args = ap.parse_args()
    seconds = 10.0 if args.quick else args.seconds
    load_before = os.getloadavg()
    from tests.helpers.browser import unavailable_reason

    why = None if not args.no_browser else "--no-browser"
    why = why or unavailable_reason()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if why is None:
            rows.append(run_row("memdeck serve, one Chromium tab", lambda h: start_memdeck(h, False), seconds, True, tmp))
        rows.append(run_row("memdeck serve, one WebSocket tab", lambda h: start_memdeck(h, False), seconds, False, tmp))
        rows.append(run_row("same server, Textual's WebDriver in the tab", lambda h: start_memdeck(h, True), seconds,
                            False, tmp))
        rows.append(run_row("textual-serve's own Server (no gate)", start_textual_serve, seconds, False, tmp))
    load_after = os.getloadavg()
    peer = rows[-1]
    print(f"idle, one tab open, {seconds:.0f} s window per row; load average before "
          f"{load_before[0]:.2f} / after {load_after[0]:.2f} (2 cores)"
          + (f"; no Chromium row: {why}" if why else ""))
    print()
    print("| setup | dashboards | CPU (% of one core) | wake-ups / s | CPU vs textual-serve | wake-ups vs textual-serve |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        cpu_ratio = f"{r['cpu'] / peer['cpu']:.2f}x" if peer["cpu"] > 0 else "n/a (peer 0)"
        wake_ratio = f"{r['wake'] / peer['wake']:.3f}x" if peer["wake"] > 0 else "n/a"
        print(f"| {r['name']} | {r['tabs']} | {r['cpu']:.3f} % | {r['wake']:.1f} | {cpu_ratio} | {wake_ratio} |")
    print(f"\nCPU resolution: 1 clock tick = {1000 / TICK:.0f} ms = {100 / TICK / seconds:.3f} % over the window")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
