"""Where ``memdeck --demo`` builds: one home per seed under the cache directory, never wiping one still open."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import MemdeckError
from ..home import HermesHome
from .build import build_demo_home
from .story import DEMO_MARKER, DEMO_SEED

# ── where --demo builds ────────────────────────────────────────────────────


def demo_home_dir(seed: int = DEMO_SEED, env: Mapping[str, str] | None = None) -> Path:
    """The cache directory ``memdeck --demo`` uses: ``$XDG_CACHE_HOME/memdeck/demo-<seed>``
    (default ``~/.cache/memdeck/demo-<seed>``). Only computes the path; nothing is created.
    """
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "memdeck" / f"demo-{int(seed)}"


#: Demo directories this process has claimed: path -> the open lock file (held until exit).
_CLAIMED: dict[Path, Any] = {}


def _claim(target: Path) -> bool:
    """Take the lock ``<parent>/.<name>.lock`` of a demo directory for this process's lifetime;
    False when another running ``memdeck --demo`` holds it (its home must not be rebuilt)."""
    if target in _CLAIMED:
        return True
    import fcntl

    target.parent.mkdir(parents=True, exist_ok=True)
    fh = open(target.parent / f".{target.name}.lock", "a+b")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return False
    _CLAIMED[target] = fh
    return True


def fresh_demo_home(seed: int = DEMO_SEED, *, now: float | None = None, env: Mapping[str, str] | None = None) -> HermesHome:
    """Rebuild a demo home from scratch (a previous run's edits are wiped) and return it.

    The directory is :func:`demo_home_dir`, or ``demo-<seed>-2``, ``-3``, ... beside it while
    another running ``memdeck --demo`` uses the first (each run holds a lock on its directory,
    so a second demo never wipes the home of one that is still open). Falls back to a new
    temp directory when the cache is not writable or holds something that is not a demo home.

    Raises:
        OSError: neither the cache directory nor a temp directory could be written.
    """
    base = demo_home_dir(seed, env)
    try:
        for n in range(1, 100):
            target = base if n == 1 else base.with_name(f"{base.name}-{n}")
            if not _claim(target):
                continue
            if target.exists() and any(target.iterdir()) and not (target / DEMO_MARKER).exists():
                raise MemdeckError("not a demo home")
            return build_demo_home(target, seed=seed, now=now)
        raise MemdeckError("too many demo homes in use")
    except (OSError, MemdeckError):
        tmp = Path(tempfile.mkdtemp(prefix=f"memdeck-demo-{int(seed)}-"))
        return build_demo_home(tmp, seed=seed, now=now)
