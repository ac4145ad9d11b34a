"""A real Prometheus server (Debian's ``prometheus``) scrapes ``memdeck metrics --serve`` on a home
the real Hermes 0.19 writes to (``tools.memory_tool.MemoryStore``): Prometheus' HTTP API gives the
numbers of ``status --json`` and of Hermes' own MemoryStore; the shipped rules pass
``promtool check rules`` and ``promtool test rules``; the near-limit rule fires once Hermes pushes
MEMORY.md past 90 % of its char limit (a test copy of the rules with a short ``for:``).

Waits are on Prometheus' API (a bounded deadline, a request every 0.2 s), never on a sleep that
stands for an event. ``.ci/run`` installs Debian's prometheus as root; where it is absent and
cannot be installed the tests skip, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.home import HermesHome
from tests.conftest import requires_hermes
from tests.helpers.fleet import free_port
from tests.helpers.memory import hermes_json

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "prometheus-rules.yml"
RULES_TEST = Path(__file__).resolve().parent / "prometheus_rules_test.yml"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

needs_prometheus = pytest.mark.skipif(
    not (os.path.exists(PROMETHEUS) and os.path.exists(PROMTOOL)),
    reason="Debian's prometheus (prometheus, promtool) is not installed: .ci/run installs it with apt-get as root")

MEMORY_LIMIT, USER_LIMIT = 600, 400

HERMES_ADD = """
import json, sys
from tools.memory_tool import MemoryStore
s = MemoryStore(memory_char_limit=%d, user_char_limit=%d); s.load_from_disk()
ok = [s.add(t, text)["success"] for t, text in json.loads(sys.argv[1])]
print(json.dumps({"ok": ok, "memory": [s._char_count("memory"), s._char_limit("memory")],
                  "user": [s._char_count("user"), s._char_limit("user")]}))
""" % (MEMORY_LIMIT, USER_LIMIT)  # noqa: UP031 - a script whose own text has braces


def _wait(what: str, predicate: Callable[[], Any], deadline_s: float = 180.0) -> Any:
    """Poll Prometheus' API until ``predicate()`` returns something truthy (bounded)."""
    end = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < end:
        try:
            last = predicate()
        except OSError as exc:  # not listening yet
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {deadline_s:.0f} s (last: {last!r})")


def _api(base: str, path: str, **params: str) -> Any:
    url = f"{base}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as r:
        data = json.loads(r.read().decode("utf-8"))
    assert data.get("status") == "success", data
    return data["data"]


def _query(base: str, expr: str) -> dict[str, float]:
    """``{target label (or ''): value}`` of an instant query."""
    out = {}
    for item in _api(base, "/api/v1/query", query=expr)["result"]:
        out[item["metric"].get("target", "")] = float(item["value"][1])
    return out


@needs_prometheus
def test_promtool_accepts_the_shipped_rules_and_they_fire_on_their_thresholds() -> None:
    check = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "SUCCESS: 4 rules found" in check.stdout, check.stdout + check.stderr
    test = subprocess.run([PROMTOOL, "test", "rules", str(RULES_TEST)], capture_output=True, text=True, timeout=120,
                          cwd=RULES_TEST.parent)
    assert test.returncode == 0 and "SUCCESS" in test.stdout, test.stdout + test.stderr


