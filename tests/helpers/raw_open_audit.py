"""Run every memdeck command and the dashboard in this process under an audit hook that records
every Python-level open of an SQLite file (``state.db``, ``memdeck.db`` or their side files) not
made by ``core/sqlite_files.py``. Prints ``{"violations": [...], "commands": N}`` as JSON.

``python -m tests.helpers.raw_open_audit HOME`` (a copy: the commands write to it).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
import traceback

_DATABASES = ("state.db", "memdeck.db")
violations: list[str] = []


def _hook(event: str, args: tuple) -> None:
    if event != "open" or not args:
        return
    path = args[0]
    if isinstance(path, int) or path is None:
        return
    try:
        s = os.fsdecode(path)
    except (TypeError, ValueError):
        return
    base = os.path.basename(s)
    for suffix in ("-wal", "-shm", "-journal"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    if base not in _DATABASES:
        return
    caller = sys._getframe(1)
    if caller.f_code.co_filename.endswith(os.path.join("core", "sqlite_files.py")):
        return
    stack = "".join(traceback.format_stack(caller, limit=4))
    violations.append(f"open({s!r}) from\n{stack}")


def main(home: str) -> int:
    from memdeck.tui.launch import main as cli_main  # the console script: `serve` included
    from tests.helpers.commands import SAMPLES, fill, home_values

    sys.addaudithook(_hook)
    values = home_values(home)
    n = 0
    for argvs in SAMPLES.values():
        for argv in argvs:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    cli_main(["--home", home, *fill(argv, values)])
                except SystemExit:
                    pass
            n += 1
    asyncio.run(_dashboard(home))
    print(json.dumps({"violations": violations, "commands": n}))
    return 0


async def _dashboard(home: str) -> None:
    from pathlib import Path

    from memdeck.core.home import HermesHome
    from memdeck.tui.app import make_app

    app = make_app(HermesHome(Path(home)), watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        for key in ("1", "2", "3", "4", "5", "6", "7"):
            await pilot.press(key)
            while not app.idle:
                await pilot.pause(0.02)
        await pilot.press("q")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
