"""Which homes make the fleet: every profile under the Hermes root, plus the homes the person's
settings file names (``fleet.homes``), local paths or ``ssh://[user@]host[:port]/path``.

The settings file itself belongs to the dashboard (``memdeck.tui.settings``: core never imports
the TUI); its ``fleet`` table is parsed here (:func:`parse_fleet_settings`) so that the CLI, the
metrics exporter and the fleet screen read it the same way::

    [fleet]
    homes = ["/srv/hermes/gateway", "ssh://ops@box-2/home/ops/.hermes", "ssh://box-3:2222/~/.hermes"]
    ssh_command = ["ssh", "-F", "/home/me/.ssh/fleet_config"]   # the ssh client and its options
    remote_memdeck = "/opt/memdeck/bin/memdeck"                 # memdeck on the remote hosts
    connect_timeout = 5     # seconds (ssh ConnectTimeout)
    timeout = 30            # seconds for one remote `memdeck status --json`
    remote_interval = 60    # seconds between two reads of a remote home (screen, --serve)
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..errors import MemdeckError
from ..home import PROFILE_NAME_RE, HermesHome, default_root, expand_home_path, root_of

#: A host name or address ssh accepts as given (never starting with ``-``: no option injection).
_HOST_RE = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,252})|\[[0-9A-Fa-f:.%A-Za-z]{2,60}\])$")
_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")

DEFAULT_SSH_COMMAND: tuple[str, ...] = ("ssh",)
DEFAULT_REMOTE_MEMDECK = "memdeck"
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_REMOTE_INTERVAL_S = 60.0


class FleetError(MemdeckError):
    """A fleet home or setting that cannot be used (the message says which and why)."""


def _profile_of(path: str) -> str:
    p = Path(path)
    return p.name if p.parent.name == "profiles" and PROFILE_NAME_RE.match(p.name) else "default"


@dataclass(frozen=True)
class FleetHome:
    """One home of the fleet.

    Attributes:
        address: what identifies the row: the local absolute path, or
            ``ssh://[user@]host[:port]/path`` (the remote path as written).
        path: the home's path (on the remote host for an ``ssh://`` home; may start with ``~/``).
        profile: the profile name (``profiles/<name>`` -> name, else ``default``).
        host, user, port: the SSH destination (None for a local home).
        source: ``profile`` (found under the Hermes root), ``settings`` (``fleet.homes``) or
            ``home`` (``--home``).
    """

    address: str
    path: str
    profile: str
    host: str | None = None
    user: str | None = None
    port: int | None = None
    source: str = "profile"

    @property
    def remote(self) -> bool:
        return self.host is not None

    @property
    def destination(self) -> str:
        """``user@host`` (or ``host``) for ssh. Raises ValueError for a local home."""
        if self.host is None:
            raise ValueError(f"{self.address} is a local home")
        host = self.host[1:-1] if self.host.startswith("[") else self.host
        return f"{self.user}@{host}" if self.user else host

    @property
    def connection_key(self) -> tuple[str, str, int | None]:
        """Homes with the same key share one SSH connection: ``(user, host, port)``."""
        return (self.user or "", self.host or "", self.port)

    def local_home(self) -> HermesHome:
        """The :class:`HermesHome` of a local home. Raises ValueError for a remote one."""
        if self.remote:
            raise ValueError(f"{self.address} is a remote home")
        return HermesHome(Path(self.path), self.profile)


def parse_home_spec(text: str, *, source: str = "settings") -> FleetHome:
    """A :class:`FleetHome` from a settings entry: an absolute local path (``~`` expanded) or
    ``ssh://[user@]host[:port]/path`` (``ssh://host/~/.hermes`` for a path under the remote
    user's home; percent-escapes decoded).

    Raises:
        FleetError: empty, relative, a control character, an ``ssh://`` address without a path,
            a host or user ssh would read as an option or that is not a name, a bad port.
    """
    if not isinstance(text, str) or not text.strip():
        raise FleetError("a fleet home is an empty string")
    text = text.strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise FleetError(f"fleet home {text!r} holds a control character")
    if text.startswith("ssh://"):
        rest = text[len("ssh://"):]
        netloc, slash, path = rest.partition("/")
        if not slash or not path:
            raise FleetError(f"fleet home {text!r} has no path (ssh://host/path)")
        user = None
        if "@" in netloc:
            user, _, netloc = netloc.rpartition("@")
            user = unquote(user)
            if not _USER_RE.match(user):
                raise FleetError(f"fleet home {text!r}: {user!r} is not a user name")
        port = None
        if netloc.startswith("["):
            end = netloc.find("]")
            host, tail = netloc[:end + 1], netloc[end + 1:]
        else:
            host, _, tail = netloc.partition(":")
            tail = ":" + tail if tail else ""
        if tail:
            if not tail.startswith(":") or not tail[1:].isdigit() or not 0 < int(tail[1:]) < 65536:
                raise FleetError(f"fleet home {text!r}: {tail[1:]!r} is not a port")
            port = int(tail[1:])
        if not _HOST_RE.match(host) or host.startswith("-"):
            raise FleetError(f"fleet home {text!r}: {host!r} is not a host name")
        path = unquote(path)
        path = path if path.startswith("~") else "/" + path
        if "\x00" in path or "\n" in path:
            raise FleetError(f"fleet home {text!r}: the path holds a control character")
        return FleetHome(address=text, path=path, profile=_profile_of(path), host=host, user=user, port=port,
                         source=source)
    p = Path(os.path.expanduser(text))
    if not p.is_absolute():
        raise FleetError(f"fleet home {text!r} is not an absolute path (or ssh://host/path)")
    p = Path(os.path.normpath(p))
    return FleetHome(address=str(p), path=str(p), profile=_profile_of(str(p)), source=source)


@dataclass(frozen=True)
class FleetSettings:
    """The ``fleet`` table of the settings file (module docstring), with its defaults.

    Attributes:
        homes: the extra homes (``fleet.homes``), in the file's order.
        ssh_command: the ssh client and options every remote read starts with.
        remote_memdeck: the memdeck command on the remote hosts (split like a shell word list).
        connect_timeout: seconds for ssh to connect (``ConnectTimeout``).
        timeout: seconds one remote ``memdeck status --json`` may take, connection included.
        remote_interval: seconds between two reads of the same remote home (the screen, ``--serve``).
        warnings: one line per value ignored.
    """

    homes: tuple[FleetHome, ...] = ()
    ssh_command: tuple[str, ...] = DEFAULT_SSH_COMMAND
    remote_memdeck: str = DEFAULT_REMOTE_MEMDECK
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    timeout: float = DEFAULT_TIMEOUT_S
    remote_interval: float = DEFAULT_REMOTE_INTERVAL_S
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def remote_command(self) -> tuple[str, ...]:
        """:attr:`remote_memdeck` as argv words."""
        return tuple(shlex.split(self.remote_memdeck)) or (DEFAULT_REMOTE_MEMDECK,)


def _seconds(raw: Any, default: float, key: str, where: str, warnings: list[str], lo: float, hi: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not lo <= float(raw) <= hi:
        warnings.append(f"{where}: fleet.{key} = {raw!r} is not a number of seconds from {lo:g} to {hi:g}; using {default:g}")
        return default
    return float(raw)


def parse_fleet_settings(raw: Any, where: str = "settings") -> FleetSettings:
    """The :class:`FleetSettings` of a parsed ``fleet`` table (None: the defaults). Never raises:
    what cannot be used is left out and named in :attr:`FleetSettings.warnings`.

    Args:
        raw: the value of the ``fleet`` key of the settings file.
        where: the file, for the warnings.
    """
    if raw is None:
        return FleetSettings()
    warnings: list[str] = []
    if not isinstance(raw, Mapping):
        return FleetSettings(warnings=(f"{where}: fleet must be a table (homes, ssh_command, remote_memdeck); ignored",))
    known = {"homes", "ssh_command", "remote_memdeck", "connect_timeout", "timeout", "remote_interval"}
    warnings += [f"{where}: unknown setting fleet.{k} ignored" for k in raw if k not in known]
    homes: list[FleetHome] = []
    seen: set[str] = set()
    raw_homes = raw.get("homes") or []
    if not isinstance(raw_homes, list):
        warnings.append(f"{where}: fleet.homes must be a list of paths or ssh:// addresses; ignored")
        raw_homes = []
    for item in raw_homes:
        try:
            h = parse_home_spec(item, source="settings")
        except FleetError as exc:
            warnings.append(f"{where}: {exc}; ignored")
            continue
        if h.address not in seen:
            seen.add(h.address)
            homes.append(h)
    ssh = raw.get("ssh_command")
    ssh_command = DEFAULT_SSH_COMMAND
    if isinstance(ssh, str) and ssh.strip():
        ssh = shlex.split(ssh)
    if ssh is not None:
        if isinstance(ssh, list) and ssh and all(isinstance(w, str) and w for w in ssh):
            ssh_command = tuple(ssh)
        else:
            warnings.append(f"{where}: fleet.ssh_command must be a list of words such as [\"ssh\", \"-F\", \"path\"]; using ssh")
    rm = raw.get("remote_memdeck")
    remote = DEFAULT_REMOTE_MEMDECK
    if rm is not None:
        if isinstance(rm, str) and rm.strip() and not any(ord(c) < 32 for c in rm):
            try:
                shlex.split(rm)
                remote = rm.strip()
            except ValueError:
                warnings.append(f"{where}: fleet.remote_memdeck {rm!r} is not a command line; using memdeck")
        else:
            warnings.append(f"{where}: fleet.remote_memdeck must be a command such as \"/opt/memdeck/bin/memdeck\"; using memdeck")
    return FleetSettings(
        homes=tuple(homes), ssh_command=ssh_command, remote_memdeck=remote,
        connect_timeout=_seconds(raw.get("connect_timeout"), DEFAULT_CONNECT_TIMEOUT_S, "connect_timeout", where, warnings, 1, 120),
        timeout=_seconds(raw.get("timeout"), DEFAULT_TIMEOUT_S, "timeout", where, warnings, 1, 600),
        remote_interval=_seconds(raw.get("remote_interval"), DEFAULT_REMOTE_INTERVAL_S, "remote_interval", where, warnings, 5, 86400),
        warnings=tuple(warnings),
    )


def profile_homes(root: Path, *, source: str = "profile", first_profile: str = "default") -> list[FleetHome]:
    """The root (as ``first_profile``) and every ``<root>/profiles/<name>`` directory whose name
    Hermes accepts, sorted by name (:func:`memdeck.core.home.list_profiles`'s order)."""
    root = Path(os.path.normpath(expand_home_path(root).absolute()))
    out = [FleetHome(address=str(root), path=str(root), profile=first_profile, source=source)]
    pdir = root / "profiles"
    try:
        names = sorted(p.name for p in pdir.iterdir() if p.is_dir() and PROFILE_NAME_RE.match(p.name))
    except OSError:
        names = []
    out += [FleetHome(address=str(pdir / n), path=str(pdir / n), profile=n, source="profile") for n in names]
    return out


def fleet_homes(base: HermesHome | None, settings: FleetSettings, *, explicit: Path | None = None) -> list[FleetHome]:
    """The homes of the fleet, each once, in discovery order.

    Args:
        base: the home memdeck resolved as usual (``HERMES_HOME``, the active profile, ``~/.hermes``);
            the fleet holds every profile of its root (:func:`memdeck.core.home.root_of`).
            None: the default root.
        settings: the ``fleet`` table: its homes come after the profiles.
        explicit: ``--home H``: the fleet is H and the profiles under it, nothing else.
    """
    if explicit is not None:
        path = Path(os.path.normpath(expand_home_path(explicit).absolute()))
        return profile_homes(path, source="home", first_profile=_profile_of(str(path)))
    root = root_of(base.path) if base is not None else default_root()
    out = profile_homes(root)
    seen = {h.address for h in out}
    for h in settings.homes:
        if h.address not in seen:
            seen.add(h.address)
            out.append(h)
    return out


def home_labels(homes: Sequence[FleetHome]) -> dict[str, str]:
    """A short label per address for the screen: the profile name when it is unique among local
    homes, else the path; ``host:path`` for a remote home."""
    local_names = [h.profile for h in homes if not h.remote]
    out: dict[str, str] = {}
    for h in homes:
        if h.remote:
            out[h.address] = f"{h.host}:{h.path}"
        elif local_names.count(h.profile) == 1:
            out[h.address] = h.profile
        else:
            out[h.address] = h.path
    return out
