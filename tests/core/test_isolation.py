"""core/ never imports textual or rich (Harlequin's rule), and imports itself only relatively."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import core

CORE_DIR = Path(core.__file__).parent
MODULES = ["core"] + sorted(
    m.name for m in pkgutil.walk_packages(core.__path__, prefix="core.") if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("module", sorted(set(MODULES)))
def test_core_module_does_not_load_textual_or_rich(module: str) -> None:
    code = (
        "import importlib, sys; importlib.import_module(%r); "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'tui')); "
        "print(','.join(bad)); sys.exit(1 if bad else 0)" % module
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{module} loaded {proc.stdout.strip()} {proc.stderr[-2000:]}"


def test_core_imports_itself_relatively() -> None:
    """The plugin vendors core/ under another package name, so `import core...` would break it."""
    offenders = []
    for path in CORE_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "core":
                offenders.append(f"{path.relative_to(CORE_DIR)}:{node.lineno}")
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "core" for a in node.names):
                offenders.append(f"{path.relative_to(CORE_DIR)}:{node.lineno}")
    assert offenders == []
