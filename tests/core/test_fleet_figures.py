"""A home's figures: one mapping (figures_from_status), the same from a status --json run and from a
local reader's kept HomeReader (status_of of its incremental snapshot);
``memdeck fleet --json`` over 20 profiles equals 20 ``status --json`` runs; a reader re-reads only
what changed (core/fleet/figures.py, local.py, rows.py)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from memdeck.core.cli import main as cli_main
from memdeck.core.fleet.figures import figures_from_status
from memdeck.core.fleet.local import LocalReader, NotAHome
from memdeck.core.home import HermesHome
from memdeck.core.overview.status import build_status
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401 - fixtures
from tests.helpers.fleet import fleet_root


def _comparable(f):  # one mapping: every figure compared, the problems too
    return f


def _variants(template: HermesHome, tmp: Path) -> dict[str, HermesHome]:
    out: dict[str, HermesHome] = {}
    demo = tmp / "demo"
    shutil.copytree(template.path, demo, symlinks=True)
    out["demo"] = HermesHome(demo)
    bare = tmp / "bare"
    (bare / "memories").mkdir(parents=True)
    out["bare"] = HermesHome(bare)
    no_db = tmp / "no_db"
    shutil.copytree(template.path, no_db, symlinks=True)
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        with contextlib.suppress(FileNotFoundError):
            (no_db / name).unlink()
    out["no_db"] = HermesHome(no_db)
    for name, value in (("provider", "honcho"), ("provider_padded", "' honcho '"), ("provider_none", "none")):
        prov = tmp / name
        shutil.copytree(template.path, prov, symlinks=True)
        cfg = prov / "config.yaml"
        text = cfg.read_text(encoding="utf-8").replace("  provider: holographic\n", "", 1)  # the demo's own provider
        cfg.write_text(text.replace("memory:\n", f"memory:\n  provider: {value}\n", 1), encoding="utf-8")
        out[name] = HermesHome(prov)
    return out


def test_a_local_readers_figures_equal_figures_from_status_json(demo_home_template: HermesHome, tmp_path: Path) -> None:  # noqa: F811
    for name, home in _variants(demo_home_template, tmp_path).items():
        reader = LocalReader(home)
        try:
            from_snapshot = reader.read()
        finally:
            reader.close()
        from_status = figures_from_status(build_status(home))
        assert _comparable(from_snapshot) == _comparable(from_status), name
        assert from_snapshot.stale_sessions.count == from_status.stale_sessions.count, name
        if name == "no_db":  # unknown, and said so: never a guessed 0
            assert from_status.stale_sessions.count is None and from_status.stale_sessions.note
        if name == "provider":
            assert from_status.provider == "honcho"
        if name == "provider_padded":  # issue 37.5: Hermes looks ' honcho ' up as written and loads nothing
            assert from_status.provider == "" and from_snapshot.provider == ""
        if name == "demo":  # the demo's figures, so the comparison is not of empty values
            assert from_status.pending >= 1 and from_status.integrity_score is not None
            assert from_status.drifted_anchors >= 1 and from_status.compactions is not None
            assert from_status.memory["memory"].flagged >= 1 and from_status.alert_floor == 70
            assert from_status.stale_sessions.count >= 1  # the demo's live session froze older memory


def test_a_reader_rereads_only_what_changed(demo_home: HermesHome, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import memdeck.core.memory.reader as reader_mod

    calls: list[str] = []
    real = reader_mod.read_memory
    monkeypatch.setattr(reader_mod, "read_memory", lambda h, c, t: calls.append(t) or real(h, c, t))
    reader = LocalReader(demo_home)
    try:
        first = reader.read()
        builds, n = reader.builds, len(calls)
        assert n >= 2
        assert reader.read() is first and reader.builds == builds and len(calls) == n  # nothing changed: nothing read
        pending = next(demo_home.pending_dir.glob("*.json"))
        pending.unlink()  # only a pending write changed: the memory files are not read again
        second = reader.read()
        assert second.pending == first.pending - 1 and reader.builds == builds + 1 and len(calls) == n
        md = demo_home.memory_file("memory")
        md.write_text(md.read_text(encoding="utf-8") + "\n§\nOne more entry.", encoding="utf-8")
        third = reader.read()
        # Hermes' usage counts the entry and its "\n§\n" separator
        assert third.memory["memory"].chars == second.memory["memory"].chars + len("\n§\nOne more entry.")
        assert third.memory["memory"].entries == second.memory["memory"].entries + 1
        assert sorted(calls[n:]) == ["memory", "user"]  # the memory part, once (its stamps cover both files)
    finally:
        reader.close()


def test_a_path_that_is_not_a_home_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    reader = LocalReader(HermesHome(tmp_path / "typo"))
    with pytest.raises(NotAHome, match="no Hermes home"):
        reader.read()
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotAHome, match="not a Hermes home"):
        LocalReader(HermesHome(tmp_path / "plain")).read()
    assert list((tmp_path / "plain").iterdir()) == [] and not (tmp_path / "typo").exists()


def _run(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(argv)
    return code, out.getvalue()


def test_fleet_json_over_20_profiles_equals_20_status_json_runs(demo_home_template: HermesHome, tmp_path: Path,  # noqa: F811
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = fleet_root(demo_home_template.path, tmp_path / "root", 20)
    code, out = _run(["--home", str(root), "fleet", "--json"])
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 20 and all(r["stale"] is False and r["error"] is None for r in rows)
    by_home = {r["home"]: r for r in rows}
    homes = [str(root)] + sorted(str(p) for p in (root / "profiles").iterdir())
    assert sorted(by_home) == sorted(homes)
    limits = set()
    for h in homes:
        code, out = _run(["--home", h, "status", "--json"])
        assert code == 0
        status = json.loads(out)
        row = by_home[h]
        assert (row["home"], row["profile"]) == (status["home"], status["profile"])
        for target in ("memory", "user"):
            for key in ("chars", "limit", "pct"):
                assert row["memory"][target][key] == status["memory"][target][key], (h, target, key)
        # a pending write's age_s is counted from each command's own clock: the later run's is not smaller
        strip = lambda recs: [{k: v for k, v in r.items() if k != "age_s"} for r in recs]  # noqa: E731
        assert strip(row["pending"]) == strip(status["pending"]) and row["integrity"] == status["integrity"]
        assert all((r["age_s"], s["age_s"]) == (None, None) or 0 <= s["age_s"] - r["age_s"] < 600
                   for r, s in zip(row["pending"], status["pending"]))
        assert row["memlock_location"] == status["memlock_location"]
        assert row["figures"]["pending"] == len(status["pending"])
        limits.add(status["memory"]["memory"]["limit"])
    assert len(limits) == 20  # twenty different homes, not one read twenty times
    levels = [r["attention"]["level"] for r in rows]
    assert levels == sorted(levels, reverse=True)  # sorted by what needs attention
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "memdeck" / "fleet").exists()  # local rows are not cached
