"""The map matches the house: docs/ARCHITECTURE.md names every module of core/ and tui/ and no
module that does not exist, and no docstring of core/ or tui/ names a repository path that does
not exist.

The map is the table under "Where each concept lives": its first column names modules in
backticks. A name starting ``core/`` or ``tui/`` is a path from the repository's root (``core/cli/``
names the package directory and every module in it); a name after it in the same cell is in that
name's directory (``core/memory/reader.py``, ``results.py``), or, holding a ``/``, under the same
top directory (``tui/fleet.py``, ``views/fleet.py``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
TOPS = ("core", "tui")
#: a repository path in prose: starts at core/, tui/, tests/, bench/ or docs/ (not inside another
#: path such as ``memlock_core/detection.py``, nor a dotted module name)
REPO_PATH = re.compile(r"(?<![\w./-])((?:core|tui|tests|bench|docs)/[\w./-]*\w/?)")


def _table_cells(text: str) -> list[str]:
    """First cells of the rows of the table under "Where each concept lives"."""
    section = text.split("## Where each concept lives", 1)[1].split("\n## ", 1)[0]
    return [line.split("|")[1] for line in section.splitlines()
            if line.startswith("| `")]


def mapped_paths(text: str) -> set[str]:
    """Repository paths (``core/x.py``, ``core/cli/``) the map names."""
    out: set[str] = set()
    for cell in _table_cells(text):
        base = top = None
        for name in re.findall(r"`([^`]+)`", cell):
            if name.startswith(tuple(f"{t}/" for t in TOPS)):
                path = name
                top = name.split("/", 1)[0]
            elif top is None:
                continue
            elif "/" in name:
                path = f"{top}/{name}"
            else:
                path = f"{base}/{name}"
            base = path.rstrip("/") if path.endswith("/") else path.rsplit("/", 1)[0]
            out.add(path)
    return out


def modules_on_disk() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for top in TOPS for p in (ROOT / top).rglob("*.py")
            if p.name != "__init__.py"}


def _covered(module: str, mapped: set[str]) -> bool:
    return module in mapped or any(m.endswith("/") and module.startswith(m) for m in mapped)


def test_the_map_names_only_what_exists() -> None:
    missing = sorted(p for p in mapped_paths(ARCHITECTURE.read_text(encoding="utf-8")) if not (ROOT / p).exists())
    assert missing == []


def test_the_map_names_every_module_of_core_and_tui() -> None:
    mapped = mapped_paths(ARCHITECTURE.read_text(encoding="utf-8"))
    unmapped = sorted(m for m in modules_on_disk() if not _covered(m, mapped))
    assert unmapped == []


def test_the_map_parser_reads_the_table_as_documented() -> None:
    """The reading above, on a table of its own: a missing module and a stale name are seen."""
    text = ("## Where each concept lives\n\n| a | b |\n|---|---|\n"
            "| `core/memory/reader.py`, `results.py` | x |\n| `tui/fleet.py`, `views/fleet.py` | y |\n"
            "| `core/cli/` | z |\n\n## Next\n| `core/not_here.py` | w |\n")
    assert mapped_paths(text) == {"core/memory/reader.py", "core/memory/results.py", "tui/fleet.py",
                                  "tui/views/fleet.py", "core/cli/"}
    assert _covered("core/cli/common.py", mapped_paths(text)) and not _covered("core/home.py", mapped_paths(text))


def docstring_paths() -> list[tuple[str, str]]:
    """(``file:line``, path) for each repository path named in a docstring of core/ or tui/."""
    out = []
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                doc = ast.get_docstring(node, clean=False) or ""
                for m in REPO_PATH.finditer(doc):
                    out.append((f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", m.group(1)))
    return out


def test_docstrings_name_only_paths_that_exist() -> None:
    found = docstring_paths()
    assert len(found) > 50  # the scan reads the docstrings (an empty scan would pass vacuously)
    missing = sorted(f"{where}: {p}" for where, p in found if not (ROOT / p).exists())
    assert missing == []


def test_the_path_pattern_skips_other_projects_paths() -> None:
    text = "see core/fsio.py and ``memlock_core/detection.py``, tests/core/test_x.py; memdeck.core.home"
    assert REPO_PATH.findall(text) == ["core/fsio.py", "tests/core/test_x.py"]
