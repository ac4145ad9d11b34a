"""plugins.enabled edits in config.yaml: only that list changes, every other byte survives."""

from __future__ import annotations

import difflib

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memdeck.core.errors import Refused
from memdeck.core.plugin.install import edit_enabled, set_enabled

HERMES_LIKE = """\
# Hermes config — hand-edited
model:
  default: anthropic/claude-sonnet-4   # my model
  provider: openrouter
memory:
  memory_char_limit: 2200
  user_char_limit: 1375   # keep small

plugins:
  # third-party plugins are opt-in
  enabled:
  - disk-cleanup   # trusted
  - 'quoted-one'
  disabled: []
memlock:
  detection: keyword
  anchors:
    - id: bullets
      text: "Always reply in bullet points."
      probes: [bullet, points]
display:
  skin: default
"""


def changed_lines(a: str, b: str) -> list[str]:
    return [ln for ln in difflib.ndiff(a.splitlines(), b.splitlines()) if ln[:1] in "+-"]


def test_add_to_block_list_appends_one_line_only():
    new, old, after = edit_enabled(HERMES_LIKE, add="memdeck")
    assert old == ["disk-cleanup", "quoted-one"]
    assert after == ["disk-cleanup", "quoted-one", "memdeck"]
    assert changed_lines(HERMES_LIKE, new) == ["+   - memdeck"]
    assert "  - 'quoted-one'\n  - memdeck\n  disabled: []" in new
    assert yaml.safe_load(new)["memlock"] == yaml.safe_load(HERMES_LIKE)["memlock"]


def test_remove_restores_original_bytes():
    new, _, _ = edit_enabled(HERMES_LIKE, add="memdeck")
    back, _, after = edit_enabled(new, remove="memdeck")
    assert back == HERMES_LIKE
    assert after == ["disk-cleanup", "quoted-one"]


def test_add_is_idempotent():
    new, _, _ = edit_enabled(HERMES_LIKE, add="memdeck")
    again, _, after = edit_enabled(new, add="memdeck")
    assert again == new
    assert after.count("memdeck") == 1


@pytest.mark.parametrize(
    "text, expected_tail",
    [
        ("model: x\n", "model: x\nplugins:\n  enabled:\n  - memdeck\n"),
        ("model: x", "model: x\nplugins:\n  enabled:\n  - memdeck\n"),
        ("", "plugins:\n  enabled:\n  - memdeck\n"),
        ("# only a comment\n", "# only a comment\nplugins:\n  enabled:\n  - memdeck\n"),
        ("plugins:\n  disabled: [x]\nz: 1\n", "plugins:\n  enabled:\n  - memdeck\n  disabled: [x]\nz: 1\n"),
        ("plugins:   # c\nz: 1\n", "plugins:   # c\n  enabled:\n  - memdeck\nz: 1\n"),
        ("plugins:\n  enabled: [a, \"b c\"]  # flow ]\n", "plugins:\n  enabled: [a, b c, memdeck]  # flow ]\n"),
        ("plugins:\n  enabled: []\n  disabled: []\n", "plugins:\n  enabled: [memdeck]\n  disabled: []\n"),
        ("plugins:\n  enabled:\n  disabled: []\n", "plugins:\n  enabled:\n  - memdeck\n  disabled: []\n"),
        ("plugins:\n    enabled:\n        - a\n", "plugins:\n    enabled:\n        - a\n        - memdeck\n"),
    ],
)
def test_add_shapes(text, expected_tail):
    new, _, after = edit_enabled(text, add="memdeck")
    assert "memdeck" in after
    if '"b c"' in text:
        # the flow list is re-rendered; the parse is what Hermes sees
        assert yaml.safe_load(new)["plugins"]["enabled"] == ["a", "b c", "memdeck"]
        assert new.endswith("  # flow ]\n")
    else:
        assert new == expected_tail


def test_remove_last_item_keeps_an_explicit_empty_list_and_comment():
    text = "plugins:\n  enabled:   # opt-in\n  - memdeck\n  disabled: []\nz: 1\n"
    new, _, after = edit_enabled(text, remove="memdeck")
    assert after == []
    assert new == "plugins:\n  enabled: []   # opt-in\n  disabled: []\nz: 1\n"
    assert yaml.safe_load(new)["plugins"]["enabled"] == []


def test_remove_from_flow_and_absent_is_noop():
    new, _, after = edit_enabled("plugins:\n  enabled: [memdeck, a]\n", remove="memdeck")
    assert new == "plugins:\n  enabled: [a]\n" and after == ["a"]
    same, _, _ = edit_enabled("model: x\n", remove="memdeck")
    assert same == "model: x\n"


