"""``memdeck metrics --textfile DIR``: the fleet's figures for node_exporter's textfile collector.

node_exporter reads every ``*.prom`` file of its ``--collector.textfile.directory`` at each of
its scrapes, so a file must never be seen half written. ``prometheus_client``'s
``write_to_textfile`` writes a temp file and renames it, but does not fsync either (a crash can
leave an empty ``memdeck.prom``); this writes through :func:`memdeck.core.fsio.atomic_write_bytes`
instead (temp file ``.memdeck_*.tmp`` in the same directory, which the collector ignores: it is
not ``*.prom``; fsync; rename; fsync of the directory). A new file is made readable by everyone
(0644): node_exporter usually runs as another user; an existing file keeps its mode.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..fsio import atomic_write_bytes

#: The file written in the textfile directory.
TEXTFILE_NAME = "memdeck.prom"


def write_textfile(directory: Path, payload: bytes, *, name: str = TEXTFILE_NAME) -> Path:
    """Atomically replace ``directory/name`` with ``payload`` (exposition-format bytes).

    Returns:
        the path written.

    Raises:
        FileNotFoundError: ``directory`` does not exist (it is never created: a mistyped
            directory is an error, not a new place node_exporter does not read).
        NotADirectoryError: it is not a directory.
        OSError: the write failed (the previous file, if any, is untouched).
    """
    directory = Path(directory)
    if not directory.exists():
        raise FileNotFoundError(f"no directory {directory} (node_exporter's --collector.textfile.directory)")
    if not directory.is_dir():
        raise NotADirectoryError(f"{directory} is not a directory")
    path = directory / name
    existed = path.exists()
    real = atomic_write_bytes(path, payload, prefix=".memdeck_", suffix=".tmp")
    if not existed:
        os.chmod(real, 0o644)
    return real
