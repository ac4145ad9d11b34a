"""``memdeck metrics --serve HOST:PORT``: a ``/metrics`` endpoint for Prometheus to scrape.

Locked down as everything of memdeck that listens (DESIGN.md): loopback only unless
``--allow-remote`` (:func:`check_bind` refuses any address that is not loopback, names resolved
first); the ``Host`` header must name a loopback address, the bound address or an
``--allowed-host`` (a DNS-rebinding page cannot read it through a browser); a request carrying
an ``Origin`` header (any browser's cross-site request, which Prometheus never sends) is refused;
only ``GET``/``HEAD`` of ``/metrics`` (and ``/``, a one-line pointer) are served: it is read-only
by construction, no request reaches a shell or a write. The body is the registry's exposition
(``prometheus_client.make_wsgi_app``: the text format, or OpenMetrics when asked, gzip when
accepted).

Bounded (issue 40 #11: one thread per connection, 3,000 idle connections held 3,000 threads):
a connection waits for its first bytes in one selector thread, costing no thread of its own,
for at most :data:`IDLE_TIMEOUT_S`; a request is then handled by one of :data:`WORKERS` threads,
each socket read or write bounded by :data:`IO_TIMEOUT_S`; beyond :data:`MAX_CONNECTIONS` open at
once the oldest connections still waiting for their request are closed (a flood of idle
connections never locks a scrape out). A failed request costs one line on stderr at most,
never a traceback.
"""

from __future__ import annotations

import ipaddress
import queue
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client.registry import CollectorRegistry

DEFAULT_BIND = "127.0.0.1:9810"

#: Threads that handle requests (a scrape is a few milliseconds; Prometheus sends one at a time).
WORKERS = 4
#: Connections open at once (waiting for their request or being answered); more are closed at once.
MAX_CONNECTIONS = 128
#: Seconds a connection may stay open without sending its request.
IDLE_TIMEOUT_S = 10.0
#: Seconds one read or write of a request being handled may block.
IO_TIMEOUT_S = 10.0
LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


class BindRefused(ValueError):
    """The address cannot be used as given (the message says why and what to do)."""


@dataclass(frozen=True)
class Bind:
    """Where to listen: ``host`` (an address or name) and ``port`` (0: any free port)."""

    host: str
    port: int


def parse_bind(text: str) -> Bind:
    """``HOST:PORT``, ``[v6]:PORT`` or ``PORT`` (on 127.0.0.1).

    Raises:
        BindRefused: not that shape, or a port outside 0-65535.
    """
    text = text.strip()
    host, port = "127.0.0.1", text
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not text[end + 1:].startswith(":"):
            raise BindRefused(f"{text!r} is not [ADDRESS]:PORT")
        host, port = text[1:end], text[end + 2:]
    elif ":" in text:
        host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise BindRefused(f"{text!r} is not HOST:PORT (for example 127.0.0.1:9810)")
    return Bind(host, int(port))


def _addresses(host: str) -> list[str]:
    try:
        return [ipaddress.ip_address(host).compressed]
    except ValueError:
        pass
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})
    except OSError as exc:
        raise BindRefused(f"cannot resolve {host!r}: {exc.strerror or exc}") from None


def is_loopback(host: str) -> bool:
    """True when every address ``host`` names is a loopback address."""
    try:
        addrs = _addresses(host)
    except BindRefused:
        return False
    return bool(addrs) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)


