"""Home resolution follows Hermes' order: --home, HERMES_HOME, active_profile, ~/.hermes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdeck.core.home import HermesHome, HomeError, list_profiles, resolve_home, root_of


def _mk_root(tmp_path: Path) -> Path:
    root = tmp_path / "user_home" / ".hermes"
    (root / "profiles" / "coder").mkdir(parents=True)
    (root / "profiles" / "writer").mkdir(parents=True)
    return root


def test_explicit_home_wins_over_env(tmp_path: Path) -> None:
    env = {"HERMES_HOME": str(tmp_path / "envhome")}
    h = resolve_home(tmp_path / "explicit", env=env)
    assert h.path == tmp_path / "explicit"
    assert h.profile == "default"


def test_env_is_stripped_and_used(tmp_path: Path) -> None:
    h = resolve_home(env={"HERMES_HOME": f"  {tmp_path / 'envhome'}\n"})
    assert h.path == tmp_path / "envhome"


def test_active_profile_file_selects_profile(tmp_path: Path) -> None:
    root = _mk_root(tmp_path)
    (root / "active_profile").write_text("coder\n", encoding="utf-8")
    h = resolve_home(env={})
    assert h.path == root / "profiles" / "coder"
    assert h.profile == "coder"


def test_active_profile_naming_missing_profile_falls_back_to_root(tmp_path: Path) -> None:
    root = _mk_root(tmp_path)
    (root / "active_profile").write_text("ghost", encoding="utf-8")
    assert resolve_home(env={}).path == root


def test_default_is_dot_hermes(tmp_path: Path) -> None:
    assert resolve_home(env={}).path == tmp_path / "user_home" / ".hermes"


def test_profile_flag_selects_profile_of_root(tmp_path: Path) -> None:
    root = _mk_root(tmp_path)
    h = resolve_home(env={}, profile="writer")
    assert h.path == root / "profiles" / "writer" and h.profile == "writer"
    # from inside another profile, --profile default goes back to the root
    h2 = resolve_home(root / "profiles" / "coder", profile="default")
    assert h2.path == root


@pytest.mark.parametrize("bad", ["Bad", "-x", "a/b", "", "x" * 65])
def test_invalid_profile_name_is_refused(tmp_path: Path, bad: str) -> None:
    _mk_root(tmp_path)
    with pytest.raises(HomeError):
        resolve_home(env={}, profile=bad)


def test_missing_profile_is_refused(tmp_path: Path) -> None:
    _mk_root(tmp_path)
    with pytest.raises(HomeError, match="no profile 'nope'"):
        resolve_home(env={}, profile="nope")


def test_list_profiles_and_root_of(tmp_path: Path) -> None:
    root = _mk_root(tmp_path)
    (root / "profiles" / "Not_Valid").mkdir()
    names = [p.profile for p in list_profiles(root)]
    assert names == ["default", "coder", "writer"]
    assert root_of(root / "profiles" / "coder") == root
    docker = tmp_path / "opt" / "data" / "profiles" / "coder"
    assert root_of(docker) == tmp_path / "opt" / "data"
    assert root_of(tmp_path / "elsewhere") == tmp_path / "elsewhere"


def test_layout() -> None:
    h = HermesHome(Path("/h"))
    assert h.memory_file("memory") == Path("/h/memories/MEMORY.md")
    assert h.memory_file("user") == Path("/h/memories/USER.md")
    assert h.state_db == Path("/h/state.db")
    assert h.pending_dir == Path("/h/pending/memory")
    assert h.memlock_dir == Path("/h/memlock")
    with pytest.raises(ValueError):
        h.memory_file("soul")
