"""Shared plumbing for the CLI command modules."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..errors import MemdeckError
from ..home import HermesHome, HomeError, UnknownUserHome, resolve_home
from ..text import json_safe

if TYPE_CHECKING:
    from ..config import Config


#: The exit codes of every ``memdeck`` command (the CLI help, README's "Command line" and
#: docs/STATUS_JSON.md list them; tests/core/test_hostile_homes.py holds every command to them).
EXIT_OK = 0
EXIT_FAILED = 1      # a write was refused or a command failed: the reason on stderr (with --json, also as JSON)
EXIT_USAGE = 2       # bad arguments
EXIT_FINDINGS = 3    # scan: flagged entries or pending writes (a clean scan is 0)
EXIT_NO_HOME = 4     # the home does not exist or is not a Hermes home (nothing was read or written)
EXIT_PARTIAL = 5     # a bulk action (pending approve --all-clean, reject --stale) did some and refused others
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (`memdeck status | head`)

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success (a no-op such as adding an entry that exists included)",
    EXIT_FAILED: "refused or failed: the reason on stderr (with --json also on stdout); nothing was written",
    EXIT_USAGE: "usage error",
    EXIT_FINDINGS: "scan found flagged entries or pending writes",
    EXIT_NO_HOME: "no Hermes home there: the directory does not exist or has no config.yaml, memories/ or state.db",
    EXIT_PARTIAL: "a bulk action did some and refused others: each refusal on stderr (with --json also on stdout); "
                  "what was done is journaled",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_BROKEN_PIPE: "stdout was closed by its reader",
}


def exit_codes_text() -> str:
    """The exit-code table as the CLI help shows it."""
    return "exit codes:\n" + "\n".join(f"  {code:<4} {what}" for code, what in EXIT_CODES.items())


class UsageError(MemdeckError):
    """Bad command-line usage (exit code 2)."""


class NoHome(MemdeckError):
    """The home the command was pointed at does not exist or is not a Hermes home (exit code 4)."""


class CliContext:
    """What every command handler gets: the resolved home and its config.

    ``config`` is read on first use (:func:`memdeck.core.config.load_config`, its warnings printed
    to stderr then): a command that never looks at config.yaml (``recall``, ``sessions`` without a
    session store note, ``history``) neither reads nor parses it, nor imports a YAML library
    (issue 23: PyYAML was a tenth of a ``recall`` process). Passing ``config=`` sets it up front.
    """

    def __init__(self, home: HermesHome, config: Config | None = None, actor: str = "cli") -> None:
        self.home: HermesHome = home
        self._config: Config | None = config
        self.actor = actor

    def __repr__(self) -> str:
        return f"CliContext(home={self.home!r}, actor={self.actor!r})"

    @property
    def config(self) -> Config:
        """The home's config.yaml as :func:`memdeck.core.config.load_config` reads it (never raises;
        its warnings go to stderr once, when it is first read)."""
        if self._config is None:
            from ..config import load_config

            self._config = load_config(self.home)
            for w in self._config.warnings:
                print(f"memdeck: warning: {w}", file=sys.stderr)
        return self._config

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CliContext:
        try:
            home = resolve_home(getattr(args, "home", None), getattr(args, "profile", None))
        except UnknownUserHome as exc:  # no home there: exit 4, as for a missing directory
            raise NoHome(str(exc)) from exc
        except HomeError as exc:
            raise UsageError(str(exc)) from exc
        return cls(home=home)


def print_json(data: Any) -> None:
    """Print ``data`` as stable, indented JSON (UTF-8, keys in insertion order), with C1
    controls, bidi and invisible characters as ``\\uXXXX`` escapes (:func:`memdeck.core.text.json_safe`)."""
    sys.stdout.write(json_safe(json.dumps(data, indent=2, ensure_ascii=False)) + "\n")


def add_target_arg(p: argparse.ArgumentParser, required: bool = True, flag: str = "--target") -> None:
    p.add_argument(flag, choices=("memory", "user"), required=required, default=None if required else "memory",
                   help="memory (MEMORY.md) or user (USER.md)")
