"""The cross-cutting tests (multi-process store, raw opens, hostile homes) run every command the
parser has: a command added later fails here until it has a sample in tests/helpers/commands.py."""

from __future__ import annotations

from tests.helpers.commands import READ_ONLY, SAMPLES, WRITES, command_paths, writers


def test_every_command_of_the_parser_has_samples() -> None:
    paths = command_paths()
    missing = [p for p in paths if p not in SAMPLES]
    assert not missing, f"add invocations for {missing} to tests/helpers/commands.py SAMPLES"
    stale = [p for p in SAMPLES if p not in paths]
    assert not stale, f"SAMPLES names commands the parser no longer has: {stale}"
    assert all(SAMPLES[p] for p in paths)


def test_every_command_is_read_only_or_says_what_it_writes() -> None:
    """A new command is a writer (the kill, disk-full, multi-process and hostile-home tests run it as
    one) until it is marked read-only; a writer names the files it may change."""
    paths = command_paths()
    assert set(paths) >= READ_ONLY, f"READ_ONLY names commands the parser no longer has: {READ_ONLY - set(paths)}"
    missing = [p for p in writers() if p not in WRITES]
    assert not missing, f"say in tests/helpers/commands.py WRITES which files {missing} may change (or mark them READ_ONLY)"
    assert not (READ_ONLY & set(WRITES)), "a command is both read-only and a writer"
    assert set(WRITES) <= set(paths)


def test_every_chat_sub_command_has_samples() -> None:
    """``/memdeck``'s sub-commands (issue 35) run in the hostile homes and the multi-process store
    test too: each has samples and is read-only or says what it writes."""
    from memdeck.core.plugin.chat_command import SUBCOMMANDS
    from memdeck.core.plugin.chat_command import WRITES as CHAT_WRITERS
    from tests.helpers.commands import CHAT_READ_ONLY, CHAT_SAMPLES, CHAT_WRITES

    assert set(CHAT_SAMPLES) == {*SUBCOMMANDS, "help"} and all(CHAT_SAMPLES.values())
    assert set(CHAT_WRITES) == set(CHAT_WRITERS) and not (CHAT_READ_ONLY & set(CHAT_WRITES))
    assert CHAT_READ_ONLY | set(CHAT_WRITES) == set(CHAT_SAMPLES)
