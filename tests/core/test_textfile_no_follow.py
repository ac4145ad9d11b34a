"""``memdeck metrics --textfile DIR`` never follows a symbolic link in DIR (issue 40 item 1).

The textfile collector's directory is commonly writable by another user: a second, unprivileged
user (uid 4242, a real process that drops root with setgid/setuid) plants ``memdeck.prom`` as a
link to a root-only 0600 file in a sticky world-writable directory; memdeck run as root must
refuse with one line and a non-zero exit, and the target's bytes must be unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdeck.core.fleet.textfile import SharedDirRefused, write_textfile
from memdeck.core.home import HermesHome
from tests.helpers.demo import demo_home, demo_home_template  # noqa: F401 - fixtures

ATTACKER_UID = 4242


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A sticky world-writable directory under /tmp (reachable by uid 4242, unlike pytest's 0700 tmp)."""
    top = Path(tempfile.mkdtemp(prefix="memdeck-textfile-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        spool = top / "textfile"
        spool.mkdir()
        os.chmod(spool, 0o1777)
        yield spool
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _as_attacker(script: str) -> None:
    """Run the shell ``script`` as uid/gid 4242 (dropped in the child before exec; /bin/sh, since
    the test's Python under /root is not reachable by that user)."""

    def drop() -> None:
        os.setgroups([])
        os.setgid(ATTACKER_UID)
        os.setuid(ATTACKER_UID)

    done = subprocess.run(["/bin/sh", "-c", f"[ \"$(id -u)\" = {ATTACKER_UID} ] && {script}"],
                          check=False, preexec_fn=drop,  # the drop to the second user is the test
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the attack is another user making root's run "
                                              "overwrite a root-only file (as root we can drop to uid 4242)")
def test_a_second_users_symlink_in_the_textfile_dir_is_refused(
        demo_home: HermesHome, shared_dir: Path, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "root-only"
    secret.write_bytes(b"root's secret, 0600\n")
    os.chmod(secret, 0o600)
    before = secret.read_bytes()
    link = shared_dir / "memdeck.prom"
    _as_attacker(f"ln -s '{secret}' '{link}'")
    assert link.is_symlink() and os.lstat(link).st_uid == ATTACKER_UID

    from memdeck.core.cli import main as cli_main
    code = cli_main(["--home", str(demo_home.path), "metrics", "--textfile", str(shared_dir)])
    err = capsys.readouterr().err
    assert code != 0
    assert secret.read_bytes() == before and oct(secret.stat().st_mode & 0o777) == "0o600"
    assert link.is_symlink() and os.readlink(link) == str(secret)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "symbolic link" in lines[0] and "Traceback" not in err
    assert sorted(p.name for p in shared_dir.iterdir()) == ["memdeck.prom"]  # no temp file left


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user (uid 4242)")
def test_another_users_regular_file_is_replaced_not_written_through(shared_dir: Path) -> None:
    """A plain ``memdeck.prom`` of another user is replaced by our own 0644 file (never opened for
    writing: a hard link to a secret would otherwise be written through), and its mode is not copied."""
    theirs = shared_dir / "memdeck.prom"
    _as_attacker(f"printf theirs > '{theirs}' && chmod 666 '{theirs}'")
    assert os.lstat(theirs).st_uid == ATTACKER_UID
    path = write_textfile(shared_dir, b"# ours\n")
    st = os.lstat(path)
    assert path.read_bytes() == b"# ours\n" and st.st_uid == os.geteuid() and oct(st.st_mode & 0o777) == "0o644"


def test_a_symlink_or_a_directory_at_the_final_name_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "memdeck.prom").symlink_to(target)
    with pytest.raises(SharedDirRefused, match="symbolic link"):
        write_textfile(spool, b"# new\n")
    assert target.read_bytes() == b"keep"
    (spool / "memdeck.prom").unlink()
    (spool / "memdeck.prom").mkdir()
    with pytest.raises(SharedDirRefused, match="not a regular file"):
        write_textfile(spool, b"# new\n")
    assert sorted(p.name for p in spool.iterdir()) == ["memdeck.prom"]
