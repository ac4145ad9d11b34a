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
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client.registry import CollectorRegistry

DEFAULT_BIND = "127.0.0.1:9810"
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


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
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
