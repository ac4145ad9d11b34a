"""Who may reach ``memdeck serve``: the token, the session cookie, the ``Host`` and ``Origin``
checks, and which addresses count as loopback (DESIGN.md "Anything that listens is locked down
by default").

Pure standard library (no aiohttp, no Textual): :mod:`memdeck.tui.serve` applies these checks to
every request and WebSocket; the tests call them directly as well.

The rules, in the order a request meets them:

1. ``Host`` must name an allowed host (:meth:`Gate.host_allowed`): a loopback name on any port,
   the address the server is bound to, or one given with ``--allowed-host``. A page on another
   site whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own name: 403.
2. ``GET /?token=T`` with the right token (compared in constant time) opens a session of its
   own and sets its cookie (HttpOnly, SameSite=Strict, ``Secure`` when the browser reached the
   server over https, ``Max-Age`` :data:`SESSION_TTL_S`), and sends the browser to ``/``, so the
   token leaves the address bar and the history. A token works once (issue 40 #8: it opened
   sessions for the server's whole life, all with one cookie that never expired): the server then
   prints the next URL, and a second use is 401 saying so.
3. Every other request, the WebSocket first of all, needs a live session cookie: 401 without it
   (no credentials), also when the session expired or the server revoked it (every session is
   revoked when the server stops: :meth:`Gate.revoke_all`).
4. A WebSocket (and any request that carries ``Origin``) must come from the page's own origin:
   ``Origin`` ``scheme://host[:port]`` whose ``host[:port]`` is the request's ``Host``. A page on
   another site, or on another port of localhost (same site, so the SameSite cookie would be
   sent), gets 403.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

#: 16 random bytes: the token and the session secret each carry 128 bits.
TOKEN_BYTES = 16

#: How long a session lasts, in seconds (the cookie's ``Max-Age``; the server forgets it then too).
SESSION_TTL_S = 12 * 3600

#: How many used tokens are remembered, to say "used already" rather than "wrong".
USED_TOKENS_KEPT = 256

#: Host names that are loopback by definition (RFC 6761 reserves ``localhost``).
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


def new_secret() -> str:
    """A fresh random value of :data:`TOKEN_BYTES` bytes from :mod:`secrets`, URL-safe base64
    (22 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def same_secret(given: str | None, expected: str) -> bool:
    """Whether ``given`` equals ``expected``, in time that does not depend on where they differ
    (:func:`hmac.compare_digest`). ``None`` or a value that is not ASCII is never equal."""
    if given is None:
        return False
    try:
        return hmac.compare_digest(given.encode("ascii"), expected.encode("ascii"))
    except UnicodeEncodeError:
        return False


def split_host(value: str) -> tuple[str, int | None] | None:
    """``(host, port)`` of a ``Host`` header value or an ``--allowed-host`` (``name``,
    ``name:port``, ``1.2.3.4:80``, ``[::1]:8765``, ``[::1]``), the host lower-cased and IPv6
    without brackets; ``None`` when it is not of that form (empty, a bad port, stray brackets,
    whitespace, a user part)."""
    v = value.strip().lower()
    if not v or any(c.isspace() or c in "@/\\?#" for c in v):
        return None
    port: int | None = None
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return None
        host, rest = v[1:end], v[end + 1:]
        if rest:
            if not rest.startswith(":"):
                return None
            port = _port(rest[1:])
            if port is None:
                return None
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
        return host, port
    if v.count(":") > 1:  # a bare IPv6 address (no port can be told apart)
        try:
            return str(ipaddress.IPv6Address(v)), None
        except ValueError:
            return None
    host, sep, p = v.partition(":")
    if sep:
        port = _port(p)
        if port is None:
            return None
    if not host:
        return None
    return host, port


def _port(text: str) -> int | None:
    if not text.isdigit() or len(text) > 5:
        return None
    n = int(text)
    return n if 0 < n < 65536 else None


def is_loopback_address(host: str) -> bool:
    """Whether ``host`` (an address or a name, without port or brackets) means this machine
    only: an IPv4 127/8 or IPv6 ``::1`` address (also IPv4-mapped), or a name that every
    address of resolves to loopback (``localhost``). A name that does not resolve is not."""
    h = host.strip().strip("[]").lower()
    try:
        ip = ipaddress.ip_address(h)
    except ValueError:
        ip = None
    if ip is not None:
        mapped = getattr(ip, "ipv4_mapped", None)
        return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))
    if not h:
        return False
    try:
        infos = socket.getaddrinfo(h, None)
    except (OSError, UnicodeError):
        return False
    addrs = {info[4][0] for info in infos}
    return bool(addrs) and all(is_loopback_address(a) for a in addrs if isinstance(a, str))


def bind_refusal(host: str, allow_remote: bool) -> str | None:
    """Why ``memdeck serve`` will not listen on ``host``, or ``None`` when it may.

    Anything but loopback is refused unless ``allow_remote`` (``--allow-remote``): an address
    every interface answers on (``0.0.0.0``, ``::``, empty), a LAN or public address, a name
    that resolves to one of those or does not resolve at all.
    """
    if allow_remote or is_loopback_address(host):
        return None
    shown = host if host.strip() else "(every interface)"
    return (f"refusing to listen on {shown}: it is not a loopback address, so other machines could reach "
            "the dashboard. Keep the default 127.0.0.1 and reach it through an SSH tunnel, Tailscale Serve "
            "or Cloudflare Access (see the README), or pass --allow-remote if you really mean it")