def check_bind(bind: Bind, *, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless ``allow_remote``.

    Raises:
        BindRefused: the address is not loopback and ``allow_remote`` is False, or it cannot be resolved.
    """
    _addresses(bind.host)
    if not allow_remote and not is_loopback(bind.host):
        raise BindRefused(f"{bind.host} is not a loopback address: anyone who can reach it could read the fleet's "
                          "figures. Use 127.0.0.1 (and let Prometheus reach it through an SSH tunnel), or pass "
                          "--allow-remote to listen there anyway")


def _host_name(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def guarded(app: Callable[..., Any], *, bind: Bind, allowed_hosts: Iterable[str] = (),
            this_machine: bool = False) -> Callable[..., Any]:
    """Wrap a WSGI ``app`` with the checks of the module docstring. ``this_machine`` (an
    ``--allow-remote`` bind) also allows this machine's host name and fully qualified name."""
    allowed = {bind.host.lower(), *LOOPBACK_NAMES, *(_host_name(h) for h in allowed_hosts)}
    if this_machine:
        allowed |= {socket.gethostname().lower(), socket.getfqdn().lower()}

    def host_ok(header: str) -> bool:
        name = _host_name(header)
        if name in allowed:
            return True
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return False

    def refuse(start_response: Callable[..., Any], status: str, why: str) -> list[bytes]:
        body = (why + "\n").encode("utf-8")
        start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
        return [body]

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not host_ok(environ.get("HTTP_HOST", "")):
            return refuse(start_response, "403 Forbidden", "memdeck metrics: this Host is not allowed (see --allowed-host)")
        if environ.get("HTTP_ORIGIN"):
            return refuse(start_response, "403 Forbidden", "memdeck metrics: cross-site requests are refused")
        method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/")
        if method not in ("GET", "HEAD"):
            return refuse(start_response, "405 Method Not Allowed", "memdeck metrics is read-only: GET /metrics")
        if path == "/":
            return refuse(start_response, "200 OK", "memdeck metrics: scrape /metrics")
        if path != "/metrics":
            return refuse(start_response, "404 Not Found", "memdeck metrics: only /metrics")
        return app(environ, start_response)

    return wrapped


class _Server(WSGIServer):
    """A WSGI server with a bounded number of threads and connections (module docstring)."""

    allow_reuse_address = True
    request_queue_size = MAX_CONNECTIONS  # the listen backlog: a burst of connections is accepted, then bounded

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused = 0  # idle connections closed because more than MAX_CONNECTIONS were open
        self.accepted = 0
        self._lock = threading.Lock()
        self._open = 0  # connections accepted and not yet closed
        self._incoming: list[tuple[socket.socket, Any]] = []
        self._waiting: dict[socket.socket, tuple[Any, float]] = {}  # socket -> (address, idle deadline)
        self._ready: queue.Queue[tuple[socket.socket, Any] | None] = queue.Queue()
        self._closed = False
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._threads = [threading.Thread(target=self._poll, name="memdeck-metrics-poll", daemon=True)]
        self._threads += [threading.Thread(target=self._work, name=f"memdeck-metrics-{i}", daemon=True)
                          for i in range(WORKERS)]
        for t in self._threads:
            t.start()

    @property
    def open_connections(self) -> int:
        """Connections accepted and not yet closed."""
        with self._lock:
            return self._open

    def process_request(self, request: Any, client_address: Any) -> None:
        """Hand an accepted connection to the selector thread (which closes the oldest idle ones
        beyond :data:`MAX_CONNECTIONS`)."""
        with self._lock:
            self.accepted += 1
            closed = self._closed
            if not closed:
                self._open += 1
                self._incoming.append((request, client_address))
        if closed:
            self.shutdown_request(request)
            return
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # the wake-up pipe is full (the poller will see it) or closed
            pass

    def _done(self, sock: socket.socket) -> None:
        self.shutdown_request(sock)
        with self._lock:
            self._open -= 1

    def _poll(self) -> None:
        """The selector thread: wait for each connection's first bytes, close the idle ones."""
        while not self._closed:
            now = time.monotonic()
            deadlines = [d for _a, d in self._waiting.values()]
            timeout = max(0.0, min(deadlines) - now) if deadlines else None
            try:
                events = self._selector.select(timeout)
            except OSError:
                return
            for key, _mask in events:
                sock = key.fileobj
                if sock is self._wake_r:
                    try:
                        while self._wake_r.recv(4096):
                            pass
                    except OSError:
                        pass
                    continue
                assert isinstance(sock, socket.socket)
                self._selector.unregister(sock)
                addr, _deadline = self._waiting.pop(sock)
                self._ready.put((sock, addr))
            with self._lock:
                incoming, self._incoming = self._incoming, []
            now = time.monotonic()
            for sock, addr in incoming:
                try:
                    self._selector.register(sock, selectors.EVENT_READ)
                except (OSError, ValueError):
                    self._done(sock)
                    continue
                self._waiting[sock] = (addr, now + IDLE_TIMEOUT_S)
            for sock, (_addr, deadline) in list(self._waiting.items()):
                if deadline <= now:
                    self._close_waiting(sock)
            while self._waiting and self.open_connections > MAX_CONNECTIONS:  # the oldest idle ones go
                self._close_waiting(next(iter(self._waiting)))
                with self._lock:
                    self.refused += 1

    def _close_waiting(self, sock: socket.socket) -> None:
        self._selector.unregister(sock)
        del self._waiting[sock]
        self._done(sock)

    def _work(self) -> None:
        """A worker thread: answer one connection at a time."""
        while True:
            item = self._ready.get()
            if item is None:
                return
            sock, addr = item
            try:
                sock.settimeout(IO_TIMEOUT_S)
                self.finish_request(sock, addr)
            except Exception as exc:  # noqa: BLE001 - a client's failure ends its connection, never the server
                self.handle_error_line(addr, exc)
            finally:
                self._done(sock)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """socketserver's hook prints a traceback: one line instead."""
        self.handle_error_line(client_address, sys.exc_info()[1])

    @staticmethod
    def handle_error_line(client_address: Any, exc: BaseException | None) -> None:
        if isinstance(exc, (TimeoutError, ConnectionError)):  # a client that went quiet or away: nothing to say
            return
        who = client_address[0] if isinstance(client_address, tuple) and client_address else "?"
        what = f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"
        print(f"memdeck metrics: a request from {who} failed ({what})", file=sys.stderr, flush=True)

    def server_close(self) -> None:
        self._closed = True
        super().server_close()
        self._wake()
        for _ in range(WORKERS):
            self._ready.put(None)
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=IO_TIMEOUT_S)
        for sock in list(self._waiting):
            self.shutdown_request(sock)
        self._waiting.clear()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


class _QuietHandler(WSGIRequestHandler):
    timeout = IO_TIMEOUT_S  # StreamRequestHandler applies it to the socket

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


def make_metrics_server(registry: CollectorRegistry, bind: Bind, *, allow_remote: bool = False,
                        allowed_hosts: Iterable[str] = ()) -> WSGIServer:
    """A bound (not yet serving) HTTP server for ``registry`` (call ``serve_forever``).

    Raises:
        BindRefused: as :func:`check_bind`.
        OSError: the address could not be bound (in use, not available).
    """
    from prometheus_client.exposition import make_wsgi_app

    check_bind(bind, allow_remote=allow_remote)
    server_class: type[_Server] = _Server
    if ":" in bind.host:
        class _Server6(_Server):
            address_family = socket.AF_INET6

        server_class = _Server6
    app = guarded(make_wsgi_app(registry), bind=bind, allowed_hosts=allowed_hosts, this_machine=allow_remote)
    return make_server(bind.host, bind.port, app, server_class=server_class, handler_class=_QuietHandler)


def serve_in_thread(server: WSGIServer) -> threading.Thread:
    """Run ``server.serve_forever`` in a daemon thread (tests; stop with ``server.shutdown()``)."""
    t = threading.Thread(target=server.serve_forever, name="memdeck-metrics", daemon=True)
    t.start()
    return t
