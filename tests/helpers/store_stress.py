"""Several memdeck processes on one home at once (issue 22's blocker): the roles and their report.

Run as ``python -m tests.helpers.store_stress ROLE HOME SECONDS TAG`` (the test starts each role as
its own process, as a user's shells would). Each role prints one JSON line at the end:

- ``cli``: one ``memdeck`` *process* per command, in a loop until the deadline: ``memory add``,
  ``history --json``, ``memory remove``, ``journal --json``, ``archive`` + ``restore`` and ``undo``
  now and then. Every command is recorded as ``ok``, ``refused`` (exit 1 with memdeck's
  ``refused:`` line: a reason) or ``failed`` (anything else, with its stderr).
- ``dashboard``: the real dashboard (``make_app``, watchers on), headless, adding and removing
  entries through its own write worker and refreshing on every change the others make; it
  reports its write outcomes, refreshes and every error toast or source banner it showed.
- ``watch``: ``memdeck watch`` streaming JSON lines until the deadline; reports its events and
  anything on stderr.

Closing a descriptor of memdeck.db anywhere in a process drops that process's SQLite locks, so
another process checkpoints and deletes the WAL under a live connection: with the old
``connect()`` (an ``fchmod`` through a second descriptor) this loses most commands within
seconds ("database disk image is malformed").
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_OK, _REFUSED, _FAILED = "ok", "refused", "failed"


def _memdeck() -> list[str]:
    return [sys.executable, "-m", "memdeck.tui"]


def _refusal_json(stdout: str) -> bool:
    try:
        body = json.loads(stdout)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("success") is False and bool(body.get("error"))


def _classify(proc: subprocess.CompletedProcess[str]) -> str:
    if "Traceback" in proc.stderr:
        return _FAILED
    if proc.returncode == 0:
        return _OK
    if proc.returncode == 1 and (proc.stderr.startswith("memdeck: refused:") or _refusal_json(proc.stdout)):
        return _REFUSED
    return _FAILED


def run_cli(home: Path, seconds: float, tag: str) -> dict[str, Any]:
    counts = {_OK: 0, _REFUSED: 0, _FAILED: 0}
    failures: list[str] = []
    deadline = time.monotonic() + seconds
    i = 0

    def cmd(*argv: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*_memdeck(), "--home", str(home), *argv], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)
        kind = _classify(proc)
        counts[kind] += 1
        if kind == _FAILED and len(failures) < 20:
            failures.append(f"{' '.join(argv)} -> {proc.returncode}: {proc.stderr.strip()[-400:]}")
        return proc

    while time.monotonic() < deadline:
        text = f"stress {tag} note {i}"
        cmd("memory", "add", "--target", "memory", text)
        cmd("history", "--json", "--limit", "5")
        if i % 3 == 2:
            arch = cmd("archive", text, "--target", "memory", "--json")
            if arch.returncode == 0:
                try:
                    archive_id = str(json.loads(arch.stdout).get("archive_id"))
                except (ValueError, AttributeError):
                    archive_id = ""
                if archive_id:
                    cmd("restore", archive_id)
        cmd("memory", "remove", "--target", "memory", text)
        cmd("journal", "--json", "--limit", "5")
        i += 1
    return {"role": "cli", "tag": tag, "counts": counts, "failures": failures}


def run_dashboard(home: Path, seconds: float, tag: str) -> dict[str, Any]:
    return asyncio.run(_dashboard(home, seconds, tag))


async def _dashboard(home: Path, seconds: float, tag: str) -> dict[str, Any]:
    from memdeck.core.errors import Refused
    from memdeck.core.home import HermesHome
    from memdeck.core.memory.store import MemoryStore
    from memdeck.tui.app import make_app

    app = make_app(HermesHome(home), watch=True)
    outcomes: list[tuple[str, str]] = []

    def recorded(op: Any) -> Any:
        def run() -> Any:
            try:
                result = op()
            except Refused as exc:
                outcomes.append((_REFUSED, exc.reason))
                raise
            except BaseException as exc:
                outcomes.append((_FAILED, f"{type(exc).__name__}: {exc}"))
                raise
            outcomes.append((_OK, ""))
            return result
        return run

    errors: list[str] = []
    writes = 0
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            for verb in ("add", "remove"):
                text = f"stress {tag} dash {i}"
                store = MemoryStore(app.home, app.config, actor="tui")
                op = (lambda s=store, t=text: s.add("memory", t)) if verb == "add" else \
                     (lambda s=store, t=text: s.remove("memory", t))
                seen = len(outcomes)
                app.run_write(verb, recorded(op), verb)
                while len(outcomes) == seen:  # the write worker records its outcome
                    await pilot.pause(0.02)
                while not app.idle:  # and the refresh it asks for has run, as a person would see it
                    await pilot.pause(0.02)
                writes += 1
            i += 1
        while not app.idle:
            await pilot.pause(0.05)
        for note in app.notification_log:
            if note.severity == "error" and "refused" not in (note.title or ""):
                errors.append(f"toast {note.title}: {note.message}"[:400])
        for pid, banner in sorted((getattr(app.snapshot, "errors", None) or {}).items()):
            errors.append(f"{pid} banner: {banner}"[:400])
        refreshes = app.refresh_count
        await pilot.press("q")
    counts = {k: sum(1 for kind, _m in outcomes if kind == k) for k in (_OK, _REFUSED, _FAILED)}
    failures = [m[:400] for kind, m in outcomes if kind == _FAILED][:20]
    return {"role": "dashboard", "tag": tag, "counts": counts, "failures": failures + errors[:20],
            "writes": writes, "refreshes": refreshes}


def run_watch(home: Path, seconds: float, tag: str) -> dict[str, Any]:
    proc = subprocess.run([*_memdeck(), "--home", str(home), "watch", "--timeout", str(seconds)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=seconds + 120)
    events = [line for line in proc.stdout.splitlines() if line.strip()]
    bad = [line for line in events if not line.startswith("{")]
    failures = ([f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"] if proc.returncode != 0 or proc.stderr.strip()
                else []) + bad[:5]
    return {"role": "watch", "tag": tag, "counts": {_OK: len(events), _REFUSED: 0, _FAILED: len(failures)},
            "failures": failures}


ROLES = {"cli": run_cli, "dashboard": run_dashboard, "watch": run_watch}


def main(argv: list[str]) -> int:
    role, home, seconds, tag = argv[0], Path(argv[1]), float(argv[2]), argv[3]
    os.environ.setdefault("TZ", "UTC")
    report = ROLES[role](home, seconds, tag)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
