"""Install, update and remove the directory form of memdeck's Hermes plugin.

``memdeck plugin install`` writes ``$HERMES_HOME/plugins/memdeck/``:

* ``plugin.yaml``: the manifest Hermes 0.19 parses (``hermes_cli/plugins.py``
  ``_parse_manifest``: ``name``, ``version``, ``description``, ``author``, ``kind``,
  ``provides_tools``, ``provides_hooks``). ``kind: standalone`` is explicit so Hermes' memory-
  provider sniffing of ``__init__.py`` never reclassifies the plugin.
* ``__init__.py``: re-exports ``register`` from the vendored core. Hermes imports the directory
  as package ``hermes_plugins.memdeck`` (``_load_directory_module``), so the vendored core is the
  subpackage ``hermes_plugins.memdeck._core``; core modules import each other relatively, which
  is what makes the copy work under a different name.
* ``_core/``: the modules :mod:`memdeck.core.plugin.entry` and :mod:`memdeck.core.plugin.dashboard_api`
  need, found by following relative imports from them (``core/cli`` and the TUI are never copied).
  Only the standard library is needed on the keyword path; PyYAML (config), numpy and
  sentence-transformers stay optional and lazy.
* ``dashboard/``: the "Memory" tab of Hermes' web dashboard (issue 35 #3; Hermes 0.19
  ``hermes_cli/web_server.py`` ``_discover_dashboard_plugins`` reads ``plugins/<name>/dashboard/
  manifest.json``): ``manifest.json`` (:data:`DASHBOARD_MANIFEST`), ``memdeck.js`` (no build, no
  dependency: React comes from the dashboard's plugin SDK) and ``plugin_api.py`` (the FastAPI
  ``router`` Hermes mounts at ``/api/plugins/memdeck/``, over ``_core/plugin/dashboard_api.py``),
  copied from ``core/plugin/dashboard/``. Hermes serves and mounts a user plugin's tab only when
  the plugin is in ``plugins.enabled``, which the install sees to.

The new tree is staged under ``$HERMES_HOME/memdeck/`` (not scanned by Hermes), then renamed
into place; the previous tree is swapped out and removed. Then ``config.yaml``'s
``plugins.enabled`` gets ``memdeck`` (``uninstall`` removes it): a backup
``config.yaml.bak-YYYYmmdd-HHMMSS`` is written first (MemLock ``memlock_setup.py``'s naming),
only that list changes (a targeted text splice located with ruamel.yaml; every other byte and
comment is kept), and the result is re-parsed and compared with the intended document before it
is written; anything else is refused with the file untouched. Both steps run under
``core.fsio.file_lock``; running either command twice changes nothing the second time.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import MAX_CONFIG_BYTES, config_size_problem
from ..errors import Refused
from ..fsio import atomic_write_bytes, file_lock, fsync_dir, read_regular_bytes, read_text_strict
from ..home import HermesHome

PLUGIN_NAME = "memdeck"
VENDOR_DIR = "_core"
MEMLOCK_NAME = "memlock"
#: The modules the vendored closure starts from: the plugin's hooks, the dashboard tab's API.
ROOT_MODULES = ("plugin/entry", "plugin/dashboard_api")
#: The dashboard plugin's files in this source tree (copied into ``dashboard/``).
DASHBOARD_SOURCE = "plugin/dashboard"
DASHBOARD_FILES = ("memdeck.js", "plugin_api.py")
#: ``dashboard/manifest.json`` (Hermes 0.19 ``_discover_dashboard_plugins``'s keys); ``version`` is
#: memdeck's. ``api`` is a file inside ``dashboard/`` (Hermes refuses any other path).
DASHBOARD_MANIFEST: dict[str, Any] = {
    "name": "memdeck",
    "label": "Memory",
    "description": "memdeck: capacity of both memory stores, the review queue (approve, reject, edit), "
                   "stale sessions and the last changes with revert, on memdeck's locked core.",
    "icon": "Database",
    "tab": {"path": "/memdeck", "position": "after:/sessions"},
    "entry": "memdeck.js",
    "api": "plugin_api.py",
}
#: Files beside the modules that are never vendored.
_EXCLUDED_TOP = {"cli"}

PLUGIN_INIT = '''"""memdeck: MemLock's guard on memdeck's locked anchor core (Hermes directory plugin).

