"""The last data of each remote home, kept so a host that does not answer still shows it (stale).

One JSON file per remote address in ``$XDG_CACHE_HOME/memdeck/fleet/`` (default
``~/.cache/memdeck/fleet``), directory mode 0700, files 0600, each written atomically through
:func:`memdeck.core.fsio.atomic_write_bytes` (temp file, fsync, rename, fsync of the directory).
A file holds ``{"address", "fetched_at" (epoch s), "figures": HomeFigures.to_dict(), "view": {...}}``
where ``view`` is the part of ``status --json`` that ``memdeck fleet --json`` repeats
(:func:`status_view`). Only remote homes are kept: a local home is read directly every time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..fsio import atomic_write_bytes, read_regular_bytes
from ..home import TARGETS
from .figures import HomeFigures

#: Keys of a ``status --json`` memory target repeated by ``fleet --json`` (not the entries' texts).
STORE_KEYS = ("path", "exists", "chars", "limit", "pct", "drift", "error")
#: The largest cache file read back, in bytes.
MAX_BYTES = 16 * 1024 * 1024


def status_view(status: Mapping[str, Any]) -> dict[str, Any]:
    """The figures ``memdeck fleet --json`` repeats from ``status --json``, under the same names:
    ``home``, ``profile``, ``memory.<target>`` (:data:`STORE_KEYS`), ``pending`` (the list, as is),
    ``integrity`` (as is), ``memlock_location`` and ``session_store`` (as is, when present)."""
    raw_mem = status.get("memory")
    mem: Mapping[str, Any] = raw_mem if isinstance(raw_mem, Mapping) else {}
    out: dict[str, Any] = {
        "home": status.get("home"),
        "profile": status.get("profile"),
        "memory": {t: {k: mem[t].get(k) for k in STORE_KEYS} for t in TARGETS if isinstance(mem.get(t), Mapping)},
        "pending": status.get("pending", []),
        "integrity": status.get("integrity"),
    }
    for key in ("memlock_location", "session_store"):
        if key in status:
            out[key] = status[key]
    return out


@dataclass(frozen=True)
class LastSeen:
    """A remote home's last good read: ``fetched_at`` (epoch s), its figures and its status view."""

    fetched_at: float
    figures: HomeFigures
    view: Mapping[str, Any]


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/memdeck/fleet`` (default ``~/.cache/memdeck/fleet``)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "memdeck" / "fleet"


class LastSeenStore:
    """The cache files (module docstring). A file that cannot be read or written is ignored:
    the row then has no earlier data, never wrong data."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else cache_dir()

    def _file(self, address: str) -> Path:
        return self.directory / (hashlib.sha256(address.encode("utf-8")).hexdigest()[:32] + ".json")

    def load(self, address: str) -> LastSeen | None:
        try:
            data = json.loads(read_regular_bytes(self._file(address), max_bytes=MAX_BYTES).decode("utf-8"))
            if not isinstance(data, dict) or data.get("address") != address:
                return None
            return LastSeen(float(data["fetched_at"]), HomeFigures.from_dict(data["figures"]), dict(data["view"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, address: str, seen: LastSeen) -> bool:
        """Write one file; False when it could not be written (the row is unaffected)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            data = json.dumps({"address": address, "fetched_at": seen.fetched_at, "figures": seen.figures.to_dict(),
                               "view": dict(seen.view)}, ensure_ascii=False).encode("utf-8")
            path = atomic_write_bytes(self._file(address), data, prefix=".fleet_", suffix=".tmp")
            os.chmod(path, 0o600)
            return True
        except (OSError, TypeError, ValueError):
            return False
