"""Every ``memdeck`` command, as the suite runs it: the list a new command joins by default.

:func:`command_paths` reads the leaves of the real parser (``memdeck.core.cli.build_parser``);
:data:`SAMPLES` gives each leaf the invocations the cross-cutting tests run (the multi-process
store test, the raw-open audit, the hostile homes). ``tests/core/test_every_command.py`` fails
when a command of the parser has no sample here, so a command added later cannot skip them.

A sample is an argv after ``memdeck --home H``; its ``{placeholders}`` are filled from the home
(:func:`home_values`: an entry, a pending write, an anchor, archive rows, a change, a directory
beside the home for ``metrics --textfile``). The kill and
disk-full tests run a writer's samples in order on one home, each to completion but the one they
interrupt: an earlier sample sets up a later one (``plugin uninstall`` installs first).

Every command is a *writer* unless :data:`READ_ONLY` names it: the kill and disk-full tests, the
multi-process store test and the hostile homes run every writer, so a new command is treated as
one until it is marked read-only here (and then the hostile homes check that it changes no
file). A writer says in :data:`WRITES` which files of a home it may change;
``tests/core/test_every_command.py`` fails when a command is in neither.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

#: Commands that run until stopped: the tests bound them (``--timeout``/``--max-events``).
STREAMING = {"watch"}

SAMPLES: dict[str, list[list[str]]] = {
    "status": [["status"], ["status", "--json"]],
    "memory list": [["memory", "list"], ["memory", "list", "--json"]],
    "memory add": [["memory", "add", "--target", "memory", "every-command probe entry"]],
    "memory replace": [["memory", "replace", "--target", "memory", "{entry_id}", "{entry} (replaced)"]],
    "memory remove": [["memory", "remove", "--target", "memory", "{entry_id}"]],
    "memory edit": [["memory", "edit", "{entry_id}", "{entry} (edited)", "--json"]],
    "memory move": [["memory", "move", "{entry_id}", "--to", "user", "--json"]],
    "memory normalize": [["memory", "normalize", "--target", "user", "--json"]],
    "archive": [["archive", "--list"], ["archive", "{entry_id}", "--json"]],
    "restore": [["restore", "{archived_entry}", "--json"]],
    "undo": [["undo", "--json"]],
    "pending list": [["pending", "list"], ["pending", "list", "--json"]],
    "pending approve": [["pending", "approve", "{pending}", "--json"], ["pending", "approve", "--all-clean"],
                        ["pending", "approve", "--all-clean", "--json"]],
    "pending reject": [["pending", "reject", "{pending}", "--json"], ["pending", "reject", "--stale"],
                       ["pending", "reject", "--stale", "--json"]],
    "pending edit": [["pending", "edit", "{pending}", "an edited pending write", "--json"]],
    "scan": [["scan"], ["scan", "--json"]],
    "journal": [["journal"], ["journal", "--json"]],
    "hygiene list": [["hygiene", "list", "--lexical"], ["hygiene", "list", "--json", "--lexical"]],
    "hygiene apply": [["hygiene", "apply", "{hygiene_finding}", "--lexical", "--json"]],
    "sessions list": [["sessions"], ["sessions", "--json"], ["sessions", "--stale"], ["sessions", "--stale", "--json"],
                      ["sessions", "list", "--limit", "3", "--json"]],
    # a rebuild request for the anchors' session (refused when it has ended or is not in state.db)
    "sessions rebuild": [["sessions", "rebuild", "{session}", "--json"]],
    "context": [["context"], ["context", "--json"], ["context", "--session", "{session}", "--json"]],
    "recall": [["recall", "deploy"], ["recall", "deploy", "--json"]],
    "constraints": [["constraints", "--keyword"], ["constraints", "--keyword", "--json"]],
    "anchors": [["anchors"], ["anchors", "--json"]],
    "pin": [["pin", "Always run the tests before pushing.", "--json"]],
    "unpin": [["unpin", "{anchor}", "--json"]],
    "anchor edit": [["anchor", "edit", "{anchor}", "--priority", "5", "--json"]],
    "anchor archive": [["anchor", "archive", "{anchor}", "--json"]],
    "anchor restore": [["anchor", "restore", "{archived_anchor}", "--json"]],
    "audit": [["audit"], ["audit", "--json"],
              ["audit", "--what-if", "Always reply in bullet points.", "--probe", "bullet", "--priority", "70", "--json"],
              ["audit", "--what-if", "Use British English spelling everywhere."]],
    "preview": [["preview"], ["preview", "--json"]],
    "plugin install": [["plugin", "install", "--json"]],
    "plugin uninstall": [["plugin", "install", "--json"], ["plugin", "uninstall", "--json"]],
    "plugin status": [["plugin", "status"], ["plugin", "status", "--json"]],
    "history": [["history"], ["history", "--json"]],
    "revert": [["revert", "{change}", "--json"]],
    "watch": [["watch", "--timeout", "0.3", "--max-events", "5"]],
    # serve runs until stopped: --check binds a free port, prints the URL and exits (the served
    # tabs are tested in tests/tui/test_serve_http.py and test_serve_browser.py)
    "serve": [["serve", "--port", "0", "--check"], ["serve", "--port", "0", "--check", "--read-only"]],
    "completion": [["completion", "bash"], ["completion", "zsh"], ["completion", "tcsh"]],
    # the fleet of `--home H` is H and its profiles (no settings file, no ssh); `metrics --serve`
    # runs until stopped: its own test (tests/core/test_fleet_metrics.py) and the Prometheus one
    "fleet": [["fleet"], ["fleet", "--json"]],
    "metrics": [["metrics"], ["metrics", "--textfile", "{textfile_dir}"]],
}


#: The commands that never change a file of the home (memdeck.db aside: every command records
#: the change history there). Anything not listed is a writer.
READ_ONLY: frozenset[str] = frozenset({
    "status", "memory list", "pending list", "scan", "journal", "sessions list", "recall", "anchors", "audit", "preview",
    "plugin status", "history", "watch", "context", "hygiene list", "constraints",
    # the dashboard's server (its own sessions write through the dashboard's stores), a script on
    # stdout, the fleet's rows and figures (`metrics --textfile` writes beside the home, not in it)
    "serve", "completion", "fleet", "metrics",
})

#: Commands that exit 0 where there is no Hermes home, each for a reason (every other command exits
#: 4 there): ``completion`` reads no home (it prints a shell script; its parser sets
#: ``needs_home=False``). ``fleet`` and ``metrics`` exit 4 too (issue 39 #5).
NO_HOME_EXIT_0: frozenset[str] = frozenset({"completion"})

#: Commands that read nothing of a home: the hostile homes run them on the homes that are no
#: home only (their output cannot depend on what a home holds).
READS_NO_HOME: frozenset[str] = frozenset({"completion"})

#: What each writer may change, as ``fnmatch`` patterns of home-relative paths (``*`` crosses
#: ``/``), besides memdeck's own files (memdeck.db and its side files, ``*.lock`` sidecars).
WRITES: dict[str, tuple[str, ...]] = {
    "memory add": ("memories/*",),
    "memory replace": ("memories/*",),
    "memory remove": ("memories/*",),
    "memory edit": ("memories/*",),
    "memory move": ("memories/*",),
    "memory normalize": ("memories/*",),
    "archive": ("memories/*",),
    "restore": ("memories/*",),
    "undo": ("memories/*", "memlock/*"),
    "pending approve": ("memories/*", "pending/memory/*"),
    "pending reject": ("pending/memory/*",),
    "pending edit": ("memories/*", "pending/memory/*"),  # applies the edited text: approve's files
    "pin": ("memlock/*",),
    "unpin": ("memlock/*",),
    "anchor edit": ("memlock/*",),
    "anchor archive": ("memlock/*",),
    "anchor restore": ("memlock/*",),
    "plugin install": ("plugins", "plugins/*", "config.yaml", "config.yaml.bak-*"),
    "plugin uninstall": ("plugins", "plugins/*", "config.yaml", "config.yaml.bak-*"),
    "revert": ("memories/*", "memlock/*"),
    "hygiene apply": ("memories/*",),
    "sessions rebuild": (),  # a request queued in memdeck.db; the plugin acts on it inside Hermes
}


#: ``/memdeck`` in a chat (issue 35, ``core/plugin/chat_command.py``): the invocations the hostile
#: homes and the multi-process store test run through ``chat_command.run`` (the text after
#: ``/memdeck``, :func:`fill` placeholders), per sub-command; a sub-command added later fails
#: ``tests/core/test_every_command.py`` until it has samples here.
CHAT_SAMPLES: dict[str, list[str]] = {
    "help": ["help"],
    "pending": ["pending", "pending 2"],
    "memory": ["memory"],
    "history": ["history 5"],
    "stale": ["stale"],
    "approve": ["approve {pending}", "approve --all-clean"],
    "reject": ["reject {pending}", "reject --stale"],
    "edit": ["edit {pending} chat edit: cite the ticket number"],
    "revert": ["revert {change}"],
}
#: the chat sub-commands that write nothing of a home (memdeck.db aside)
CHAT_READ_ONLY: frozenset[str] = frozenset({"help", "pending", "memory", "history", "stale"})
#: what a writing chat sub-command may change (as :data:`WRITES`): the CLI command it shares its core with
CHAT_WRITES: dict[str, tuple[str, ...]] = {
    "approve": WRITES["pending approve"], "reject": WRITES["pending reject"], "edit": WRITES["pending edit"],
    "revert": WRITES["revert"],
}


def chat_samples(values: dict[str, str]) -> list[tuple[str, str]]:
    """``(sub-command, text after /memdeck)`` of every :data:`CHAT_SAMPLES`, filled with ``values``."""
    return [(sub, text.format(**values)) for sub, texts in CHAT_SAMPLES.items() for text in texts]


def writers() -> list[str]:
    """Every command of the parser that is not :data:`READ_ONLY`, in parser order."""
    return [p for p in command_paths() if p not in READ_ONLY]


def command_of(argv: list[str]) -> str:
    """The command path (``"memory add"``) an argv after the global options invokes."""
    paths = set(SAMPLES)
    for n in (2, 1):
        head = " ".join(argv[:n])
        if head in paths:
            return head
        if f"{head} list" in paths:  # `sessions --json`: the group's default action
            return f"{head} list"
    raise KeyError(f"no command for {argv!r}")


def command_paths(parser: argparse.ArgumentParser | None = None) -> list[str]:
    """Every leaf command of the parser, as ``"memory add"``-style paths, in parser order."""
    if parser is None:
        from memdeck.core.cli import build_parser

        parser = build_parser()
    return list(_leaves(parser, ()))


def _leaves(p: argparse.ArgumentParser, prefix: tuple[str, ...]) -> Iterator[str]:
    for action in p._actions:  # noqa: SLF001 - argparse exposes subcommands only this way
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                yield from _leaves(sub, (*prefix, name))
            return
    if prefix:
        yield " ".join(prefix)


def fill(argv: list[str], values: dict[str, str]) -> list[str]:
    """``argv`` with its ``{placeholders}`` replaced (see :func:`home_values`)."""
    return [a.format(**values) if "{" in a else a for a in argv]


#: what every placeholder is where the home has none (a hostile home still gets its commands)
PLACEHOLDERS = {"entry": "no such entry", "entry_id": "e-000000", "session": "no-such-session",
                "pending": "no-such-pending", "anchor": "no-such-anchor", "archived_entry": "1",
                "archived_anchor": "1", "change": "1", "hygiene_finding": "00000000"}


def home_values(home_path: str) -> dict[str, str]:
    """Values for :func:`fill`, read from a home through memdeck's own readers (never blocking on a
    FIFO): ``entry``/``entry_id`` the first MEMORY.md entry; ``pending`` the first pending write
    that could be approved (else the first); ``session``/``anchor`` the first readable MemLock
    session with anchors and its first anchor; ``archived_entry``/``archived_anchor`` the newest
    archive row of each kind, ``change`` the newest revertible change by another writer (memdeck.db
    read ``mode=ro``: nothing is created or migrated). :data:`PLACEHOLDERS` where there is none."""
    from pathlib import Path

    values = dict(PLACEHOLDERS)
    root = Path(home_path)
    textfile_dir = root.absolute().parent / (root.name + "-textfile")
    try:
        textfile_dir.mkdir(exist_ok=True)
    except OSError:  # a hostile place: the command then says it cannot write there
        pass
    values["textfile_dir"] = str(textfile_dir)
    try:
        from memdeck.core.config import load_config
        from memdeck.core.home import HermesHome
        from memdeck.core.memory.reader import read_memory

        home = HermesHome(root)
        state = read_memory(home, load_config(home), "memory")
        if state.entries:
            values["entry"], values["entry_id"] = state.entries[0].text, str(state.entries[0].id)
    except Exception:  # noqa: BLE001 - a hostile home keeps the placeholders
        pass
    try:
        from memdeck.core.home import HermesHome
        from memdeck.core.memory.pending import list_pending

        recs = list_pending(HermesHome(root))
        usable = [r for r in recs if not r.malformed and not r.threats] or recs
        if usable:
            values["pending"] = str(usable[0].id)
    except Exception:  # noqa: BLE001
        pass
    try:
        from memdeck.core.anchors.store import AnchorStore
        from memdeck.core.home import HermesHome

        store = AnchorStore(HermesHome(root))
        for info in store.list_sessions():
            if info.error is None:
                anchors = store.load_session(info.session_id).sorted_anchors()
                if anchors:
                    values["session"], values["anchor"] = info.session_id, anchors[0].id
                    break
    except Exception:  # noqa: BLE001
        pass
    try:  # the first finding that applies without a choice (a contradiction needs --keep)
        from memdeck.core.config import load_config
        from memdeck.core.home import HermesHome
        from memdeck.core.hygiene.detect import hygiene_report

        home = HermesHome(root)
        found = [f for f in hygiene_report(home, load_config(home), semantic=False).findings if f.kind != "contradiction"]
        if found:
            values["hygiene_finding"] = found[0].id
    except Exception:  # noqa: BLE001 - a hostile home keeps the placeholder
        pass
    values.update(_deck_values(root / "memdeck" / "memdeck.db"))
    return values


def _deck_values(path: object) -> dict[str, str]:
    import sqlite3
    import urllib.parse
    from pathlib import Path

    p = Path(str(path))
    if not p.is_file():
        return {}
    out: dict[str, str] = {}
    try:
        conn = sqlite3.connect("file:" + urllib.parse.quote(str(p.absolute())) + "?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return {}
    try:
        for key, kind in (("archived_entry", "memory"), ("archived_anchor", "anchor")):
            row = conn.execute("SELECT MAX(archive_id) FROM archive WHERE kind = ? AND state = 'archived'",
                               (kind,)).fetchone()
            if row and row[0] is not None:
                out[key] = str(row[0])
        row = conn.execute("SELECT MAX(change_id) FROM history WHERE actor != 'cli' AND actor != 'tui'"
                           " AND reverted_by IS NULL").fetchone()
        if row and row[0] is not None:
            out["change"] = str(row[0])
    except sqlite3.Error:
        pass
    finally:
        conn.close()
    return out