Written by `memdeck plugin install`; `memdeck plugin uninstall` removes it. Do not edit: the
next install replaces this directory. The vendored core lives in ./_core.
"""

from ._core.plugin.entry import register  # noqa: F401

__all__ = ["register"]
'''

PLUGIN_YAML = """\
name: memdeck
version: "{version}"
description: "memdeck: MemLock's guard (compaction detection, anchor audit, integrity score, drift log, \
reminder block) on memdeck's locked anchor store; pins made in the memdeck dashboard reach the next turn."
author: memdeck
kind: standalone
provides_tools:
  - guard_pin
provides_hooks:
  - on_session_start
  - pre_llm_call
  - on_session_end
  - pre_gateway_dispatch
"""


@dataclass
class PluginOpResult:
    """What an install/uninstall did.

    Attributes:
        plugin_dir: ``$HERMES_HOME/plugins/memdeck``.
        files_changed: True when the plugin directory was written or removed.
        config_changed: True when ``config.yaml`` was rewritten.
        backup: the ``config.yaml.bak-*`` written before the change, if any.
        enabled: the ``plugins.enabled`` list after the operation.
        warnings: human sentences (e.g. ``memlock`` also enabled).
    """

    plugin_dir: Path
    files_changed: bool = False
    config_changed: bool = False
    backup: Path | None = None
    enabled: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# The vendored file set
# ---------------------------------------------------------------------------


def core_source_dir() -> Path:
    """The directory of the running ``memdeck.core`` package (the source of the vendored copy)."""
    return Path(__file__).resolve().parent.parent


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` blocks (imports there never
    run: a lazy package ``__init__`` lists its names there for type checkers only)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _relative_targets(path: Path, pkg_root: Path) -> set[Path]:
    """Module files named by the relative imports of ``path`` (inside ``pkg_root``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.parent
    out: set[Path] = set()
    for node in _runtime_nodes(tree):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        base = here
        for _ in range(node.level - 1):
            base = base.parent
        parts = node.module.split(".") if node.module else []
        target = base.joinpath(*parts)
        candidates = []
        if parts:
            candidates += [target.with_suffix(".py"), target / "__init__.py"]
        else:
            candidates.append(base / "__init__.py")
        # ``from . import x`` / ``from .pkg import x``: x may be a submodule.
        for alias in node.names:
            candidates += [target / f"{alias.name}.py", target / alias.name / "__init__.py"]
        for c in candidates:
            if c.is_file():
                try:
                    c.resolve().relative_to(pkg_root)
                except ValueError:
                    continue
                out.add(c.resolve())
    return out


def vendored_files(src: Path | None = None) -> dict[str, bytes]:
    """The files of ``_core/``: relative path (POSIX) -> bytes.

    The closure of relative imports starting at :data:`ROOT_MODULES` plus every package's
    ``__init__.py`` on the way; ``core/cli`` is never included.

    Raises:
        FileNotFoundError: the core source has no ``plugin/entry.py``.
    """
    root = (src or core_source_dir()).resolve()
    starts = [root.joinpath(*f"{m}.py".split("/")) for m in ROOT_MODULES]
    for start in starts:
        if not start.is_file():
            raise FileNotFoundError(f"{start} is missing; cannot build the plugin")
    seen: set[Path] = set()
    todo = [*starts, root / "__init__.py"]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        rel = p.relative_to(root)
        if rel.parts and rel.parts[0] in _EXCLUDED_TOP:
            continue
        seen.add(p)
        todo.extend(_relative_targets(p, root))
        # a module inside a subpackage needs the subpackage's __init__.py
        parent = p.parent
        while parent != root:
            todo.append(parent / "__init__.py")
            parent = parent.parent
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(seen) if p.is_file()}


def plugin_files(src: Path | None = None) -> dict[str, bytes]:
    """Every file of the plugin directory: relative path -> bytes (deterministic)."""
    files = {
        "plugin.yaml": PLUGIN_YAML.format(version=__version__).encode("utf-8"),
        "__init__.py": PLUGIN_INIT.encode("utf-8"),
    }
    for rel, data in vendored_files(src).items():
        files[f"{VENDOR_DIR}/{rel}"] = data
    files.update(dashboard_files(src))
    return files


