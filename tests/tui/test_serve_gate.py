"""The checks of ``memdeck serve`` (tui/serve_gate.py), as functions: the token, the cookie,
Host, Origin, loopback. The server applies them to real requests in test_serve_http.py."""

from __future__ import annotations

import base64
import hmac

import pytest

from memdeck.tui import serve_gate
from memdeck.tui.serve_gate import Gate, bind_refusal, is_loopback_address, new_secret, same_secret, split_host


def test_secrets_carry_128_random_bits() -> None:
    a, b = new_secret(), new_secret()
    assert a != b and len(base64.urlsafe_b64decode(a + "==")) == 16
    gate = Gate(port=8765)
    token = gate.token
    session = gate.redeem(token)
    assert session is not None and session != token  # the cookie jar never holds the token
    assert len(base64.urlsafe_b64decode(session + "==")) == 16


def test_secrets_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = hmac.compare_digest

    def spy(x: bytes, y: bytes) -> bool:
        calls.append((x, y))
        return real(x, y)

    monkeypatch.setattr(serve_gate.hmac, "compare_digest", spy)
    gate = Gate(port=1)
    assert gate.token_ok(gate.token) and not gate.token_ok(gate.token[:-1] + "x")
    assert len(calls) == 2
    token = gate.token
    session = gate.redeem(token)  # compared in constant time too
    assert session is not None and len(calls) == 3
    # a session cookie is looked up by its SHA-256, never compared byte by byte with a secret
    assert gate.cookie_ok({gate.cookie_name: session}) and not gate.cookie_ok({gate.cookie_name: token})
    assert len(calls) == 3
    assert not same_secret(None, "x") and not same_secret("é", "é") and not gate.cookie_ok({})


def test_a_token_works_once_and_each_session_expires_and_is_revoked() -> None:
    """issue 40 #8: one token, reusable for the server's life, one cookie for every holder,
    never expiring."""
    now = [1000.0]
    gate = Gate(port=1, session_ttl=60, clock=lambda: now[0])
    token = gate.token
    a = gate.redeem(token)
    assert a is not None and gate.redeem(token) is None  # once
    assert gate.token_used(token) and not gate.token_used(gate.token) and gate.token != token
    b = gate.redeem(gate.token)
    assert b is not None and b != a and gate.sessions == 2
    now[0] += 59
    assert gate.cookie_ok({gate.cookie_name: a}) and gate.cookie_ok({gate.cookie_name: b})
    now[0] += 2  # past the expiry
    assert not gate.cookie_ok({gate.cookie_name: a}) and gate.sessions == 0
    c = gate.redeem(gate.token)
    live_token = gate.token
    assert gate.revoke_all() == 1
    assert not gate.cookie_ok({gate.cookie_name: c}) and gate.redeem(live_token) is None  # the server stopped


@pytest.mark.parametrize("value, parsed", [
    ("localhost:8765", ("localhost", 8765)), ("LOCALHOST", ("localhost", None)), ("127.0.0.1", ("127.0.0.1", None)),
    ("[::1]:8765", ("::1", 8765)), ("[::1]", ("::1", None)), ("::1", ("::1", None)),
    ("deck.tailnet.ts.net", ("deck.tailnet.ts.net", None)),
    ("", None), ("a b", None), ("host:0", None), ("host:70000", None), ("host:x", None), ("user@host", None),
    ("[::1", None), ("[nothost]:1", None), ("host/path", None), (":8765", None), ("host:", None),
])
def test_split_host(value: str, parsed: tuple | None) -> None:
    assert split_host(value) == parsed


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("::ffff:127.0.0.1", True),
    ("localhost", True), ("0.0.0.0", False), ("::", False), ("", False), ("10.0.0.1", False),
    ("192.0.2.1", False), ("memdeck-test.invalid", False),
])
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_address(host) is loopback
    assert (bind_refusal(host, allow_remote=False) is None) is loopback
    assert bind_refusal(host, allow_remote=True) is None


def test_hosts_loopback_names_on_any_port_and_the_allow_list() -> None:
    gate = Gate(port=8765, allowed_hosts=("deck.tailnet.ts.net", "proxy.example:8443"))
    for ok in ("127.0.0.1:8765", "localhost:9000", "[::1]:1", "LOCALHOST", "deck.tailnet.ts.net",
               "deck.tailnet.ts.net:443", "proxy.example:8443"):
        assert gate.host_allowed(ok), ok
    for bad in (None, "", "evil.example", "evil.example:8765", "127.0.0.1.evil.example:8765", "proxy.example",
                "proxy.example:8444", "localhost.evil.example", "0.0.0.0:8765", "deck.tailnet.ts.net.evil"):
        assert not gate.host_allowed(bad), bad
    with pytest.raises(ValueError):
        Gate(port=1, allowed_hosts=("bad host",))


def test_origin_must_be_the_pages_own() -> None:
    gate = Gate(port=8765)
    assert gate.origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765")
    assert gate.origin_allowed("https://deck.tailnet.ts.net", "deck.tailnet.ts.net")
    assert gate.origin_allowed("http://LOCALHOST:8765", "localhost:8765")
    for origin, host in (
        (None, "127.0.0.1:8765"), ("null", "127.0.0.1:8765"), ("http://evil.example", "127.0.0.1:8765"),
        ("http://localhost:3000", "localhost:8765"),  # same site, another port: not the page
        ("http://127.0.0.1:8765", "localhost:8765"), ("ftp://127.0.0.1:8765", "127.0.0.1:8765"),
        ("http://u:p@127.0.0.1:8765", "127.0.0.1:8765"), ("http://127.0.0.1:8765/x", "127.0.0.1:8765"),
        ("http://127.0.0.1:8765", None), ("http://127.0.0.1:8765", "bad host"),
    ):
        assert not gate.origin_allowed(origin, host), (origin, host)


def test_the_cookie_header() -> None:
    gate = Gate(port=8765, session_ttl=3600)
    session = gate.redeem(gate.token)
    assert session is not None
    plain = gate.set_cookie_header(session, secure=False).split("; ")
    assert plain[0] == f"memdeck_session_8765={session}"
    assert set(plain[1:]) == {"Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=3600"}
    assert "Secure" in gate.set_cookie_header(session, secure=True).split("; ")
