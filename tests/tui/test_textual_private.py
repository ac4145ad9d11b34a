"""Every private Textual / textual-serve / textual-plotext name the dashboard touches is still where
tui/textual_private.py says it is, and the dashboard reaches private modules only through it."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from memdeck.tui import textual_private
from memdeck.tui.textual_private import PRIVATE_ATTRIBUTES, PRIVATE_IMPORTS

TUI = Path(textual_private.__file__).parent


@pytest.mark.parametrize("name", sorted(PRIVATE_IMPORTS))
def test_each_private_import_resolves(name: str) -> None:
    module, attribute = PRIVATE_IMPORTS[name]
    assert hasattr(importlib.import_module(module), attribute), f"{module}.{attribute} moved: see tui/textual_private.py"
    assert getattr(textual_private, name) is getattr(importlib.import_module(module), attribute)


def _defined_on(cls: type, name: str) -> bool:
    """``name`` is a class attribute of ``cls`` or of a base, or assigned (``self.name``) or
    declared in the source of one of them."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return True
        try:
            src = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"(self\.{name}\b|^\s*{name}\s*[:=])", src, re.M):
            return True
    return False


@pytest.mark.parametrize("owner", sorted(PRIVATE_ATTRIBUTES), ids=lambda o: f"{o[0]}.{o[1]}")
def test_each_private_attribute_is_still_defined(owner: tuple[str, str]) -> None:
    cls = getattr(importlib.import_module(owner[0]), owner[1])
    moved = [n for n in PRIVATE_ATTRIBUTES[owner] if not _defined_on(cls, n)]
    assert moved == [], f"{owner[0]}.{owner[1]} no longer defines {moved}: see tui/textual_private.py"


def test_a_missing_name_is_reported() -> None:
    """The check above can fail: a name no Textual class defines is not found."""
    from textual.app import App

    assert _defined_on(App, "_bindings") and not _defined_on(App, "_memdeck_never_defined")


def test_the_app_imports_private_modules_only_through_textual_private() -> None:
    offenders = []
    for path in TUI.rglob("*.py"):
        if path.name == "textual_private.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                # a private module, or a private name of a public one (``from x import _Y``)
                names = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n.startswith(("textual", "textual_serve", "textual_plotext")) and any(p.startswith("_") for p in n.split("."))
                   for n in names):
                offenders.append(f"{path.relative_to(TUI)}:{node.lineno}")
    assert offenders == []


def test_every_private_attribute_the_app_touches_is_listed() -> None:
    """A ``._name`` the tui reads on an object but never defines itself is a third-party private
    name: it must be in PRIVATE_ATTRIBUTES (the way an upgrade's moved name is found)."""
    defined: set[str] = set()
    used: dict[str, str] = {}
    for path in TUI.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                used.setdefault(node.attr, f"{path.relative_to(TUI)}:{node.lineno}")
    listed = {n for names in PRIVATE_ATTRIBUTES.values() for n in names}
    unlisted = sorted(f"{n} ({where})" for n, where in used.items() if n not in defined and n not in listed)
    assert unlisted == []
