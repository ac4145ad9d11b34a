"""Every ``memdeck`` command, as the suite runs it: the list a new command joins by default.

:func:`command_paths` reads the leaves of the real parser (``memdeck.core.cli.build_parser``);
:data:`SAMPLES` gives each leaf the invocations the cross-cutting tests run (the multi-process
store test, the raw-open audit, the hostile homes). ``tests/core/test_every_command.py`` fails
when a command of the parser has no sample here, so a command added later cannot skip them.

A sample is an argv after ``memdeck --home H``; ``{entry}`` is replaced with the text of an
existing MEMORY.md entry of the home (or a placeholder when it has none), ``{session}`` with a
session id, ``{pending}`` with a pending write's id, ``{anchor}`` with an anchor id,
``{textfile_dir}`` with a directory beside the home (created) for ``metrics --textfile``.
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
    "memory replace": [["memory", "replace", "--target", "memory", "every-command probe entry", "every-command probe entry v2"]],
    "memory remove": [["memory", "remove", "--target", "memory", "every-command probe entry"]],
    "memory edit": [["memory", "edit", "{entry_id}", "{entry} (edited)", "--json"]],
    "memory move": [["memory", "move", "{entry_id}", "--to", "user", "--json"]],
    "memory normalize": [["memory", "normalize", "--target", "user", "--json"]],
    "archive": [["archive", "--list"], ["archive", "{entry_id}", "--json"]],
    "restore": [["restore", "1", "--json"]],
    "undo": [["undo", "--json"]],
    "pending list": [["pending", "list"], ["pending", "list", "--json"]],
    "pending approve": [["pending", "approve", "{pending}", "--json"], ["pending", "approve", "--all-clean"],
                        ["pending", "approve", "--all-clean", "--json"]],
    "pending reject": [["pending", "reject", "{pending}", "--json"], ["pending", "reject", "--stale"],
                       ["pending", "reject", "--stale", "--json"]],
    "pending edit": [["pending", "edit", "{pending}", "an edited pending write", "--json"]],
    "scan": [["scan"], ["scan", "--json"]],
    "journal": [["journal"], ["journal", "--json"]],
    "sessions": [["sessions"], ["sessions", "--json"], ["sessions", "--stale"], ["sessions", "--stale", "--json"]],
    "context": [["context"], ["context", "--json"], ["context", "--session", "{session}", "--json"]],
    "recall": [["recall", "deploy"], ["recall", "deploy", "--json"]],
    "anchors": [["anchors"], ["anchors", "--json"]],
    "pin": [["pin", "Always run the tests before pushing.", "--json"]],
    "unpin": [["unpin", "{anchor}", "--json"]],
    "anchor edit": [["anchor", "edit", "{anchor}", "--priority", "5", "--json"]],
    "anchor archive": [["anchor", "archive", "{anchor}", "--json"]],
    "anchor restore": [["anchor", "restore", "1", "--json"]],
    "audit": [["audit"], ["audit", "--json"],
              ["audit", "--what-if", "Always reply in bullet points.", "--probe", "bullet", "--priority", "70", "--json"],
              ["audit", "--what-if", "Use British English spelling everywhere."]],
    "preview": [["preview"], ["preview", "--json"]],
    "plugin install": [["plugin", "status", "--json"]],  # installing is covered by its own tests; status is read-only
    "plugin uninstall": [["plugin", "status"]],
    "plugin status": [["plugin", "status"], ["plugin", "status", "--json"]],
    "history": [["history"], ["history", "--json"]],
    "revert": [["revert", "1", "--json"]],
    "watch": [["watch", "--timeout", "1", "--max-events", "5"]],
    # serve runs until stopped: --check binds a free port, prints the URL and exits (the served
    # tabs are tested in tests/tui/test_serve_http.py and test_serve_browser.py)
    "serve": [["serve", "--port", "0", "--check"], ["serve", "--port", "0", "--check", "--read-only"]],
    "completion": [["completion", "bash"], ["completion", "zsh"], ["completion", "tcsh"]],
    # the fleet of `--home H` is H and its profiles (no settings file, no ssh); `metrics --serve`
    # runs until stopped: its own test (tests/core/test_fleet_metrics.py) and the Prometheus one
    "fleet": [["fleet"], ["fleet", "--json"]],
    "metrics": [["metrics"], ["metrics", "--textfile", "{textfile_dir}"]],
}


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
    """``argv`` with ``{entry}``, ``{entry_id}``, ``{session}``, ``{pending}``, ``{anchor}``, ``{textfile_dir}`` replaced."""
    return [a.format(**values) if "{" in a else a for a in argv]


def home_values(home_path: str) -> dict[str, str]:
    """Values for :func:`fill` read from a home through memdeck's own readers (placeholders
    where the home has none, or cannot be read: a hostile home must still get its commands)."""
    from pathlib import Path

    values = {"entry": "no such entry", "entry_id": "e-000000", "session": "no-such-session",
              "pending": "no-such-pending", "anchor": "no-such-anchor"}
    textfile_dir = Path(home_path).absolute().parent / (Path(home_path).name + "-textfile")
    try:
        textfile_dir.mkdir(exist_ok=True)
    except OSError:  # a hostile place: the command then says it cannot write there
        pass
    values["textfile_dir"] = str(textfile_dir)
    try:
        from memdeck.core.config import load_config
        from memdeck.core.home import HermesHome
        from memdeck.core.memory.reader import read_memory

        home = HermesHome(Path(home_path))
        state = read_memory(home, load_config(home), "memory")
        if state.entries:
            first = state.entries[0]
            values["entry"] = getattr(first, "text", str(first))
            values["entry_id"] = str(getattr(first, "id", values["entry_id"]))
    except Exception:  # noqa: BLE001 - a hostile home keeps the placeholders
        pass
    try:
        from memdeck.core.home import HermesHome
        from memdeck.core.memory.pending import list_pending

        recs = list_pending(HermesHome(Path(home_path)))
        if recs:
            values["pending"] = str(recs[0].id)
    except Exception:  # noqa: BLE001
        pass
    try:
        import json

        for f in sorted((Path(home_path) / "memlock").glob("*.json")):
            data = json.loads(f.read_text(encoding="utf-8"))
            anchors = data.get("anchors") if isinstance(data, dict) else None
            if anchors:
                first = anchors[0] if isinstance(anchors, list) else next(iter(anchors.values()))
                values["anchor"] = str(first.get("id") or first.get("anchor_id"))
                values["session"] = f.stem
                break
    except Exception:  # noqa: BLE001
        pass
    return values
