"""Run the real Hermes of one matrix version on a home: the one place the interop tests start
the driver (``driver.py``) and check its answers.

``hermes_or_skip(version)`` is the python of that version's venv (:mod:`.venvs`), or the test is
skipped with the reason it cannot be had. ``drive(py, home, commands)`` runs ``commands`` (the
driver's JSON ops) with ``HERMES_HOME=home`` and a ``HOME`` beside it, and fails the test on a
driver crash or on any answer ``failed`` says is one.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.interop.matrix.venvs import SPECS, hermes_python

DRIVER = Path(__file__).resolve().parent / "driver.py"


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.21.5.post2"`` -> ``(0, 21, 5)``: major, minor, patch."""
    return tuple(int(p) for p in version.replace("post", "").split(".")[:3])


def hermes_or_skip(version: str) -> Path:
    """The python of ``version``'s venv (a key of :data:`.venvs.SPECS`); skips the test, saying
    why, when it cannot be built."""
    py = hermes_python(SPECS[version])
    if isinstance(py, str):
        pytest.skip(f"Hermes {version} unavailable: {py}")
    return py


def error_or_unsupported(res: Any) -> bool:
    """The default test of a failed answer: the driver reported an error or an unsupported op."""
    return isinstance(res, dict) and ("error" in res or "unsupported" in res)


def drive(py: Path, home: Path, commands: list[dict[str, Any]], *, cwd: Path | None = None, timeout: float = 600,
          failed: Callable[[Any], bool] = error_or_unsupported) -> list[Any]:
    """Run ``commands`` with the Hermes of ``py`` on ``home`` (cwd and the fake ``HOME`` beside it,
    or in ``cwd``); returns the driver's results, one per command."""
    where = home.parent if cwd is None else cwd
    env = dict(os.environ, HERMES_HOME=str(home), HOME=str(where / "user_home"))
    env.pop("PYTHONPATH", None)
    (where / "user_home").mkdir(exist_ok=True)
    proc = subprocess.run([str(py), str(DRIVER), str(home)], input=json.dumps(commands), capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=str(where))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)["results"]
    for cmd, res in zip(commands, results):
        assert not failed(res), (cmd, res)
    return results
