"""The ``memdeck`` console script: a command runs headless through :mod:`memdeck.core.cli`;
without one, the Textual dashboard opens on a Hermes home (or the demo home).

Textual is imported lazily here, only on the dashboard path, so ``memdeck status`` never pays
for it. Every failure is reported as one line on stderr, never a
traceback: exit 1 for a failure (the dashboard cannot be imported, the home cannot be built or
read), 2 for a usage error (bad ``--profile``/``--home``), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from memdeck.core.errors import MemdeckError
from memdeck.core.home import HermesHome, HomeError, UnknownUserHome, resolve_home


def _say(msg: str) -> None:
    print(f"memdeck: {msg}", file=sys.stderr)


def resolve_dashboard_home(args: argparse.Namespace) -> tuple[HermesHome, bool]:
    """The home the dashboard opens and whether it is the demo home.

    With ``--demo`` the demo home is rebuilt from scratch (seed ``--seed``, default 7) in
    :func:`core.demo.demo_home_dir` (``$XDG_CACHE_HOME/memdeck/demo-<seed>``, or a temp dir when
    the cache is not writable), its clock set to the current second so the live session looks
    live. Otherwise the home is resolved like every command (``--home``, ``--profile``,
    ``HERMES_HOME``, the active profile, ``~/.hermes``), except that the ``default_profile``
    of memdeck's settings file (:mod:`memdeck.tui.settings`) comes before the active profile.

    Raises:
        HomeError: the profile name is invalid or the profile does not exist.
        MemdeckError: the resolved home is not a directory.
        OSError: the demo home could not be written anywhere.
    """
    if getattr(args, "demo", False):
        from memdeck.core.demo import DEMO_SEED, fresh_demo_home

        seed = getattr(args, "seed", None)
        return fresh_demo_home(DEMO_SEED if seed is None else int(seed), now=float(int(time.time()))), True
    profile = getattr(args, "profile", None)
    if profile is None and getattr(args, "home", None) is None and not os.environ.get("HERMES_HOME", "").strip():
        from .settings import load_settings

        # memdeck's own default, before Hermes' active_profile
        profile = load_settings(explicit=getattr(args, "config", None)).default_profile
    home = resolve_home(getattr(args, "home", None), profile)
    from memdeck.core.cli import require_home

    require_home(home)  # NoHome, as every command: exit 4
    return home, False


def _load_factory() -> Any:
    """``tui.app.make_app``, or ``None`` with the reason printed when the TUI cannot be imported."""
    try:
        from memdeck.tui.app import make_app  # lazy: the only place core reaches for the TUI
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        _say(f"error: the dashboard is not available ({missing} could not be imported); "
             "reinstall memdeck with its dependencies (pip install memdeck)")
        return None
    return make_app


def _home_or_exit(args: argparse.Namespace) -> tuple[HermesHome, bool] | int:
    """:func:`resolve_dashboard_home`, or the exit code with the reason printed: 2 for a usage
    error (bad ``--profile``/``--home``), 4 when there is no Hermes home there (as every command:
    ``core/cli/common.py`` ``EXIT_CODES``), 1 for a failure, 130 on Ctrl-C."""
    from memdeck.core.cli.common import EXIT_NO_HOME, NoHome

    try:
        return resolve_dashboard_home(args)
    except UnknownUserHome as exc:  # `--home ~nosuchuser/x`: no home there, as a missing directory
        _say(f"error: {exc}; or try `memdeck --demo`")
        return EXIT_NO_HOME
    except HomeError as exc:
        _say(f"error: {exc}")
        return 2
    except NoHome as exc:
        _say(f"error: {exc}; or try `memdeck --demo`")
        return EXIT_NO_HOME  # as every command
    except (MemdeckError, OSError) as exc:
        _say(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


def _config_or_exit(args: argparse.Namespace) -> Path | int | None:
    """:func:`memdeck.tui.settings.config_path` of ``--config``, or exit code 2 with the reason printed."""
    from memdeck.core.cli.common import UsageError

    from .settings import config_path

    try:
        return config_path(getattr(args, "config", None))
    except UsageError as exc:
        _say(f"error: {exc}")
        return 2


def help_epilog(argv: list[str] | tuple[str, ...]) -> str:
    """The end of ``memdeck --help``: which settings file the dashboard uses and how it was chosen
    (``--config`` as given in ``argv``, else ``MEMDECK_CONFIG``, else the default place;
    :func:`memdeck.tui.settings.settings_note`). Never raises."""
    from .settings import settings_note

    pre = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    pre.add_argument("--config")
    try:
        known, _rest = pre.parse_known_args(list(argv))
        named = known.config
    except (argparse.ArgumentError, SystemExit):  # `--config` without a value: the real parser says so
        named = None
    return settings_note(explicit=named)


def run_dashboard(args: argparse.Namespace) -> int:
    """Open the dashboard for the home ``args`` select; returns the process exit code.

    Args:
        args: the parsed ``memdeck`` arguments (``home``, ``profile``, ``demo``, ``seed``,
            ``read_only``, ``config``: the settings file, :mod:`memdeck.tui.settings`).

    Returns:
        0 when the app quit normally (or the app's own return code), 1 on a failure, 2 on a usage
        error (bad ``--profile``/``--home``, a ``--config`` file that does not exist), 4 when there
        is no Hermes home there, 130 on Ctrl-C. The reason of a failure is printed on one stderr line.
    """
    settings_file = _config_or_exit(args)
    if isinstance(settings_file, int):
        return settings_file
    resolved = _home_or_exit(args)
    if isinstance(resolved, int):
        return resolved
    home, demo = resolved
    try:
        from memdeck.core.config import load_config  # here, not at the top: a command's process needs none

        config = load_config(home)  # never raises: problems are the config's warnings
        from .head_start import HeadStart  # no Textual: the first refresh runs while Textual loads

        head_start = HeadStart(home, config)
    except KeyboardInterrupt:
        return 130
    make_app = _load_factory()
    if make_app is None:
        return 1
    try:
        app = make_app(home, config=config, watch=True, demo=demo, user_settings=True, head_start=head_start,
                       read_only=bool(getattr(args, "read_only", False)), settings_file=settings_file)
        app.run()
        code = getattr(app, "return_code", 0) or 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place a broad catch is right: never show a traceback
        _say(f"error: the dashboard stopped: {type(exc).__name__}: {exc}")
        return 1
    if demo:
        print("\n".join(demo_farewell(home.path)), file=sys.stderr)
    return int(code)


def run_serve(args: argparse.Namespace) -> int:
    """``memdeck serve``: the dashboard in a browser (:mod:`memdeck.tui.serve`, imported only
    for this command: aiohttp and textual-serve cost the other commands nothing). The home is
    resolved as the dashboard's (:func:`resolve_dashboard_home`); each tab gets its path.

    Returns:
        :func:`memdeck.tui.serve.serve`'s exit code, or 2 for ``--home`` with ``--profile`` (or
        ``--demo`` with either), 1 when the server cannot be imported.
    """
    home_arg, profile_arg = getattr(args, "home", None), getattr(args, "profile", None)
    if home_arg is not None and profile_arg is not None:
        _say("error: --home and --profile select the home two ways; give one")
        return 2
    if getattr(args, "demo", False) and (home_arg is not None or profile_arg is not None):
        _say("error: --demo serves the demo home; it does not take --home or --profile")
        return 2
    try:
        from .serve import ServeOptions, serve
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        _say(f"error: memdeck serve is not available ({missing} could not be imported); "
             "reinstall memdeck with its dependencies (pip install memdeck)")
        return 1
    settings_file = _config_or_exit(args)
    if isinstance(settings_file, int):
        return settings_file
    resolved = _home_or_exit(args)
    if isinstance(resolved, int):
        return resolved
    home, _demo = resolved
    return serve(ServeOptions(
        home=Path(home.path).resolve(), host=args.host, port=args.port,
        read_only=bool(getattr(args, "read_only", False)), allowed_hosts=tuple(args.allowed_host or ()),
        allow_remote=args.allow_remote, check=args.check, label=home.profile, settings_file=settings_file,
    ))


def demo_farewell(path: Any) -> list[str]:
    """What ``memdeck --demo`` prints on exit (stderr): where the demo home is, and a command line
    to paste that runs the CLI on it (the help screen ``?`` says the same while the dashboard is
    open; issue 22 #13)."""
    q = shlex.quote(str(path))
    return [f"memdeck: the demo home is {path} (rebuilt fresh on every --demo run).",
            "memdeck: try the command line on it (history, recall deploy, anchors ... work too):",
            f"  memdeck --home {q} status"]


def run_fleet(args: argparse.Namespace, ctx: Any) -> int:
    """``memdeck fleet`` on a terminal: the fleet screen (:mod:`memdeck.tui.fleet`, imported only
    here); each local home's dashboard it opens is given the same ``--config``."""
    from .fleet import run_fleet as run

    return run(args, ctx)


def fleet_settings(config: str | None = None) -> Any:
    """The ``fleet`` table of the person's settings file (:attr:`memdeck.tui.settings.UserSettings.fleet`):
    the file ``config`` names (``--config``), else ``MEMDECK_CONFIG``, else the default place.

    Raises:
        UsageError: ``config`` names no file (exit 2, as the dashboard's ``--config``).
    """
    from .settings import config_path, load_settings

    return load_settings(explicit=config_path(config)).fleet


def alert_settings(config: str | None = None) -> Any:
    """The ``alerts`` table of the person's settings file (:attr:`memdeck.tui.settings.UserSettings.alerts`),
    chosen as :func:`fleet_settings` chooses it.

    Raises:
        UsageError: ``config`` names no file (exit 2).
    """
    from .settings import config_path, load_settings

    return load_settings(explicit=config_path(config)).alerts


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memdeck`` console script; returns the process exit code."""
    from memdeck.core.cli import main as cli_main

    return cli_main(argv, dashboard=run_dashboard, serve=run_serve, help_epilog=help_epilog, fleet=run_fleet,
                    fleet_settings=fleet_settings, alert_settings=alert_settings)
