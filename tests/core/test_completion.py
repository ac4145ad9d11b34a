"""``memdeck completion bash|zsh|tcsh``: shtab's scripts from the real parser complete every
command and option; the bash script is run in a real bash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memdeck.core.cli import build_parser, main
from memdeck.core.cli.completion_cmds import SHELLS, completion_script
from tests.helpers.commands import command_paths


def _complete_in_bash(script: Path, words: list[str]) -> list[str]:
    """What bash's completion offers for the last of ``words`` (``memdeck`` first), through
    the script's own function, as bash calls it on Tab."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    code = (f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
            f'COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}}; _shtab_memdeck; '
            'printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_every_command_and_its_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "memdeck.bash"
    script.write_text(capsys.readouterr().out)
    tops = sorted({p.split()[0] for p in command_paths()})
    assert sorted(_complete_in_bash(script, ["memdeck", ""])) == tops
    assert _complete_in_bash(script, ["memdeck", "ser"]) == ["serve"]
    assert set(_complete_in_bash(script, ["memdeck", "memory", ""])) == {
        p.split()[1] for p in command_paths() if p.startswith("memory ")}
    options = _complete_in_bash(script, ["memdeck", "serve", "--"])
    assert {"--host", "--port", "--read-only", "--allowed-host", "--allow-remote", "--check"} <= set(options)
    assert set(_complete_in_bash(script, ["memdeck", "memory", "add", "--target", ""])) == {"memory", "user"}
    (tmp_path / "homes" / "work home").mkdir(parents=True)
    (tmp_path / "homes" / "a-file").write_text("")
    dirs = _complete_in_bash(script, ["memdeck", "--home", f"{tmp_path}/homes/"])
    assert dirs == [f"{tmp_path}/homes/work home"]  # PATH options complete directories only


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_script_names_every_command(shell: str) -> None:
    script = completion_script(build_parser(), shell)
    for path in command_paths():
        for word in path.split():
            assert word in script, (shell, word)
    if shell != "tcsh":  # shtab's tcsh script completes commands and choices, not option names
        assert "--allowed-host" in script and "--read-only" in script


@pytest.mark.parametrize("shell", [s for s in SHELLS if s != "bash"])
def test_the_script_parses_in_its_shell(shell: str, tmp_path: Path) -> None:
    exe = shutil.which(shell)
    if exe is None:
        pytest.skip(f"{shell} is not installed: only the content of its script is checked here")
    f = tmp_path / f"memdeck.{shell}"
    f.write_text(completion_script(build_parser(), shell))
    r = subprocess.run([exe, "-n", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_completion_touches_no_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """It runs from a shell's rc file: no home is resolved, nothing is observed or created."""
    home = tmp_path / "h"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("Alpha.")
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert main(["completion", "zsh"]) == 0
    assert "#compdef memdeck" in capsys.readouterr().out
    assert sorted(p.name for p in home.iterdir()) == ["memories"]  # no memdeck/ store was made
    assert main(["--profile", "no-such-profile", "completion", "bash"]) == 0  # no profile look-up either
