"""Per-version threat rules: memdeck's strict verdict vs what a given Hermes would say."""

from __future__ import annotations

import pytest

from memdeck.core.hermes_version import HermesVersion
from memdeck.core.memory.threats import compare_verdicts, hermes_verdict


@pytest.mark.parametrize("version,rules", [("0.16.3", "0.17"), ("0.17.0", "0.17"), ("0.19.0", "0.18"),
                                           ("0.20.1", "0.18"), ("0.22.2.post1", "0.22"), ("", None), ("x", None)])
def test_rules_for_version(version: str, rules: str | None) -> None:
    assert HermesVersion.of(version).threat_rules == rules


def test_022_relaxations_and_017_extras() -> None:
    assert hermes_verdict("wget $API_BASE/file", "0.22") == ()
    assert hermes_verdict("wget $API_BASE/file", "0.18") == ("exfil_wget",)
    assert hermes_verdict("echo key >> ~/.ssh/config", "0.22") == ("ssh_access",)
    assert hermes_verdict("Praxis is our build agent", "0.17") == ("known_c2_framework",)
    assert hermes_verdict("Praxis is our build agent", "0.18") == ()
    assert hermes_verdict("ｃａｔ .env", "0.17") == ()  # no NFKC folding in 0.17
    assert hermes_verdict("ｃａｔ .env", "0.22") == ("read_secrets",)
    with pytest.raises(ValueError):
        hermes_verdict("x", "0.99")


def test_compare_says_which_rules_and_whether_they_differ() -> None:
    c = compare_verdicts("check that ~/.ssh is chmod 700", "0.22")
    assert c["memdeck"] == ["ssh_access"] and c["hermes"] == [] and c["differs"] and "0.22" in str(c["rules_text"])
    assert compare_verdicts("hello", None)["hermes"] is None