def test_crlf_file_keeps_crlf():
    text = "model: x\r\nplugins:\r\n  enabled:\r\n  - a\r\n"
    new, _, _ = edit_enabled(text, add="memdeck")
    assert new == "model: x\r\nplugins:\r\n  enabled:\r\n  - a\r\n  - memdeck\r\n"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("model: [unclosed\n", "not valid YAML"),
        ("- a\n- b\n", "top level"),
        ("plugins: [a]\n", "plugins: is not a mapping"),
        ("plugins:\n  enabled: memdeck\n", "not a list"),
    ],
)
def test_refusals(text, fragment):
    with pytest.raises(Refused) as ei:
        edit_enabled(text, add="memdeck")
    assert fragment in ei.value.reason


def test_flow_mapping_falls_back_to_round_trip_and_stays_equal():
    text = "a: 1  # keep\nplugins: {enabled: [x], disabled: []}\n"
    new, _, _after = edit_enabled(text, add="memdeck")
    data = yaml.safe_load(new)
    assert data == {"a": 1, "plugins": {"enabled": ["x", "memdeck"], "disabled": []}}
    assert "# keep" in new


def test_set_enabled_backs_up_and_refuses_untouched(hermes_home):
    cfg = hermes_home.config_path
    cfg.write_text(HERMES_LIKE, encoding="utf-8")
    changed, backup, enabled = set_enabled(hermes_home, add="memdeck")
    assert changed and backup is not None and backup.name.startswith("config.yaml.bak-")
    assert backup.read_text(encoding="utf-8") == HERMES_LIKE
    assert "memdeck" in enabled
    changed2, backup2, _ = set_enabled(hermes_home, add="memdeck")
    assert not changed2 and backup2 is None
    assert len(list(cfg.parent.glob("config.yaml.bak-*"))) == 1
    cfg.write_text("plugins:\n  enabled: memdeck\n", encoding="utf-8")
    with pytest.raises(Refused):
        set_enabled(hermes_home, remove="memdeck")
    assert cfg.read_text(encoding="utf-8") == "plugins:\n  enabled: memdeck\n"
    assert len(list(cfg.parent.glob("config.yaml.bak-*"))) == 1


_YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off"}
NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True).filter(lambda s: s != "memdeck" and s not in _YAML_WORDS),
                 min_size=1, max_size=5, unique=True)


@settings(max_examples=30, deadline=None)
@given(names=NAMES, indent=st.sampled_from([0, 2, 4]), comment=st.booleans(), flow=st.booleans())
def test_add_then_remove_round_trips(names, indent, comment, flow):
    pad = " " * indent
    c = "  # note" if comment else ""
    if flow:
        body = f"  enabled: [{', '.join(names)}]{c}\n"
    else:
        body = "  enabled:" + c + "\n" + "".join(f"  {pad}- {n}{c}\n" for n in names)
    text = f"# head\nmodel: m\nplugins:\n{body}  disabled: []\ntail: 1  # end\n"
    added, _, after = edit_enabled(text, add="memdeck")
    assert after == names + ["memdeck"]
    assert yaml.safe_load(added) == {**yaml.safe_load(text), "plugins": {"enabled": names + ["memdeck"], "disabled": []}}
    back, _, _ = edit_enabled(added, remove="memdeck")
    if flow:
        assert yaml.safe_load(back) == yaml.safe_load(text)
        assert back.count("\n") == text.count("\n")
    else:
        assert back == text


@pytest.mark.parametrize("text", [
    "plugins:\n  enabled: [memlock, 3]\n",
    "plugins:\n  enabled:\n  - memlock\n  - 3\n  - true\n",
    "plugins:\n  enabled: [1.5, null]\n",
])
def test_non_string_items_are_kept_not_a_crash(text):
    """Hermes reads the list with ``set(enabled)``: numbers and booleans are legal items."""
    new, old, after = edit_enabled(text, add="memdeck")
    assert after == old + ["memdeck"]
    assert yaml.safe_load(new)["plugins"]["enabled"] == after
    back, _, final = edit_enabled(new, remove="memdeck")
    assert final == old and yaml.safe_load(back) == yaml.safe_load(text)


def test_nested_items_refused():
    with pytest.raises(Refused) as ei:
        edit_enabled("plugins:\n  enabled: [memlock, [a, b]]\n", add="memdeck")
    assert ei.value.code == "invalid" and "enabled" in ei.value.reason
