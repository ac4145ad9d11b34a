"""The dashboard's user settings: ``$XDG_CONFIG_HOME/memdeck/config.toml`` (or ``config.yaml``).

Only what belongs to the person, not to a Hermes home::

    theme = "textual-light"          # any Textual theme name; default textual-dark
    default_profile = "work"         # the profile the dashboard opens when nothing else says
    [keymap]                         # binding id -> key(s), comma separated (Textual keymap)
    "memdeck.pin" = "ctrl+p"
    "memdeck.quit" = "q,ctrl+c"
    [fleet]                          # memdeck fleet / memdeck metrics: homes beside the profiles
    homes = ["/srv/gateway/.hermes", "ssh://ops@box-2/home/ops/.hermes"]

(``fleet``'s keys: :mod:`memdeck.core.fleet.homes`.) The binding ids are those listed by ``?`` and in README ("Keys"); every memdeck Binding has
one. ``default_profile`` applies when neither ``--home``/``--profile`` nor ``HERMES_HOME``
chose a home (before Hermes' own ``active_profile``). A file that cannot be read or holds
unknown keys, ids or values never stops the dashboard: what is usable is used, the rest is
listed in :attr:`UserSettings.warnings` and shown as a toast.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdeck.core.config import yaml_safe_load
from memdeck.core.fleet.homes import FleetSettings, parse_fleet_settings
from memdeck.core.home import PROFILE_NAME_RE

KNOWN_KEYS = frozenset({"theme", "default_profile", "keymap", "fleet"})


@dataclass(frozen=True)
class UserSettings:
    """The parsed settings (defaults when there is no file).

    Attributes:
        path: the file read, or None.
        theme: a Textual theme name, or None (the default).
        default_profile: a profile name, or None.
        keymap: binding id -> keys, only ids that exist.
        warnings: one line per problem met (the file, a key, an id, a value).
        fleet: the ``fleet`` table (:class:`memdeck.core.fleet.homes.FleetSettings`; its own
            warnings are in ``fleet.warnings``, also listed in ``warnings``).
    """

    path: Path | None = None
    theme: str | None = None
    default_profile: str | None = None
    keymap: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    fleet: FleetSettings = field(default_factory=FleetSettings)


def settings_paths(env: Mapping[str, str] | None = None) -> list[Path]:
    """The candidate files, first found wins: ``config.toml`` then ``config.yaml`` in
    ``$XDG_CONFIG_HOME/memdeck`` (default ``~/.config/memdeck``)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".config"
    return [root / "memdeck" / "config.toml", root / "memdeck" / "config.yaml"]


def load_settings(binding_ids: Iterable[str] | None = None, themes: Iterable[str] | None = None,
                  env: Mapping[str, str] | None = None) -> UserSettings:
    """Read the first settings file that exists. Never raises.

    Args:
        binding_ids: the ids a keymap may name (the app's and screens' Binding ids); None
            keeps every id unchecked (the launcher needs only ``default_profile``).
        themes: the theme names the app has; None keeps the theme unchecked.
        env: the environment (default ``os.environ``).
    """
    path = next((p for p in settings_paths(env) if p.is_file()), None)
    if path is None:
        return UserSettings()
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml_safe_load(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError, ImportError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return UserSettings(path=path, warnings=(f"{path}: not read ({first}); using the defaults",))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return UserSettings(path=path, warnings=(f"{path}: expected a table of settings; using the defaults",))
    warnings: list[str] = [f"{path}: unknown setting {k!r} ignored" for k in data if k not in KNOWN_KEYS]
    theme = data.get("theme")
    if theme is not None and (not isinstance(theme, str) or (themes is not None and theme not in set(themes))):
        warnings.append(f"{path}: theme {theme!r} is not one of this Textual's themes; using the default")
        theme = None
    profile = data.get("default_profile")
    if profile is not None and (not isinstance(profile, str) or not PROFILE_NAME_RE.match(profile)):
        warnings.append(f"{path}: default_profile {profile!r} is not a profile name; ignored")
        profile = None
    keymap: dict[str, str] = {}
    raw = data.get("keymap") or {}
    if not isinstance(raw, dict):
        warnings.append(f"{path}: keymap must be a table of binding id = keys; ignored")
        raw = {}
    known = None if binding_ids is None else set(binding_ids)
    for bid, keys in raw.items():
        if known is not None and bid not in known:
            warnings.append(f"{path}: keymap names an unknown binding id {bid!r} (see ? for the ids)")
        elif not isinstance(keys, str) or not keys.strip():
            warnings.append(f"{path}: keymap {bid!r} needs keys as a string such as \"ctrl+p\"")
        else:
            keymap[bid] = keys.strip()
    fleet = parse_fleet_settings(data.get("fleet"), str(path))
    warnings.extend(fleet.warnings)
    return UserSettings(path=path, theme=theme, default_profile=profile, keymap=keymap, warnings=tuple(warnings),
                        fleet=fleet)


def all_binding_ids(app_class: Any) -> list[str]:
    """Every Binding id of the app class, its screens and the panels (what a keymap may name)."""
    from textual.binding import Binding

    from .keymap import app_bindings, screen_bindings
    from .screens.confirm import ConfirmScreen
    from .screens.help import HelpScreen
    from .screens.notifications import NotificationsScreen
    from .screens.pickers import PickerScreen
    from .widgets.panels.base import Panel

    out: list[str] = []
    sources: list[Any] = [*app_bindings(), *screen_bindings(), *app_class.BINDINGS]
    for cls in (ConfirmScreen, HelpScreen, NotificationsScreen, PickerScreen, Panel):
        sources.extend(getattr(cls, "BINDINGS", ()))
    for b in sources:
        if isinstance(b, Binding) and b.id:
            out.append(b.id)
    return sorted(set(out))
