"""The ``memdeck`` command: the TUI by default, headless subcommands otherwise.

Exit codes (:data:`.common.EXIT_CODES`, also in ``memdeck --help``): 0 success, 1 refused or
failed (reason on stderr), 2 usage error, 3 ``scan`` found flagged items, 4 no Hermes home there.
Each command group lives in its own module with ``register(subparsers)``; a handler has the
signature ``handler(args, ctx: CliContext) -> int``.

A run imports only the module of its own command (:data:`COMMANDS` names it, with the help line
``memdeck --help`` lists); the dashboard path and ``--help`` import none (issue 23: every
command imported all of them, 0.21 s before doing anything).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import MemdeckError, Refused
from ..home import HOME_MARKERS, HermesHome, UnknownUserHome, resolve_home
from ..text import visible
from .common import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NO_HOME,
    EXIT_USAGE,
    CliContext,
    NoHome,
    UsageError,
    exit_codes_text,
    print_json,
)

if TYPE_CHECKING:  # imported by command_module() when their command runs (named here for the import graph)
    from . import (  # noqa: F401
        anchor_cmds,
        completion_cmds,
        constraints_cmds,
        context_cmds,
        fleet_cmds,
        history_cmds,
        hygiene_cmds,
        memory_cmds,
        plugin_cmds,
        serve_cmds,
        session_cmds,
    )

#: The modules that register commands, in ``--help`` order (names under ``memdeck.core.cli``).
COMMAND_MODULE_NAMES = ("memory_cmds", "hygiene_cmds", "session_cmds", "context_cmds", "constraints_cmds",
                        "anchor_cmds", "plugin_cmds", "history_cmds", "serve_cmds", "completion_cmds", "fleet_cmds")

#: Every command: (the module that registers it, its ``--help`` line), in ``--help`` order.
#: tests/core/test_cli_lazy.py checks it against what the modules register.
COMMANDS: dict[str, tuple[str, str]] = {
    "status": ("memory_cmds", "memory usage, entries, pending writes and archive count"),
    "memory": ("memory_cmds", "change MEMORY.md / USER.md entries (locked, atomic, journaled)"),
    "archive": ("memory_cmds", "move an entry into memdeck's archive (restore puts it back)"),
    "restore": ("memory_cmds", "put an archived entry back (budget and threat checks apply)"),
    "undo": ("memory_cmds", "undo the last change recorded in the journal (if the file still holds it)"),
    "pending": ("memory_cmds", "review Hermes' staged memory writes (write approval); without an ACTION: list them"),
    "scan": ("memory_cmds", "threat-scan every entry on disk and every pending write; show where the Hermes "
                            "that loads the home would judge differently (exit 3 when anything is flagged, 0 when "
                            "clean)"),
    "journal": ("memory_cmds", "list recent changes made through memdeck"),
    "hygiene": ("hygiene_cmds", "duplicates, contradictions, stale and wasteful memory entries with their evidence; "
                                "`hygiene apply ID` applies one proposal (journaled, undoable)"),
    "sessions": ("session_cmds", "list state.db sessions (newest first; * marks the live one)"),
    "recall": ("session_cmds", "preview what Hermes' session_search would recall for QUERY"),
    "context": ("context_cmds", "what the running session sees: its frozen memory against the files, its prompt by "
                                "section, the next turn, the next compaction"),
    "constraints": ("constraints_cmds", "what each compaction did to every rule the user gave: kept, weakened, lost, "
                                        "promoted, orphan, with the evidence"),
    "anchors": ("anchor_cmds", "list a session's anchors with their lifecycle state"),
    "pin": ("anchor_cmds", "pin a standing instruction (a MemLock anchor)"),
    "unpin": ("anchor_cmds", "remove a pinned anchor"),
    "anchor": ("anchor_cmds", "edit, archive or restore an anchor"),
    "audit": ("anchor_cmds", "MemLock's drift audit of a session: score, verdicts, history, reminder block"),
    "preview": ("anchor_cmds", "the system-prompt memory block and the reminder block MemLock would inject next"),
    "plugin": ("plugin_cmds", "install/uninstall memdeck's Hermes plugin (MemLock's guard on memdeck's core)"),
    "history": ("history_cmds", "every recorded change to memory and anchors, by any writer, newest first"),
    "revert": ("history_cmds", "reverse one change of the history (locked, checked, journaled)"),
    "watch": ("history_cmds", "headless: print (or --exec) one JSON line per change, pending write, 90%% usage "
                              "crossing, low integrity score and running session that no longer sees the files"),
    "serve": ("serve_cmds", "serve the dashboard in a browser: loopback only by default, one URL with a secret token"),
    "completion": ("completion_cmds", "print a shell completion script (bash, zsh, tcsh)"),
    "fleet": ("fleet_cmds", "every home at once: one row per profile and per home of the settings' fleet.homes "
                            "(local or ssh://), sorted by what needs attention"),
    "metrics": ("fleet_cmds", "the fleet's figures for Prometheus: print them, --textfile DIR (node_exporter) or "
                              "--serve [HOST:PORT] (/metrics, loopback by default)"),
}

#: Commands that open the dashboard (``--demo`` may go with them).
DASHBOARD_COMMANDS = frozenset({"serve"})

#: Commands that check the home themselves, once the settings file is read: the fleet reads every
#: profile and every home of the settings' ``fleet.homes``, and exits 4 as every command when the
#: home it starts from is not a Hermes home (``fleet_cmds.load_fleet``; a machine with no local home
#: still watches the settings' remote homes).
ANY_HOME_COMMANDS = frozenset({"fleet", "metrics"})

#: Global options that take a value (``--home PATH``): the word after them is not the command.
_VALUE_OPTIONS = ("--home", "--profile", "--seed", "--config")


def command_module(name: str) -> ModuleType:
    """The module (``memdeck.core.cli.<name>``) registering commands, imported now."""
    return importlib.import_module(f"{__name__}.{name}")


def __getattr__(name: str) -> Any:
    if name == "COMMAND_MODULES":  # every command module, imported (the full parser, tests)
        return tuple(command_module(m) for m in COMMAND_MODULE_NAMES)
    raise AttributeError(name)


def command_name(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` (the first word that is not a global option or its value),
    or None. Abbreviated options (``--hom PATH``, as argparse accepts them) count too."""
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--":
            return None
        if a.startswith("-"):
            if a.startswith("--") and "=" not in a and sum(1 for o in _VALUE_OPTIONS if o.startswith(a)) == 1 and len(a) > 2:
                skip = True
            continue
        return a
    return None


