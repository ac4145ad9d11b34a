"""Every memdeck import of the interop matrix, in one place.

The matrix tests reach memdeck only through the names below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memdeck.core.anchors.lifecycle import audit_session
from memdeck.core.anchors.model import Anchor
from memdeck.core.anchors.store import AnchorStore
from memdeck.core.config import load_config
from memdeck.core.errors import Refused
from memdeck.core.hermes_version import HermesVersion
from memdeck.core.home import HermesHome
from memdeck.core.memory.pending import approve as approve_pending
from memdeck.core.memory.pending import list_pending
from memdeck.core.memory.reader import read_memory
from memdeck.core.memory.store import MemoryStore
from memdeck.core.memory.threats import hermes_verdict
from memdeck.core.memory.threats import scan as threat_scan
from memdeck.core.sessions.recall import recall, search_messages
from memdeck.core.sessions.statedb import StateDB

__all__ = ["Anchor", "AnchorStore", "HermesHome", "MemoryStore", "Refused", "StateDB", "approve_pending",
           "audit_session", "hermes_verdict", "list_pending", "load_config", "read_memory", "recall", "rules_for_version",
           "search_messages", "threat_scan"]


def rules_for_version(version: str) -> str | None:
    """The threat rule set memdeck applies to a home of Hermes ``version``."""
    return HermesVersion.of(version).threat_rules


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
