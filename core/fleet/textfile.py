"""``memdeck metrics --textfile DIR``: the fleet's figures for node_exporter's textfile collector.

node_exporter reads every ``*.prom`` file of its ``--collector.textfile.directory`` at each of
its scrapes, so a file must never be seen half written. ``prometheus_client``'s
``write_to_textfile`` writes a temp file and renames it, but does not fsync either (a crash can
leave an empty ``memdeck.prom``).

That directory is commonly writable by another user or group (node_exporter's, a monitoring
group, a sticky world-writable spool), so this writer never follows a symbolic link there
(unlike :func:`memdeck.core.fsio.atomic_write_bytes`, which follows a symlinked MEMORY.md on
purpose): the directory is opened once and every step works relative to that descriptor; the
temp file ``.memdeck_<16 hex>.tmp`` (not ``*.prom``: the collector ignores it) is created with
``O_CREAT | O_EXCL | O_NOFOLLOW``; a final name that is a symlink or not a regular file is
refused (:class:`SharedDirRefused`); the data is fsynced, renamed over the final name (a rename
replaces a link planted after the check, it never writes through it) and the directory is
fsynced. A new file is made readable by everyone (0644: node_exporter usually runs as another
user); an existing file of ours keeps its permission bits, one of another owner's gets 0644.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

#: The file written in the textfile directory.
TEXTFILE_NAME = "memdeck.prom"

_TEMP_PREFIX = ".memdeck_"
_TEMP_SUFFIX = ".tmp"


class SharedDirRefused(OSError):
    """The final name in a shared directory is a symlink or not a regular file; nothing was written."""


def write_textfile(directory: Path, payload: bytes, *, name: str = TEXTFILE_NAME) -> Path:
    """Atomically replace ``directory/name`` with ``payload`` (exposition-format bytes), never
    following a symbolic link inside ``directory``.

    Returns:
        the path written (``directory/name``).

    Raises:
        FileNotFoundError: ``directory`` does not exist (it is never created: a mistyped
            directory is an error, not a new place node_exporter does not read).
        NotADirectoryError: it is not a directory.
        SharedDirRefused: ``directory/name`` is a symbolic link or not a regular file (nothing is
            written, the link and its target are untouched).
        OSError: the write failed (the previous file, if any, is untouched).
    """
    directory = Path(directory)
    if not directory.exists():
        raise FileNotFoundError(f"no directory {directory} (node_exporter's --collector.textfile.directory)")
    if not directory.is_dir():
        raise NotADirectoryError(f"{directory} is not a directory")
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"not a file name: {name!r}")
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        _write_no_follow(dfd, directory, name, payload)
    finally:
        os.close(dfd)
    return directory / name


def _final_mode(dfd: int, directory: Path, name: str) -> int:
    """The permission bits for the new file; raises :class:`SharedDirRefused` for a link or non-file."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return 0o644
    if stat.S_ISLNK(st.st_mode):
        raise SharedDirRefused(f"{directory / name} is a symbolic link; memdeck never follows a link in the "
                               f"textfile directory (remove it and run again)")
    if not stat.S_ISREG(st.st_mode):
        raise SharedDirRefused(f"{directory / name} is not a regular file; nothing was written")
    return st.st_mode & 0o777 if st.st_uid == os.geteuid() else 0o644


def _create_temp(dfd: int, directory: Path) -> tuple[int, str]:
    import secrets  # here: a process that never writes a file does not import it

    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = f"{_TEMP_PREFIX}{secrets.token_hex(8)}{_TEMP_SUFFIX}"
        try:
            return os.open(tmp, flags, 0o600, dir_fd=dfd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a unique temp file in {directory}")


def _write_no_follow(dfd: int, directory: Path, name: str, payload: bytes) -> None:
    mode = _final_mode(dfd, directory, name)
    fd, tmp = _create_temp(dfd, directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        _final_mode(dfd, directory, name)  # checked again just before the rename
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    with contextlib.suppress(OSError):  # some file systems refuse to fsync a directory
        os.fsync(dfd)
