"""Shared plumbing for the CLI command modules."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from ..config import Config, load_config
from ..errors import MemdeckError
from ..home import HermesHome, HomeError, resolve_home
from ..text import json_safe


class UsageError(MemdeckError):
    """Bad command-line usage (exit code 2)."""


@dataclass
class CliContext:
    """What every command handler gets: the resolved home and its config."""

    home: HermesHome
    config: Config
    actor: str = "cli"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "CliContext":
        try:
            home = resolve_home(getattr(args, "home", None), getattr(args, "profile", None))
        except HomeError as exc:
            raise UsageError(str(exc)) from exc
        config = load_config(home)
        for w in config.warnings:
            print(f"memdeck: warning: {w}", file=sys.stderr)
        return cls(home=home, config=config)


def print_json(data: Any) -> None:
    """Print ``data`` as stable, indented JSON (UTF-8, keys in insertion order), with C1
    controls, bidi and invisible characters as ``\\uXXXX`` escapes (:func:`memdeck.core.text.json_safe`)."""
    sys.stdout.write(json_safe(json.dumps(data, indent=2, ensure_ascii=False)) + "\n")


def add_target_arg(p: argparse.ArgumentParser, required: bool = True, flag: str = "--target") -> None:
    p.add_argument(flag, choices=("memory", "user"), required=required, default=None if required else "memory",
                   help="memory (MEMORY.md) or user (USER.md)")
