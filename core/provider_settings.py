"""Which memory stores a home's Hermes treats as authoritative: the built-in files and the provider.

One concept: ``memory.provider``, ``memory.memory_enabled`` and ``memory.user_profile_enabled`` of
``config.yaml`` read as the Hermes that runs the home reads them, and where the provider keeps its
own settings. Hermes loads at most one external memory provider beside (or instead of) MEMORY.md
and USER.md; a home with ``memory_enabled: false`` and a provider has no built-in MEMORY at all,
so an empty MEMORY.md there is not "no memory".

How each version reads the keys (``agent/agent_init.py``, where the agent builds its stores):

* 0.17-0.20 (``mem_config.get("memory_enabled", False)`` on the config merged over
  ``DEFAULT_CONFIG``): a store is on when the value is Python-truthy (a missing key is the default
  ``True``; YAML ``null`` or ``""`` is off; any non-empty string is on, ``"false"`` included); a
  ``memory:`` that is not a mapping makes ``.get`` raise inside a ``try`` and leaves both stores
  and the provider off. The provider is ``memory.provider`` when it is a non-blank string
  (loaded under its unstripped name, so ``" mem0"`` finds nothing).
* 0.21.0-0.21.4 (``tools/memory_tool.py`` ``get_builtin_memory_store_flags``): ``is_truthy_value``
  with default ``True``: a missing or ``null`` key is on; a string is on only when it is ``1``,
  ``true``, ``yes`` or ``on`` (``utils.py`` ``TRUTHY_STRINGS``); a ``memory:`` that is not a
  mapping counts as empty (both stores on). The provider is read as in 0.17-0.20.
* 0.21.5 and 0.22 (``agent/memory_provider.py`` ``is_core_memory_provider``): the flags as 0.21.0;
  a provider of ``""``, ``default``, ``builtin``, ``built-in`` or ``none`` (stripped, any case)
  means the built-in stores alone (``CORE_MEMORY_PROVIDER_SENTINELS``).

An unknown Hermes version is read as 0.19 (the release memdeck's reference describes), with a note.

The provider's own settings: each bundled provider keeps them in one place (:data:`OWN_SETTINGS`:
holographic under config.yaml ``plugins.hermes-memory-store``, honcho in ``honcho.json`` ...); for
another provider memdeck looks where providers put them (config.yaml ``memory.<name>``,
``plugins.<name>``, ``<name>:``, then ``<name>.json``). Only the key names are reported, never the
values (they hold API keys).

Pure but for a few bounded reads (a provider's JSON settings file, the plugin directory); never
raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Config
from .fsio import read_regular_bytes
from .hermes_version import HermesVersion
from .home import TARGET_FILES

#: ``CORE_MEMORY_PROVIDER_SENTINELS`` of Hermes 0.21.5 / 0.22 (``agent/memory_provider.py:44``).
CORE_PROVIDER_SENTINELS = frozenset({"", "default", "builtin", "built-in", "none"})
#: ``TRUTHY_STRINGS`` of Hermes 0.21 / 0.22 (``utils.py``).
TRUTHY_STRINGS = frozenset({"1", "true", "yes", "on"})

#: Where a bundled provider keeps its own settings: ``("config", key path)`` in config.yaml,
#: ``("file", path under the home)`` or ``("env", variables)``. Sources: each provider's
#: ``plugins/memory/<name>/__init__.py`` of Hermes 0.19.0 (holographic ``_load_plugin_config``,
#: honcho ``_config_path``, mem0 / supermemory ``save_config``, hindsight ``_load_config``,
#: byterover's and retaindb's module docstrings, openviking's ``__init__``).
OWN_SETTINGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "holographic": ("config", ("plugins", "hermes-memory-store")),
    "byterover": ("config", ("memory", "byterover")),
    "retaindb": ("config", ("retaindb",)),
    "honcho": ("file", ("honcho.json",)),
    "mem0": ("file", ("mem0.json",)),
    "supermemory": ("file", ("supermemory.json",)),
    "hindsight": ("file", ("hindsight", "config.json")),
    "openviking": ("env", ("OPENVIKING_ENDPOINT", "OPENVIKING_ACCOUNT", "OPENVIKING_USER", "OPENVIKING_AGENT")),
}

#: The largest provider settings file read for its key names, in bytes.
MAX_SETTINGS_FILE = 256 * 1024


@dataclass(frozen=True)
class OwnSettings:
    """Where the provider keeps its own settings.

    Attributes:
        where: words for the place (``config.yaml plugins.hermes-memory-store``, ``honcho.json``,
            ``environment: OPENVIKING_ENDPOINT, ...``).
        present: True when that section or file exists (None for environment variables: memdeck
            does not read the agent's environment).
        keys: the top-level key names found there (never the values).
        error: why the file could not be read, else None.
    """

    where: str
    present: bool | None
    keys: tuple[str, ...] = ()
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "present": self.present, "keys": list(self.keys), "error": self.error}


@dataclass(frozen=True)
class ProviderSettings:
    """The memory stores a home's Hermes treats as authoritative (see the module docstring).

    Attributes:
        name: the external provider (``memory.provider`` as that Hermes reads it), None for the
            built-in stores alone.
        memory_enabled, user_profile_enabled: whether Hermes keeps and injects MEMORY.md / USER.md.
        rules: which reading applied (``0.17-0.20``, ``0.21.0-0.21.4``, ``0.21.5+``).
        found: where Hermes finds the provider (``bundled with Hermes 0.19``, ``plugins/kiokuko``),
            or None when memdeck cannot tell (a pip-installed provider, or none: Hermes then runs
            the built-in stores alone and says so in its log).
        own: where the provider keeps its own settings (None without a provider).
        notes: plain sentences: odd values and how that Hermes reads them.
    """

    name: str | None = None
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    rules: str = "0.17-0.20"
    found: str | None = None
    own: OwnSettings | None = None
    notes: tuple[str, ...] = ()

    @property
    def default(self) -> bool:
        """True for the built-in MEMORY and USER alone (nothing to point out)."""
        return self.name is None and self.memory_enabled and self.user_profile_enabled

    def enabled(self, target: str) -> bool:
        """Whether the built-in store ``target`` (``memory`` / ``user``) is on."""
        return self.memory_enabled if target == "memory" else self.user_profile_enabled

    def authority(self) -> str:
        """Which stores are authoritative, in words: ``built-in MEMORY off; provider: kiokuko``,
        ``built-in MEMORY + USER; provider: holographic``, ``built-in MEMORY + USER`` ..."""
        mem, user = self.memory_enabled, self.user_profile_enabled
        if mem and user:
            built = "built-in MEMORY + USER"
        elif not mem and not user:
            built = "built-in MEMORY and USER off"
        else:
            built = "built-in MEMORY off" if not mem else "built-in USER off"
        if self.name is not None:
            return f"{built}; provider: {self.name}"
        return f"{built}; no provider: no memory at all" if not (mem or user) else built

    def off_reason(self, target: str) -> str | None:
        """Why the panel over built-in store ``target`` is empty on purpose, or None when it is on:
        ``MEMORY.md is switched off (memory.memory_enabled: false): Hermes neither injects nor
        writes it; the memory is in the provider kiokuko``."""
        if self.enabled(target):
            return None
        key = "memory_enabled" if target == "memory" else "user_profile_enabled"
        name = TARGET_FILES.get(target, "USER.md")
        where = f"the memory is in the provider {self.name}" if self.name else "no provider is configured"
        return f"{name} is switched off (memory.{key}: false): Hermes neither injects nor writes it; {where}"

    def to_dict(self) -> dict[str, Any]:
        """``status --json`` ``provider``: Hermes' own key names, plus what memdeck adds."""
        return {"name": self.name, "memory_enabled": self.memory_enabled,
                "user_profile_enabled": self.user_profile_enabled, "authoritative": self.authority(),
                "rules": self.rules, "found": self.found, "settings": self.own.to_dict() if self.own else None,
                "notes": list(self.notes)}


def _flag(mem: Mapping[str, Any] | None, key: str, rules: str) -> bool:
    if mem is None:
        return rules != "0.17-0.20"  # 0.17-0.20: the .get raised inside a try: both stores stay off
    if key not in mem:
        return True
    value = mem[key]
    if rules == "0.17-0.20":
        return bool(value)
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in TRUTHY_STRINGS
    return bool(value)


def _provider_name(mem: Mapping[str, Any] | None, rules: str, notes: list[str]) -> str | None:
    if mem is None:
        return None
    raw = mem.get("provider", "")
    if rules == "0.21.5+":
        if str(raw or "").strip().lower() in CORE_PROVIDER_SENTINELS:
            if isinstance(raw, str) and raw.strip():
                notes.append(f"memory.provider {raw.strip()!r} means the built-in stores alone (Hermes 0.21.5+)")
            return None
        if not isinstance(raw, str):
            notes.append(f"memory.provider {raw!r} is not a provider name: Hermes finds no such provider")
            return None
        if raw != raw.strip():  # load_memory_provider(raw): the padded name is looked up as written
            notes.append(f"memory.provider {raw!r} has surrounding spaces: Hermes {rules} looks it up as written, "
                         "finds no provider and runs the built-in stores alone")
            return None
        return raw
    if not raw:
        return None
    if not isinstance(raw, str):
        notes.append(f"memory.provider {raw!r} is not a provider name: Hermes fails to load it and runs the built-in "
                     "stores alone")
        return None
    if not raw.strip():
        return None
    if raw != raw.strip():
        notes.append(f"memory.provider {raw!r} has surrounding spaces: Hermes {rules} looks it up as written, "
                     "finds no provider and runs the built-in stores alone")
        return None
    if raw.lower() in CORE_PROVIDER_SENTINELS:
        notes.append(f"memory.provider {raw!r} names a provider to Hermes {rules} (0.21.5 reads it as the "
                     "built-in stores)")
    return raw


def _dig(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return None
        data = data[key]
    return data


def _keys_of(value: Any) -> tuple[str, ...]:
    return tuple(str(k) for k in value) if isinstance(value, Mapping) else ()


def _file_settings(home: Path, rel: tuple[str, ...]) -> OwnSettings:
    path = home.joinpath(*rel)
    shown = "/".join(rel)
    try:
        raw = read_regular_bytes(path, max_bytes=MAX_SETTINGS_FILE)
    except FileNotFoundError:
        return OwnSettings(shown, False)
    except OSError as exc:
        return OwnSettings(shown, True, error=f"cannot read it: {exc.strerror or type(exc).__name__}")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        return OwnSettings(shown, True, error=f"not valid JSON ({str(exc).splitlines()[0] if str(exc) else exc})")
    return OwnSettings(shown, True, _keys_of(data))


def own_settings(name: str, config: Config, home: Path) -> OwnSettings:
    """Where provider ``name`` keeps its own settings and the key names there (never values)."""
    known = OWN_SETTINGS.get(name)
    if known is not None:
        kind, where = known
        if kind == "config":
            value = _dig(config.raw, where)
            return OwnSettings(f"config.yaml {'.'.join(where)}", value is not None, _keys_of(value))
        if kind == "file":
            return _file_settings(home, where)
        return OwnSettings(f"environment: {', '.join(where)}", None)
    for path in (("memory", name), ("plugins", name), (name,)):
        value = _dig(config.raw, path)
        if isinstance(value, Mapping):
            return OwnSettings(f"config.yaml {'.'.join(path)}", True, _keys_of(value))
    found = _file_settings(home, (f"{name}.json",))
    if found.present:
        return found
    return OwnSettings(f"not found (looked in config.yaml memory.{name}, plugins.{name}, {name}: and {name}.json)",
                       False)


def _is_provider_dir(path: Path) -> bool:
    """Hermes' own heuristic (``plugins/memory/__init__.py`` ``_is_memory_provider_dir``): the
    directory's ``__init__.py`` mentions ``register_memory_provider`` or ``MemoryProvider`` in its
    first 8 KB."""
    try:
        head = read_regular_bytes(path / "__init__.py", max_bytes=1 << 20)[:8192].decode("utf-8", "replace")
    except OSError:
        return False
    return "register_memory_provider" in head or "MemoryProvider" in head


def _memory_section(config: Config, version: HermesVersion, notes: list[str]) -> Mapping[str, Any] | None:
    """``memory:`` as that Hermes sees it: a mapping, ``{}``, or None (0.17-0.20 failing on it).
    An empty ``memory:`` (YAML null) replaces the default section in 0.17 / 0.18's ``_deep_merge``
    (fixed in 0.19, #58277): those fail on it as on any other value that is not a mapping."""
    rules = version.provider_rules
    raw_mem = config.raw.get("memory")
    if raw_mem is None and "memory" in config.raw and version.empty_memory_replaces_defaults:
        notes.append("memory: is empty: Hermes 0.17 / 0.18 replace the default section with it and run with no "
                     "built-in memory and no provider (fixed in 0.19)")
        return None
    if raw_mem is None:
        return {}
    if isinstance(raw_mem, Mapping):
        return raw_mem
    notes.append("memory: is not a mapping: " + ("Hermes fails to read it and runs with no built-in memory and no "
                                                   "provider" if rules == "0.17-0.20" else "Hermes reads it as empty"))
    return None if rules == "0.17-0.20" else {}


def configured_provider(config: Config, version: HermesVersion) -> str | None:
    """``memory.provider`` as the Hermes of ``version`` reads it (None: the built-in stores alone,
    which is what Hermes runs when the name is padded with spaces or is a sentinel of 0.21.5+). The
    one reading every view takes (status, fleet, metrics, the dashboard, the Context view).
    Pure: reads nothing but ``config``."""
    return _provider_name(_memory_section(config, version, []), version.provider_rules, [])


def provider_settings(config: Config, home: Path | Any, version: HermesVersion) -> ProviderSettings:
    """The authoritative stores of a home (module docstring). Never raises.

    Args:
        config: the home's config (:func:`memdeck.core.config.load_config`; its ``raw`` document).
        home: the home directory (a path or a :class:`~memdeck.core.home.HermesHome`).
        version: the home's :class:`~memdeck.core.hermes_version.HermesVersion`.
    """
    home_path = Path(getattr(home, "path", home))
    rules = version.provider_rules
    notes: list[str] = []
    if not version.known:
        notes.append("the Hermes version is unknown: the keys are read as Hermes 0.19 reads them")
    mem = _memory_section(config, version, notes)
    name = _provider_name(mem, rules, notes)
    found = None
    own = None
    if name is not None:
        if name in version.bundled:
            found = f"bundled with Hermes {version.label or '0.19'}"
        elif _is_provider_dir(home_path / "plugins" / name):
            found = f"plugins/{name}"
        else:
            notes.append(f"{name} is neither bundled with Hermes {version.label or '0.19'} nor in plugins/{name}: a "
                         "pip-installed provider, or Hermes runs the built-in stores alone")
        own = own_settings(name, config, home_path)
    return ProviderSettings(name, _flag(mem, "memory_enabled", rules), _flag(mem, "user_profile_enabled", rules),
                            rules, found, own, tuple(notes))


__all__ = ["CORE_PROVIDER_SENTINELS", "OWN_SETTINGS", "OwnSettings", "ProviderSettings", "configured_provider",
           "own_settings", "provider_settings"]
