"""``memdeck fleet`` and ``memdeck metrics``: every home at once (issue 27).

``fleet`` opens the fleet screen (the TUI's, passed in by the ``memdeck`` console script as the
dashboard is) on a terminal; ``--json`` prints one object per home (docs/FLEET.md), and without a
terminal or the TUI it prints the same rows as a text table. ``metrics`` prints the fleet's
figures in the Prometheus exposition format, writes them for node_exporter's textfile collector
(``--textfile DIR``) or serves them on ``/metrics`` (``--serve [HOST:PORT]``, loopback unless
``--allow-remote``). docs/METRICS.md names every metric.

The fleet: every profile under the Hermes root of the resolved home, then the homes of the
settings file's ``fleet.homes`` (local paths or ``ssh://host/path``); with ``--home H``, H and the
profiles under it, nothing else.

Exit codes: 0 success, 1 a textfile or the endpoint could not be written / bound, 2 usage (a
non-loopback ``--serve`` without ``--allow-remote``), 4 no Hermes home where the fleet starts, as
every command (issue 39 #5: they printed a row saying so and exited 0): the home ``--home``,
``--profile`` or ``HERMES_HOME`` names, or, with none of them, the resolved home when the settings
file lists no ``fleet.homes`` (with some, a machine without a local home still watches them).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..fleet.homes import FleetSettings, fleet_homes
from .common import CliContext, UsageError, print_json


def load_fleet(args: argparse.Namespace, ctx: CliContext) -> Any:
    """The :class:`memdeck.core.fleet.rows.Fleet` the arguments select (module docstring).

    Raises:
        NoHome: there is no Hermes home where the fleet starts (module docstring: exit 4).
    """
    from ..fleet.last_seen import LastSeenStore
    from ..fleet.rows import Fleet

    loader: Callable[[], FleetSettings] | None = getattr(args, "load_fleet_settings", None)
    settings = loader() if loader is not None else FleetSettings()
    for w in settings.warnings:
        print(f"memdeck: warning: {w}", file=sys.stderr)
    named = bool(getattr(args, "home", None) or getattr(args, "profile", None)
                 or os.environ.get("HERMES_HOME", "").strip())
    if named or not settings.homes:  # exit 4 as every command (module docstring)
        from . import require_home

        require_home(ctx.home)
    explicit = Path(args.home) if getattr(args, "home", None) else None
    homes = fleet_homes(ctx.home, settings, explicit=explicit)
    return Fleet(homes, settings, last_seen=LastSeenStore() if any(h.remote for h in homes) else None)


def _fleet(args: argparse.Namespace, ctx: CliContext) -> int:
    screen = getattr(args, "fleet_screen", None)
    if not args.json and screen is not None and sys.stdout.isatty() and sys.stdin.isatty():
        return int(screen(args, ctx) or 0)
    fleet = load_fleet(args, ctx)
    try:
        rows = fleet.read(via_status=args.json, remote=True)
    finally:
        fleet.close()
    if args.json:
        print_json([r.to_json() for r in rows])
        return 0
    from ..fleet.columns import COLUMNS, row_cells, row_detail

    now = time.time()
    table = [[h for _k, h in COLUMNS]] + [[row_cells(r, now)[k] for k, _h in COLUMNS] for r in rows]
    widths = [min(48, max(len(line[i]) for line in table)) for i in range(len(COLUMNS))]
    for line in table:
        print("  ".join(cell[:w].ljust(w) for cell, w in zip(line, widths)).rstrip())
    print()
    for r in rows:
        print(row_detail(r, now))
    return 0


def _metrics(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..fleet.exposition import exposition

    if args.serve is not None:
        return _serve_metrics(args, ctx)
    if args.allow_remote or args.allowed_host:
        raise UsageError("--allow-remote and --allowed-host go with --serve")
    fleet = load_fleet(args, ctx)
    try:
        payload = exposition(fleet, read_remote=True)
    finally:
        fleet.close()
    if args.textfile is not None:
        from ..fleet.textfile import write_textfile

        try:
            path = write_textfile(Path(args.textfile), payload)
        except OSError as exc:
            print(f"memdeck: error: the textfile was not written: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {path} ({len(payload):,} bytes)")
        return 0
    sys.stdout.write(payload.decode("utf-8"))
    return 0


def _serve_metrics(args: argparse.Namespace, ctx: CliContext) -> int:
    from ..fleet.endpoint import BindRefused, make_metrics_server, parse_bind
    from ..fleet.exposition import registry_for

    try:
        bind = parse_bind(args.serve)
    except BindRefused as exc:
        raise UsageError(str(exc)) from None
    fleet = load_fleet(args, ctx)
    stop = threading.Event()
    try:
        try:
            server = make_metrics_server(registry_for(fleet, read_remote=False), bind, allow_remote=args.allow_remote,
                                         allowed_hosts=args.allowed_host or ())
        except BindRefused as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            print(f"memdeck: error: cannot listen on {bind.host}:{bind.port}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        if any(h.remote for h in fleet.homes):
            # remote homes are read here, every fleet.remote_interval: a slow host never delays a scrape
            def remote_loop() -> None:
                while not stop.is_set():
                    fleet.refresh_remote()
                    stop.wait(fleet.settings.remote_interval)

            threading.Thread(target=remote_loop, name="memdeck-fleet-remote", daemon=True).start()
        host, port = server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        print(f"memdeck metrics: serving http://{shown}:{port}/metrics ({len(fleet.homes)} home(s); Ctrl+C stops)",
              flush=True)

        def on_term(_signum: int, _frame: Any) -> None:
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGTERM, on_term) if threading.current_thread() is threading.main_thread() else None
        try:
            server.serve_forever(poll_interval=3600)
        except KeyboardInterrupt:
            pass
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            server.server_close()
        return 0
    finally:
        stop.set()
        fleet.close()


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser(
        "fleet", help="every home at once: one row per profile and per home of the settings' fleet.homes "
        "(local or ssh://), sorted by what needs attention",
        description="One row per home: every profile under the Hermes root, plus the settings file's fleet.homes "
        "(local paths or ssh://[user@]host[:port]/path, read with `ssh host memdeck status --json`, never a write). "
        "With --home H: H and the profiles under it. On a terminal it opens the fleet screen (enter opens a home's "
        "dashboard); otherwise it prints a table. Exits 4, as every command, when the home --home, --profile or "
        "HERMES_HOME names is not a Hermes home (or, with none of them and no fleet.homes, ~/.hermes).")
    p.add_argument("--json", action="store_true",
                   help="one object per home, with status --json's names for the same figures (docs/FLEET.md)")
    p.set_defaults(handler=_fleet)
    m = sub.add_parser(
        "metrics", help="the fleet's figures for Prometheus: print them, --textfile DIR (node_exporter) or "
        "--serve [HOST:PORT] (/metrics, loopback by default)",
        description="The fleet's figures (memory usage and limits, entries, pending writes, integrity, drifted "
        "anchors, audits below the floor, compactions, changes by actor) in the Prometheus text exposition "
        "format, labelled by home and profile (docs/METRICS.md). Without an option, printed once. Exits 4, as "
        "fleet does, when there is no Hermes home where the fleet starts.")
    how = m.add_mutually_exclusive_group()
    how.add_argument("--textfile", metavar="DIR",
                     help="write DIR/memdeck.prom atomically for node_exporter's textfile collector, once (run it from cron)")
    how.add_argument("--serve", nargs="?", const="127.0.0.1:9810", default=None, metavar="HOST:PORT",
                     help="serve /metrics until stopped (default 127.0.0.1:9810; port 0 picks a free one; each "
                     "scrape reads only what changed)")
    m.add_argument("--allow-remote", action="store_true",
                   help="let --serve listen on an address that is not loopback (prefer an SSH tunnel)")
    m.add_argument("--allowed-host", action="append", default=[], metavar="HOST",
                   help="another Host name scrapers may use with --serve (repeatable; loopback names always work)")
    m.set_defaults(handler=_metrics)
