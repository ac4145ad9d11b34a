"""Every memdeck import of the interop matrix, in one place.

The package is ``core`` today and will become ``memdeck.core``: that rename changes the one
``_CORE`` line below and nothing else in ``tests/interop/matrix`` or the matrix tests.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

_CORE = "core"  # -> "memdeck.core" after the rename


def _mod(name: str) -> Any:
    return importlib.import_module(f"{_CORE}.{name}")


HermesHome = _mod("home").HermesHome
load_config = _mod("config").load_config
read_memory = _mod("memory").read_memory
MemoryStore = _mod("memory").MemoryStore
StateDB = _mod("statedb").StateDB
threat_scan = _mod("threats").scan
list_pending = _mod("pending").list_pending
approve_pending = _mod("pending").approve
Refused = _mod("errors").Refused
search_messages = _mod("recall").search_messages
Anchor = _mod("anchors").Anchor
AnchorStore = _mod("anchors").AnchorStore
audit_session = _mod("audit").audit_session


def home(path: Path) -> Any:
    return HermesHome(path)


def scan_ids(text: str) -> list[str]:
    """memdeck's verdict for ``text``: the sorted set of pattern ids (Hermes 0.19 strict rules)."""
    return sorted({f.pattern_id for f in threat_scan(text)})


def entries(path: Path, target: str = "memory") -> list[str]:
    h = HermesHome(path)
    return [e.text for e in read_memory(h, load_config(h), target).entries]


def add(path: Path, target: str, text: str) -> Any:
    h = HermesHome(path)
    return MemoryStore(h, load_config(h), actor="interop").add(target, text)
