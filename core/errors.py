"""Error types shared by every core operation.

A *refusal* (:class:`Refused`) means the operation was checked and declined; the data on
disk is untouched. Everything else derived from :class:`MemdeckError` is an environmental
failure (lock timeout, unreadable file) that also leaves the data untouched.
"""

from __future__ import annotations

from typing import Any


class MemdeckError(Exception):
    """Base class for every error raised on purpose by ``core``."""


class Refused(MemdeckError):
    """An operation was declined; nothing was written.

    Attributes:
        reason: one human sentence saying what and why (shown verbatim in CLI/TUI).
        code: a stable machine-readable slug, e.g. ``"overflow"``, ``"ambiguous"``,
            ``"no_match"``, ``"threat"``, ``"drift"``, ``"unreadable"``, ``"empty"``,
            ``"invalid"``, ``"not_found"``, ``"limit"``.
        details: extra structured data (for overflow: ``current_entries`` and ``usage``,
            mirroring Hermes 0.19 ``tools/memory_tool.py`` refusal responses).
    """

    def __init__(self, reason: str, code: str = "refused", **details: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"success": False, "code": self.code, "error": self.reason, **self.details}


class LockTimeout(MemdeckError):
    """The sidecar lock could not be taken within the bounded wait (seconds)."""


class UnreadableFile(MemdeckError):
    """A file exists but cannot be read or decoded (permissions, invalid UTF-8)."""
