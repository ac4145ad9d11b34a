"""The house rules, checked: one import name, layered core, no cycles, core free of the TUI.

The layer contracts live in pyproject.toml (``[tool.importlinter]``) and run through
import-linter; grimp (its graph library) sees every import statement, lazy ones inside
functions included, so a back-arrow cannot hide in a function body.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

import memdeck.core
import memdeck.tui

ROOT = Path(__file__).resolve().parents[1]
CORE_DIR = Path(memdeck.core.__file__).parent
CORE_MODULES = ["memdeck.core"] + sorted(
    m.name for m in pkgutil.walk_packages(memdeck.core.__path__, prefix="memdeck.core.") if not m.name.endswith("__main__")
)


def test_import_linter_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "KEPT" in proc.stdout


def test_no_import_cycles_between_modules() -> None:
    graph = grimp.build_graph("memdeck.core", "memdeck.tui", exclude_type_checking_imports=True)
    cycles = []
    for a in sorted(graph.modules):
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            if graph.chain_exists(importer=b, imported=a):
                cycles.append((a, b, graph.find_shortest_chain(importer=b, imported=a)))
    assert cycles == []


def test_the_only_installed_import_name_is_memdeck() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    st = cfg["tool"]["setuptools"]
    assert st["package-dir"] == {"memdeck.core": "core", "memdeck.tui": "tui"}
    on_disk = sorted(
        "memdeck." + ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("core", "tui") for p in (ROOT / top).rglob("__init__.py")
    )
    assert sorted(st["packages"]) == on_disk  # every package directory ships, under memdeck.
    assert all(p.startswith("memdeck.") for p in st["packages"])
    assert cfg["project"]["scripts"]["memdeck"] == "memdeck.tui.launch:main"
    assert cfg["project"]["entry-points"]["hermes_agent.plugins"]["memdeck"] == "memdeck.core.plugin.entry"


def test_core_modules_do_not_load_textual_or_rich() -> None:
    """One interpreter imports every module of core (what the Hermes plugin and the CLI load)
    and then holds no Textual, Rich or memdeck.tui module. lint-imports above checks the same
    rule statically, import by import; this catches what a static graph cannot see
    (``importlib.import_module`` of a computed name, a dependency that itself pulls Rich in).
    One subprocess for all modules: one import per module in a fresh process each cost 123
    interpreter start-ups for the same answer."""
    code = (
        "import importlib, sys\n"
        f"for name in {CORE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') or m.startswith('memdeck.tui'))\n"
        "print(','.join(bad)); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"core loaded {proc.stdout.strip()} {proc.stderr[-2000:]}"
    assert len(CORE_MODULES) > 100  # the walk found the package (an empty list would pass vacuously)


def _absolute_imports(dirs: list[Path], tops: tuple[str, ...]) -> list[str]:
    """``file:line`` of every absolute import (module-level or inside a function) of a name
    whose first part is one of ``tops``."""
    offenders = []
    for d in dirs:
        for path in d.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                if any(n.split(".")[0] in tops for n in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return offenders


def test_core_imports_itself_relatively() -> None:
    """The plugin vendors core/ under another package name, so an absolute import would break it."""
    assert _absolute_imports([CORE_DIR], ("core", "memdeck")) == []


def test_nothing_imports_the_old_top_level_names() -> None:
    """``core`` and ``tui`` are directories of the repository, never import names."""
    tops = [ROOT / d for d in ("core", "tui", "tests", "bench", "screenshots")]
    assert _absolute_imports(tops, ("core", "tui")) == []


def test_the_snapshot_is_typed_with_core_types() -> None:
    """Issue 11: DeckSnapshot carries core values, not ``Any`` (drift-log points are MemLock's
    own JSON events, a mapping by design)."""
    import ast
    import importlib
    import inspect
    import typing

    from memdeck.core.overview import snapshot
    from memdeck.core.overview.snapshot import DeckSnapshot

    # the names snapshot.py imports under ``if TYPE_CHECKING:`` (kept off the launch path), resolved here
    local: dict[str, object] = {}
    for node in ast.walk(ast.parse(inspect.getsource(snapshot))):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in (n for n in node.body if isinstance(n, ast.ImportFrom)):
                module = importlib.import_module("." * imp.level + (imp.module or ""), snapshot.__package__)
                local.update({a.asname or a.name: getattr(module, a.name) for a in imp.names})
    hints = typing.get_type_hints(DeckSnapshot, localns=local)
    loose = sorted(name for name, hint in hints.items() if hint is typing.Any or typing.Any in typing.get_args(hint))
    assert loose == []