def dashboard_files(src: Path | None = None) -> dict[str, bytes]:
    """The dashboard plugin's files (``dashboard/...`` -> bytes).

    Raises:
        FileNotFoundError: the core source has no ``plugin/dashboard/`` files.
    """
    root = (src or core_source_dir()).resolve().joinpath(*DASHBOARD_SOURCE.split("/"))
    manifest = {**DASHBOARD_MANIFEST, "version": __version__}
    out = {"dashboard/manifest.json": (json.dumps(manifest, indent=2) + "\n").encode("utf-8")}
    for name in DASHBOARD_FILES:
        out[f"dashboard/{name}"] = (root / name).read_bytes()
    return out


def _tree_bytes(directory: Path) -> dict[str, bytes] | None:
    """The regular files under ``directory`` (``__pycache__`` ignored), or None if absent."""
    if not directory.is_dir():
        return None
    out: dict[str, bytes] = {}
    for p in directory.rglob("*"):
        if "__pycache__" in p.parts or p.is_dir():
            continue
        out[p.relative_to(directory).as_posix()] = p.read_bytes()
    return out


def plugin_dir(home: HermesHome) -> Path:
    """``$HERMES_HOME/plugins/memdeck``."""
    return home.plugins_dir / PLUGIN_NAME


@contextlib.contextmanager
def _staged(home: HermesHome, files: dict[str, bytes]) -> Iterator[Path]:
    """Write and fsync ``files`` under ``memdeck/staging/`` (memdeck's own directory) and yield
    that tree; it is removed on exit unless :func:`_swapped_in` moved it. Staging comes before
    anything in ``plugins/`` is created or locked, so an install that cannot write (a full disk,
    a read-only ``memdeck/``) leaves the home as it was."""
    staging_root = home.memdeck_dir / "staging"
    staging_root.mkdir(parents=True, exist_ok=True)
    stage = staging_root / f"plugin-{secrets.token_hex(4)}"
    try:
        for rel, data in files.items():
            dest = stage / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        for d in sorted({(stage / r).parent for r in files}, key=lambda p: -len(p.parts)):
            fsync_dir(d)
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        with contextlib.suppress(OSError):
            staging_root.rmdir()


@contextlib.contextmanager
def _swapped_in(home: HermesHome, stage: Path) -> Iterator[None]:
    """Swap the staged tree into ``plugins/memdeck`` (the old one moved aside), run the block, then
    remove the old tree; if the swap or the block fails (a full disk while config.yaml is edited),
    the previous tree is put back first, so a failed install leaves ``plugins/`` as it was."""
    target = plugin_dir(home)
    staging_root = stage.parent
    old = staging_root / f"old-{secrets.token_hex(4)}"
    had = target.exists() or target.is_symlink()
    swapped = False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if had:
            os.rename(target, old)
            try:
                os.rename(stage, target)
            except BaseException:
                os.rename(old, target)
                raise
        else:
            os.rename(stage, target)
        swapped = True
        fsync_dir(target.parent)
        yield
    except BaseException:
        if swapped:
            with contextlib.suppress(OSError):
                os.rename(target, stage)  # the new tree back to staging (removed with it)
                if had:
                    os.rename(old, target)
                fsync_dir(target.parent)
        raise
    finally:
        if old.exists() or old.is_symlink():
            _discard(old)


def _remove_tree(home: HermesHome) -> bool:
    target = plugin_dir(home)
    if not (target.exists() or target.is_symlink()):
        return False
    staging_root = home.memdeck_dir / "staging"
    staging_root.mkdir(parents=True, exist_ok=True)
    old = staging_root / f"old-{secrets.token_hex(4)}"
    os.rename(target, old)  # atomic disappearance from plugins/
    try:
        fsync_dir(target.parent)
    except BaseException:  # a failure means the tree is still there
        with contextlib.suppress(OSError):
            os.rename(old, target)
        raise
    _discard(old)
    with contextlib.suppress(OSError):
        staging_root.rmdir()
    return True


