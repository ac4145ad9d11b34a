"""Where MemLock keeps the state of a Hermes home: which ``memlock/`` directory, and why.

MemLock's own rule, per version (``Sahil-SS9/hermes-memlock``):

* 0.2-0.4 (``store.py`` ``_store_dir``, ``persistence.py`` ``_persist_dir``, up to ``954c2d6``):
  ``$HERMES_HOME/memlock`` (an empty ``HERMES_HOME`` counts as unset), else ``~/.hermes/memlock``;
  for any home that is the Hermes home's own ``memlock/``.
* 0.5 (the ``memlock_core/`` engine, from ``7678301``: ``memlock_core/store.py`` ``_home_dir`` /
  ``_store_dir``, ``memlock_core/persistence.py`` ``_persist_dir``): the first non-empty (stripped)
  of ``HERMES_HOME``, ``MEMLOCK_HOME``, else ``~/.memlock``; the state is ``<that>/memlock/`` and
  ``<that>/memlock/persist/``. The Hermes shim (``__init__.py``) never sets ``HERMES_HOME``.

Hermes sets ``HERMES_HOME`` in its own process only for a named profile (``-p``, the sticky
``active_profile``), for the gateway's service unit and in profile commands (0.19
``hermes_cli/main.py`` ``_apply_profile_override``); the default profile started as plain
``hermes`` leaves it unset. So on the default profile (``~/.hermes``) MemLock 0.5 writes
``~/.memlock/memlock/`` (``$MEMLOCK_HOME/memlock/`` when that is set), while a gateway or a
profile command of the same home writes ``~/.hermes/memlock/``. Every other home is reached only
through ``HERMES_HOME``, so its MemLock state is always its own ``memlock/``.

:func:`locate_memlock` looks in every place MemLock may have put this home's state and picks the
one in use: the only one holding files, else the one written last (and :attr:`MemlockLocation.warning`
says that both hold files), else where the installed MemLock would write. memdeck reads and
writes (pin, unpin, edit, archive) there, so its writes land where MemLock reads.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fsio import read_regular_bytes
from .home import HermesHome, default_root

#: :attr:`MemlockPlace.rule` values: which of MemLock's fallbacks names the place.
RULE_WORDS = {
    "hermes_home": ("the Hermes home's memlock/: where MemLock 0.2-0.4 always writes, and MemLock 0.5 "
                    "when Hermes runs with HERMES_HOME set (a named profile, the gateway service)"),
    "memlock_home": ("$MEMLOCK_HOME/memlock: MemLock 0.5 on the default profile, where plain `hermes` "
                     "leaves HERMES_HOME unset and MEMLOCK_HOME is set"),
    "user_home": ("~/.memlock/memlock: MemLock 0.5 on the default profile, where plain `hermes` leaves "
                  "HERMES_HOME unset (and MEMLOCK_HOME is unset)"),
}

_VERSION_RE = re.compile(r"^version\s*:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


@dataclass(frozen=True)
class MemlockPlace:
    """One directory MemLock may use for this home.

    Attributes:
        path: the ``memlock/`` directory (session files ``<sid>.json``, ``persist/`` pins).
        rule: ``"hermes_home"``, ``"memlock_home"`` or ``"user_home"`` (see :data:`RULE_WORDS`).
        sessions: how many session files (``*.json``, temp files excluded) it holds.
        pins: how many global pin files (``persist/*.json``, ``manifest.json`` excluded).
        newest: epoch seconds of its newest such file (read only when two places hold files,
            to pick the one written last; None otherwise).
    """

    path: Path
    rule: str
    sessions: int = 0
    pins: int = 0
    newest: float | None = None

    @property
    def has_files(self) -> bool:
        return bool(self.sessions or self.pins)

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "rule": self.rule, "sessions": self.sessions, "pins": self.pins,
                "newest": self.newest}


@dataclass(frozen=True)
class MemlockLocation:
    """The MemLock state directory memdeck uses for a home.

    Attributes:
        path: the ``memlock/`` directory in use (it may not exist yet).
        rule: its :attr:`MemlockPlace.rule`.
        reason: plain words: why this directory (files found, written last, or where the
            installed MemLock would write).
        places: every place looked at, the Hermes home's first.
        warning: set when two places hold MemLock files for this home (one sentence naming both).
        installed: the MemLock plugin found in ``<home>/plugins/memlock`` ("MemLock 0.5.1
            (memlock_core)"), or None.
    """

    path: Path
    rule: str
    reason: str
    places: tuple[MemlockPlace, ...]
    warning: str | None = None
    installed: str | None = None

    @property
    def persist_dir(self) -> Path:
        return self.path / "persist"

    @property
    def in_home(self) -> bool:
        """True when the directory in use is the Hermes home's own ``memlock/``."""
        return self.rule == "hermes_home"

    def to_dict(self) -> dict[str, Any]:
        """JSON shape of ``status --json`` key ``memlock_location``."""
        return {"path": str(self.path), "rule": self.rule, "reason": self.reason, "warning": self.warning,
                "installed": self.installed, "places": [p.to_dict() for p in self.places]}


def _is_default_profile(home: HermesHome) -> bool:
    try:
        return Path(home.path).expanduser().resolve() == default_root().resolve()
    except OSError:
        return False


#: The variables of the home's ``.env`` that steer where state lives (read by :func:`hermes_env`).
STEERING_VARS = ("HERMES_HOME", "MEMLOCK_HOME")
#: The largest ``.env`` read, in bytes.
MAX_ENV_BYTES = 1 << 20
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$")


def _dotenv_value(raw: str) -> str:
    """A value as python-dotenv parses it: quoted (``'...'`` literal, ``"..."`` with backslash
    escapes), else up to an inline `` #`` comment, stripped."""
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        q = raw[0]
        end = raw.find(q, 1)
        while q == '"' and end > 0 and raw[end - 1] == "\\":
            end = raw.find(q, end + 1)
        body = raw[1:end] if end > 0 else raw[1:]
        return body.replace('\\"', '"').replace("\\n", "\n") if q == '"' else body
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()


def dotenv_vars(home: HermesHome) -> dict[str, str]:
    """The :data:`STEERING_VARS` set in ``<home>/.env`` (``{}`` without one or when unreadable).
    Never raises."""
    try:
        text = read_regular_bytes(Path(home.path) / ".env", max_bytes=MAX_ENV_BYTES).decode("utf-8", "replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _ENV_LINE.match(line)
        if m and m.group(1) in STEERING_VARS:
            out[m.group(1)] = _dotenv_value(m.group(2))
    return out


def hermes_env(home: HermesHome, env: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """The environment a Hermes of ``home`` runs with, for :data:`STEERING_VARS`: ``env`` (default
    ``os.environ``) overridden by the home's ``.env`` (Hermes ``hermes_cli/env_loader.py``
    ``load_hermes_dotenv``: ``~/.hermes/.env`` is loaded with ``override=True``, 0.17-0.22), so a
    plugin in that process (MemLock 0.5) sees the ``.env`` value. Never raises."""
    base = dict(os.environ if env is None else env)
    base.update(dotenv_vars(home))
    return base


def candidate_dirs(home: HermesHome, env: Mapping[str, str] | None = None) -> list[tuple[Path, str]]:
    """``(memlock dir, rule)`` of every place MemLock may keep ``home``'s state, the Hermes home's
    first; reads only the home's ``.env``. Only the default profile has a second place:
    ``$MEMLOCK_HOME/memlock`` when ``MEMLOCK_HOME`` is set (non-empty) in ``env`` overridden by the
    home's ``.env`` (:func:`hermes_env`), else ``~/.memlock/memlock``."""
    env = hermes_env(home, env)
    out = [(Path(home.path) / "memlock", "hermes_home")]
    if not _is_default_profile(home):
        return out
    mh = (env.get("MEMLOCK_HOME") or "").strip()
    alt = (Path(mh).expanduser() / "memlock", "memlock_home") if mh else (Path.home() / ".memlock" / "memlock", "user_home")
    try:
        same = alt[0].resolve() == out[0][0].resolve()
    except OSError:
        same = False
    if not same:
        out.append(alt)
    return out


def _survey(path: Path, rule: str, *, stamp: bool = False) -> MemlockPlace:
    """Count the place's session files and pins (names only: one listing per directory); with
    ``stamp`` also the newest mtime (one ``stat`` per file: only needed when two places compete)."""
    sessions = pins = 0
    newest: float | None = None
    for sub, skip in ((path, ""), (path / "persist", "manifest.json")):
        try:
            names = [n for n in os.listdir(sub) if n.endswith(".json") and not n.startswith(".") and n != skip]
        except OSError:
            continue
        if sub == path:
            sessions += len(names)
        else:
            pins += len(names)
        if stamp:
            for n in names:
                try:
                    m = os.stat(sub / n).st_mtime
                except OSError:
                    continue
                newest = m if newest is None else max(newest, m)
    return MemlockPlace(path, rule, sessions, pins, newest)


def installed_memlock(home: HermesHome) -> tuple[str | None, bool]:
    """``(description, uses memlock_core)`` of the MemLock directory plugin in
    ``<home>/plugins/memlock`` (its ``plugin.yaml`` version; ``memlock_core/`` marks 0.5's engine
    and its ``HERMES_HOME`` / ``MEMLOCK_HOME`` / ``~/.memlock`` rule), ``(None, False)`` when absent."""
    pdir = Path(home.path) / "plugins" / "memlock"
    if not pdir.is_dir():
        return None, False
    version = None
    try:
        m = _VERSION_RE.search(read_regular_bytes(pdir / "plugin.yaml").decode("utf-8", errors="replace"))
        version = m.group(1) if m else None
    except OSError:
        pass
    core = (pdir / "memlock_core").is_dir()
    words = f"MemLock {version}" if version else "MemLock (version unknown)"
    return words + (" (memlock_core)" if core else ""), core


def _short(path: Path) -> str:
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


def locate_memlock(home: HermesHome, env: Mapping[str, str] | None = None) -> MemlockLocation:
    """Where MemLock keeps ``home``'s state, as that MemLock puts it (see the module docstring).

    Args:
        home: the Hermes home.
        env: the environment to read ``HERMES_HOME`` / ``MEMLOCK_HOME`` from (default
            ``os.environ``: memdeck runs in the user's environment, as their Hermes does), with
            the home's ``.env`` over it as Hermes loads it (:func:`hermes_env`).

    Returns:
        the :class:`MemlockLocation` in use: the only place holding files; when several do, the
        one written last (with :attr:`MemlockLocation.warning`); when none does, ``~/.memlock``
        (or ``$MEMLOCK_HOME``) for a default profile whose installed MemLock has the 0.5 engine
        and whose environment has no ``HERMES_HOME``, else the Hermes home's ``memlock/``.
        Never raises (an unreadable directory counts as empty).
    """
    env = hermes_env(home, env)
    places = tuple(_survey(p, rule) for p, rule in candidate_dirs(home, env))
    installed, core = installed_memlock(home)
    have = [p for p in places if p.has_files]
    warning = None
    if len(have) == 1:
        chosen = have[0]
        why = "MemLock's files are here"
    elif have:
        places = tuple(_survey(p.path, p.rule, stamp=True) for p in places)
        have = [p for p in places if p.has_files]
        chosen = max(have, key=lambda p: (p.newest or 0.0, p.rule == "hermes_home"))
        why = "both places hold MemLock files; this one was written last"
        others = [p for p in have if p is not chosen]
        warning = ("MemLock state for this home is in two places: " + " and ".join(
            f"{_short(p.path)} ({p.sessions} session file{'s' if p.sessions != 1 else ''}, {p.pins} pin"
            f"{'s' if p.pins != 1 else ''})" for p in (chosen, *others)) +
            f". memdeck shows and writes {_short(chosen.path)} (written last); a Hermes with HERMES_HOME set (a "
            f"named profile, the gateway service) uses {_short(places[0].path)}, plain `hermes` with MemLock 0.5 "
            "uses the other. Run every Hermes of this home with the same HERMES_HOME to keep one.")
    elif len(places) > 1 and core and not (env.get("HERMES_HOME") or "").strip():
        chosen = places[1]
        why = f"no MemLock files yet; {installed} is installed and HERMES_HOME is unset, so it will write here"
    else:
        chosen = places[0]
        why = "no MemLock files yet" if installed is None or len(places) == 1 else \
            f"no MemLock files yet; {installed} writes the Hermes home"
    reason = f"{why} ({RULE_WORDS[chosen.rule]})"
    return MemlockLocation(chosen.path, chosen.rule, reason, places, warning, installed)
