"""CLI commands (filled in by its issue's work)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    return None
