"""Which homes make the fleet, and the attention order (core/fleet/homes.py, attention.py)."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from memdeck.core.fleet.attention import attention_of, sort_key
from memdeck.core.fleet.figures import HomeFigures, StoreFigures
from memdeck.core.fleet.homes import FleetError, FleetSettings, fleet_homes, parse_fleet_settings, parse_home_spec
from memdeck.core.fleet.remote import SshClient, remote_path_word
from memdeck.core.home import HermesHome


def test_ssh_addresses_parse_and_never_become_ssh_options() -> None:
    h = parse_home_spec("ssh://ops@box-2:2222/home/ops/.hermes/profiles/work")
    assert (h.user, h.host, h.port, h.path, h.profile) == ("ops", "box-2", 2222, "/home/ops/.hermes/profiles/work", "work")
    assert h.destination == "ops@box-2" and h.remote
    assert parse_home_spec("ssh://box/~/.hermes").path == "~/.hermes"
    assert parse_home_spec("ssh://[::1]:22/srv/h").destination == "::1"
    for bad in ("ssh://-oProxyCommand=touch%20x/srv", "ssh://host", "ssh://host/", "ssh://-x@host/p",
                "ssh://host:99999/p", "relative/path", "", "/srv/with\nnewline"):
        with pytest.raises(FleetError):
            parse_home_spec(bad)


def test_the_remote_command_quotes_the_path_for_the_remote_shell() -> None:
    home = parse_home_spec("ssh://box/srv/we ird'$(touch x)")
    argv = SshClient(FleetSettings(remote_memdeck="/opt/md/bin/memdeck")).status_argv(home)
    assert argv[-2] == "box" and "BatchMode=yes" in argv
    assert argv[-1] == "/opt/md/bin/memdeck --home '/srv/we ird'\"'\"'$(touch x)' status --json"
    assert remote_path_word("~/my home") == "~/'my home'" and remote_path_word("~/.hermes") == "~/.hermes"


def test_settings_keep_what_is_usable_and_say_what_is_not() -> None:
    s = parse_fleet_settings({"homes": ["/srv/a", "ssh://h/srv/b", "nope", "/srv/a"], "ssh_command": ["ssh", "-F", "/x"],
                              "timeout": "soon", "colour": 1}, "cfg.toml")
    assert [h.address for h in s.homes] == ["/srv/a", "ssh://h/srv/b"]
    assert s.ssh_command == ("ssh", "-F", "/x") and s.timeout == 30.0
    assert any("'nope'" in w for w in s.warnings) and any("fleet.timeout" in w for w in s.warnings)
    assert any("fleet.colour" in w for w in s.warnings)
    assert parse_fleet_settings("x").warnings and parse_fleet_settings(None) == FleetSettings()


def test_the_fleet_is_every_profile_of_the_root_then_the_settings_homes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for p in ("profiles/b", "profiles/a", "profiles/Not_A_Profile"):
        (root / p).mkdir(parents=True)
    settings = FleetSettings(homes=(parse_home_spec(str(root / "profiles" / "a")), parse_home_spec("ssh://h/srv/x")))
    homes = fleet_homes(HermesHome(root / "profiles" / "b", "b"), settings)
    assert [(h.profile, h.remote) for h in homes] == [("default", False), ("a", False), ("b", False), ("default", True)]
    only = fleet_homes(None, settings, explicit=root)  # --home H: H and its profiles, nothing else
    assert [h.profile for h in only] == ["default", "a", "b"] and all(h.source in ("home", "profile") for h in only)


def _fig(**kw: object) -> HomeFigures:
    mem = kw.pop("memory", {"memory": StoreFigures(100, 2200, 4, 1, 0), "user": StoreFigures(10, 1375, 0, 1, 0)})
    return HomeFigures(home="/h", profile="p", memory=MappingProxyType(mem), alert_floor=70, **kw)  # type: ignore[arg-type]


def test_rows_are_sorted_by_what_needs_attention() -> None:
    now = 1_000_000.0
    cases = {
        "near limit": _fig(memory={"memory": StoreFigures(2000, 2200, 90, 9, 0)}),
        "below floor": _fig(integrity_score=50, integrity_session="s"),
        "old pending": _fig(pending=1, oldest_pending_at=now - 2 * 86400),
        "new pending": _fig(pending=1, oldest_pending_at=now - 60),
        "fine": _fig(),
    }
    att = {k: attention_of(f, now=now) for k, f in cases.items()}
    assert {k: a.level for k, a in att.items()} == {"near limit": 3, "below floor": 3, "old pending": 2,
                                                      "new pending": 1, "fine": 0}
    unreachable = attention_of(None, now=now, error="ssh: connection refused")
    assert unreachable.level == 3 and "connection refused" in unreachable.reasons[0].text
    stale = attention_of(_fig(), now=now, stale=True, error="ssh: timeout")
    assert stale.level == 2
    order = sorted(cases, key=lambda k: sort_key(att[k], cases[k], k))
    assert order[:2] == ["near limit", "below floor"] and order[2:] == ["old pending", "new pending", "fine"]
