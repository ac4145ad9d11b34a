"""Remote rows against a real OpenSSH server on loopback (tests/helpers/fleet.py ``local_sshd``):
``ssh host memdeck --home PATH status --json`` over one shared connection per host, the same
figures as the home's own ``status --json``; a host that does not answer shows its last data,
stale, with ssh's error; an unreachable host is a row, never an error screen."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from memdeck.core.fleet.figures import figures_from_status
from memdeck.core.fleet.homes import FleetSettings, parse_home_spec
from memdeck.core.fleet.last_seen import LastSeenStore
from memdeck.core.fleet.rows import Fleet
from memdeck.core.home import HermesHome
from memdeck.core.overview.status import build_status
from tests.helpers.demo import demo_home_template  # noqa: F401 - fixture
from tests.helpers.fleet import fleet_root, free_port, local_sshd, venv_memdeck  # noqa: F401 - fixture


def _settings(sshd, **kw) -> FleetSettings:
    return FleetSettings(ssh_command=tuple(sshd.ssh_command), remote_memdeck=venv_memdeck(), connect_timeout=5,
                         timeout=120, **kw)


def _accepted(sshd) -> int:
    return sshd.log.read_text(errors="replace").count("Accepted publickey")


def test_remote_rows_over_one_shared_connection(local_sshd, demo_home_template: HermesHome, tmp_path: Path) -> None:  # noqa: F811
    root = fleet_root(demo_home_template.path, tmp_path / "we ird'root", 2)  # a path the remote shell must not split
    addr = f"ssh://root@127.0.0.1:{local_sshd.port}"
    homes = [parse_home_spec(f"{addr}{root}"), parse_home_spec(f"{addr}{root}/profiles/p01")]
    store = LastSeenStore(tmp_path / "cache")
    fleet = Fleet(homes, _settings(local_sshd), last_seen=store)
    try:
        rows = {r.home.address: r for r in fleet.read(remote=True)}
        ctl = fleet.ssh._dir
        assert ctl is not None and stat.S_IMODE(os.stat(ctl).st_mode) == 0o700
        check = subprocess.run([*local_sshd.ssh_command, "-o", f"ControlPath={ctl}/%C", "-p", str(local_sshd.port),
                                "-O", "check", "root@127.0.0.1"], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stderr  # the master connection is up
        rows2 = fleet.read(remote=True)  # a second read of both homes: still that one connection
    finally:
        fleet.close()
    assert _accepted(local_sshd) == 1, local_sshd.log.read_text()
    assert ctl is not None and not os.path.exists(ctl)  # the control directory is removed on close
    for h in homes:
        row = rows[h.address]
        assert row.error is None and not row.stale and row.figures is not None
        local = figures_from_status(build_status(HermesHome(Path(h.path), h.profile)), home=h.path, profile=h.profile)
        assert row.figures.memory == local.memory and row.figures.pending == local.pending
        assert row.figures.integrity_score == local.integrity_score and row.figures.alert_floor == local.alert_floor
        assert row.view is not None and row.view["home"] == h.path
        out = row.to_json()
        assert out["remote"] is True and out["stale"] is False and out["error"] is None
        assert out["memory"]["memory"]["chars"] == local.memory["memory"].chars
        saved = store.load(h.address)
        assert saved is not None and saved.figures == row.figures
        assert stat.S_IMODE(os.stat(store._file(h.address)).st_mode) == 0o600
    assert {r.home.address for r in rows2 if r.error is None} == {h.address for h in homes}
    # the metrics of the remote homes: labelled by their ssh:// address, the remote status' numbers
    from memdeck.core.fleet.exposition import families

    fams = {f.name: f for f in families(rows2, now=0.0)}
    chars = {(x.labels["home"], x.labels["target"]): x.value for x in fams["memdeck_memory_chars"].samples}
    up = {x.labels["home"]: x.value for x in fams["memdeck_home_up"].samples}
    for h in homes:
        assert up[h.address] == 1.0
        assert chars[(h.address, "memory")] == rows[h.address].figures.memory["memory"].chars


def test_a_host_that_stops_answering_shows_its_last_data_stale(local_sshd, demo_home_template: HermesHome,  # noqa: F811
                                                               tmp_path: Path) -> None:
    root = fleet_root(demo_home_template.path, tmp_path / "root", 1)
    home = parse_home_spec(f"ssh://root@127.0.0.1:{local_sshd.port}{root}")
    store = LastSeenStore(tmp_path / "cache")
    fleet = Fleet([home], _settings(local_sshd), last_seen=store)
    try:
        (good,) = fleet.read(remote=True)
        assert good.error is None and good.figures is not None
        fleet.ssh.close()  # the shared connection goes (ssh -O exit) ...
        local_sshd.stop()  # ... and so does the server
        (stale,) = fleet.read(remote=True)
    finally:
        fleet.close()
    assert stale.stale and stale.figures == good.figures and stale.fetched_at == good.fetched_at
    assert stale.error is not None and stale.error.startswith("ssh:") and "refused" in stale.error
    assert stale.attention.level >= 2 and any("stale" in r.text for r in stale.attention.reasons)
    # a later process (a new Fleet) that cannot reach the host shows the last data kept on disk
    later = Fleet([home], _settings(local_sshd), last_seen=store)
    try:
        (row,) = later.read(remote=True)
    finally:
        later.close()
    assert row.stale and row.figures == good.figures and row.to_json()["stale"] is True
    assert row.to_json()["memory"]["memory"]["chars"] == good.figures.memory["memory"].chars


def test_an_unreachable_host_is_a_row_not_an_error(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    home = parse_home_spec(f"ssh://root@127.0.0.1:{closed}/srv/hermes")
    fleet = Fleet([home], FleetSettings(connect_timeout=3, timeout=60), last_seen=LastSeenStore(tmp_path / "cache"))
    try:
        (row,) = fleet.read(remote=True)
    finally:
        fleet.close()
    assert row.figures is None and not row.stale and row.error is not None
    assert row.error.startswith("ssh:") and "refused" in row.error
    assert row.attention.level == 3
    out = row.to_json()
    assert out["error"] == row.error and out["figures"] is None and out["remote"] is True


def test_fleet_json_reads_the_settings_file_s_ssh_homes(local_sshd, demo_home_template: HermesHome,  # noqa: F811
                                                       tmp_path: Path) -> None:
    """The ``memdeck`` command (the TUI's launcher passes the settings' ``fleet`` table): a root with
    one profile plus one ``ssh://`` home and one unreachable one, all in ``fleet --json``."""
    root = fleet_root(demo_home_template.path, tmp_path / "root", 2)
    remote = fleet_root(demo_home_template.path, tmp_path / "remote", 1)
    cfg = tmp_path / "cfg" / "memdeck"
    cfg.mkdir(parents=True)
    ssh_words = ", ".join(json.dumps(w) for w in local_sshd.ssh_command)
    closed = free_port()
    (cfg / "config.toml").write_text(
        "[fleet]\n"
        f'homes = ["ssh://root@127.0.0.1:{local_sshd.port}{remote}", "ssh://root@127.0.0.1:{closed}/srv/x"]\n'
        f"ssh_command = [{ssh_words}]\n"
        f'remote_memdeck = "{venv_memdeck()}"\n'
        "connect_timeout = 5\n", encoding="utf-8")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "HERMES_HOME": str(root)}
    proc = subprocess.run([str(Path(sys.executable).with_name("memdeck")), "fleet", "--json"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = {r["address"]: r for r in json.loads(proc.stdout)}
    ok = rows[f"ssh://root@127.0.0.1:{local_sshd.port}{remote}"]
    assert ok["error"] is None and ok["stale"] is False and ok["home"] == str(remote)
    assert ok["memory"]["user"]["chars"] == build_status(HermesHome(remote))["memory"]["user"]["chars"]
    down = rows[f"ssh://root@127.0.0.1:{closed}/srv/x"]
    assert down["figures"] is None and "refused" in down["error"]
    assert {str(root), str(root / "profiles" / "p01")} <= set(rows)
    assert down["attention"]["level"] == 3  # no figures at all: among the rows to act on now
    levels = [r["attention"]["level"] for r in rows.values()]
    assert levels == sorted(levels, reverse=True)