def _discard(path: Path) -> None:
    """Remove a moved-aside plugin directory (or a symlink/file that stood in its place)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


# ---------------------------------------------------------------------------
# config.yaml: plugins.enabled only
# ---------------------------------------------------------------------------

_PLAIN_ITEM = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$")


def _yaml_scalar(s: Any) -> str:
    """A YAML flow/block scalar for a plugin name (plain when safe, else double-quoted).

    A number, boolean or null already in the list (Hermes reads it with ``set(enabled)``, so
    it is legal) is written the way PyYAML writes that scalar, so it re-parses unchanged.
    """
    if not isinstance(s, str):
        import yaml

        return yaml.safe_dump(s, default_flow_style=True).splitlines()[0]
    if _PLAIN_ITEM.match(s) and s.lower() not in {"null", "true", "false", "yes", "no", "on", "off", "~"}:
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _safe_load(text: str):
    import yaml  # PyYAML: what Hermes itself parses config.yaml with

    return yaml.safe_load(text)


def _rt_load(text: str):
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    return y.load(text)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _flow_span(line: str, start: int) -> int | None:
    """Index just past the ``]`` closing the flow sequence opening at ``line[start]``."""
    if start >= len(line) or line[start] != "[":
        return None
    depth = 0
    quote = ""
    i = start
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                if quote == "'" and i + 1 < len(line) and line[i + 1] == "'":
                    i += 2
                    continue
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _candidates(text: str, new_list: list[str], remove: str | None) -> list[str]:
    """Candidate edited texts, most conservative first (each is verified by the caller)."""
    nl = _newline(text)
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    doc = _rt_load(text)
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    def splice(new_lines: list[str]) -> str:
        return "".join(new_lines)

    def ensure_trailing_newline(ls: list[str]) -> list[str]:
        ls = list(ls)
        if ls and not ls[-1].endswith(("\n", "\r")):
            ls[-1] = ls[-1] + nl
        return ls

    if doc is None:
        body = f"plugins:{nl}  enabled:{nl}" + "".join(f"  - {_yaml_scalar(x)}{nl}" for x in new_list)
        if not new_list:
            body = f"plugins:{nl}  enabled: []{nl}"
        out.append(splice(ensure_trailing_newline(lines)) + body)
        return out
    if not isinstance(doc, CommentedMap):
        return out
    if "plugins" not in doc:
        items = "".join(f"  - {_yaml_scalar(x)}{nl}" for x in new_list)
        block = f"plugins:{nl}  enabled:{nl}{items}" if new_list else f"plugins:{nl}  enabled: []{nl}"
        out.append(splice(ensure_trailing_newline(lines)) + block)
        return out
    plugins = doc["plugins"]
    pkey_line, pkey_col = doc.lc.key("plugins")
    if plugins is None:
        line = lines[pkey_line]
        stripped = line[pkey_col:].split("#", 1)[0].rstrip()
        if stripped in ("plugins:",):
            ins = f"  enabled:{nl}" + "".join(f"  - {_yaml_scalar(x)}{nl}" for x in new_list)
            if not new_list:
                ins = f"  enabled: []{nl}"
            new = ensure_trailing_newline(lines[: pkey_line + 1]) + [ins] + lines[pkey_line + 1 :]
            out.append(splice(new))
    elif isinstance(plugins, CommentedMap) and not plugins.fa.flow_style() and len(plugins):
        first_key = next(iter(plugins))
        _, kcol = plugins.lc.key(first_key)
        ind = " " * kcol
        if "enabled" not in plugins:
            ins = f"{ind}enabled:{nl}" + "".join(f"{ind}- {_yaml_scalar(x)}{nl}" for x in new_list)
            if not new_list:
                ins = f"{ind}enabled: []{nl}"
            new = ensure_trailing_newline(lines[: pkey_line + 1]) + [ins] + lines[pkey_line + 1 :]
            out.append(splice(new))
        else:
            en = plugins["enabled"]
            ekey_line, ekey_col = plugins.lc.key("enabled")
            eval_line, eval_col = plugins.lc.value("enabled")
            is_flow = eval_line < len(lines) and lines[eval_line][eval_col : eval_col + 1] == "["
            if isinstance(en, CommentedSeq) and is_flow:
                if eval_line < len(lines):
                    line = lines[eval_line]
                    end = _flow_span(line, eval_col)
                    if end is not None:
                        flow = "[" + ", ".join(_yaml_scalar(x) for x in new_list) + "]"
                        new = list(lines)
                        new[eval_line] = line[:eval_col] + flow + line[end:]
                        out.append(splice(new))
            elif isinstance(en, CommentedSeq) and len(en):
                item_lines = [en.lc.item(i) for i in range(len(en))]
                first_line, first_col = item_lines[0]
                dash_col = lines[first_line].rfind("-", 0, first_col)
                dash_ind = " " * max(dash_col, 0)
                if remove is not None:
                    drop = [item_lines[i][0] for i, v in enumerate(en) if v == remove]
                    kept = [ln for i, ln in enumerate(lines) if i not in set(drop)]
                    if len(drop) == len(en):
                        # empty list: keep the key, say so explicitly ([]), keep its comment
                        kl = kept[ekey_line]
                        colon = kl.find(":", ekey_col)
                        kept[ekey_line] = kl[: colon + 1] + " []" + kl[colon + 1 :]
                    out.append(splice(kept))
                else:
                    add = [x for x in new_list if x not in list(en)]
                    ins = "".join(f"{dash_ind}- {_yaml_scalar(x)}{nl}" for x in add)
                    last_line = item_lines[-1][0]
                    new = ensure_trailing_newline(lines[: last_line + 1]) + [ins] + lines[last_line + 1 :]
                    out.append(splice(new))
                    new = lines[:first_line] + [ins] + lines[first_line:]
                    out.append(splice(new))
            elif en is None or (isinstance(en, CommentedSeq) and not len(en)):
                kl = lines[ekey_line]
                after = kl[ekey_col:].split("#", 1)[0].rstrip()
                if after == "enabled:" and new_list:
                    ins = "".join(f"{' ' * ekey_col}- {_yaml_scalar(x)}{nl}" for x in new_list)
                    new = ensure_trailing_newline(lines[: ekey_line + 1]) + [ins] + lines[ekey_line + 1 :]
                    out.append(splice(new))
    # Last resort: a ruamel round-trip dump (comments kept; layout may be normalised).
    try:
        import io

        from ruamel.yaml import YAML

        y = YAML(typ="rt")
        y.preserve_quotes = True
        y.width = 4096
        d2 = y.load(text)
        if not isinstance(d2.get("plugins"), dict):
            d2["plugins"] = {}
        d2["plugins"]["enabled"] = list(new_list)
        buf = io.StringIO()
        y.dump(d2, buf)
        out.append(buf.getvalue())
    except Exception:  # noqa: BLE001 - a candidate that cannot be built is not offered
        pass
    return out


def edit_enabled(text: str, *, add: str | None = None, remove: str | None = None) -> tuple[str, list[str], list[str]]:
    """Return ``(new_text, old_enabled, new_enabled)`` with only ``plugins.enabled`` changed.

    Adds ``add`` to the end of the list (if absent) or removes every ``remove``. The edit is a
    text splice so every other byte (comments, quoting, order, blank lines) is kept; the result
    is re-parsed with PyYAML (as Hermes parses it) and must equal the original document with
    only ``plugins.enabled`` replaced.

    Raises:
        Refused(code="invalid"): the file is not valid YAML, expands past memdeck's config bound
            (an alias bomb: ``core/config.py`` ``config_size_problem``), its top level is not a mapping,
            ``plugins``/``plugins.enabled`` has an unexpected type, or no safe edit exists.
    """
    try:
        data = _safe_load(text) if text.strip() else None
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise Refused(f"config.yaml is not valid YAML ({first}); not touching it", "invalid") from exc
    if data is None:
        data = {}
    too_large = config_size_problem(data)
    if too_large:  # memdeck's own reader refuses it: never edit what it will not read
        raise Refused(f"config.yaml {too_large}; not touching it", "invalid")
    if not isinstance(data, dict):
        raise Refused("config.yaml's top level is not a mapping; not touching it", "invalid")
    plugins = data.get("plugins")
    if plugins is not None and not isinstance(plugins, dict):
        raise Refused("config.yaml: plugins: is not a mapping; not touching it", "invalid")
    old = (plugins or {}).get("enabled")
    if old is not None and not isinstance(old, list):
        raise Refused("config.yaml: plugins.enabled is not a list; not touching it", "invalid")
    old_list = [x for x in (old or [])]
    nested = [x for x in old_list if isinstance(x, (list, dict))]
    if nested:
        raise Refused(f"config.yaml: plugins.enabled holds a nested list or mapping ({nested[0]!r}); "
                      "not touching it", "invalid")
    if add is not None:
        new_list = old_list if add in old_list else old_list + [add]
    else:
        new_list = [x for x in old_list if x != remove]
    if new_list == old_list and (old is not None or add is None):
        return text, old_list, new_list
    expected = copy.deepcopy(data)
    expected.setdefault("plugins", None)
    if not isinstance(expected["plugins"], dict):
        expected["plugins"] = {}
    expected["plugins"]["enabled"] = new_list
    for cand in _candidates(text, new_list, remove):
        try:
            if _safe_load(cand) == expected:
                return cand, old_list, new_list
        except Exception:  # noqa: BLE001 - a candidate that does not parse is skipped; Refused if none does
            continue
    raise Refused("could not edit plugins.enabled in config.yaml safely; edit it by hand", "invalid")


def _backup_path(cfg: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    p = cfg.with_name(f"{cfg.name}.bak-{stamp}")
    n = 1
    while p.exists():
        p = cfg.with_name(f"{cfg.name}.bak-{stamp}-{n}")
        n += 1
    return p


def set_enabled(home: HermesHome, *, add: str | None = None, remove: str | None = None) -> tuple[bool, Path | None, list[str]]:
    """Add or remove one name in ``config.yaml``'s ``plugins.enabled``, under the lock.

    Returns ``(changed, backup_path, enabled_after)``. A missing config.yaml is created when
    adding (no backup: nothing to back up) and left absent when removing.

    Raises:
        Refused: see :func:`edit_enabled`; nothing is written.
        UnreadableFile, LockTimeout: the file cannot be read / is locked.
    """
    with _config_edited(home, add=add, remove=remove) as outcome:
        return outcome


@contextlib.contextmanager
def _config_edited(home: HermesHome, *, add: str | None = None,
                   remove: str | None = None) -> Iterator[tuple[bool, Path | None, list[str]]]:
    """:func:`set_enabled`'s edit, under config.yaml's lock for the block it yields
    ``(changed, backup_path, enabled_after)`` to. If the edit or the block fails (a full disk),
    config.yaml is put back to its bytes before and the backup just written removed, so a failure
    means config.yaml is as it was (unless putting it back fails too: then the error says so)."""
    cfg = home.config_path
    with file_lock(cfg):
        text = read_text_strict(cfg, max_bytes=MAX_CONFIG_BYTES)
        if text is None:
            if add is None:
                yield False, None, []
                return
            text = ""
            raw = b""
        else:
            raw = read_regular_bytes(cfg)
        new_text, _old, new_list = edit_enabled(text, add=add, remove=remove)
        if new_text == text and raw:
            yield False, None, new_list
            return
        backup = None
        try:
            if raw:
                backup = _backup_path(cfg)
                atomic_write_bytes(backup, raw, prefix=".cfg_", suffix=".tmp")
            atomic_write_bytes(cfg, new_text.encode("utf-8"), prefix=".cfg_", suffix=".tmp")
            yield True, backup, new_list
        except BaseException:
            with contextlib.suppress(OSError):
                if not raw:
                    cfg.unlink(missing_ok=True)
                elif read_regular_bytes(cfg) != raw:
                    atomic_write_bytes(cfg, raw, prefix=".cfg_", suffix=".tmp")
                if backup is not None:
                    backup.unlink(missing_ok=True)
            raise


def _enabled_state(home: HermesHome) -> tuple[list[str], list[str]]:
    try:
        text = read_text_strict(home.config_path, max_bytes=MAX_CONFIG_BYTES)
        data = _safe_load(text) if text else None
    except Exception:  # noqa: BLE001 - an unreadable config means nothing enabled, said by the caller
        return [], []
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if not isinstance(plugins, dict):
        return [], []
    en = plugins.get("enabled")
    dis = plugins.get("disabled")
    return ([str(x) for x in en] if isinstance(en, list) else [], [str(x) for x in dis] if isinstance(dis, list) else [])


def _warnings(home: HermesHome, enabled: list[str], installing: bool) -> list[str]:
    out = []
    _, disabled = _enabled_state(home)
    if installing and MEMLOCK_NAME in enabled:
        out.append(
            "memlock is enabled too: both plugins would guard the same memlock/ files and both register "
            "guard_pin and /guard. Remove 'memlock' from plugins.enabled (memdeck reads your memlock: "
            "config and anchors as they are)."
        )
    if installing and PLUGIN_NAME in disabled:
        out.append("memdeck is listed in plugins.disabled, which Hermes gives precedence: remove it there to load the plugin.")
    return out


def install_plugin(home: HermesHome, *, enable: bool = True, src: Path | None = None) -> PluginOpResult:
    """Write ``$HERMES_HOME/plugins/memdeck/`` and add ``memdeck`` to ``plugins.enabled``.

    Idempotent: an up-to-date directory is not rewritten, an enabled plugin is not re-added,
    and no backup is made when config.yaml does not change.

    Raises:
        Refused: config.yaml cannot be edited safely; checked before anything is written, so
            neither the plugin directory nor config.yaml is touched.
        LockTimeout, UnreadableFile, OSError: environment failures; nothing half-written.
    """
    result = PluginOpResult(plugin_dir=plugin_dir(home))
    files = plugin_files(src)
    if enable:
        # Dry run of the config edit first: a refusal must leave the disk untouched (no
        # plugin directory that config.yaml does not enable). set_enabled re-checks under the lock.
        text = read_text_strict(home.config_path, max_bytes=MAX_CONFIG_BYTES)
        if text is not None:
            edit_enabled(text, add=PLUGIN_NAME)
    with _staged(home, files) as stage, file_lock(plugin_dir(home)):
        result.files_changed = _tree_bytes(plugin_dir(home)) != files
        with _swapped_in(home, stage) if result.files_changed else contextlib.nullcontext():
            if enable:  # a failure here puts the previous tree back
                changed, backup, enabled = set_enabled(home, add=PLUGIN_NAME)
                result.config_changed, result.backup, result.enabled = changed, backup, enabled
    if not enable:
        result.enabled = _enabled_state(home)[0]
    result.warnings = _warnings(home, result.enabled, installing=True)
    return result


def uninstall_plugin(home: HermesHome) -> PluginOpResult:
    """Remove ``memdeck`` from ``plugins.enabled`` (backup first), then the plugin directory.

    Anchors, session files and ``config.yaml``'s ``memlock:`` section are never touched.
    Idempotent: a second run changes nothing.
    """
    result = PluginOpResult(plugin_dir=plugin_dir(home))
    # Dry run of the config edit first, as install does: a refusal leaves the disk untouched (the
    # plugin lock below would create plugins/ for its sidecar). _config_edited re-checks under the lock.
    text = read_text_strict(home.config_path, max_bytes=MAX_CONFIG_BYTES)
    if text is not None:
        edit_enabled(text, remove=PLUGIN_NAME)
    with file_lock(plugin_dir(home)), _config_edited(home, remove=PLUGIN_NAME) as (changed, backup, enabled):
        result.config_changed, result.backup, result.enabled = changed, backup, enabled
        result.files_changed = _remove_tree(home)  # a failure puts config.yaml back
    return result


def plugin_status(home: HermesHome, src: Path | None = None) -> dict:
    """``{installed, up_to_date, enabled, memlock_enabled, path}`` for ``memdeck plugin status``."""
    tree = _tree_bytes(plugin_dir(home))
    enabled, disabled = _enabled_state(home)
    try:
        up = tree == plugin_files(src) if tree is not None else False
    except FileNotFoundError:
        up = False
    return {
        "path": str(plugin_dir(home)),
        "installed": tree is not None,
        "up_to_date": up,
        "enabled": PLUGIN_NAME in enabled and PLUGIN_NAME not in disabled,
        "memlock_enabled": MEMLOCK_NAME in enabled,
        "files_sha256": hashlib.sha256(b"".join(k.encode() + v for k, v in sorted((tree or {}).items()))).hexdigest() if tree else None,
    }
