"""The alert script: MemLock's ``alert_script`` run detached and reaped.

When an audit raises an alert and ``memlock.alert_script`` is set, ``Guard.run_turn`` runs
``[script, message]`` in its own session, with no stdin/stdout/stderr, and terminates its
process group after :data:`ALERT_SCRIPT_TIMEOUT_S` seconds (MemLock 694ec32 reaps after 5 s), so
a hanging script neither holds Hermes' turn nor outlives it long.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading

logger = logging.getLogger("memdeck.guard")

#: Seconds an alert script may run before it is terminated (MemLock 694ec32 reaps after 5 s).
ALERT_SCRIPT_TIMEOUT_S = 5.0


def _reap(proc: subprocess.Popen, timeout: float) -> None:
    try:
        proc.wait(timeout=timeout)
        return
    except subprocess.TimeoutExpired:
        pass
    except Exception:  # noqa: BLE001 - a reaper thread never raises: the script is left to end  # pragma: no cover
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except OSError:
        pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()


def run_alert_script(script: str, message: str, timeout: float = ALERT_SCRIPT_TIMEOUT_S) -> subprocess.Popen | None:
    """Start ``[script, message]`` detached (new session, no stdin/stdout/stderr) and reap it.

    A daemon thread waits ``timeout`` seconds, then terminates the script's process group.
    Returns the process, or None when it could not be started (logged, never raised).
    """
    try:
        proc = subprocess.Popen([script, message], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except Exception as exc:  # noqa: BLE001 - the plugin never raises into Hermes: logged, None
        logger.warning("memdeck: alert script %r failed to start: %s", script, exc)
        return None
    threading.Thread(target=_reap, args=(proc, timeout), name="memdeck-alert-reaper", daemon=True).start()
    return proc


__all__ = ["ALERT_SCRIPT_TIMEOUT_S", "run_alert_script"]
