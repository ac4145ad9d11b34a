"""Which cache tier Hermes puts each prompt section in, and where its cache breakpoints are, per version.

One concept, read from each release's own source:

* ``agent/system_prompt.py`` ``build_system_prompt_parts`` returns three tiers joined in this order
  (0.17.0, 0.18.2, 0.19.0, 0.20.1.2, 0.21.0, 0.21.5, 0.22.2 all do):

  - 0.17-0.19: ``stable`` = identity, guidance, the skills index, environment hints, the platform
    hint; ``context`` = the caller's ``system_message`` and the context files; ``volatile`` = MEMORY,
    USER, the memory provider's block, the ``Conversation started:`` line.
  - 0.20-0.21.4: the skills index moves to ``volatile`` (first in it); the coding workspace snapshot
    joins ``context``.
  - 0.21.5 / 0.22: as 0.20, and the host facts (``# Hermes runtime environment``) move to the end
    of ``volatile``; 0.22 moves the active-profile line there too (0.21.5 keeps it stable).

* ``agent/prompt_caching.py`` ``apply_anthropic_cache_control`` (only where Hermes adds
  ``cache_control`` markers: Claude on Anthropic, OpenRouter, the Nous portal, Anthropic-wire
  gateways): 0.17-0.19 ``system_and_3``: one breakpoint at the end of the system prompt (the three
  tiers are one cached block) and the last three messages; 0.20+: a breakpoint at the end of the
  static prefix (the ``stable`` tier, ``agent._cached_system_prompt_static``), one at the end of the
  system prompt, and the last two messages.

A release memdeck does not know (older than 0.17) has no tiers known: :func:`tiers_for` says so.
Pure; never raises.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..hermes_version import HermesVersion

TIERS = ("stable", "context", "volatile")

_0_17 = {"identity": "stable", "guidance": "stable", "skills": "stable", "environment": "stable",
         "platform": "stable", "context_files": "context", "memory": "volatile", "user": "volatile",
         "provider": "volatile", "session": "volatile"}
_0_20 = {**_0_17, "skills": "volatile"}
_0_21_5 = {**_0_20, "environment": "volatile"}


@dataclass(frozen=True)
class TierMap:
    """One release's tiers.

    Attributes:
        known: False when memdeck knows no tiers for the release (``reason`` says why).
        section_tier: memdeck section name (:data:`.sections.SECTION_NAMES`) -> tier.
        breakpoints: where Hermes puts ``cache_control`` breakpoints in the system prompt, in words.
        static_prefix: True when the stable tier has a breakpoint of its own (0.20+), so an edit of a
            later tier leaves it cached on a provider with explicit breakpoints.
        source: the release's files this was read from.
        reason: why nothing is known ('' when known).
    """

    known: bool
    section_tier: dict[str, str]
    breakpoints: str
    static_prefix: bool
    source: str
    reason: str = ""

    profile_line: str = "stable"

    def tier(self, section: str) -> str | None:
        return self.section_tier.get(section)

    def tier_of(self, section: str, text: str) -> str | None:
        """The tier of one part of the prompt: its section's, except the active-profile line
        (``Active Hermes profile: ...``, part of memdeck's ``environment`` section), which Hermes keeps
        in the stable tier before 0.22 and moves to the volatile one in 0.22 (checked against each
        version's ``build_system_prompt_parts``)."""
        if section == "environment" and text.lstrip().startswith("Active Hermes profile"):
            return self.profile_line if self.known else None
        return self.tier(section)

    def to_dict(self) -> dict[str, object]:
        return {"known": self.known, "sections": dict(self.section_tier), "breakpoints": self.breakpoints,
                "static_prefix": self.static_prefix, "source": self.source, "reason": self.reason or None}


_SRC = "agent/system_prompt.py build_system_prompt_parts, agent/prompt_caching.py apply_anthropic_cache_control"


def tiers_for(version: HermesVersion) -> TierMap:
    """The :class:`TierMap` of ``version`` (an unknown version is read as 0.19, as every reader does)."""
    v = version.rules_number
    if v < (0, 17, 0):
        return TierMap(False, {}, "", False, "", f"no tiers known for Hermes {version.label or '?'} "
                                                 "(memdeck read the tiers of 0.17-0.22)")
    if v < (0, 20, 0):
        return TierMap(True, dict(_0_17), "one at the end of the system prompt (system_and_3): the three tiers "
                       "are one cached block, then the last 3 messages", False, f"Hermes {version.line} {_SRC}")
    table = _0_20 if v < (0, 21, 5) else _0_21_5
    return TierMap(True, dict(table), "one at the end of the stable tier (the static prefix), one at the end of "
                   "the system prompt, then the last 2 messages", True, f"Hermes {version.line} {_SRC}",
                   profile_line="volatile" if v >= (0, 22, 0) else "stable")


__all__ = ["TIERS", "TierMap", "tiers_for"]
