"""``memdeck serve``'s arguments: the dashboard in a browser. The server itself is the TUI's
(:mod:`memdeck.tui.serve`): core never imports the TUI, so the ``memdeck`` console script passes
it to :func:`memdeck.core.cli.main` (``serve=``) as it passes the dashboard. Run without it
(``python -m memdeck.core.cli serve``), the command is a usage error that says so."""

from __future__ import annotations

import argparse

from .common import CliContext, UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def _needs_the_tui(args: argparse.Namespace, ctx: CliContext | None) -> int:
    raise UsageError("serve runs the dashboard, which core does not include: run it with the `memdeck` command "
                     "(or `python -m memdeck.tui serve`)")


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser(
        "serve",
        help="serve the dashboard in a browser: loopback only by default, one URL with a secret token",
        description="Serve the dashboard to a web browser. Each browser tab runs its own dashboard process "
        "on the same locked core. The server listens on 127.0.0.1 only unless --allow-remote; it prints a "
        "URL carrying a random token, which works once: the browser exchanges it for a session of its own (an "
        "HttpOnly, SameSite=Strict cookie that expires after 12 hours), and the server prints the next URL; "
        "every request needs a live session cookie (401 without), and Host and Origin are checked. Stop it with "
        "Ctrl+C (every session is revoked).",
    )
    # also after the command (`memdeck serve --home H`); SUPPRESS keeps `memdeck --home H serve`
    where = p.add_mutually_exclusive_group()
    where.add_argument("--home", metavar="PATH", default=argparse.SUPPRESS, help="Hermes home to serve")
    where.add_argument("--profile", metavar="NAME", default=argparse.SUPPRESS, help="serve <root>/profiles/NAME")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help=f"address to listen on (default {DEFAULT_HOST}; anything but loopback needs --allow-remote)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--read-only", action="store_true", default=argparse.SUPPRESS,
                   help="no key writes: every write action is refused, and the footer says so")
    p.add_argument("--allowed-host", action="append", default=[], metavar="HOST[:PORT]",
                   help="another Host name the browser may use (a reverse proxy, Tailscale Serve); repeatable. "
                   "Loopback names are always allowed")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow --host to be a non-loopback address (prefer an SSH tunnel or Tailscale Serve)")
    p.add_argument("--check", action="store_true",
                   help="check the options and bind the port, print the URL, and exit without serving")
    p.set_defaults(handler=_needs_the_tui)
