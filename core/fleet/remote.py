"""Reading a remote home: ``ssh host memdeck --home PATH status --json``, never a write.

Every home of one host (same user, host and port) goes over one shared SSH connection: OpenSSH
connection sharing (``ControlMaster=auto``, ``ControlPersist``) with its control socket in a
private directory this process creates (mode 0700) and removes when it closes
(:meth:`SshClient.close` asks each master to exit, ``ssh -O exit``). Every read runs with
``BatchMode=yes`` (never a password or host-key prompt: a host that needs one fails with ssh's
own message), ``ConnectTimeout``, server-alive probes and a bounded wall-clock timeout after
which the probe's whole process group is killed (the ssh client, and a wrapper's or a
ProxyCommand's children that keep its output open: issue 40 #6) and its output no longer read.
The command sent is built from fixed words and the home's path,
each quoted for the remote shell (``shlex.quote``); the host and user were checked when the
address was parsed (:func:`memdeck.core.fleet.homes.parse_home_spec`: never an ssh option).

What runs remotely is ``memdeck status --json``: a read of the home (which, as every memdeck
command, also records the change history in that home's memdeck.db).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .homes import FleetHome, FleetSettings

#: The largest ``status --json`` accepted from a host, in bytes.
MAX_STATUS_BYTES = 64 * 1024 * 1024
#: How long a master connection outlives its last use, in seconds (``ControlPersist``).
CONTROL_PERSIST_S = 60
#: How long ``ssh -O exit`` may take when the fleet closes, in seconds (then its group is killed).
EXIT_MASTER_TIMEOUT_S = 5


class RemoteError(Exception):
    """A remote read failed; the message is one line for the row (ssh's own words when it spoke)."""


@dataclass(frozen=True)
class RemoteStatus:
    """One successful read: the parsed ``status --json`` object and when it was read (epoch s)."""

    status: Mapping[str, Any]
    fetched_at: float


def remote_path_word(path: str) -> str:
    """``path`` quoted for the remote POSIX shell, a leading ``~/`` left for it to expand."""
    if path == "~":
        return "~"
    if path.startswith("~/"):
        return "~/" + shlex.quote(path[2:])
    return shlex.quote(path)


class SshClient:
    """Runs commands on the fleet's hosts over one shared connection per host (module docstring).

    Thread-safe: different hosts may be read from different threads; the first use of a host
    creates its master, later uses reuse it.
    """

    def __init__(self, settings: FleetSettings) -> None:
        self.settings = settings
        self._dir: str | None = None
        self._used: dict[tuple[str, str, int | None], FleetHome] = {}
        self._lock = threading.Lock()

    def _control_dir(self) -> str:
        with self._lock:
            if self._dir is None:
                # short: a Unix socket path is limited to ~104 bytes; %C below is a 40-char hash
                base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
                if not os.path.isdir(base) or len(base) > 40:
                    base = tempfile.gettempdir()
                self._dir = tempfile.mkdtemp(prefix="memdeck-ssh-", dir=base)  # mode 0700
            return self._dir

    def base_argv(self, home: FleetHome, *, batch: bool = True) -> list[str]:
        """The ssh command line up to (and including) the destination."""
        s = self.settings
        argv = list(s.ssh_command)
        argv += ["-o", "ControlMaster=auto", "-o", f"ControlPath={self._control_dir()}/%C",
                 "-o", f"ControlPersist={CONTROL_PERSIST_S}",
                 "-o", f"ConnectTimeout={max(1, int(s.connect_timeout))}",
                 "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2"]
        if batch:
            argv += ["-o", "BatchMode=yes"]
        if home.port is not None:
            argv += ["-p", str(home.port)]
        argv.append(home.destination)
        return argv

    def status_argv(self, home: FleetHome) -> list[str]:
        """The full command that reads ``home``'s ``status --json``."""
        words = [shlex.quote(w) for w in self.settings.remote_command]
        remote = " ".join([*words, "--home", remote_path_word(home.path), "status", "--json"])
        return [*self.base_argv(home), remote]

    def dashboard_argv(self, home: FleetHome) -> list[str]:
        """``ssh -t host memdeck --home PATH``: the full dashboard of a remote home, interactive
        (no BatchMode: a prompt may be answered), over the same shared connection."""
        words = [shlex.quote(w) for w in self.settings.remote_command]
        base = self.base_argv(home, batch=False)
        return [base[0], "-t", *base[1:], " ".join([*words, "--home", remote_path_word(home.path)])]

    def read_status(self, home: FleetHome, *, now: float) -> RemoteStatus:
        """Run ``memdeck status --json`` on ``home``'s host and parse it.

        Raises:
            RemoteError: ssh could not start, connect or authenticate (ssh's message), the
                command timed out (the client is killed), memdeck failed on the host (its
                stderr's last line), or the output is not a ``status --json`` object.
        """
        argv = self.status_argv(home)
        with self._lock:
            self._used[home.connection_key] = home
        try:
            # its own process group: a wrapper's or a ProxyCommand's child goes with it at the deadline
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:
            raise RemoteError(f"cannot run {self.settings.ssh_command[0]}: {exc.strerror or exc}") from None
        try:
            out, err = proc.communicate(timeout=self.settings.timeout)
        except subprocess.TimeoutExpired:
            stop_probe(proc)
            raise RemoteError(f"no answer within {self.settings.timeout:g} s") from None
        return parse_status_output(proc.returncode, out, err, now=now)

    def close(self) -> None:
        """Ask every master this client started to exit, and remove the control directory."""
        with self._lock:
            used, self._used = list(self._used.values()), {}
            d, self._dir = self._dir, None
        if d is None:
            return
        for home in used:
            argv = list(self.settings.ssh_command) + ["-o", f"ControlPath={d}/%C", "-O", "exit"]
            if home.port is not None:
                argv += ["-p", str(home.port)]
            argv.append(home.destination)
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                continue
            try:
                proc.wait(timeout=EXIT_MASTER_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                stop_probe(proc)
        shutil.rmtree(d, ignore_errors=True)


#: After the deadline's kill, how long the output of a killed probe is still drained, in seconds
#: (a process that left the group may hold the pipes: it is not waited for).
DRAIN_AFTER_KILL_S = 1.0


def stop_probe(proc: subprocess.Popen[bytes]) -> None:
    """Kill a probe started with ``start_new_session=True``: SIGKILL to its whole process group
    (the ssh client and every child that stayed in it), then stop reading its pipes after at most
    :data:`DRAIN_AFTER_KILL_S` and reap the client. Never raises, never blocks for longer."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is gone already
        pass
    try:
        proc.kill()
    except OSError:
        pass
    try:
        proc.communicate(timeout=DRAIN_AFTER_KILL_S)
    except (subprocess.TimeoutExpired, ValueError, OSError):  # something outside the group holds the pipes
        pass
    for pipe in (proc.stdout, proc.stderr):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=DRAIN_AFTER_KILL_S)
    except subprocess.TimeoutExpired:
        pass


def _last_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def parse_status_output(returncode: int, out: bytes, err: bytes, *, now: float) -> RemoteStatus:
    """Turn one ssh run into a :class:`RemoteStatus` (ssh exits 255 for its own failures).

    Raises:
        RemoteError: as :meth:`SshClient.read_status`.
    """
    if returncode == 255:
        said = _last_line(err) or "connection failed"
        raise RemoteError(said if said.startswith("ssh:") else f"ssh: {said}")
    if returncode != 0:
        why = _last_line(err) or f"exit status {returncode}"
        if returncode == 127:
            why = f"memdeck not found on the host ({why}); set fleet.remote_memdeck"
        raise RemoteError(f"remote memdeck failed: {why}")
    if len(out) > MAX_STATUS_BYTES:
        raise RemoteError(f"the host sent {len(out):,} bytes, more than the {MAX_STATUS_BYTES:,} accepted")
    try:
        data = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RemoteError(f"the host did not send status --json ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("memory"), dict) or "home" not in data:
        raise RemoteError("the host sent JSON that is not memdeck's status --json")
    return RemoteStatus(data, now)


def group_by_connection(homes: Sequence[FleetHome]) -> list[list[FleetHome]]:
    """Remote homes grouped by shared connection (host order kept)."""
    groups: dict[tuple[str, str, int | None], list[FleetHome]] = {}
    for h in homes:
        groups.setdefault(h.connection_key, []).append(h)
    return list(groups.values())
