"""The ``memdeck`` command: the TUI by default, headless subcommands otherwise.

Exit codes (:data:`.common.EXIT_CODES`, also in ``memdeck --help``): 0 success, 1 refused or
failed (reason on stderr), 2 usage error, 3 ``scan`` found flagged items, 4 no Hermes home there.
Each command group lives in its own module with ``register(subparsers)``; a handler has the
signature ``handler(args, ctx: CliContext) -> int``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import __version__
from .. import history as _history
from ..errors import MemdeckError, Refused
from ..text import visible
from . import anchor_cmds
from . import history_cmds
from . import memory_cmds
from . import plugin_cmds
from . import session_cmds
from ..home import HOME_MARKERS, HermesHome, resolve_home
from .common import (EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NO_HOME, EXIT_USAGE, CliContext, NoHome,
                     UsageError, exit_codes_text, print_json)

COMMAND_MODULES = (memory_cmds, session_cmds, anchor_cmds, plugin_cmds, history_cmds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memdeck",
        description="A live cockpit for Hermes Agent memory, sessions and MemLock anchors. "
        "Without a command, opens the dashboard.",
        epilog=exit_codes_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"memdeck {__version__}")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--home", metavar="PATH", help="Hermes home to use (default: $HERMES_HOME, active profile, ~/.hermes)")
    where.add_argument("--profile", metavar="NAME", help="use <root>/profiles/NAME")
    where.add_argument("--demo", action="store_true", help="open a generated demo home (dashboard only)")
    parser.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in COMMAND_MODULES:
        mod.register(sub)
    return parser


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """The parser :func:`main` uses, built once per process (37 sub-parsers: about 30 ms, which
    callers running many commands in one process, the suite's hostile homes among them, paid
    each time). ``parse_args`` leaves a parser as it was."""
    return build_parser()


def main(argv: Sequence[str] | None = None, *,
         dashboard: Callable[[argparse.Namespace], int] | None = None) -> int:
    """Run one ``memdeck`` command; returns the process exit code.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
        dashboard: what runs when no command is given. The ``memdeck`` console script
            (:func:`memdeck.tui.launch.main`) passes the dashboard; core never imports the TUI,
            so without it a missing command is a usage error.
    """
    parser = _parser()
    raw = list(sys.argv[1:] if argv is None else argv)
    bad = _non_utf8(raw)
    if bad is not None:
        parser.print_usage(sys.stderr)
        print(f"memdeck: error: {bad}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(raw)
    try:
        if args.command is None:
            if dashboard is None:
                raise UsageError("no command given (the dashboard opens with `memdeck` or `python -m memdeck.tui`)")
            return dashboard(args)
        if args.demo:
            raise UsageError("--demo opens the dashboard; it does not take a command")
        with visible_output():
            ctx = CliContext.from_args(args)
            require_home(ctx.home if not getattr(args, "plugin_home", None) else resolve_home(args.plugin_home))
            _observe(ctx)
            return int(args.handler(args, ctx) or 0)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"memdeck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NoHome as exc:
        if getattr(args, "json", False):
            print_json({"success": False, "code": "no_home", "error": str(exc)})
        print(f"memdeck: error: {exc}", file=sys.stderr)
        return EXIT_NO_HOME
    except Refused as exc:
        print(f"memdeck: refused: {exc.reason}", file=sys.stderr)
        return EXIT_NO_HOME if exc.code == "not_a_home" else EXIT_FAILED
    except MemdeckError as exc:
        print(f"memdeck: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except sqlite3.Error as exc:  # a damaged or vanished database mid-command: a reason, never a traceback
        print(f"memdeck: error: a database could not be read or written ({type(exc).__name__}: {exc})",
              file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:  # a full disk, a vanished directory, no permission: a reason, never a traceback
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"memdeck: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `memdeck status | head`: the reader went away; exit quietly like other Unix tools.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_BROKEN_PIPE


class _Visible:
    """A text stream that shows every hidden character written to it as its marker
    (:func:`memdeck.core.text.visible`): the one escape path of the CLI's output, so an entry,
    a session id, a pending write's origin or a file name can never drive the terminal."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, s: str) -> int:
        self._stream.write(visible(s, single_line=False))
        return len(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def visible_output() -> Iterator[None]:
    """Within the block, ``sys.stdout`` and ``sys.stderr`` escape hidden characters (JSON output
    is escaped already by :func:`memdeck.core.text.json_safe` and passes unchanged)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Visible(out), _Visible(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def require_home(home: HermesHome) -> None:
    """Raise :class:`NoHome` when ``home`` does not exist or has none of Hermes' markers
    (``config.yaml``, ``memories/``, ``state.db``): every command then says so and exits 4,
    instead of reading nothing and printing zeros (issue 22 #11) or writing into a typo."""
    try:
        is_dir = home.path.is_dir()
    except OSError:
        is_dir = False
    if not is_dir:
        how = "does not exist" if not home.path.exists() else "is not a directory"
        raise NoHome(f"no Hermes home at {home.path}: it {how}; nothing was read or written (point --home or "
                     "HERMES_HOME at a home; Hermes creates ~/.hermes on its first run)")
    if not any((home.path / m).exists() for m in HOME_MARKERS):
        raise NoHome(f"no Hermes home at {home.path}: it has no config.yaml, memories/ or state.db; nothing was read "
                     f"or written (to start a new home on purpose, create {home.path / 'memories'} first)")


def _observe(ctx: CliContext) -> None:
    """Record what changed in the watched files since memdeck last looked (``core/history/observation.py``):
    one ``stat`` per file when nothing changed. A failure only warns; the command still runs."""
    if not ctx.home.path.is_dir():
        return
    try:
        _history.observe(ctx.home)
    except (MemdeckError, sqlite3.Error, OSError) as exc:
        print(f"memdeck: warning: change history not updated: {exc}", file=sys.stderr)


def _non_utf8(argv: Sequence[str]) -> str | None:
    """A message naming the first argument that is not valid UTF-8, or ``None``.

    Python decodes undecodable argv bytes to lone surrogates (``surrogateescape``, PEP 383);
    written to a file they would raise deep inside a command (issue 13 #11), so they are a
    usage error up front. The message shows the argument with the bad bytes as ``\\xNN``.
    """
    for i, a in enumerate(argv, 1):
        try:
            a.encode("utf-8")
        except UnicodeEncodeError:
            shown = a.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            first = next(ord(c) - 0xDC00 for c in a if 0xDC80 <= ord(c) <= 0xDCFF) if any(
                0xDC80 <= ord(c) <= 0xDCFF for c in a) else None
            byte = f" (byte 0x{first:02x})" if first is not None else ""
            return (f"argument {i} is not valid UTF-8{byte}: {shown.encode('ascii', 'backslashreplace').decode()}; "
                    "memdeck takes UTF-8 text (nothing was done)")
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
