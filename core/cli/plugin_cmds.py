"""``memdeck plugin install|uninstall|status``: the Hermes directory plugin and its opt-in."""

from __future__ import annotations

import argparse
import sys

from ..home import resolve_home
from ..plugin.install import install_plugin, plugin_status, uninstall_plugin
from .common import CliContext, print_json


def _home(args: argparse.Namespace, ctx: CliContext):
    sub_home = getattr(args, "plugin_home", None)
    return resolve_home(sub_home) if sub_home else ctx.home


def _report(res, verb: str) -> None:
    if res.files_changed:
        print(f"{verb} {res.plugin_dir}")
    else:
        print(f"{res.plugin_dir}: already {'up to date' if verb == 'installed' else 'absent'}")
    if res.config_changed:
        print(f"config.yaml: plugins.enabled = {res.enabled} (backup: {res.backup.name if res.backup else 'none, new file'})")
    else:
        print(f"config.yaml: unchanged (plugins.enabled = {res.enabled})")
    for w in res.warnings:
        print(f"memdeck: warning: {w}", file=sys.stderr)


def _os_errors(fn):
    """install/uninstall document ``OSError`` for environment failures (e.g. ``plugins`` is a
    file, no permission): say what failed on stderr and exit 1 instead of a traceback."""
    def run(args: argparse.Namespace, ctx: CliContext) -> int:
        try:
            return fn(args, ctx)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"memdeck: error: {where}{exc.strerror or exc}", file=sys.stderr)
            return 1
    return run


@_os_errors
def _install(args: argparse.Namespace, ctx: CliContext) -> int:
    home = _home(args, ctx)
    res = install_plugin(home, enable=not args.no_enable)
    if args.json:
        print_json({"path": str(res.plugin_dir), "files_changed": res.files_changed,
                    "config_changed": res.config_changed, "backup": str(res.backup) if res.backup else None,
                    "enabled": res.enabled, "warnings": res.warnings})
        return 0
    _report(res, "installed")
    if res.files_changed or res.config_changed:
        print("Start a new Hermes session to load it (Hermes reads plugins at startup); "
              "restart `hermes dashboard` for its Memory tab.")
    return 0


@_os_errors
def _uninstall(args: argparse.Namespace, ctx: CliContext) -> int:
    home = _home(args, ctx)
    res = uninstall_plugin(home)
    if args.json:
        print_json({"path": str(res.plugin_dir), "files_changed": res.files_changed,
                    "config_changed": res.config_changed, "backup": str(res.backup) if res.backup else None,
                    "enabled": res.enabled})
        return 0
    _report(res, "removed")
    return 0


def _status(args: argparse.Namespace, ctx: CliContext) -> int:
    st = plugin_status(_home(args, ctx))
    if args.json:
        print_json(st)
        return 0
    print(f"plugin dir: {st['path']} ({'installed' if st['installed'] else 'not installed'}"
          f"{', up to date' if st['up_to_date'] else (', outdated' if st['installed'] else '')})")
    print(f"enabled in config.yaml: {'yes' if st['enabled'] else 'no'}")
    if st["memlock_enabled"] and st["installed"] and st["enabled"]:
        # both guards would audit and re-inject every turn; only then is there something to do
        print("memlock is also enabled: disable it, memdeck's plugin replaces it", file=sys.stderr)
    elif st["memlock_enabled"]:
        print("memlock is enabled and guards this home; memdeck reads and edits its anchors as they are")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("plugin", help="install/uninstall memdeck's Hermes plugin (MemLock's guard on memdeck's core)")
    psub = p.add_subparsers(dest="plugin_command", metavar="ACTION", required=True)
    for name, fn, help_ in (
        ("install", _install, "write $HERMES_HOME/plugins/memdeck/ and add memdeck to plugins.enabled (backup first)"),
        ("uninstall", _uninstall, "remove memdeck from plugins.enabled (backup first) and delete the plugin directory"),
        ("status", _status, "is the plugin installed, current and enabled?"),
    ):
        q = psub.add_parser(name, help=help_)
        q.add_argument("--home", dest="plugin_home", metavar="PATH", help="Hermes home (default: the global --home / $HERMES_HOME)")
        q.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "install":
            q.add_argument("--no-enable", action="store_true", help="write the files but leave config.yaml alone")
        q.set_defaults(handler=fn)
