"""``metrics --serve`` spends a bounded number of threads and connections (issue 40 #11: one
thread per connection, 3,000 idle connections held 3,000 threads), and a malformed or abandoned
request costs at most one line on stderr, never a traceback."""

from __future__ import annotations

import http.client
import socket
import threading

from prometheus_client import CollectorRegistry, Gauge

from memdeck.core.fleet import endpoint
from memdeck.core.fleet.endpoint import Bind, make_metrics_server, serve_in_thread

IDLE = 300


def _registry() -> CollectorRegistry:
    reg = CollectorRegistry()
    Gauge("memdeck_probe", "a probe", registry=reg).set(7)
    return reg


def _scrape(port: int) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        c.request("GET", "/metrics")
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def test_idle_connections_hold_no_thread_and_a_scrape_still_answers() -> None:
    server = make_metrics_server(_registry(), Bind("127.0.0.1", 0))
    serve_in_thread(server)
    port = server.server_address[1]
    before = threading.active_count()
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=60))
        # the server accepts in order: once this scrape is answered, every idle one was accepted
        status, body = _scrape(port)
        assert status == 200 and b"memdeck_probe 7.0" in body
        assert threading.active_count() <= before + 1, threading.active_count() - before  # no thread per connection
        assert server.open_connections <= endpoint.MAX_CONNECTIONS + 1  # the oldest idle ones were closed
        assert server.refused >= IDLE - endpoint.MAX_CONNECTIONS
    finally:
        for s in idle:
            s.close()
        server.shutdown()
        server.server_close()


def test_a_malformed_request_is_answered_and_logs_no_traceback(capfd) -> None:
    server = make_metrics_server(_registry(), Bind("127.0.0.1", 0))
    serve_in_thread(server)
    port = server.server_address[1]
    try:
        for raw in (b"GARBAGE \x01\x02 HTTP/9\r\n\r\n", b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X" * 70000,
                    b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                s.sendall(raw)
                s.shutdown(socket.SHUT_WR)
                got = b""
                while chunk := s.recv(65536):
                    got += chunk
        assert _scrape(port)[0] == 200  # still serving
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) <= 3  # one line at most per request
