"""The cross-cutting tests (multi-process store, raw opens, hostile homes) run every command the
parser has: a command added later fails here until it has a sample in tests/helpers/commands.py."""

from __future__ import annotations

from tests.helpers.commands import SAMPLES, command_paths


def test_every_command_of_the_parser_has_samples() -> None:
    paths = command_paths()
    missing = [p for p in paths if p not in SAMPLES]
    assert not missing, f"add invocations for {missing} to tests/helpers/commands.py SAMPLES"
    stale = [p for p in SAMPLES if p not in paths]
    assert not stale, f"SAMPLES names commands the parser no longer has: {stale}"
    assert all(SAMPLES[p] for p in paths)
