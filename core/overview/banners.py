"""The one-line text a failed source shows in its panel's banner (the snapshot and the recall preview)."""

from __future__ import annotations


def describe_failure(exc: BaseException) -> str:
    """``"<ExceptionType>: <first line of its message>"`` for a banner.

    The message of a :class:`~memdeck.core.errors.Refused` (or of anything with a non-empty
    ``reason`` string) is its reason; a missing module gives ``"not available (<module>)"``; an
    exception without a message gives its type name alone.
    """
    reason = getattr(exc, "reason", None)
    text = reason if isinstance(reason, str) and reason else str(exc)
    if isinstance(exc, ModuleNotFoundError):
        return f"not available ({exc.name})"
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


__all__ = ["describe_failure"]