@needs_prometheus
@requires_hermes
@pytest.mark.interop
def test_prometheus_scrapes_a_home_hermes_writes_and_the_near_limit_rule_fires(hermes_home: HermesHome,
                                                                              tmp_path: Path) -> None:
    (hermes_home.path / "config.yaml").write_text(
        f"memory:\n  memory_char_limit: {MEMORY_LIMIT}\n  user_char_limit: {USER_LIMIT}\n", encoding="utf-8")
    first = hermes_json(hermes_home, HERMES_ADD, json.dumps([
        ["memory", "The deploy script lives in ops/deploy.sh and needs VPN access first."],
        ["memory", "Staging is at staging.example.internal; production needs a change ticket."],
        ["user", "Prefers short answers with the code first."],
    ]))
    assert first["ok"] == [True, True, True] and first["memory"][0] < 0.9 * MEMORY_LIMIT

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    memdeck = str(Path(sys.executable).with_name("memdeck"))
    exporter = subprocess.Popen([memdeck, "--home", str(hermes_home.path), "metrics", "--serve", "127.0.0.1:0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    prom = None
    try:
        line = exporter.stdout.readline()  # the exporter is bound once it prints its URL
        assert "serving http://127.0.0.1:" in line, line + exporter.stderr.read()
        target = line.split("http://")[1].split("/")[0]

        rules = tmp_path / "rules.yml"  # the shipped rules, with a short for: so the test waits seconds
        rules.write_text(RULES.read_text(encoding="utf-8").replace("for: 10m", "for: 2s"), encoding="utf-8")
        prom_port = free_port()
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {rules}\n"
            f"scrape_configs:\n  - job_name: memdeck\n    static_configs:\n      - targets: ['{target}']\n",
            encoding="utf-8")
        prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}",
                                 "--log.level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        base = f"http://127.0.0.1:{prom_port}"

        def ready() -> bool:
            if prom.poll() is not None:
                pytest.fail(f"prometheus exited: {prom.stderr.read()[-2000:]}")
            with urllib.request.urlopen(f"{base}/-/ready", timeout=5) as r:
                return r.status == 200

        _wait("prometheus ready", ready)
        status = json.loads(subprocess.run([memdeck, "--home", str(hermes_home.path), "status", "--json"],
                                           capture_output=True, text=True, env=env, timeout=120, check=True).stdout)
        want_chars = {t: float(status["memory"][t]["chars"]) for t in ("memory", "user")}
        want_limits = {t: float(status["memory"][t]["limit"]) for t in ("memory", "user")}
        # the same numbers three ways: Prometheus' API, status --json, Hermes' own MemoryStore
        assert want_chars == {"memory": first["memory"][0], "user": first["user"][0]}
        assert want_limits == {"memory": first["memory"][1], "user": first["user"][1]}
        chars = _wait("the first scrape", lambda: (q := _query(base, "memdeck_memory_chars")) == want_chars and q)
        assert chars == want_chars
        assert _query(base, "memdeck_memory_limit_chars") == want_limits
        assert _query(base, "memdeck_memory_entries") == {"memory": 2.0, "user": 1.0}
        assert _query(base, 'up{job="memdeck"}') == {"": 1.0}
        firing = _api(base, "/api/v1/alerts")["alerts"]
        assert not [a for a in firing if a["labels"]["alertname"] == "MemdeckMemoryNearLimit"]

        # Hermes pushes MEMORY.md past 90 % of its limit
        room = MEMORY_LIMIT - first["memory"][0] - len("\n§\n")
        text = ("Runbook: " + "restart the queue worker after a schema change; " * 20)[: room - 5]
        pushed = hermes_json(hermes_home, HERMES_ADD, json.dumps([["memory", text]]))
        assert pushed["ok"] == [True] and pushed["memory"][0] >= 0.9 * MEMORY_LIMIT
        _wait("the scrape after Hermes' write",
              lambda: _query(base, "memdeck_memory_chars").get("memory") == float(pushed["memory"][0]))

        def near_limit_firing() -> list[dict[str, Any]]:
            return [a for a in _api(base, "/api/v1/alerts")["alerts"]
                    if a["labels"]["alertname"] == "MemdeckMemoryNearLimit" and a["state"] == "firing"]

        alerts = _wait("MemdeckMemoryNearLimit firing", near_limit_firing)
        assert [a["labels"]["target"] for a in alerts] == ["memory"]
        assert alerts[0]["labels"]["home"] == str(hermes_home.path) and alerts[0]["labels"]["profile"] == "default"
        assert float(alerts[0]["value"]) == pytest.approx(pushed["memory"][0] / MEMORY_LIMIT)
    finally:
        for p in (prom, exporter):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=30)
    assert exporter.returncode == 0, exporter.stderr.read()[-2000:]
