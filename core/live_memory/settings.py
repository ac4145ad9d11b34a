"""The ``memdeck:`` section of a home's config.yaml: how the plugin delivers memory changes.

Keys (beside MemLock's ``memlock:`` section)::

    memdeck:
      live_memory: notice        # off | notice | delta (default notice)
      live_memory_max_chars: 1200  # the most chars one turn's block holds (default 1200, >= 200)
      chat_notices: true         # a pending write ends the agent's next reply in that chat with a line (issue 35)
      alerts:
        pending_age_hours: 24    # the oldest pending write older than this brings the line too (default 24)

``alerts.pending_age_hours`` is the key of the dashboard's settings file (``core/overview/alerts.py``),
read here from the home's config.yaml: the plugin runs in Hermes' process, which does not read a
person's dashboard settings.

A bad value keeps the default and says why in :attr:`LiveSettings.warnings` (never raises).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The delivery modes: nothing; one line per turn that brings changes; the changed entries' text.
MODES = ("off", "notice", "delta")
DEFAULT_MODE = "notice"
DEFAULT_MAX_CHARS = 1200
#: hours the oldest pending write may wait before the chat notice names it (``alerts.pending_age_hours``)
DEFAULT_PENDING_AGE_HOURS = 24.0
#: The smallest budget accepted: a fence, its note and one short entry.
MIN_MAX_CHARS = 200


@dataclass(frozen=True)
class LiveSettings:
    """``memdeck.live_memory`` (one of :data:`MODES`), ``memdeck.live_memory_max_chars`` (chars),
    ``memdeck.chat_notices`` (bool) and ``memdeck.alerts.pending_age_hours`` (hours)."""

    mode: str = DEFAULT_MODE
    max_chars: int = DEFAULT_MAX_CHARS
    warnings: tuple[str, ...] = ()
    chat_notices: bool = True
    pending_age_hours: float = DEFAULT_PENDING_AGE_HOURS

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "max_chars": self.max_chars}


def live_settings(raw: Mapping[str, Any] | None) -> LiveSettings:
    """The settings of a parsed config.yaml document (``Config.raw``; None: the defaults).

    ``live_memory`` is matched stripped and case-insensitively; YAML's ``off`` / ``false`` (a
    boolean False) means ``off``. ``live_memory_max_chars`` must be an integer >= :data:`MIN_MAX_CHARS`.
    """
    warnings: list[str] = []
    sec = raw.get("memdeck") if isinstance(raw, Mapping) else None
    if sec is None:
        return LiveSettings()
    if not isinstance(sec, Mapping):
        return LiveSettings(warnings=("config: memdeck: is not a mapping; live memory uses its defaults",))
    mode = DEFAULT_MODE
    value = sec.get("live_memory", DEFAULT_MODE)
    if value is False:  # YAML 1.1 reads a bare `off` as false
        mode = "off"
    elif isinstance(value, str) and value.strip().lower() in MODES:
        mode = value.strip().lower()
    elif value is not None:
        warnings.append(f"config: memdeck.live_memory={value!r} is not one of {', '.join(MODES)}; using {DEFAULT_MODE}")
    max_chars = DEFAULT_MAX_CHARS
    mc = sec.get("live_memory_max_chars")
    if mc is not None:
        if isinstance(mc, int) and not isinstance(mc, bool) and mc >= MIN_MAX_CHARS:
            max_chars = mc
        else:
            warnings.append(f"config: memdeck.live_memory_max_chars={mc!r} is not an integer >= {MIN_MAX_CHARS}; "
                            f"using {DEFAULT_MAX_CHARS}")
    notices = True
    cn = sec.get("chat_notices", True)
    if isinstance(cn, bool):
        notices = cn
    elif isinstance(cn, str) and cn.strip().lower() in ("off", "false", "no", "0", "on", "true", "yes", "1"):
        notices = cn.strip().lower() in ("on", "true", "yes", "1")
    elif cn is not None:
        warnings.append(f"config: memdeck.chat_notices={cn!r} is not true or false; using true")
    age = DEFAULT_PENDING_AGE_HOURS
    alerts = sec.get("alerts")
    if isinstance(alerts, Mapping) and alerts.get("pending_age_hours") is not None:
        v = alerts.get("pending_age_hours")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0.01 <= v <= 24 * 365:
            age = float(v)
        else:
            warnings.append(f"config: memdeck.alerts.pending_age_hours={v!r} is not a number from 0.01 to 8760; "
                            f"using {DEFAULT_PENDING_AGE_HOURS:g}")
    elif alerts is not None and not isinstance(alerts, Mapping):
        warnings.append("config: memdeck.alerts is not a mapping; using its defaults")
    return LiveSettings(mode, max_chars, tuple(warnings), notices, age)


__all__ = ["DEFAULT_MAX_CHARS", "DEFAULT_PENDING_AGE_HOURS", "DEFAULT_MODE", "MIN_MAX_CHARS", "MODES", "LiveSettings", "live_settings"]
