"""Fleet fixtures: a Hermes root with many profiles, and a real OpenSSH server on loopback.

``fleet_root(template, dest, n)`` copies a home as the root and ``n - 1`` profiles, each with its
own ``memory_char_limit`` (so their figures differ). ``local_sshd`` starts Debian's
``/usr/sbin/sshd`` as this user on a free loopback port with a temp config, a temp host key and a
temp authorized key (the client side: :attr:`Sshd.ssh_command`, with its own known_hosts and
``StrictHostKeyChecking=yes``); it skips, saying why, only where sshd or ssh-keygen is absent or
sshd cannot start (not root: sshd needs root to switch users). Stopped at the end of the test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"


def fleet_root(template: Path, dest: Path, n: int) -> Path:
    """``dest`` = a copy of ``template`` plus ``profiles/p01`` ... ``profiles/p{n-1}`` copies;
    profile ``i`` gets ``memory.memory_char_limit: 2200 + 50 * i``."""
    import yaml

    shutil.copytree(template, dest, symlinks=True)
    for i in range(1, n):
        p = dest / "profiles" / f"p{i:02d}"
        shutil.copytree(template, p, symlinks=True, ignore=shutil.ignore_patterns("profiles"))
        cfg_path = p / "config.yaml"
        cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
        cfg.setdefault("memory", {})["memory_char_limit"] = 2200 + 50 * i
        cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return dest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    """A running sshd: ``port``, the client options (``ssh_command``), the process."""

    port: int
    ssh_command: list[str]
    proc: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start_sshd(tmp: Path) -> Sshd:
    """Start sshd on loopback (module docstring). Calls ``pytest.skip`` where it cannot run."""
    if not os.path.exists(SSHD) or shutil.which("ssh-keygen") is None or shutil.which("ssh") is None:
        pytest.skip("OpenSSH server/client absent (Debian's openssh-server: .ci/run installs it as root)")
    if os.geteuid() != 0:
        pytest.skip("sshd needs root to run its sessions (CI runs as root)")
    tmp.mkdir(parents=True, exist_ok=True)
    os.chmod(tmp, 0o700)
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / name)], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    auth = tmp / "authorized_keys"
    auth.write_text((tmp / "client_key.pub").read_text())
    os.chmod(auth, 0o600)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    port = free_port()
    config = tmp / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {tmp / 'host_key'}", f"PidFile {tmp / 'sshd.pid'}",
        f"AuthorizedKeysFile {auth}", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes", "PermitRootLogin prohibit-password", "StrictModes no", "UsePAM no",
        "AllowTcpForwarding no", "X11Forwarding no", "PrintMotd no", "MaxSessions 50", "LogLevel VERBOSE",
        "MaxStartups 50", "",
    ]))
    known = tmp / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} " + (tmp / "host_key.pub").read_text().split(" ", 2)[0] + " "
                     + (tmp / "host_key.pub").read_text().split(" ", 2)[1] + "\n")
    log = tmp / "sshd.log"
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=open(log, "wb"))  # noqa: SIM115 - sshd holds it until it ends
    ssh_command = ["ssh", "-F", "/dev/null", "-i", str(tmp / "client_key"), "-o", "IdentitiesOnly=yes",
                   "-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR"]
    # wait for the listening socket (an event: the port accepts), bounded
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            pytest.skip(f"sshd did not start: {log.read_text(errors='replace')[-500:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail("sshd did not listen within 30 s")
            time.sleep(0.05)
    return Sshd(port, ssh_command, proc, log)


@pytest.fixture
def local_sshd(tmp_path: Path):
    server = start_sshd(tmp_path / "sshd")
    try:
        yield server
    finally:
        server.stop()


def venv_memdeck() -> str:
    """This environment's ``memdeck`` (what the remote side runs in the tests)."""
    path = Path(sys.executable).with_name("memdeck")
    assert path.exists(), path
    return str(path)
