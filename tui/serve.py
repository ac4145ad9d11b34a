"""``memdeck serve``: the dashboard in a web browser, locked down by default (DESIGN.md
"Anything that listens is locked down by default").

Why textual-serve, and how much of it. Textual can run an app in a browser two ways: its
``WebDriver`` (``textual.drivers.web_driver``), which speaks a small packet protocol on the app
process's stdin/stdout, and a server in front of it. ``textual-web`` relays through Textualize's
cloud service, so it is out; ``textual-serve`` (the Textual team's local server, on aiohttp) has
what a browser needs: xterm.js with Textual's client (``static/js/textual.js``) and ``AppService``,
which runs one app process per WebSocket and speaks the driver's protocol. Its ``Server`` is an
open door (no authentication, every interface, the command run through ``/bin/sh``, a directory
listing of ``/static``, a download route, a stylesheet from Google Fonts, the access log printing
every query string), so memdeck keeps the client and the per-tab process protocol and puts its own
small aiohttp application in front:

* the gate (:mod:`memdeck.tui.serve_gate`): ``Host`` allow list, a single-use 128-bit token
  exchanged for a session of its own (an HttpOnly, SameSite=Strict cookie that expires, revoked
  when the server stops; the next URL is printed then), ``Origin`` on the WebSocket; every route
  answers 401 without a live session; nothing but loopback unless ``--allow-remote``;
* each tab's dashboard runs ``python -m memdeck.tui --home=<home> [--read-only]`` through
  :func:`asyncio.create_subprocess_exec` (no shell: a home path with spaces, ``;``, ``$()`` or
  quotes is one argument), in a process group of its own (:class:`DashboardProcess`); closing the
  tab quits it, and the server stops every one of them when it exits (SIGINT, SIGTERM, SIGHUP);
* the dashboard's driver is :class:`memdeck.tui.web_driver.QuietWebDriver` (no polling; it quits
  when the server's pipe closes, so a killed server leaves no dashboard behind);
* a page of its own (``templates/serve_index.html``): no third-party resource, a strict
  Content-Security-Policy with a per-response nonce, the WebSocket URL taken from the page's own
  origin (so an SSH tunnel's port or Tailscale Serve's https work unchanged).

Each token is printed once (stdout, one line per URL); nothing logs it afterwards (no access log; the
server's own log lines name the path, never the query).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import json
import logging
import os
import secrets
import shlex
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import textual_serve
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from memdeck.core.text import visible

from .serve_gate import Gate, bind_refusal, display_host, is_loopback_address, split_host, url_with_token

#: The driver each tab's dashboard runs (Textual reads ``TEXTUAL_DRIVER`` as ``module:Class``).
TAB_DRIVER = "memdeck.tui.web_driver:QuietWebDriver"

#: Tabs open at once; one more gets 503 (each is a dashboard process of ~60 MB).
MAX_TABS = 16

#: Seconds a tab's dashboard gets to quit after "quit" before SIGTERM, then SIGKILL, to its group.
QUIT_WAIT_S = 5.0
TERM_WAIT_S = 2.0

#: Largest message a browser may send on the WebSocket (a paste), bytes.
MAX_WS_MESSAGE = 256 * 1024

#: Terminal sizes a browser may ask for (columns, rows).
COLS_RANGE = (10, 500)
ROWS_RANGE = (4, 300)

_STATIC = Path(textual_serve.__file__).parent / "static"  # textual-serve's client: xterm.js, textual.js, fonts
_TEMPLATE = Path(__file__).parent / "templates" / "serve_index.html"


def _log(message: str) -> None:
    """One line on stderr, hidden characters shown as markers (a Host or Origin header is text
    from the network)."""
    print(f"memdeck serve: {visible(message, single_line=True)}", file=sys.stderr, flush=True)


class _OneLineLog(logging.Handler):
    """aiohttp's own log records (``aiohttp.*``: "Error handling request" with a traceback for each
    malformed request, issue 40 #11) as one :func:`_log` line each: the message and the error's
    first words, never a traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            exc = record.exc_info[1] if record.exc_info else None
            if exc is not None:
                what = " ".join(str(getattr(exc, "message", None) or exc).split())
                text += f": {type(exc).__name__}" + (f": {what}" if what else "")
            _log(text[:300])
        except Exception:  # noqa: BLE001 - a log line must never take the server down
            pass


