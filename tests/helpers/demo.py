"""Demo-home fixtures for every area's tests (TUI pilots and snapshots included).

Use them from a test module with ``from tests.helpers.demo import demo_home, demo_home_template``
(pytest finds imported fixtures). The template is built once per test session; each test gets
its own copy, so a test that writes (pin, archive, approve ...) never leaks into another.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home, demo_plan
from memdeck.core.home import HermesHome


@pytest.fixture(scope="session")
def demo_home_template(tmp_path_factory: pytest.TempPathFactory) -> HermesHome:
    """The demo home for seed 7 at :data:`core.demo.DEMO_NOW`, built once. Do not write to it."""
    return build_demo_home(tmp_path_factory.mktemp("demo-template") / "home", seed=DEMO_SEED, now=DEMO_NOW)


@pytest.fixture
def demo_home(demo_home_template: HermesHome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HermesHome:
    """A private copy of the demo home (seed 7, ``DEMO_NOW``), exported as ``HERMES_HOME``."""
    dest = tmp_path / "demo_home"
    shutil.copytree(demo_home_template.path, dest, symlinks=True)
    monkeypatch.setenv("HERMES_HOME", str(dest))
    return HermesHome(dest)


def db_rows(home: HermesHome) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables the demo writes, ordered, for equality checks: state.db's, and
    memdeck.db's journal, archive and history (``history_seen`` without its file stamps, which
    hold mtimes and inodes)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    conn = sqlite3.connect(f"file:{home.state_db}?mode=ro", uri=True)
    try:
        for table, order in (("sessions", "id"), ("messages", "id"), ("schema_version", "version")):
            out[table] = [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY {order}")]
    finally:
        conn.close()
    conn = sqlite3.connect(f"file:{Path(home.path) / 'memdeck' / 'memdeck.db'}?mode=ro", uri=True)
    try:
        for table, cols, order in (("journal", "*", "journal_id"), ("archive", "*", "archive_id"),
                                   ("history", "*", "change_id"),
                                   ("history_seen", "path, kind, target, scope, session_id, content, seen_at, journal_mark",
                                    "path")):
            out[f"memdeck.{table}"] = [tuple(r) for r in conn.execute(f"SELECT {cols} FROM {table} ORDER BY {order}")]
        # a journal row's ``witness`` names the temp files of its write (random tokens,
        # core/fsio.py stage_replace): crash-recovery data, like the stamps above
        out["memdeck.journal"] = [tuple(json.dumps({k: v for k, v in json.loads(x).items() if k != "witness"})
                                        if isinstance(x, str) and x.startswith("{") and '"witness"' in x else x
                                        for x in row) for row in out["memdeck.journal"]]
    finally:
        conn.close()
    return out


def file_bytes(home: HermesHome) -> dict[str, bytes]:
    """``relative path -> bytes`` of every file of the home except the SQLite database files
    (state.db and memdeck.db: compare their rows with :func:`db_rows`)."""
    root = Path(home.path)
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(("state.db", "memdeck.db"))
    }


__all__ = ["demo_home", "demo_home_template", "db_rows", "file_bytes", "demo_plan", "DEMO_NOW", "DEMO_SEED"]
