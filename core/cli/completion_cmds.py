"""``memdeck completion bash|zsh|tcsh``: a shell completion script for every command and option,
generated from the parser itself by shtab (https://github.com/iterative/shtab), so it can never
fall behind the commands.

Options whose metavar is ``PATH`` complete directory names (the Hermes home), ``FILE`` file names
(``--config``); everything else completes the parser's own choices (commands, ``--target memory|user``, ...).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import CliContext

SHELLS = ("bash", "zsh", "tcsh")

#: Where each shell's script goes (the README and the man page repeat this).
INSTALL_HINT = {
    "bash": 'eval "$(memdeck completion bash)"   # in ~/.bashrc',
    "zsh": "memdeck completion zsh > \"${fpath[1]}/_memdeck\"   # then restart zsh",
    "tcsh": "eval `memdeck completion tcsh`   # in ~/.tcshrc",
}


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (one of :data:`SHELLS`), as text.

    Raises:
        ValueError: ``shell`` is not one shtab generates here.
        ImportError: shtab is not installed.
    """
    if shell not in SHELLS:
        raise ValueError(f"no completion for {shell!r} (choose from {', '.join(SHELLS)})")
    import shtab  # lazy: 0.1 s of imports that no other command needs

    _mark_paths(parser, {"PATH": shtab.DIRECTORY, "FILE": shtab.FILE})
    return shtab.complete(parser, shell=shell)


def _mark_paths(parser: argparse.ArgumentParser, completions: dict[str, Any]) -> None:
    """Give every option with metavar ``PATH`` (a directory) or ``FILE``, in every subparser, shtab's
    directory or file completion (``completions``: metavar -> shtab's completion)."""
    for action in parser._actions:  # noqa: SLF001 - argparse exposes its actions only this way
        if isinstance(action.metavar, str) and action.metavar in completions:
            action.complete = completions[action.metavar]  # type: ignore[attr-defined]  # shtab reads this attribute
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                _mark_paths(sub, completions)


def _completion(args: argparse.Namespace, ctx: CliContext | None) -> int:
    sys.stdout.write(completion_script(args.root_parser, args.shell))  # the parser main() parsed with
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh, tcsh)",
        description="Print a completion script for every memdeck command and option. "
        + " ".join(f"{s}: {h}." for s, h in INSTALL_HINT.items()),
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(handler=_completion, needs_home=False)
