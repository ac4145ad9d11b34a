"""``memdeck status --json``: the stable, documented status contract.

Shape (keys are only ever added, never renamed or removed)::

    {
      "home": str,                       # the Hermes home path
      "profile": str,                    # "default" or the profile name
      "memory": {
        "memory": {"path": str, "exists": bool, "chars": int, "limit": int, "pct": int (0-100),
                   "drift": str | null, "error": str | null,
                   "entries": [{"id": str (8 hex), "text": str, "chars": int,
                                "threats": [pattern ids]}]},
        "user":   {... same ...}
      },
      "pending": [{"id", "action", "target", "origin", "summary", "created_at", "threats": [ids],
                   "malformed": str | null}],
      "archived": int,                   # memory entries currently archived
      "config_warnings": [str],
      "sessions": [{"id", "title", "source", "started_at", "ended_at" (epoch s | null),
                    "message_count", "compactions", "live": bool}],     # newest first
      "state_db": {"state": "ok"|"missing"|"locked"|..., "message", "schema_version", ...},
      "anchors": [{"id", "text", "reminder", "priority", "probes", "scope", "session_id",
                   "state": "pinned"|"alive"|"drifted"|"rehydrated"}],
      "integrity": {"session_id", "score": int 0-100 | null, "history": [{"time", "score", ...}]},
      "drift_log": [{"time", "session_id", "score", "casualties": [anchor ids]}],
      "anchors_warnings": [str],
      "section_errors": {module: "why"},  # a section that failed; its keys are then absent
      ... one key per registered section (below)
    }

``sessions``/``state_db`` come from :func:`core.statedb.status_section`, ``anchors``,
``integrity``, ``drift_log`` and ``anchors_warnings`` from :func:`core.audit.status_section`.

Other areas add their own top-level section without touching this file's core keys: put a
function ``fn(home, config) -> dict`` in your module and add ``(key, module, function)`` to
:data:`SECTION_PROVIDERS` (modules are imported lazily; a missing module or function skips the
section; a section that raises becomes ``{"error": "..."}``), or call
:func:`register_section` at import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from . import archive
from .config import Config, load_config
from .home import TARGETS, HermesHome
from .memory import read_memory
from .pending import list_pending

SectionFn = Callable[[HermesHome, Config], Any]

#: ``(status key, module under core, function name)``, imported lazily by :func:`build_status`.
SECTION_PROVIDERS: list[tuple[str, str, str]] = []

#: Providers whose function returns *several* top-level keys, merged into the status dict
#: (a key already present is never overwritten). If one raises, its keys are absent and
#: ``section_errors[module]`` says why.
MERGED_PROVIDERS: list[tuple[str, str]] = [
    ("statedb", "status_section"),  # "sessions", "state_db"
    ("audit", "status_section"),  # "anchors", "integrity", "drift_log", "anchors_warnings"
]

_REGISTERED: dict[str, SectionFn] = {}


def register_section(key: str, fn: SectionFn) -> None:
    """Add a top-level status section computed by ``fn(home, config)``."""
    _REGISTERED[key] = fn


def memory_section(home: HermesHome, config: Config) -> dict[str, Any]:
    """``{"memory": {...}, "user": {...}}`` from :func:`core.memory.read_memory` (never raises)."""
    out: dict[str, Any] = {}
    for t in TARGETS:
        st = read_memory(home, config, t)
        d = st.to_dict()
        d.pop("target", None)
        out[t] = d
    return out


def pending_section(home: HermesHome) -> list[dict[str, Any]]:
    """The pending writes as status rows (never raises)."""
    return [
        {"id": p.id, "action": p.action, "target": p.target, "origin": p.origin, "summary": p.summary,
         "created_at": p.created_at, "threats": list(p.threats), "malformed": p.malformed}
        for p in list_pending(home)
    ]


def _sections() -> dict[str, SectionFn]:
    found: dict[str, SectionFn] = {}
    for key, mod, fn in SECTION_PROVIDERS:
        try:
            m = importlib.import_module(f"{__package__}.{mod}")
            f = getattr(m, fn)
        except (ImportError, AttributeError):
            continue
        found[key] = f
    found.update(_REGISTERED)
    return found


def build_status(home: HermesHome, config: Config | None = None) -> dict[str, Any]:
    """Build the status dict described in the module docstring. Never raises on bad data."""
    config = config or load_config(home)
    try:
        archived = archive.count(home, kind="memory", state="archived")
    except Exception:  # noqa: BLE001 - an unusable memdeck.db must not break status
        archived = 0
    out: dict[str, Any] = {
        "home": str(home.path),
        "profile": home.profile,
        "memory": memory_section(home, config),
        "pending": pending_section(home),
        "archived": archived,
        "config_warnings": list(config.warnings),
    }
    errors: dict[str, str] = {}
    for mod, fn_name in MERGED_PROVIDERS:
        try:
            fn = getattr(importlib.import_module(f"{__package__}.{mod}"), fn_name)
            part = fn(home, config)
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            errors[mod] = f"{type(exc).__name__}: {exc}"
            continue
        if isinstance(part, dict):
            for key, value in part.items():
                out.setdefault(key, value)
    for key, fn in _sections().items():
        if key in out:
            continue
        try:
            out[key] = fn(home, config)
        except Exception as exc:  # noqa: BLE001 - one broken section must not hide the rest
            out[key] = {"error": f"{type(exc).__name__}: {exc}"}
    out["section_errors"] = errors
    return out