def build_parser(only: str | bool | None = True, epilog: str | None = None) -> argparse.ArgumentParser:
    """The ``memdeck`` parser. ``only=True`` (default): every command registered by its module
    (all imported); a known command name: only that command's module registers its commands
    (each subparser costs argparse's gettext look-ups: twenty placeholders were ~10 % of a
    ``recall`` process); None or an unknown word: every command as a bare placeholder with its
    help line (``--help``, and argparse's "invalid choice" message, list them all; no import).
    ``epilog`` ends ``memdeck --help`` (the launcher says there which settings file the dashboard
    uses: core does not know the TUI's settings)."""
    parser = argparse.ArgumentParser(
        prog="memdeck",
        description="A live cockpit for Hermes Agent memory, sessions and MemLock anchors.\n"
        "Without a command, opens the dashboard. The options below also work after the command "
        "(memdeck serve --demo, memdeck status --home PATH).",
        epilog=exit_codes_text() + (f"\n\n{epilog}" if epilog else ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the epilog's paths are never broken
    )
    parser.add_argument("--version", action="version", version=f"memdeck {__version__}")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--home", metavar="PATH", help="Hermes home to use (default: $HERMES_HOME, active profile, ~/.hermes)")
    where.add_argument("--profile", metavar="NAME", help="use <root>/profiles/NAME")
    where.add_argument("--demo", action="store_true", help="open a generated demo home (the dashboard and serve only)")
    parser.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    parser.add_argument("--read-only", action="store_true",
                        help="open the dashboard read-only: every write key is refused (see also serve --read-only)")
    parser.add_argument("--layout", choices=("panels", "overview"), default=None,
                        help="the dashboard's layout at launch: every panel on its tab (panels, the default), or "
                        "one screen of everything that fits beside an agent at 80x24 (overview; o switches); "
                        "the settings file's `layout` when not given")
    parser.add_argument("--config", metavar="FILE",
                        help="the dashboard's settings file (theme, default profile, keymap, fleet; TOML if *.toml, else "
                        "YAML), instead of $MEMDECK_CONFIG or the default place; the dashboard, serve (every tab), "
                        "fleet (and each dashboard it opens) and metrics read it, the other commands do not")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only is True:
        for m in COMMAND_MODULE_NAMES:
            command_module(m).register(sub)
        _globals_after_the_command(parser)
        return parser
    wanted = COMMANDS[only][0] if isinstance(only, str) and only in COMMANDS else None
    if wanted is not None:
        command_module(wanted).register(sub)
        _globals_after_the_command(parser)
        return parser
    for name, (_mod, help_line) in COMMANDS.items():
        sub.add_parser(name, help=help_line, add_help=False)
    return parser


#: The global options (``memdeck --help``) that every command also takes after its name
#: (``memdeck serve --demo``, ``memdeck status --home H``; issue 39 #3): flag -> its keyword arguments.
_GLOBAL_AFTER: dict[str, dict[str, Any]] = {
    "--home": {"metavar": "PATH"}, "--profile": {"metavar": "NAME"}, "--demo": {"action": "store_true"},
    "--seed": {"type": int}, "--read-only": {"action": "store_true"}, "--config": {"metavar": "FILE"},
}

#: Global options of which one at most may be given, wherever they stand.
_EXCLUSIVE = (("home", "--home"), ("profile", "--profile"), ("demo", "--demo"))


def _globals_after_the_command(parser: argparse.ArgumentParser) -> None:
    """Give every command parser (each level: ``memory`` and ``memory add``) the global options of
    :data:`_GLOBAL_AFTER`, unless it has an option of that name already (``plugin install --home``
    is its own). Their default is ``SUPPRESS``, so one given before the command is kept; they are
    hidden from each command's help (``memdeck --help`` lists them, and says they go either side)."""
    for action in parser._actions:  # noqa: SLF001 - argparse exposes subcommands only this way
        if not isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            continue
        for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
            for flag, kwargs in _GLOBAL_AFTER.items():
                if flag not in sub._option_string_actions:  # noqa: SLF001
                    sub.add_argument(flag, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
            _globals_after_the_command(sub)


def _check_exclusive(args: argparse.Namespace) -> None:
    """--home, --profile and --demo exclude each other before and after the command alike
    (argparse checks each side alone).

    Raises:
        UsageError: two of them were given.
    """
    given = [flag for dest, flag in _EXCLUSIVE if getattr(args, dest, None) not in (None, False)]
    if len(given) > 1:
        raise UsageError(f"argument {given[1]}: not allowed with argument {given[0]}")


def _parser(command: str | None) -> argparse.ArgumentParser:
    """The parser :func:`main` uses for ``command`` (:func:`build_parser`), built once per process
    and command (callers running many commands in one process, the suite's hostile homes among
    them, paid each time). ``parse_args`` leaves a parser as it was."""
    return _built_parser(command if command in COMMANDS else None)


@functools.cache
def _built_parser(only: str | None) -> argparse.ArgumentParser:
    return build_parser(only)


def main(argv: Sequence[str] | None = None, *,
         dashboard: Callable[[argparse.Namespace], int] | None = None,
         serve: Callable[[argparse.Namespace], int] | None = None,
         help_epilog: Callable[[Sequence[str]], str] | None = None,
         fleet: Callable[[argparse.Namespace, CliContext], int] | None = None,
         fleet_settings: Callable[[str | None], Any] | None = None,
         alert_settings: Callable[[str | None], Any] | None = None) -> int:
    """Run one ``memdeck`` command; returns the process exit code.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
        dashboard: what runs when no command is given. The ``memdeck`` console script
            (:func:`memdeck.tui.launch.main`) passes the dashboard; core never imports the TUI,
            so without it a missing command is a usage error.
        serve: what ``memdeck serve`` runs (the dashboard's web server,
            :func:`memdeck.tui.serve.run_serve`), passed the same way; without it ``serve`` is
            a usage error.
        help_epilog: the text that ends ``memdeck --help``, from the arguments (the launcher's
            :func:`memdeck.tui.launch.help_epilog`: which settings file the dashboard uses, with
            ``--config`` as given); asked for only when ``-h``/``--help`` is among them.
        fleet: what ``memdeck fleet`` runs on a terminal (the fleet screen,
            :func:`memdeck.tui.fleet.run_fleet`), passed the same way; without it the fleet is
            printed as a table.
        fleet_settings: returns the ``fleet`` table of the person's settings file
            (:class:`memdeck.core.fleet.homes.FleetSettings`: ``fleet.homes``, the ssh command),
            which the TUI owns, given the ``--config`` value (None: ``MEMDECK_CONFIG`` or the
            default place); it raises :class:`UsageError` for a ``--config`` file that is not
            there. Without it ``fleet`` and ``metrics`` see the profiles only.
        alert_settings: returns the ``alerts`` table of that file
            (:class:`memdeck.core.overview.alerts.AlertSettings`), for ``watch``, given the
            ``--config`` value as ``fleet_settings`` is; without it the defaults apply.
    """
    raw = list(sys.argv[1:] if argv is None else argv)
    wants_help = help_epilog is not None and ("-h" in raw or "--help" in raw)
    if wants_help:
        parser = build_parser(command_name(raw), help_epilog(raw))  # type: ignore[misc]
    else:
        parser = _parser(command_name(raw))
    bad = _non_utf8(raw)
    if bad is not None:
        parser.print_usage(sys.stderr)
        print(f"memdeck: error: {bad}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(raw)
    # `completion` prints the whole parser's script (every command registered), the others need only theirs
    args.root_parser = build_parser(True) if args.command == "completion" else parser
    args.fleet_screen = fleet
    args.load_fleet_settings = (lambda: fleet_settings(args.config)) if fleet_settings is not None else None
    args.load_alert_settings = (lambda: alert_settings(args.config)) if alert_settings is not None else None
    try:
        _check_exclusive(args)
        if args.command is None:
            if dashboard is None:
                raise UsageError("no command given (the dashboard opens with `memdeck` or `python -m memdeck.tui`)")
            return dashboard(args)
        if args.demo and args.command not in DASHBOARD_COMMANDS:
            raise UsageError("--demo opens the dashboard; it does not take a command (but `memdeck serve --demo`)")
        if args.read_only and args.command not in DASHBOARD_COMMANDS:
            raise UsageError("--read-only is for the dashboard and `memdeck serve`; it does not take this command")
        if getattr(args, "layout", None) is not None:
            raise UsageError("--layout is for the dashboard (`memdeck --layout overview`); it does not take a command")
        if args.command == "serve":  # the TUI's server, or the usage error that says it needs the TUI
            return serve(args) if serve is not None else int(args.handler(args, None) or 0)
        if getattr(args, "needs_home", True) is False:  # e.g. `completion`: no home, nothing observed
            return int(args.handler(args, None) or 0)
        with visible_output():
            ctx = CliContext.from_args(args)
            if args.command not in ANY_HOME_COMMANDS:
                require_home(ctx.home if not getattr(args, "plugin_home", None) else resolve_home(args.plugin_home))
            _observe(ctx)
            return int(args.handler(args, ctx) or 0)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"memdeck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (NoHome, UnknownUserHome) as exc:
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
    except BrokenPipeError:
        # `memdeck status | head`: the reader went away; exit quietly like other Unix tools.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # a full disk, a vanished directory, no permission: a reason, never a traceback
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"memdeck: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


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
    from .. import history as _history  # only a command run pays for it

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
