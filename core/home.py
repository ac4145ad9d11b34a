"""Hermes home resolution, profiles and the layout of a home.

Reproduces Hermes 0.19 ``hermes_constants.get_hermes_home`` / ``get_default_hermes_root`` and
the CLI's profile order (``hermes_cli/main.py`` ``_apply_profile_override``): an explicit
path, then ``HERMES_HOME``, then the sticky ``<root>/active_profile``, then ``~/.hermes``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import MemdeckError
from .fsio import read_regular_bytes

#: Profile names Hermes accepts (``hermes_cli/profiles.py:37``).
PROFILE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

TARGETS = ("memory", "user")
TARGET_FILES = {"memory": "MEMORY.md", "user": "USER.md"}


class HomeError(MemdeckError):
    """The requested home or profile does not exist or its name is invalid."""


class UnknownUserHome(HomeError):
    """A home path starts with ``~user`` for a user this machine does not know: there is no home
    there (every command exits 4, as for a missing home)."""


def expand_home_path(path: str | os.PathLike[str]) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded (:meth:`pathlib.Path.expanduser`).

    Raises:
        UnknownUserHome: the ``~user`` names no user of this machine (pathlib raises a bare
            ``RuntimeError`` there, which reached every command as a traceback: issue 40 #5).
    """
    p = Path(path)
    try:
        return p.expanduser()
    except RuntimeError:
        text = os.fspath(path)
        user = text[1:].split("/", 1)[0] if text.startswith("~") else ""
        who = f"there is no user {user!r} on this machine" if user else "the home directory of this user is unknown"
        raise UnknownUserHome(f"no Hermes home at {text}: {who}, so {text.split('/', 1)[0] or '~'} cannot be expanded; "
                              "nothing was read or written (point --home or HERMES_HOME at a home)") from None


def default_root() -> Path:
    """The platform default Hermes root: ``~/.hermes`` (``%LOCALAPPDATA%\\hermes`` on Windows)."""
    if os.name == "nt":  # pragma: no cover
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "hermes"
    return Path.home() / ".hermes"


def root_of(home: Path) -> Path:
    """The profile root a home belongs to (Hermes ``get_default_hermes_root``).

    ``~/.hermes/profiles/x`` -> ``~/.hermes``; ``/opt/data/profiles/coder`` -> ``/opt/data``;
    otherwise the home itself.
    """
    home = expand_home_path(home)
    default = default_root()
    try:
        home.resolve().relative_to(default.resolve())
        return default
    except ValueError:
        pass
    if home.parent.name == "profiles":
        return home.parent.parent
    return home


@dataclass(frozen=True)
class HermesHome:
    """One Hermes home (one profile): where every file memdeck reads or writes lives.

    Attributes:
        path: the home directory (``$HERMES_HOME``).
        profile: the profile name (``"default"`` for the root itself).
    """

    path: Path
    profile: str = "default"

    @property
    def memories_dir(self) -> Path:
        return self.path / "memories"

    def memory_file(self, target: str) -> Path:
        """``memories/MEMORY.md`` for ``"memory"``, ``memories/USER.md`` for ``"user"``.

        Raises:
            ValueError: ``target`` is not ``"memory"`` or ``"user"``.
        """
        if target not in TARGET_FILES:
            raise ValueError(f"invalid target {target!r}: use 'memory' or 'user'")
        return self.memories_dir / TARGET_FILES[target]

    @property
    def state_db(self) -> Path:
        return self.path / "state.db"

    @property
    def config_path(self) -> Path:
        return self.path / "config.yaml"

    @property
    def memlock_dir(self) -> Path:
        """The home's own ``memlock/``. MemLock 0.5 on the default profile may keep the state
        elsewhere (``~/.memlock/memlock``): use :func:`core.memlock_home.locate_memlock` to read it."""
        return self.path / "memlock"

    @property
    def pending_dir(self) -> Path:
        return self.path / "pending" / "memory"

    @property
    def memdeck_dir(self) -> Path:
        return self.path / "memdeck"

    @property
    def plugins_dir(self) -> Path:
        return self.path / "plugins"


def _profile_from_home(path: Path) -> str:
    return path.name if path.parent.name == "profiles" else "default"


def resolve_home(
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
) -> HermesHome:
    """Resolve the Hermes home to watch, in Hermes' own order.

    Order: ``home`` (``--home``), else ``HERMES_HOME`` (stripped), else the profile named in
    ``<default root>/active_profile`` (-> ``<root>/profiles/<name>``), else the default root.
    ``profile`` (``--profile``) selects ``<root>/profiles/<name>`` of whichever root the rest
    resolves to (``"default"`` selects the root itself).

    Raises:
        HomeError: the profile name is invalid or the named profile does not exist.
        UnknownUserHome: ``home`` or ``HERMES_HOME`` starts with ``~user`` for an unknown user.
    """
    env = os.environ if env is None else env
    if home is not None:
        base = expand_home_path(home)
    elif env.get("HERMES_HOME", "").strip():
        base = expand_home_path(env["HERMES_HOME"].strip())
    else:
        root = default_root()
        base = root
        active = root / "active_profile"
        try:
            name = read_regular_bytes(active).decode("utf-8").strip()
        except (OSError, UnicodeDecodeError):
            name = ""
        if name and name != "default" and PROFILE_NAME_RE.match(name):
            candidate = root / "profiles" / name
            if candidate.is_dir():
                base = candidate
    if profile is not None:
        root = root_of(base)
        if profile == "default":
            return HermesHome(root, "default")
        if not PROFILE_NAME_RE.match(profile):
            raise HomeError(f"invalid profile name {profile!r} (Hermes allows [a-z0-9][a-z0-9_-]{{0,63}})")
        candidate = root / "profiles" / profile
        if not candidate.is_dir():
            raise HomeError(f"no profile {profile!r} under {root / 'profiles'}")
        return HermesHome(candidate, profile)
    return HermesHome(base, _profile_from_home(base))


def list_profiles(root: str | os.PathLike[str]) -> list[HermesHome]:
    """Every profile of a root: the root itself (``default``) then ``profiles/*`` sorted by name."""
    root = expand_home_path(root)
    out = [HermesHome(root, "default")]
    pdir = root / "profiles"
    try:
        names = sorted(p.name for p in pdir.iterdir() if p.is_dir() and PROFILE_NAME_RE.match(p.name))
    except OSError:
        names = []
    out.extend(HermesHome(pdir / n, n) for n in names)
    return out


#: What marks a directory as a Hermes home: any one of these (Hermes creates ``memories/`` and
#: ``state.db`` on first use and ``config.yaml`` at setup).
HOME_MARKERS = ("config.yaml", "memories", "state.db")


def require_hermes_home(home: HermesHome) -> None:
    """Refuse to write into a directory that is not a Hermes home (a mistyped ``--home``).

    Raises:
        Refused: ``code="not_a_home"`` when ``home.path`` is missing or has none of
            :data:`HOME_MARKERS`; nothing is created.
    """
    if any((home.path / m).exists() for m in HOME_MARKERS):
        return
    from .errors import Refused

    what = "does not exist" if not home.path.exists() else "has no config.yaml, memories/ or state.db"
    raise Refused(f"{home.path} is not a Hermes home: it {what}. Check --home / HERMES_HOME "
                  f"(to start a new home on purpose, create {home.path / 'memories'} first). Nothing was written.",
                  code="not_a_home")
