"""Value coercions: turning what a hand-edited or foreign file holds into the number or flag memdeck
needs, the same way everywhere.

One concept: reading a loosely typed value (YAML, JSON, SQLite) as an int, float, bool or a
positive count, with the rule each reader documents. The config readers (``as_int_warn``,
``as_float_warn``, ``as_bool_warn``) add a one-line warning and use the default; the others never
raise and never warn. Pure; imports nothing of memdeck.
"""

from __future__ import annotations

from typing import Any


def number_or_zero(v: Any) -> float:
    """``float(v)``, or 0.0 for None and for a value that is not a number."""
    try:
        return float(v) if v is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def as_int(value: Any, default: int) -> int:
    """``value`` as an int read from a hand-editable file: ints as they are, bools as 0/1,
    numbers and numeric strings truncated (``"7.9"`` -> 7); anything else (including NaN and
    infinities, which ``json`` reads from ``NaN``/``Infinity``/``1e999``) gives ``default``."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):  # OverflowError: inf (json reads Infinity, 1e999)
        return default


def positive_int(v: Any) -> int | None:
    """``int(v)`` when it is a whole number above 0 (bools refused), else None."""
    if isinstance(v, bool):
        return None
    try:
        n = int(v)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def as_int_warn(value: Any, default: int, key: str, warnings: list[str], lo: int | None = None) -> int:
    """``value`` as an int (strings stripped; bools and YAML ``.inf`` refused), else ``default`` with a
    ``config: key=... is not an integer`` warning appended; below ``lo`` likewise."""
    if value is None:
        return default
    try:
        if isinstance(value, bool):
            raise TypeError
        out = int(str(value).strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: YAML .inf
        warnings.append(f"config: {key}={value!r} is not an integer; using {default}")
        return default
    if lo is not None and out < lo:
        warnings.append(f"config: {key}={value!r} is below {lo}; using {default}")
        return default
    return out


def as_float_warn(value: Any, default: float, key: str, warnings: list[str]) -> float:
    """``value`` as a float (bools refused), else ``default`` with a warning appended."""
    if value is None:
        return default
    try:
        if isinstance(value, bool):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        warnings.append(f"config: {key}={value!r} is not a number; using {default}")
        return default


def as_bool_warn(value: Any, default: bool, key: str, warnings: list[str]) -> bool:
    """``value`` as a bool (YAML bools; ``true/yes/on/1``, ``false/no/off/0`` strings), else ``default``
    with a warning appended."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "on", "1", "false", "no", "off", "0"}:
        return value.strip().lower() in {"true", "yes", "on", "1"}
    warnings.append(f"config: {key}={value!r} is not a boolean; using {default}")
    return default


__all__ = ["as_bool_warn", "as_float_warn", "as_int", "as_int_warn", "number_or_zero", "positive_int"]
