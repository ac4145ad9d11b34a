"""Generate ``docs/memdeck.1``, memdeck's man page, from the real parser with argparse-manpage
(https://github.com/praiskup/argparse-manpage; in the ``test`` extra).

    python docs/make_manpage.py            # rewrite docs/memdeck.1
    python docs/make_manpage.py --check    # exit 1 if docs/memdeck.1 is not current
    man -l docs/memdeck.1                  # read it

Every command and option comes from :func:`memdeck.core.cli.build_parser`, so the page cannot
drift from the CLI (tests/core/test_manpage.py fails when it is stale); the sections argparse has
no place for (environment, exit status, completion, files) are written here. The output does not
depend on the terminal (80 columns) or the date (none is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "memdeck.1"

EXTRA = r"""
.SH ENVIRONMENT
.TP
.B HERMES_HOME
The Hermes home memdeck reads and writes when neither \-\-home nor \-\-profile is given
(then Hermes' active profile, then ~/.hermes), as Hermes resolves it.
.TP
.B MEMDECK_CONFIG
The dashboard's settings file when \-\-config is not given (a file that does not exist is a
warning and the defaults). memdeck \-\-help says which file is in use.
.SH EXIT STATUS
.TP
.B 0
success.
.TP
.B 1
a write was refused or failed, or a file could not be read; the reason is on stderr and nothing
was written.
.TP
.B 2
a usage error (a bad option, profile or \-\-host without \-\-allow\-remote).
.TP
.B 130
interrupted (Ctrl+C).
.TP
.B 141
the reader of the output went away (memdeck status | head).
.SH SERVE
.B memdeck serve
listens on 127.0.0.1:8765 and prints one URL with a random 128\-bit token; the browser exchanges
it for an HttpOnly, SameSite=Strict cookie (Secure behind https). Every route and the WebSocket
answer 401 without the cookie; Host must be a loopback name or an \-\-allowed\-host; the WebSocket's
Origin must be the page's own. Each browser tab runs its own dashboard process; the server stops
them all when it exits. Reach a remote machine through an SSH tunnel
(ssh \-L 8765:127.0.0.1:8765 host), Tailscale Serve or Cloudflare Access (README).
.SH SHELL COMPLETION
.nf
bash:  eval "$(memdeck completion bash)"                 # in ~/.bashrc
zsh:   memdeck completion zsh > "${fpath[1]}/_memdeck"   # then restart zsh
tcsh:  eval `memdeck completion tcsh`                    # in ~/.tcshrc
.fi
.SH FILES
.TP
.I <user config directory>/config.toml, config.yaml
The settings of the dashboard, serve, fleet, metrics and watch (theme, default profile, keymap,
fleet homes, the [alerts] thresholds), in the platform's user config directory: $XDG_CONFIG_HOME/memdeck (else ~/.config/memdeck) on Linux, ~/Library/Application
Support/memdeck on macOS, %APPDATA%\\memdeck on Windows; then ~/.config/memdeck on every platform.
\-\-config FILE, then MEMDECK_CONFIG, name another file.
.TP
.I $HERMES_HOME/memories/MEMORY.md, USER.md
Hermes' memory files (entries separated by \(sc), written under Hermes' own sidecar locks.
.TP
.I $HERMES_HOME/memdeck/memdeck.db
memdeck's journal, archive, change history and caches.
.TP
.I $HERMES_HOME/pending/memory/*.json
Hermes' staged memory writes (pending approve / reject).
.SH SEE ALSO
The README and docs/ARCHITECTURE.md of memdeck; Hermes Agent's documentation.
"""


def render() -> str:
    """The man page's roff text, from the parser as it is now."""
    from argparse_manpage.manpage import Manpage

    from memdeck.core import __version__
    from memdeck.core.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"  # argparse wraps help to the terminal: fix it
    try:
        page = Manpage(build_parser())
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    page.date = ""
    page.source = f"memdeck {__version__}"
    page.manual = "memdeck manual"
    page.description = "a live cockpit for Hermes Agent's memory, sessions and MemLock anchors"
    # a command's help is a %-format for argparse ("90%% usage"), which argparse-manpage prints as
    # it is: undo the escape, as argparse's own --help does
    return str(page).replace("%%", "%").rstrip("\n") + "\n" + EXTRA.lstrip("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/memdeck.1 is not current")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is stale: run python docs/make_manpage.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