def quiet_aiohttp_logs() -> None:
    """Route every ``aiohttp.*`` log record through :class:`_OneLineLog` (once per process)."""
    logger = logging.getLogger("aiohttp")
    if not any(isinstance(h, _OneLineLog) for h in logger.handlers):
        logger.addHandler(_OneLineLog())
    logger.propagate = False


def _clamp(text: str | None, lo_hi: tuple[int, int], default: int) -> int:
    try:
        n = int(str(text))
    except (TypeError, ValueError):
        return default
    lo, hi = lo_hi
    return max(lo, min(hi, n))


def dashboard_argv(home: Path, *, read_only: bool, python: str | None = None,
                   settings_file: Path | None = None) -> list[str]:
    """The argv of one tab's dashboard: ``python -m memdeck.tui --home=<home> [--read-only]
    [--config=<settings file>]``.

    Run with :func:`asyncio.create_subprocess_exec`, never a shell: ``home`` and the settings
    file are one argument each whatever they hold (spaces, ``;``, ``$()``, quotes, a leading
    ``-`` is safe after ``=``).
    """
    argv = [python or sys.executable, "-m", "memdeck.tui", f"--home={os.fspath(home)}"]
    if read_only:
        argv.append("--read-only")
    if settings_file is not None:
        argv.append(f"--config={os.fspath(settings_file)}")
    return argv


