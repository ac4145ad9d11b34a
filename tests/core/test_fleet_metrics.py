"""``memdeck metrics``: the exposition (prometheus_client), the textfile, the /metrics endpoint and
its lock-down (core/fleet/exposition.py, textfile.py, endpoint.py, core/cli/fleet_cmds.py)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memdeck.core.fleet.endpoint import Bind, BindRefused, check_bind, make_metrics_server, parse_bind, serve_in_thread
from memdeck.core.fleet.exposition import METRICS, exposition, registry_for
from memdeck.core.fleet.homes import FleetSettings, fleet_homes, parse_home_spec
from memdeck.core.fleet.rows import Fleet
from memdeck.core.fleet.textfile import write_textfile
from memdeck.core.home import HermesHome
from memdeck.core.overview.status import build_status
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401 - fixtures


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(samples, name: str, **labels: str) -> float:
    hits = [v for (n, lab), v in samples.items() if n == name and all(dict(lab).get(k) == v for k, v in labels.items())]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def test_the_exposition_has_status_json_s_numbers(demo_home: HermesHome, tmp_path: Path) -> None:  # noqa: F811
    from memdeck.core.cli import main as cli_main

    home_arg = ["--home", str(demo_home.path)]
    assert cli_main([*home_arg, "journal"]) == 0  # the change history's first look
    md = demo_home.memory_file("user")
    md.write_text(md.read_text(encoding="utf-8") + "\n§\nEdited by hand.", encoding="utf-8")  # an external change
    assert cli_main([*home_arg, "memory", "remove", "--target", "user", "Edited by hand."]) == 0  # memdeck's
    assert cli_main([*home_arg, "journal"]) == 0  # records the removal
    from memdeck.core.deck import usage  # two API requests as the plugin records them (issue 37)

    for n, (read, write, inp) in enumerate(((0, 3000, 20), (3010, 40, 25))):
        row = usage.from_hook({"session_id": "S1", "turn_id": f"t{n}", "api_call_count": 1, "ended_at": 100.0 + n,
                               "usage": {"input_tokens": inp, "output_tokens": 9, "cache_read_tokens": read,
                                         "cache_write_tokens": write}})
        assert row is not None and usage.record(demo_home, row)
    status = build_status(demo_home)
    assert status["cost"]["hit_ratio"] == round(3010 / (3020 + 3075), 3) and status["cost"]["requests"] == 2
    assert sum(status["changes"]["by_actor"].values()) >= 2, status["changes"]
    unreachable = parse_home_spec("ssh://nobody@127.0.0.1:1/srv/h")  # port 1: refused at once
    fleet = Fleet(fleet_homes(None, FleetSettings(), explicit=demo_home.path) + [unreachable],
                  FleetSettings(connect_timeout=2, timeout=20))
    try:
        samples = _samples(exposition(fleet).decode("utf-8"))
    finally:
        fleet.close()
    home = str(demo_home.path)
    for target in ("memory", "user"):
        st = status["memory"][target]
        assert _value(samples, "memdeck_memory_chars", home=home, target=target) == st["chars"]
        assert _value(samples, "memdeck_memory_limit_chars", home=home, target=target) == st["limit"]
        assert _value(samples, "memdeck_memory_entries", home=home, target=target) == len(st["entries"])
        assert _value(samples, "memdeck_memory_flagged_entries", home=home, target=target) == sum(
            1 for e in st["entries"] if e["threats"])
    assert _value(samples, "memdeck_pending_writes", home=home) == len(status["pending"])
    oldest = min(p["created_at"] for p in status["pending"])
    assert _value(samples, "memdeck_pending_oldest_created_timestamp_seconds", home=home) == oldest
    assert _value(samples, "memdeck_pending_oldest_age_seconds", home=home) > 0
    assert _value(samples, "memdeck_integrity_score", home=home) == status["integrity"]["score"]
    assert _value(samples, "memdeck_integrity_floor", home=home) == status["alert_floor"]
    drifted = sum(1 for a in status["anchors"] if a["state"] == "drifted")
    assert _value(samples, "memdeck_drifted_anchors", home=home) == drifted >= 1
    below = sum(1 for p in status["integrity"]["history"] if p["score"] < status["alert_floor"])
    assert _value(samples, "memdeck_audits_below_floor", home=home) == below
    live = next(s for s in status["sessions"] if s["id"] == status["integrity"]["session_id"])
    assert _value(samples, "memdeck_session_compactions", home=home) == live["compactions"]
    for actor, n in status["changes"]["by_actor"].items():
        assert _value(samples, "memdeck_history_changes", home=home, actor=actor) == n
    assert _value(samples, "memdeck_home_up", home=home) == 1
    # the unreachable host: down, no figures exported as if current
    assert _value(samples, "memdeck_home_up", home=unreachable.address) == 0
    assert not [k for k in samples if dict(k[1]).get("home") == unreachable.address and k[0] != "memdeck_home_up"]
    # the live sessions whose frozen memory differs from the files, as status --json counts them
    assert _value(samples, "memdeck_stale_live_sessions", home=home) == status["stale_sessions"]["count"] >= 1
    # the prompt cache's hit ratio over the requests the plugin recorded, as status --json gives it
    assert _value(samples, "memdeck_cache_hit_ratio", home=home) == status["cost"]["hit_ratio"]
    assert {n for n, _ in samples} <= set(METRICS)


def test_the_textfile_is_replaced_atomically_with_fsync(demo_home: HermesHome, tmp_path: Path,  # noqa: F811
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "textfile"
    out_dir.mkdir()
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    path = write_textfile(out_dir, b"# first\n")
    assert path.read_bytes() == b"# first\n" and oct(path.stat().st_mode & 0o777) == "0o644"
    assert len(synced) >= 2  # the temp file and the directory
    path.chmod(0o640)
    write_textfile(out_dir, b"# second\n")
    assert path.read_bytes() == b"# second\n" and oct(path.stat().st_mode & 0o777) == "0o640"
    assert sorted(p.name for p in out_dir.iterdir()) == ["memdeck.prom"]  # no temp file left
    with pytest.raises(FileNotFoundError):
        write_textfile(tmp_path / "typo", b"x")
    assert not (tmp_path / "typo").exists()
    # through the CLI: one scrape's worth, parseable, of this home
    from memdeck.core.cli import main as cli_main

    assert cli_main(["--home", str(demo_home.path), "metrics", "--textfile", str(out_dir)]) == 0
    samples = _samples(path.read_text(encoding="utf-8"))
    assert _value(samples, "memdeck_home_up", home=str(demo_home.path)) == 1
    assert cli_main(["--home", str(demo_home.path), "metrics", "--textfile", str(tmp_path / "nope")]) == 1


def test_only_loopback_unless_allowed() -> None:
    assert parse_bind("127.0.0.1:9810") == Bind("127.0.0.1", 9810)
    assert parse_bind("[::1]:0") == Bind("::1", 0) and parse_bind("9811") == Bind("127.0.0.1", 9811)
    for bad in ("host:", "127.0.0.1:99999", "[::1]9810", ":80"):
        with pytest.raises(BindRefused):
            parse_bind(bad)
    check_bind(Bind("localhost", 0), allow_remote=False)
    with pytest.raises(BindRefused, match="not a loopback"):
        check_bind(Bind("0.0.0.0", 0), allow_remote=False)
    check_bind(Bind("0.0.0.0", 0), allow_remote=True)


def test_the_endpoint_serves_metrics_and_refuses_the_rest(demo_home: HermesHome) -> None:  # noqa: F811
    fleet = Fleet(fleet_homes(None, FleetSettings(), explicit=demo_home.path))
    server = make_metrics_server(registry_for(fleet), Bind("127.0.0.1", 0))
    serve_in_thread(server)
    port = server.server_address[1]

    def get(path: str, method: str = "GET", **headers: str) -> tuple[int, bytes]:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            c.request(method, path, headers=headers)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    try:
        status, body = get("/metrics")
        assert status == 200 and b"memdeck_memory_chars{" in body
        assert get("/metrics", Host="evil.example:80")[0] == 403  # DNS rebinding
        assert get("/metrics", Origin="http://evil.example")[0] == 403  # a browser's cross-site request
        assert get("/metrics", "POST")[0] == 405
        assert get("/other")[0] == 404
        assert get("/metrics", Host=f"localhost:{port}")[0] == 200
    finally:
        server.shutdown()
        server.server_close()
        fleet.close()


def test_metrics_serve_runs_until_terminated(demo_home: HermesHome, tmp_path: Path) -> None:  # noqa: F811
    """``memdeck metrics --serve 127.0.0.1:0`` as a process: the URL on its first line, scrapes read
    fresh figures (a change between two scrapes shows), SIGTERM stops it with status 0."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    memdeck = str(Path(sys.executable).with_name("memdeck"))
    refused = subprocess.run([memdeck, "--home", str(demo_home.path), "metrics", "--serve", "0.0.0.0:0"],
                             capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 2 and "not a loopback address" in refused.stderr
    proc = subprocess.Popen([memdeck, "--home", str(demo_home.path), "metrics", "--serve", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()  # waits for the server to be bound
        assert line.startswith("memdeck metrics: serving http://127.0.0.1:"), line + proc.stderr.read()
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])

        def scrape() -> dict:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("GET", "/metrics")
            body = c.getresponse().read().decode("utf-8")
            c.close()
            return _samples(body)

        home = str(demo_home.path)
        before = _value(scrape(), "memdeck_pending_writes", home=home)
        next(demo_home.pending_dir.glob("*.json")).unlink()
        assert _value(scrape(), "memdeck_pending_writes", home=home) == before - 1
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    json.dumps(out)
