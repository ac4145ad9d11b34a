"""The dashboard's user settings: one file, ``config.toml`` (or ``config.yaml``).

Which file (the first rule that applies; :func:`settings_paths`):

1. ``memdeck --config FILE`` (the launcher refuses a FILE that does not exist, exit 2);
2. the environment variable ``MEMDECK_CONFIG`` (:data:`CONFIG_ENV`; a file that does not exist is
   a warning and the defaults);
3. ``config.toml`` then ``config.yaml`` in the platform's user config directory,
   ``platformdirs.user_config_dir("memdeck")`` (:func:`native_dir`): ``$XDG_CONFIG_HOME/memdeck``,
   else ``~/.config/memdeck`` on Linux; ``~/Library/Application Support/memdeck`` on macOS (recent
   platformdirs honour an absolute ``XDG_CONFIG_HOME`` there too);
   ``%APPDATA%\\memdeck`` on Windows; then the same two names in the place earlier memdeck versions
   read on every platform, ``$XDG_CONFIG_HOME/memdeck`` else ``~/.config/memdeck``
   (:func:`legacy_dir`), when that is another directory (macOS, Windows, or an
   ``XDG_CONFIG_HOME`` that is not absolute, which the XDG spec and platformdirs ignore).

A file named ``*.toml`` is TOML, any other name YAML. Only what belongs to the person, not to a
Hermes home::

    theme = "textual-light"          # any Textual theme name; default textual-dark (saved when
                                     # one is chosen: t, or the palette's Themes picker)
    layout = "overview"              # the layout at launch: "panels" (default) or "overview"
    default_profile = "work"         # the profile the dashboard opens when nothing else says
    [keymap]                         # binding id -> key(s), comma separated (Textual keymap)
    "memdeck.pin" = "ctrl+k"
    "memdeck.quit" = "q,ctrl+w"
    [fleet]                          # memdeck fleet / memdeck metrics: homes beside the profiles
    homes = ["/srv/gateway/.hermes", "ssh://ops@box-2/home/ops/.hermes"]
    [alerts]                         # toasts and `memdeck watch` events
    provider_quiet_turns = 3         # a memory provider that injected nothing for this many turns
    provider_budget_pct = 20         # its fences over this share of the compaction threshold
    pending_age_hours = 24           # the oldest unreviewed pending write older than this

(``fleet``'s keys: :mod:`memdeck.core.fleet.homes`; ``alerts``': :mod:`memdeck.core.overview.alerts`.)
The binding ids are those listed by ``?`` and in README ("Keys"); every memdeck Binding has one.
``default_profile`` applies when neither ``--home``/``--profile`` nor ``HERMES_HOME``
chose a home (before Hermes' own ``active_profile``). A file that cannot be read or holds
unknown keys, ids or values never stops the dashboard: what is usable is used, the rest is
listed in :attr:`UserSettings.warnings`, shown as a toast and on the help screen.

The file is read as every config memdeck reads (``core/config.py``: no FIFO, at most
:data:`MAX_SETTINGS_BYTES` on disk, aliases expanded to at most ``MAX_CONFIG_NODES`` values,
200 levels deep): a YAML alias bomb or a 13 MB file is refused in milliseconds, and the dashboard
opens with the defaults (issue 22 #6).

A keymap may move any action to other keys, but it never takes the keys of quit (``q``,
``ctrl+q``), the command palette (``ctrl+p``) or help (``?``) from them
(:data:`memdeck.tui.keymap.RESERVED_IDS`): such a key is refused with a warning; a key another
action had is given over, with a warning that names the action that lost it (issue 22 #10).
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdeck.core.config import ConfigTooLarge, check_expanded_size, load_yaml_document, read_config_text
from memdeck.core.fleet.homes import FleetSettings, parse_fleet_settings
from memdeck.core.home import PROFILE_NAME_RE
from memdeck.core.overview.alerts import AlertSettings, parse_alert_settings

KNOWN_KEYS = frozenset({"theme", "layout", "default_profile", "keymap", "fleet", "alerts"})

#: The dashboard's layouts (``layout`` key, ``memdeck --layout``): every panel on its tab, or the
#: one-screen overview that fits beside an agent (80x24 and up).
LAYOUTS = ("panels", "overview")

#: The environment variable naming the settings file (``--config`` wins over it).
CONFIG_ENV = "MEMDECK_CONFIG"

#: How the settings file was chosen (:attr:`UserSettings.source`): ``--config``, the
#: environment variable, or the default places.
SOURCES = ("--config", CONFIG_ENV, "default")

#: The largest settings file read, in bytes: a theme, a profile and a keymap of every binding id
#: are under 4 KB; 64 KiB parses in a fraction of a second even with the pure-Python YAML loader.
MAX_SETTINGS_BYTES = 64 * 1024


@dataclass(frozen=True)
class UserSettings:
    """The parsed settings (defaults when there is no file).

    Attributes:
        path: the file read, or None.
        theme: a Textual theme name, or None (the default).
        layout: one of :data:`LAYOUTS`, or None (the default, ``panels``).
        default_profile: a profile name, or None.
        keymap: binding id -> keys (Textual key names, comma separated), only ids that exist and
            keys that take nothing reserved.
        warnings: one line per problem met (the file, a key, an id, a value, a key collision).
        candidates: the files looked for, first found wins (:func:`settings_paths`).
        source: how they were chosen, one of :data:`SOURCES`.
        fleet: the ``fleet`` table (:class:`memdeck.core.fleet.homes.FleetSettings`; its own
            warnings are in ``fleet.warnings``, also listed in ``warnings``).
        alerts: the ``alerts`` table (:class:`memdeck.core.overview.alerts.AlertSettings`; its
            warnings are listed in ``warnings`` too).
    """

    path: Path | None = None
    theme: str | None = None
    layout: str | None = None
    default_profile: str | None = None
    keymap: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    candidates: tuple[Path, ...] = ()
    source: str = "default"
    fleet: FleetSettings = field(default_factory=FleetSettings)
    alerts: AlertSettings = field(default_factory=AlertSettings)
    #: False when the file exists but was not read (too large, not parsed, not a table): the
    #: dashboard then saves nothing into it (:func:`settings_target` is None)
    parsed: bool = True

    @property
    def origin(self) -> str:
        """How the file was chosen, in words: ``from --config``, ``from MEMDECK_CONFIG``, ``the
        default place``."""
        return "the default place" if self.source == "default" else f"from {self.source}"


def native_dir() -> Path:
    """The platform's user config directory for memdeck: ``platformdirs.user_config_dir("memdeck")``
    (Linux: ``$XDG_CONFIG_HOME/memdeck`` when that is absolute, else ``~/.config/memdeck``;
    macOS: ``~/Library/Application Support/memdeck``; Windows: ``%APPDATA%\\memdeck``). Read from
    the process environment (platformdirs reads ``os.environ``)."""
    import platformdirs

    return Path(platformdirs.user_config_dir("memdeck", appauthor=False, roaming=True))


def legacy_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where memdeck before platformdirs looked, on every platform: ``$XDG_CONFIG_HOME/memdeck``
    (``~`` expanded, any path) else ``~/.config/memdeck``."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".config"
    return root / "memdeck"


def settings_paths(env: Mapping[str, str] | None = None, explicit: str | os.PathLike[str] | None = None
                   ) -> tuple[list[Path], str]:
    """The candidate files, first found wins, and how they were chosen (one of :data:`SOURCES`).

    ``explicit`` (``--config``) alone, else ``$MEMDECK_CONFIG`` (in ``env``, default
    ``os.environ``) alone, else ``config.toml`` then ``config.yaml`` in :func:`native_dir`, then
    in :func:`legacy_dir` when that is another directory.
    """
    env = os.environ if env is None else env
    if explicit is not None and str(explicit).strip():
        return [Path(explicit).expanduser()], "--config"
    named = env.get(CONFIG_ENV, "").strip()
    if named:
        return [Path(named).expanduser()], CONFIG_ENV
    dirs = [native_dir()]
    legacy = legacy_dir(env)
    if legacy != dirs[0]:
        dirs.append(legacy)
    return [d / name for d in dirs for name in ("config.toml", "config.yaml")], "default"


def config_path(named: str | os.PathLike[str] | None) -> Path | None:
    """The absolute path of the settings file ``--config`` names (None without the option): a
    file asked for by name must be there (``MEMDECK_CONFIG`` naming a missing file is only a
    warning, :func:`load_settings`). Every process that reads the settings checks ``--config``
    with it: the dashboard, ``serve``, ``fleet`` and ``metrics``.

    Raises:
        UsageError: it is not a file (the message names it and says why; exit 2).
    """
    from memdeck.core.cli.common import UsageError

    if named is None:
        return None
    path = Path(named).expanduser()
    if not path.is_file():
        raise UsageError(f"--config {os.fspath(named)}: {'not a file' if path.exists() else 'no such file'} "
                         "(the dashboard's settings file; README 'Settings')")
    return path.resolve()


def settings_note(env: Mapping[str, str] | None = None, explicit: str | os.PathLike[str] | None = None) -> str:
    """Which settings file the dashboard uses (``memdeck --help``'s epilog): the file and how it
    was chosen, or where memdeck looks when there is none; each path on a line of its own (a help
    formatter must not break one). Never raises; no file is read (one ``stat`` per candidate)."""
    try:
        paths, source = settings_paths(env, explicit)
    except Exception as exc:  # noqa: BLE001 - a help text never fails (no home directory, a bad path)
        return f"The dashboard's settings file could not be located ({exc})."
    found = next((p for p in paths if p.is_file()), None)
    how = "the default place" if source == "default" else f"from {source}"
    if found is not None:
        return f"The dashboard's settings file ({how}):\n  {found}"
    if source != "default":
        return f"The dashboard's settings file ({how}) does not exist, the defaults apply:\n  {paths[0]}"
    return ("The dashboard has no settings file, the defaults apply. It looks for:\n"
            + "".join(f"  {p}\n" for p in paths) + f"(--config FILE or {CONFIG_ENV} name another file)")


def _parse(path: Path) -> Any:
    """The document of a settings file, bounded like every config memdeck reads.

    Raises:
        ConfigTooLarge: over :data:`MAX_SETTINGS_BYTES`, an alias bomb, or nested too deep.
        OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError, ImportError: unreadable.
    """
    text = read_config_text(path, max_bytes=MAX_SETTINGS_BYTES)
    if path.suffix != ".toml":
        return load_yaml_document(text)
    try:
        data = tomllib.loads(text)
    except RecursionError as exc:  # arrays thousands deep: the parser's own recursion gives up
        raise ConfigTooLarge("nests too deeply for the TOML parser") from exc
    check_expanded_size(data)
    return data


def _unread(path: Path | None, candidates: tuple[Path, ...], source: str, warnings: tuple[str, ...]) -> UserSettings:
    """The defaults, for a file that was not read: its warnings also go with the ``fleet`` and
    ``alerts`` tables, so ``fleet``, ``metrics`` and ``watch`` say on stderr that the file's
    ``fleet.homes`` and ``alerts`` were not used, as the dashboard does (issue 40 #7: a refused
    file, over 64 KiB, an alias bomb or too deep, dropped ``fleet.homes`` silently)."""
    return UserSettings(path=path, candidates=candidates, source=source, warnings=warnings,
                        fleet=FleetSettings(warnings=warnings), alerts=AlertSettings(warnings=warnings),
                        parsed=path is None)  # a file that exists but was not read: nothing is saved into it


def load_settings(binding_ids: Iterable[str] | None = None, themes: Iterable[str] | None = None,
                  env: Mapping[str, str] | None = None, *,
                  default_keys: Mapping[str, Iterable[str]] | None = None,
                  explicit: str | os.PathLike[str] | None = None) -> UserSettings:
    """Read the first settings file that exists (:func:`settings_paths`). Never raises.

    Args:
        binding_ids: the ids a keymap may name (the app's and screens' Binding ids); None
            keeps every id unchecked (the launcher needs only ``default_profile``).
        themes: the theme names the app has; None keeps the theme unchecked.
        env: the environment (default ``os.environ``).
        default_keys: binding id -> its default keys on the main screen
            (:func:`memdeck.tui.keymap.main_screen_keys`); when given, a keymap key that a
            reserved binding holds is refused and one that another binding holds is reported.
        explicit: the file ``--config`` names (else ``MEMDECK_CONFIG``, else the default places).
            A file named by ``--config`` or ``MEMDECK_CONFIG`` that does not exist is a warning.
    """
    paths, source = settings_paths(env, explicit)
    candidates = tuple(paths)
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        missing = () if source == "default" else (f"{candidates[0]} (from {source}) does not exist or is not a file; "
                                                  "using the defaults",)
        return _unread(None, candidates, source, missing)
    try:
        data = _parse(path)
    except ConfigTooLarge as exc:
        return _unread(path, candidates, source, (f"{path}: not read: it {exc}; using the defaults",))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError, ImportError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return _unread(path, candidates, source, (f"{path}: not read ({first}); using the defaults",))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return _unread(path, candidates, source, (f"{path}: expected a table of settings; using the defaults",))
    warnings: list[str] = [f"{path}: unknown setting {k!r} ignored" for k in data if k not in KNOWN_KEYS]
    theme = data.get("theme")
    if theme is not None and (not isinstance(theme, str) or (themes is not None and theme not in set(themes))):
        warnings.append(f"{path}: theme {theme!r} is not one of this Textual's themes; using the default")
        theme = None
    layout = data.get("layout")
    if layout is not None and layout not in LAYOUTS:
        warnings.append(f"{path}: layout {layout!r} is not one of {', '.join(LAYOUTS)}; using the default")
        layout = None
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
            warnings.append(f"{path}: keymap names an unknown binding id {bid!r} (? lists the ids)")
        elif not isinstance(keys, str) or not keys.replace(",", "").strip():
            warnings.append(f"{path}: keymap {bid!r} needs keys as a string such as \"ctrl+k\"")
        elif known is None:
            keymap[str(bid)] = keys.strip()  # the launcher reads only default_profile: no Textual import
        else:
            good = []
            for k in normalized_keys(keys):
                if is_key_name(k):
                    good.append(k)
                else:
                    shown = k if len(k) <= 40 else k[:40] + "…"
                    warnings.append(f"{path}: keymap {bid!r}: {shown!r} is not a key name Textual knows "
                                    "(e.g. ctrl+k, f2, question_mark); ignored")
            if good:
                keymap[str(bid)] = ",".join(good)
    if default_keys is not None:
        keymap, more = check_collisions(keymap, default_keys)
        warnings.extend(f"{path}: {w}" for w in more)
    fleet = parse_fleet_settings(data.get("fleet"), str(path))
    warnings.extend(fleet.warnings)
    alerts = parse_alert_settings(data.get("alerts"), str(path))
    warnings.extend(alerts.warnings)
    return UserSettings(path=path, theme=theme, layout=layout, default_profile=profile, keymap=keymap, warnings=tuple(warnings),
                        candidates=candidates, source=source, fleet=fleet, alerts=alerts)


#: Modifiers Textual puts before a key name (``ctrl+shift+f2``).
_MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})


@functools.lru_cache(maxsize=1)
def _key_names() -> frozenset[str]:
    """The key names Textual can report (without modifiers): its ``Keys`` enum, ``f1``-``f24``,
    ``space``, and the name of every printable ASCII character (``a``, ``A``, ``question_mark``)."""
    from textual.keys import Keys

    names = {k.value.rsplit("+", 1)[-1] for k in Keys} | {f"f{n}" for n in range(1, 25)} | {"space", "enter"}
    names |= set(normalized_keys(",".join(chr(c) for c in range(33, 127) if chr(c) != ",")))
    names.add("comma")
    return frozenset(names)


def is_key_name(key: str) -> bool:
    """Whether ``key`` (normalised, :func:`normalized_keys`) is one Textual can bind: modifiers
    joined by ``+`` then a key name (:func:`_key_names`). ``ctrl+``, an escape sequence or a word
    would be bound silently and never fire."""
    *mods, name = key.split("+")
    return bool(name) and all(m in _MODIFIERS for m in mods) and name in _key_names()


def normalized_keys(keys: str) -> list[str]:
    """Comma-separated keys as Textual names them (``"?, ctrl+k"`` -> ``["question_mark",
    "ctrl+k"]``), blanks dropped: what ``App.set_keymap`` binds (Textual's ``Binding.make_bindings``)."""
    from textual.binding import Binding

    parts = [k.strip() for k in keys.split(",") if k.strip()]
    if not parts:
        return []
    return [b.key for b in Binding.make_bindings([Binding(",".join(parts), "noop")])]


def check_collisions(keymap: Mapping[str, str], default_keys: Mapping[str, Iterable[str]]
                     ) -> tuple[dict[str, str], list[str]]:
    """The keymap with every key a reserved binding keeps removed, and one warning per collision.

    After the keymap, each binding holds its keymap keys, or its default keys when the keymap does
    not name it. A keymap key held by a binding of :data:`memdeck.tui.keymap.RESERVED_IDS` (quit,
    ``ctrl+q``, the palette, help) is refused: quit and help must always be reachable (a keymap
    may still move those bindings themselves). A key held by another binding goes to the keymap's
    binding (Textual's ``set_keymap`` does that silently); the warning names the binding that
    lost it, and says when it is left with no key (the command palette still runs it).

    Args:
        keymap: binding id -> normalised keys (:func:`normalized_keys`, comma joined).
        default_keys: binding id -> default keys (:func:`memdeck.tui.keymap.main_screen_keys`).
    """
    from .keymap import RESERVED_IDS

    def show(key: str) -> str:
        return {"question_mark": "?", "slash": "/"}.get(key, key)

    effective = {bid: [k for k in keys] for bid, keys in default_keys.items()}
    for bid, keys in keymap.items():
        effective[bid] = keys.split(",")
    holder: dict[str, str] = {}  # key -> the binding that keeps it by default (not rebound away)
    for bid, keys in default_keys.items():
        if bid in keymap:
            continue
        for k in keys:
            holder.setdefault(k, bid)
    reserved_keys = {k: bid for bid in RESERVED_IDS for k in effective.get(bid, ())}
    out: dict[str, str] = {}
    warnings: list[str] = []
    claimed: dict[str, str] = {}  # key -> the keymap binding that took it first
    for bid, keys in keymap.items():
        kept = []
        for k in keys.split(","):
            owner = reserved_keys.get(k)
            if owner is not None and owner != bid:
                warnings.append(f"keymap {bid!r}: {show(k)!r} is the key of {owner} and stays its key "
                                f"(quit, the palette and help are always reachable); {show(k)!r} ignored")
                continue
            if claimed.get(k, bid) != bid:
                warnings.append(f"keymap {bid!r}: {show(k)!r} is already given to {claimed[k]} by this keymap; ignored")
                continue
            claimed[k] = bid
            other = holder.get(k)
            if other is not None and other != bid:
                left = [x for x in effective.get(other, ()) if x != k]
                effective[other] = left
                warnings.append(f"keymap {bid!r}: {show(k)!r} was the key of {other}, which now has "
                                + (f"{', '.join(show(x) for x in left)}" if left else "no key (ctrl+p still runs it)"))
            kept.append(k)
        if kept:
            out[bid] = ",".join(kept)
        else:
            warnings.append(f"keymap {bid!r}: no key left to bind; it keeps its default")
    return out, warnings


def all_binding_ids(app_class: Any) -> list[str]:
    """Every Binding id of the app class, its screens and the panels (what a keymap may name)."""
    from textual.binding import Binding

    from .keymap import PANEL_ACTIONS, app_bindings, panel_bindings, screen_bindings
    from .screens.confirm import ConfirmScreen
    from .screens.editors import EntryEditScreen, PinScreen
    from .screens.help import HelpScreen
    from .screens.notifications import NotificationsScreen
    from .screens.pickers import PickerScreen
    from .widgets.option_list import DeckOptionList
    from .widgets.panels.base import Panel, SteadyInput
    from .widgets.table import DeckTable

    out: list[str] = []
    sources: list[Any] = [*app_bindings(), *screen_bindings(), *app_class.BINDINGS,
                          *(b for pid in set(PANEL_ACTIONS.values()) for b in panel_bindings(pid))]
    for cls in (ConfirmScreen, EntryEditScreen, PinScreen, HelpScreen, NotificationsScreen, PickerScreen, Panel,
                SteadyInput, DeckTable, DeckOptionList):
        sources.extend(getattr(cls, "BINDINGS", ()))
    for b in sources:
        if isinstance(b, Binding) and b.id:
            out.append(b.id)
    return sorted(set(out))


def save_setting(path: Path, key: str, value: str) -> None:
    """Set the top-level ``key`` to the string ``value`` in the settings file ``path`` (TOML for a
    ``*.toml`` name, else YAML, as :func:`load_settings` reads it), keeping every other line and
    comment as it is: the key's line is replaced when there is one (in TOML, before the first
    ``[table]``), else put first. The file is created with its directory when missing, and
    replaced atomically (a temporary file beside it, then ``os.replace``).

    Raises:
        OSError: the file or its directory cannot be read or written.
        ValueError: the file is over :data:`MAX_SETTINGS_BYTES` (it is left as it is).
    """
    import json
    import re
    import tempfile

    text = ""
    if path.is_file():
        if path.stat().st_size > MAX_SETTINGS_BYTES:
            raise ValueError(f"{path} is over {MAX_SETTINGS_BYTES} bytes; not changed")
        text = path.read_text(encoding="utf-8")
    toml = path.suffix == ".toml"
    line = f"{key} = {json.dumps(value)}" if toml else f"{key}: {json.dumps(value)}"
    pattern = re.compile(rf"^{re.escape(key)}\s*{'=' if toml else ':'}.*$", re.M)
    header = re.search(r"^\s*\[", text, re.M) if toml else None
    head, tail = (text[:header.start()], text[header.start():]) if header else (text, "")
    if pattern.search(head):
        head = pattern.sub(lambda _m: line, head, count=1)
    else:
        head = line + "\n" + head
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(head + tail)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def settings_target(settings: UserSettings) -> Path | None:
    """The file a setting chosen in the dashboard is saved to: the file read, else the first
    candidate (``--config``'s or ``MEMDECK_CONFIG``'s file, else ``config.toml`` in
    :func:`native_dir`); None when there is no candidate, or the file was not read (nothing is
    written into a file memdeck could not read)."""
    if not settings.parsed:
        return None
    if settings.path is not None:
        return settings.path
    return settings.candidates[0] if settings.candidates else None
