"""Issue 39 item 12: the newcomer's polish items whose behaviour a test can hold."""

from __future__ import annotations

import json

import pytest

from memdeck.core import cli
from memdeck.core.home import HermesHome
from memdeck.core.overview.alerts import AlertSettings, _hours
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401 - fixtures


def test_durations_read_as_a_person_says_them() -> None:
    assert _hours(1.51417 * 3600) == "1.5 h"  # the pending_age message said "1.51417 h"
    assert _hours(45 * 60) == "45 min" and _hours(30 * 3600) == "30 h" and _hours(3 * 86400) == "3 days"


def test_the_pending_age_alert_says_its_threshold_in_words() -> None:
    from memdeck.core.overview.alerts import pending_age_of

    item = type("I", (), {"id": "abcd1234", "state": "clean",
                          "record": type("R", (), {"action": "add", "target": "memory"})()})()
    a = pending_age_of(item, 2 * 3600, AlertSettings(pending_age_hours=1.51417))
    assert "more than 1.5 h" in a.message and "1.51417" not in a.message


def _run(capsys: pytest.CaptureFixture[str], home: HermesHome, *args: str) -> tuple[int, str]:
    code = cli.main(["--home", str(home.path), *args])
    return code, capsys.readouterr().out


def test_recall_and_sessions_stale_print_no_trailing_spaces(demo_home: HermesHome,  # noqa: F811
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    for args in (("recall", "deploy"), ("sessions", "--stale")):
        code, out = _run(capsys, demo_home, *args)
        assert code == 0 and out.strip()
        assert [ln for ln in out.splitlines() if ln != ln.rstrip()] == [], args


def test_pending_without_an_action_lists(demo_home: HermesHome, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    code, listed = _run(capsys, demo_home, "pending", "list")
    assert code == 0
    assert _run(capsys, demo_home, "pending") == (0, listed)
    code, out = _run(capsys, demo_home, "pending", "--json")
    assert code == 0 and [i["id"] for i in json.loads(out)] == [ln.split()[0] for ln in listed.splitlines()
                                                                 if ln[:1].isalnum() and "  " in ln[:10]]


def test_pending_edit_says_which_pending_write_it_approved(demo_home: HermesHome,  # noqa: F811
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _run(capsys, demo_home, "pending", "--json")
    pid = next(i["id"] for i in json.loads(out) if i["state"] == "clean" and i["action"] == "add")
    code, out = _run(capsys, demo_home, "pending", "edit", pid, "linkhop caches slug lookups in Redis.")
    assert code == 0 and f"approved pending write {pid} with the edited text" in out


def test_an_injection_whose_name_is_its_source_is_said_once(demo_home: HermesHome,  # noqa: F811
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, demo_home, "context")
    assert code == 0 and ": memlock: " in out and "memlock memlock" not in out


def test_memory_remove_searches_both_files_as_archive_does(demo_home: HermesHome,  # noqa: F811
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, demo_home, "memory", "remove", "Logging is structlog")  # no --target
    assert code == 0 and "Entry removed." in out
    assert "Logging is structlog" not in demo_home.memory_file("memory").read_text(encoding="utf-8")
    code = cli.main(["--home", str(demo_home.path), "memory", "remove", "no entry holds these words at all"])
    assert code == 1 and "no entry in MEMORY.md or USER.md matches" in capsys.readouterr().err