def _is_loopback_name(host: str) -> bool:
    """``host`` is loopback by its text alone (no DNS look-up on the request path)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def _digest(value: str) -> bytes:
    """The key a secret is stored under: SHA-256 of it (a dict look-up by it tells nothing about
    the secret; the secret itself is never kept)."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


@dataclass
class Gate:
    """The credentials and the allow list of one ``memdeck serve`` run.

    Attributes:
        token: the secret of the URL printed now (``?token=``); good for one exchange
            (:meth:`redeem`), after which a new one takes its place; never logged.
        cookie_name: ``memdeck_session_<port>`` (browsers scope cookies by host, not port: two
            servers on one machine must not overwrite each other's cookie).
        allowed_hosts: extra ``Host`` values (``name`` = any port, ``name:port`` = that port),
            besides loopback names on any port.
        session_ttl: seconds a session lasts (:data:`SESSION_TTL_S`).
        clock: the clock sessions expire by (``time.monotonic``; the tests pass their own).
    """

    port: int
    token: str = field(default_factory=new_secret)
    allowed_hosts: tuple[str, ...] = ()
    session_ttl: float = SESSION_TTL_S
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._allowed: list[tuple[str, int | None]] = []
        for h in self.allowed_hosts:
            parsed = split_host(h)
            if parsed is None:
                raise ValueError(f"not a host name or host:port: {h!r}")
            self._allowed.append(parsed)
        self._sessions: dict[bytes, float] = {}  # digest of a session cookie -> when it expires (clock)
        self._used: dict[bytes, None] = {}  # digests of the tokens already exchanged, oldest first

    @property
    def cookie_name(self) -> str:
        return f"memdeck_session_{self.port}"

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request's ``Host`` names this server: a loopback name or address on any port
        (an SSH tunnel may use another local port), else an ``allowed_hosts`` entry. A missing
        or malformed ``Host`` is refused."""
        if not host_header:
            return False
        parsed = split_host(host_header)
        if parsed is None:
            return False
        host, port = parsed
        if _is_loopback_name(host):
            return True
        return any(host == h and (p is None or p == port) for h, p in self._allowed)

    def origin_allowed(self, origin: str | None, host_header: str | None) -> bool:
        """Whether ``origin`` (the ``Origin`` header) is the page's own origin: ``http`` or
        ``https``, no path, and ``host[:port]`` equal to the request's ``Host`` (which
        :meth:`host_allowed` checked). ``None``, ``null`` and any other origin are refused."""
        if not origin or not host_header or origin == "null":
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.path not in ("", "/") or parts.query or parts.fragment:
            return False
        if parts.username is not None or parts.password is not None:
            return False
        return split_host(parts.netloc) == split_host(host_header) and split_host(host_header) is not None

    def token_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the current token (constant-time); it says nothing of its use."""
        return same_secret(given, self.token)

    def token_used(self, given: str | None) -> bool:
        """Whether ``given`` is a token that was exchanged already (one of the last
        :data:`USED_TOKENS_KEPT`)."""
        return given is not None and _digest(given) in self._used

    def redeem(self, given: str | None) -> str | None:
        """Exchange the URL's token for a new session: its cookie value (128 random bits, never
        the token), good for ``session_ttl`` seconds; a new token takes the old one's place, so
        the URL works once. ``None`` (nothing changes) when ``given`` is not the current token."""
        if not self.token_ok(given):
            return None
        assert given is not None
        self._used[_digest(given)] = None
        while len(self._used) > USED_TOKENS_KEPT:
            del self._used[next(iter(self._used))]
        self.token = new_secret()
        session = new_secret()
        now = self.clock()
        self._sessions = {k: t for k, t in self._sessions.items() if t > now}  # the expired ones go
        self._sessions[_digest(session)] = now + self.session_ttl
        return session

    def cookie_ok(self, cookies: dict[str, str] | Iterable[tuple[str, str]]) -> bool:
        """Whether the request's cookies hold a live session of this server (looked up by its
        SHA-256: the time taken tells nothing of the secret)."""
        value = dict(cookies).get(self.cookie_name)
        if not value:
            return False
        expires = self._sessions.get(_digest(value))
        return expires is not None and self.clock() < expires

    @property
    def sessions(self) -> int:
        """How many sessions are live now."""
        now = self.clock()
        return sum(1 for t in self._sessions.values() if t > now)

    def revoke_all(self) -> int:
        """Forget every session and retire the token (the server stops); returns how many
        sessions were live. A cookie the browser still holds opens nothing afterwards."""
        n = self.sessions
        self._sessions.clear()
        self._used[_digest(self.token)] = None
        self.token = new_secret()
        return n

    def set_cookie_header(self, session: str, *, secure: bool) -> str:
        """The ``Set-Cookie`` value of the session :meth:`redeem` opened: ``HttpOnly`` (no script
        reads it), ``SameSite=Strict`` (no other site's page sends it), ``Path=/``,
        ``Max-Age`` = ``session_ttl`` (the server forgets it then too), ``Secure`` when the
        browser reached us over https."""
        parts = [f"{self.cookie_name}={session}", "Path=/", f"Max-Age={int(self.session_ttl)}", "HttpOnly",
                 "SameSite=Strict"]
        if secure:
            parts.append("Secure")
        return "; ".join(parts)


def url_with_token(base: str, token: str) -> str:
    """The URL ``memdeck serve`` prints: ``base`` (``http://127.0.0.1:8765``) + ``/?token=``."""
    return f"{base.rstrip('/')}/?token={token}"


def display_host(host: str) -> str:
    """``host`` as it goes in a URL: IPv6 in brackets."""
    h = host.strip("[]")
    return f"[{h}]" if ":" in h else h