class DashboardProcess(AppService):
    """One browser tab's dashboard: textual-serve's ``AppService`` (the packet protocol with the
    app's ``WebDriver``), started without a shell in a process group of its own, stopped
    for sure (quit, then SIGTERM, then SIGKILL to the group), and forwarding only what a
    dashboard needs (no ``open_url``, no file delivery)."""

    def __init__(self, argv: list[str], *, tab: int, websocket: web.WebSocketResponse) -> None:
        super().__init__(
            shlex.join(argv),  # shown only; never run through a shell (see _open_app_process)
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=DownloadManager(),
        )
        self.argv = list(argv)
        self.tab = tab
        self._stopping: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width=width, height=height)
        env["TEXTUAL_DRIVER"] = TAB_DRIVER
        for name in ("TEXTUAL", "TEXTUAL_LOG"):  # never devtools or a log file from a served tab
            env.pop(name, None)
        return env

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        """Start the dashboard: ``exec`` of :attr:`argv` (no shell), its own session and process
        group (the server's Ctrl+C does not reach it; :meth:`stop` signals the whole group)."""
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def run(self) -> None:
        """Relay the dashboard's packets to the browser until its output ends (textual-serve's
        loop: wait for the ``__GANGLION__`` prelude, then ``D``/``M``/``P`` packets), its stderr
        to the server's stderr, then close the tab's WebSocket."""
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        stdout, stderr = process.stdout, process.stderr

        async def relay_stderr() -> None:
            buf = io.BytesIO()
            with contextlib.suppress(asyncio.CancelledError):
                while chunk := await stderr.read(4096):
                    if buf.tell() < 64 * 1024:
                        buf.write(chunk)
            text = buf.getvalue().decode("utf-8", "replace").strip()
            for line in text.splitlines()[-20:]:
                _log(f"tab {self.tab}: {line}")

        err_task = asyncio.create_task(relay_stderr())
        try:
            for _ in range(10):  # the driver writes the prelude before any packet
                line = await stdout.readline()
                if not line or line == b"__GANGLION__\n":
                    break
            while True:
                kind = await stdout.readexactly(1)
                size = int.from_bytes(await stdout.readexactly(4), "big")
                payload = await stdout.readexactly(size)
                if kind == b"D":
                    await self.on_data(payload)
                elif kind == b"M":
                    await self.on_meta(payload)
        except (asyncio.IncompleteReadError, ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(err_task, TERM_WAIT_S)
            with contextlib.suppress(Exception):
                await self.remote_close()  # the browser shows "ended"

    async def on_meta(self, data: bytes) -> None:
        """Only ``exit`` (close the tab's socket): a dashboard never opens URLs or sends files."""
        try:
            meta = json.loads(data)
        except ValueError:
            return
        if isinstance(meta, dict) and meta.get("type") == "exit":
            await self.remote_close()

    async def stop(self) -> None:
        """Quit the dashboard and wait until its process is gone (idempotent; concurrent calls
        wait for the same stop)."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(Exception):
                await self.send_meta({"type": "quit"})
            if not await self._wait(process, QUIT_WAIT_S):
                self._signal_group(process, signal.SIGTERM)
                if not await self._wait(process, TERM_WAIT_S):
                    self._signal_group(process, signal.SIGKILL)
                    await process.wait()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, TERM_WAIT_S)
            self._task = None

    @staticmethod
    async def _wait(process: Any, seconds: float) -> bool:
        try:
            await asyncio.wait_for(process.wait(), seconds)
        except TimeoutError:
            return False
        return True

    @staticmethod
    def _signal_group(process: Any, sig: int) -> None:
        """Signal the dashboard's process group; only while its leader is unreaped (so the group
        id cannot have been reused)."""
        if process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)


@dataclass
class ServeOptions:
    """What ``memdeck serve`` was asked for.

    Attributes:
        home: the Hermes home every tab shows.
        host, port: where to listen (``port`` 0: a free port).
        read_only: tabs run ``memdeck --read-only``.
        allowed_hosts: extra ``Host`` values (``--allowed-host``).
        allow_remote: a non-loopback ``host`` is allowed.
        check: bind, print the URL, exit.
        python: the interpreter tabs run (default this one).
        label: the profile name, shown in the page's title.
        settings_file: the dashboard's settings file ``--config`` named (absolute), passed to
            every tab; None: each tab finds it as ``memdeck`` does (``MEMDECK_CONFIG`` is inherited).
    """

    home: Path
    host: str = "127.0.0.1"
    port: int = 8765
    read_only: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allow_remote: bool = False
    check: bool = False
    python: str | None = None
    label: str = ""
    settings_file: Path | None = None


class DeckServer:
    """The aiohttp application in front of the tabs: the gate on every request, ``/`` (the
    page), ``/ws`` (one dashboard per connection) and ``/static`` (textual-serve's client)."""

    def __init__(self, options: ServeOptions, gate: Gate) -> None:
        self.options = options
        self.gate = gate
        self.argv = dashboard_argv(options.home, read_only=options.read_only, python=options.python,
                                   settings_file=options.settings_file)
        self.tabs: dict[int, DashboardProcess] = {}
        self._next_tab = 1
        self.url_base = ""  # ``http://host:port`` the URLs are printed with (set by :meth:`run`)
        self._template = _TEMPLATE.read_text(encoding="utf-8")

    # ── the application ────────────────────────────────────────────────

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        app.add_routes([
            web.get("/", self._index),
            web.get("/ws", self._websocket),
            web.static("/static", _STATIC, show_index=False, follow_symlinks=False),
        ])
        app.on_response_prepare.append(self._security_headers)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """The gate, before any route: Host (403), Origin when sent (403; required on the
        WebSocket), the token exchange on ``/?token=``, then the session cookie (401)."""
        gate = self.gate
        host = request.headers.get("Host")
        if not gate.host_allowed(host):
            return self._refuse(request, 403, f"Host {host!r} is not allowed (pass --allowed-host)")
        origin = request.headers.get("Origin")
        is_ws = request.path == "/ws"
        if is_ws and not gate.cookie_ok(request.cookies):  # no credentials: 401, as every route (README)
            return self._no_session(request)
        if (origin is not None or is_ws) and not gate.origin_allowed(origin, host):
            return self._refuse(request, 403, f"Origin {origin!r} is not this page's")
        if request.path == "/" and "token" in request.query:
            return self._exchange(request)
        if not gate.cookie_ok(request.cookies):
            return self._no_session(request)
        return await handler(request)

    def _no_session(self, request: web.Request) -> web.Response:
        return self._refuse(request, 401, "no live session cookie", body=(
            "memdeck serve: this browser has no live session (none yet, or it expired, or the server restarted). "
            "Open the newest URL `memdeck serve` printed in its terminal (each URL opens one session).\n"))

    def _refuse(self, request: web.Request, status: int, why: str, body: str | None = None) -> web.Response:
        _log(f"{status} {request.method} {request.path} from {request.remote}: {why}")
        return web.Response(status=status, text=body or f"{status}: {why}\n",
                            headers={"Cache-Control": "no-store"})

    def _exchange(self, request: web.Request) -> web.Response:
        """``/?token=T``: the right token opens a session of its own (its cookie expires, the
        server revokes it on exit) and sends the browser to ``/`` (the token leaves the address
        bar and the history); the token then works no more, and the next URL is printed on stdout
        (a second use gets 401 saying so: issue 40 #8). A 303 when the navigation started in
        the browser or on this site; when another site started it (a link in a chat), a page
        that refreshes to ``/``, because a SameSite=Strict cookie is not sent on a redirect that
        another site started."""
        given = request.query.get("token")
        session = self.gate.redeem(given)
        if session is None:
            if self.gate.token_used(given):
                return self._refuse(request, 401, "a used token", body=(
                    "memdeck serve: this URL was used already: each URL opens one browser session. "
                    "memdeck serve printed a new URL in its terminal when this one was used: open that one "
                    "(or restart memdeck serve).\n"))
            return self._refuse(request, 401, "wrong token")
        secure = _reached_over_https(request)
        cookie = self.gate.set_cookie_header(session, secure=secure)
        headers = {"Set-Cookie": cookie, "Cache-Control": "no-store"}
        _log(f"a browser at {request.remote} opened a session{' (https)' if secure else ''} "
             f"({self.gate.sessions} live); the URL it used works no more, the next one is on stdout")
        if self.url_base:
            print(url_with_token(self.url_base, self.gate.token), flush=True)
        if request.headers.get("Sec-Fetch-Site", "none") in ("none", "same-origin"):
            return web.Response(status=303, headers={**headers, "Location": "/"})
        page = ('<!DOCTYPE html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">'
                '<title>memdeck</title><a href="/">Open the dashboard</a>\n')
        return web.Response(status=200, text=page, content_type="text/html", headers=headers)

    async def _security_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        nonce = request.get("csp_nonce", "")
        script = f"'self' 'nonce-{nonce}'" if nonce else "'self'"
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; script-src {script}; style-src 'self' 'unsafe-inline'; font-src 'self'; "
            "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        response.headers["Cross-Origin-Resource-Policy"] = "same-origin"

    # ── routes ─────────────────────────────────────────────────────────

    async def _index(self, request: web.Request) -> web.StreamResponse:
        """The page. Any query (textual.js reads ``?ping=`` and ``?delay=`` from the address)
        is dropped by a redirect to ``/``."""
        if request.query_string:
            return web.Response(status=303, headers={"Location": "/", "Cache-Control": "no-store"})
        nonce = secrets.token_urlsafe(16)
        request["csp_nonce"] = nonce
        title = "memdeck" + (" (read-only)" if self.options.read_only else "")
        if self.options.label:
            title += f" · {self.options.label}"
        page = (self._template.replace("{{ title }}", html.escape(title))
                .replace("{{ static_url }}", "/static/")
                .replace("{{ font_size }}", "16")
                .replace("{{ nonce }}", nonce))
        return web.Response(text=page, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        """One dashboard process for the life of this WebSocket."""
        if len(self.tabs) >= MAX_TABS:
            return self._refuse(request, 503, f"{MAX_TABS} tabs are open already")
        width = _clamp(request.query.get("width"), COLS_RANGE, 80)
        height = _clamp(request.query.get("height"), ROWS_RANGE, 24)
        ws = web.WebSocketResponse(heartbeat=15.0, max_msg_size=MAX_WS_MESSAGE)
        await ws.prepare(request)
        tab_no = self._next_tab
        self._next_tab += 1
        tab = DashboardProcess(self.argv, tab=tab_no, websocket=ws)
        self.tabs[tab_no] = tab
        try:
            await tab.start(width, height)
            _log(f"tab {tab_no} opened (dashboard pid {tab.pid}, {len(self.tabs)} open)")
            await self._pump(ws, tab)
        except asyncio.CancelledError:
            pass
        except OSError as exc:
            _log(f"tab {tab_no}: the dashboard could not start: {exc}")
        finally:
            await tab.stop()
            self.tabs.pop(tab_no, None)
            _log(f"tab {tab_no} closed ({len(self.tabs)} open)")
            with contextlib.suppress(Exception):
                await ws.close()
        return ws

    async def _pump(self, ws: web.WebSocketResponse, tab: DashboardProcess) -> None:
        """The browser's messages to the dashboard: ``["stdin", text]``, ``["resize", {width,
        height}]``, ``["ping", x]``, ``["focus"]``, ``["blur"]``; anything else is ignored."""
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                continue
            kind, arg = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(arg, str):
                await tab.send_bytes(arg.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(arg, dict):
                await tab.set_terminal_size(_clamp(arg.get("width"), COLS_RANGE, 80),
                                            _clamp(arg.get("height"), ROWS_RANGE, 24))
            elif kind == "ping" and isinstance(arg, str) and len(arg) < 64:
                await ws.send_json(["pong", arg])
            elif kind == "focus":
                await tab.focus()
            elif kind == "blur":
                await tab.blur()

    async def stop_tabs(self) -> None:
        """Stop every tab's dashboard and wait until each process is gone."""
        tabs = list(self.tabs.values())
        if tabs:
            _log(f"stopping {len(tabs)} dashboard(s)")
            await asyncio.gather(*(t.stop() for t in tabs), return_exceptions=True)

    # ── running ────────────────────────────────────────────────────────

    async def run(self, sock: socket.socket, url: str) -> int:
        """Serve on the bound ``sock`` until SIGINT, SIGTERM or SIGHUP; every tab is stopped
        before this returns. ``url`` (with the token) is printed once, on stdout."""
        quiet_aiohttp_logs()
        runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await runner.setup()
        site = web.SockSite(runner, sock)
        await site.start()
        print(url, flush=True)
        self.url_base = url.split("/?", 1)[0]
        mode = "read-only" if self.options.read_only else "read-write"
        _log(f"serving {self.options.home} ({mode}); open the URL above in a browser; Ctrl+C stops")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                loop.remove_signal_handler(sig)
            revoked = self.gate.revoke_all()
            _log(f"stopping ({revoked} session(s) revoked)")
            await self.stop_tabs()
            await runner.cleanup()
            await self.stop_tabs()  # a tab that opened while the server closed
        return 0


def _reached_over_https(request: web.Request) -> bool:
    """Whether the browser reached us over https: TLS here, or a proxy in front that says so
    (``X-Forwarded-Proto: https`` or ``Forwarded: proto=https``, as Caddy, nginx, Tailscale Serve
    and cloudflared send). Only decides the cookie's ``Secure`` flag: a client that lies gets a
    cookie it cannot send back over http."""
    if request.secure:
        return True
    xfp = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    if xfp == "https":
        return True
    fwd = request.headers.get("Forwarded", "").lower()
    return "proto=https" in fwd.replace(" ", "")


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (the first address ``host`` resolves to).

    Raises:
        OSError: the address cannot be resolved or bound (in use, not local, no permission).
    """
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, type_, proto, _name, addr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if not host or host == "::" else 1)
        sock.bind(addr)
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def printed_url(host: str, port: int, token: str) -> str:
    """The URL to open: the bound address (``127.0.0.1`` for every-interface binds)."""
    shown = host
    if host in ("", "0.0.0.0"):
        shown = "127.0.0.1"
    elif host == "::":
        shown = "::1"
    return url_with_token(f"http://{display_host(shown)}:{port}", token)


def serve(options: ServeOptions) -> int:
    """Run ``memdeck serve`` with ``options``; returns the exit code.

    Returns:
        0 after a clean stop (or ``--check``), 1 when the port cannot be bound, 2 for a usage
        error (a non-loopback host without ``--allow-remote``, a bad ``--allowed-host`` or
        port). The reason is one line on stderr.
    """
    refusal = bind_refusal(options.host, options.allow_remote)
    if refusal is not None:
        print(f"memdeck: error: {refusal}", file=sys.stderr)
        return 2
    if not 0 <= options.port <= 65535:
        print(f"memdeck: error: --port {options.port} is not a TCP port (0-65535)", file=sys.stderr)
        return 2
    allowed = list(options.allowed_hosts)
    bound = options.host.strip("[]")
    if bound not in ("", "0.0.0.0", "::") and not is_loopback_address(bound):
        allowed.append(bound)  # a browser reaching the bound address names it in Host
    for h in allowed:
        if split_host(h) is None:
            print(f"memdeck: error: --allowed-host {h!r} is not a host name or host:port", file=sys.stderr)
            return 2
    try:
        sock = bind(options.host, options.port)
    except OSError as exc:
        print(f"memdeck: error: cannot listen on {options.host}:{options.port}: {exc.strerror or exc}"
              + (" (another memdeck serve? pass --port)" if getattr(exc, "errno", None) == 98 else ""),
              file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    gate = Gate(port=port, allowed_hosts=tuple(allowed))
    url = printed_url(options.host, port, gate.token)
    if options.allow_remote and not is_loopback_address(options.host):
        _log("warning: listening beyond loopback over plain http: the token and the cookie cross the network "
             "in clear unless a TLS proxy (Tailscale Serve, Caddy, Cloudflare) is in front")
    if options.check:
        sock.close()
        print(url, flush=True)
        _log(f"check: would serve {options.home} on port {port} "
             f"({'read-only' if options.read_only else 'read-write'}); nothing served")
        return 0
    server = DeckServer(options, gate)
    try:
        return asyncio.run(server.run(sock, url))
    except KeyboardInterrupt:  # a second Ctrl+C while stopping
        return 130
