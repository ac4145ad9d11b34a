"""What the history watches, and the canonical content it compares.

* ``memories/MEMORY.md`` / ``memories/USER.md`` (kind ``memory``; content = the canonical file
  text, ``parse_entries`` + ``serialize_entries``, so whitespace drift is not a change);
* MemLock session files ``memlock/*.json`` and global pins ``memlock/persist/*.json`` (kind
  ``anchor``; content = JSON ``{"session_id", "anchors": {id: {text, reminder, priority,
  probes}}}``: audit bookkeeping such as ``drifted`` or ``last_alive_turn`` is not a change).

A file's stamp is ``mtime_ns:size:ino``; only a file whose stamp changed is read again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import jsondata
from ..fsio import list_names, read_regular_bytes
from ..home import TARGET_FILES, TARGETS, HermesHome

# The entry format and MemLock's anchor model are imported by the functions that read a file's
# content: an observation that finds every stamp unchanged reads none (issue 23).

#: anchor fields whose change is a change (the audit's bookkeeping is not)
ANCHOR_FIELDS = ("text", "reminder", "priority", "probes")


@dataclass(frozen=True)
class WatchedFile:
    """A watched file: ``target`` for memory files; for anchor files ``session_id`` (provisional:
    the file stem until the file is read; None for ``persist/``)."""

    rel: str
    kind: str
    target: str | None
    path: Path
    session_id: str | None = None

    @property
    def scope(self) -> str | None:
        if self.kind != "anchor":
            return None
        return "global" if self.rel.startswith("memlock/persist/") else "session"


def watched_files(home: HermesHome) -> list[WatchedFile]:
    """MEMORY.md, USER.md, ``memlock/*.json`` and ``memlock/persist/*.json`` (manifest excluded;
    names that are not UTF-8 skipped, :func:`core.fsio.list_names`) of the MemLock directory in
    use (:func:`core.memlock_home.locate_memlock`; ``rel`` keeps the ``memlock/`` prefix wherever
    that directory is)."""
    from ..memlock_home import locate_memlock

    out = [WatchedFile(f"memories/{TARGET_FILES[t]}", "memory", t, home.memory_file(t)) for t in TARGETS]
    root = locate_memlock(home).path
    for sub in ("", "persist"):
        d = root / sub if sub else root
        try:
            names, _undecodable = list_names(d, ".json")
        except OSError:
            continue
        for name in names:
            if name == "manifest.json":
                continue
            rel = f"memlock/{sub + '/' if sub else ''}{name}"
            out.append(WatchedFile(rel, "anchor", None, d / name, None if sub else name[:-5]))
    return out


def stamp_of(path: Path) -> str | None:
    """``mtime_ns:size:ino`` of ``path`` (one ``stat``), or None when it cannot be stat'ed."""
    try:
        st = path.stat()
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"


def read_text(path: Path) -> str | None:
    """The file's UTF-8 text (regular files only), or None when it does not exist.

    Raises:
        UnicodeDecodeError, OSError: the caller skips the file and looks again next time.
    """
    try:
        data = read_regular_bytes(path)
    except FileNotFoundError:
        return None
    return data.decode("utf-8")


def canonical_memory(raw: str | None) -> str:
    """The canonical text of a memory file (Hermes' parse then join; BOM/CRLF tolerated)."""
    from ..memory.entries import parse_entries, serialize_entries

    if raw is None:
        return ""
    return serialize_entries(parse_entries(raw.lstrip("\ufeff").replace("\r\n", "\n")))


def anchor_fields(rec: dict[str, Any]) -> dict[str, Any]:
    """The fields of a MemLock anchor dict whose change is a change (:data:`ANCHOR_FIELDS`)."""
    from ..anchors.model import Anchor

    a = Anchor.from_dict(rec)
    return {"text": a.text, "reminder": a.reminder, "priority": a.priority, "probes": list(a.probes)}


def canonical_anchors(raw: str | None, rel: str, fallback: str | None) -> tuple[str | None, str]:
    """``(session_id, content JSON)`` of a MemLock session file, or ``(None, content JSON)`` of a
    global pin in ``persist/`` (``fallback``: the session id when the file says none, by default
    the file stem; unused for ``persist/``). Raises ValueError if not JSON.
    The content's ``"session_id"`` is ``"global"`` for ``persist/`` (the stored content format,
    unchanged since migration 2)."""
    from ..anchors.model import SessionAnchors

    persist = rel.startswith("memlock/persist/")
    fallback = fallback or Path(rel).stem
    if raw is None:
        return (None if persist else fallback), json.dumps(
            {"session_id": "global" if persist else fallback, "anchors": {}}, sort_keys=True)
    data = jsondata.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if persist:
        aid = str(data.get("id") or "global")
        return None, json.dumps({"session_id": "global", "anchors": {aid: anchor_fields(data)}}, sort_keys=True)
    s = SessionAnchors.from_dict(data, fallback)
    anchors = {aid: anchor_fields(a.to_dict()) for aid, a in s.anchors.items()}
    return s.session_id or fallback, json.dumps({"session_id": s.session_id or fallback, "anchors": anchors},
                                                sort_keys=True)


__all__ = ["ANCHOR_FIELDS", "WatchedFile", "anchor_fields", "canonical_anchors", "canonical_memory", "read_text",
           "stamp_of", "watched_files"]
