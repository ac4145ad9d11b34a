"""Several memdeck processes on one home at once (issue 22's blocker): the roles and their report.

Run as ``python -m tests.helpers.store_stress ROLE HOME SECONDS TAG [K/N]`` (the test starts each role as
its own process, as a user's shells would). Each role prints one JSON line at the end:

- ``cli``: one ``memdeck`` *process* per command, in a loop until the deadline: ``memory add``,
  ``history --json``, ``memory remove``, ``journal --json``, ``archive`` + ``restore`` now and
  then, and each time round one sample of a writing command of ``tests/helpers/commands.py``:
  the ``K``-th of ``N`` cli roles takes every ``N``-th sample from the ``K``-th on and goes on
  past the deadline until each of its share ran once, so all of them run (a new writer joins
  by default), filled from the home as it is then (never naming another role's notes). Every command
  is recorded as ``ok``, ``refused`` (exit 1, or 5 for a bulk that did some, with memdeck's ``refused:`` line: a reason) or
  ``failed`` (anything else, with its stderr).
- ``dashboard``: the real dashboard (``make_app``, watchers on), headless, adding and removing
  entries through its own write worker and refreshing on every change the others make; it
  reports its write outcomes, refreshes and every error toast or source banner it showed.
- ``watch``: ``memdeck watch`` streaming JSON lines until the deadline; reports its events and
  anything on stderr.
- ``chat``: one process standing for a Hermes gateway with memdeck's plugin: ``/memdeck`` answers
  (``core/plugin/chat_command.py`` ``run``, every sample of ``tests/helpers/commands.py``
  ``CHAT_SAMPLES`` in turn, filled from the home as it is then) and the chat notice's hooks
  (``core/plugin/chat_notice.py``: a staged write, then the reply) in a loop until the deadline,
  and on until every sub-command ran once. An answer is ``ok``, ``refused`` (``memdeck: refused:``
  or a usage line) or ``failed`` (an exception, ``memdeck: error:``/``failed``, or a notice that is
  not the line).

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
    # exit 1: refused, nothing written; exit 5 (EXIT_PARTIAL): a bulk action did some records and
    # refused others, e.g. one another process was handling ("is being handled by another process")
    if proc.returncode in (1, 5) and (proc.stderr.startswith("memdeck: refused:") or _refusal_json(proc.stdout)):
        return _REFUSED
    return _FAILED


def run_cli(home: Path, seconds: float, tag: str, share: str = "0/1") -> dict[str, Any]:
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

    k, n = (int(x) for x in share.split("/"))
    writes = _writer_samples()[k::n]
    ran: dict[str, int] = {}
    while time.monotonic() < deadline or i < len(writes):
        text = f"stress {tag} note {i}"
        if writes:
            name, argv = writes[i % len(writes)]
            cmd(*fill(argv, _values(home)))
            ran[name] = ran.get(name, 0) + 1
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
    return {"role": "cli", "tag": tag, "counts": counts, "failures": failures, "writers": ran}


def _writer_samples() -> list[tuple[str, list[str]]]:
    from tests.helpers.commands import SAMPLES, writers

    return [(name, argv) for name in writers() for argv in SAMPLES[name]]


def fill(argv: list[str], values: dict[str, str]) -> list[str]:
    from tests.helpers.commands import fill as _fill

    return _fill(argv, values)


def _values(home: Path) -> dict[str, str]:
    """:func:`tests.helpers.commands.home_values`, but an entry another role added (a stress note)
    is never named: the roles' own add/remove pairs stay theirs."""
    from memdeck.core.config import load_config
    from memdeck.core.home import HermesHome
    from memdeck.core.memory.reader import read_memory
    from tests.helpers.commands import PLACEHOLDERS, home_values

    values = home_values(str(home))
    try:
        h = HermesHome(home)
        entries = [e for e in read_memory(h, load_config(h), "memory").entries if not e.text.startswith("stress ")]
    except Exception:  # noqa: BLE001 - the placeholders then
        entries = []
    values["entry"], values["entry_id"] = ((entries[0].text, str(entries[0].id)) if entries else
                                           (PLACEHOLDERS["entry"], PLACEHOLDERS["entry_id"]))
    return values


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


def run_chat(home: Path, seconds: float, tag: str) -> dict[str, Any]:
    import re
    import traceback

    from memdeck.core.config import load_config
    from memdeck.core.home import HermesHome
    from memdeck.core.plugin.chat_command import run
    from memdeck.core.plugin.chat_notice import ChatNotices
    from tests.helpers.commands import CHAT_SAMPLES, chat_samples

    h = HermesHome(home)
    notices = ChatNotices(h, lambda: load_config(h))
    counts = {_OK: 0, _REFUSED: 0, _FAILED: 0}
    failures: list[str] = []
    ran: dict[str, int] = {}
    line = re.compile(r"\d+ memory writes? waits? for review: /memdeck pending")
    deadline = time.monotonic() + seconds
    i = 0

    def record(kind: str, what: str) -> None:
        counts[kind] += 1
        if kind == _FAILED and len(failures) < 20:
            failures.append(what)

    while time.monotonic() < deadline or set(ran) != set(CHAT_SAMPLES):
        values = _values(home)
        samples = chat_samples(values)
        sub, text = samples[i % len(samples)]
        try:
            answer = run(h, text, None)
        except Exception:  # noqa: BLE001 - the finding
            record(_FAILED, f"/memdeck {text}: {traceback.format_exc()[-600:]}")
        else:
            if answer.startswith(("memdeck: error", "memdeck: failed")):
                record(_FAILED, f"/memdeck {text}: {answer[:400]}")
            else:
                record(_REFUSED if answer.startswith(("memdeck: refused:", "usage:")) else _OK, "")
        ran[sub] = ran.get(sub, 0) + 1
        try:  # the notice: Hermes staged the record named by `pending` in this session, then the reply
            notices.post_tool_call(tool_name="memory", result=json.dumps({"staged": True, "pending_id": values["pending"]}),
                                   session_id=f"S{i}")
            reply = notices.transform_llm_output(response_text="Done.", session_id=f"S{i}")
            ok = reply is None or (reply.startswith("Done.\n\n") and line.fullmatch(reply.split("\n\n", 1)[1]) is not None)
            record(_OK if ok else _FAILED, f"notice: {reply!r}")
        except Exception:  # noqa: BLE001 - the finding
            record(_FAILED, f"notice: {traceback.format_exc()[-600:]}")
        i += 1
    return {"role": "chat", "tag": tag, "counts": counts, "failures": failures, "writers": {}, "chat": ran}


ROLES = {"cli": run_cli, "dashboard": run_dashboard, "watch": run_watch, "chat": run_chat}


def main(argv: list[str]) -> int:
    role, home, seconds, tag = argv[0], Path(argv[1]), float(argv[2]), argv[3]
    os.environ.setdefault("TZ", "UTC")
    report = ROLES[role](home, seconds, tag, *argv[4:5])
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
