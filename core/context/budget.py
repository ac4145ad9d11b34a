"""When the next compaction comes: Hermes' threshold, from the home's config.yaml, per Hermes line.

One concept: the token count at which Hermes compacts a session, computed the way Hermes does.

* ``compression.enabled`` (default true) and ``compression.threshold`` (default 0.50), read by
  ``agent/agent_init.py`` (0.17 :1289-1340, 0.19 :1599-1660).
* The context length: ``model.context_length`` when set to a positive whole number (Hermes'
  step 0, ``agent/model_metadata.py`` ``get_model_context_length``, 0.19 :2084-2119), else the
  home's ``context_length_cache.yaml`` entry for the model (step 1, ``_get_context_cache_path``
  :1131-1134, keys ``<model>@<base_url>``). Hermes' later steps ask the provider over the
  network; memdeck does not, and says the length is unknown instead of guessing.
* The threshold (``agent/context_compressor.py``): 0.17 ``max(int(length * pct), 64,000)``
  (:650-665); 0.18 on the input budget ``length - model.max_tokens``, floored at 64,000, and at
  85 % of that budget when the floor would reach it (``_compute_threshold_tokens`` :949-985); 0.19
  also raises the percentage to 75 % below a 512K window (``_effective_threshold_percent``
  :1249-1263); 0.20 and 0.22 also cap it at ``compression.threshold_tokens`` (clamped to the
  window, ``_apply_threshold_tokens_cap``; 0.21.5's default cap is 256,000). 0.21.5 and 0.22 no
  longer take ``model.max_tokens`` from config.yaml (their window is the whole context length).

Per-model thresholds (0.20+ ``compression.model_thresholds``) and the Codex autoraise are not
reproduced; when configured they are named in :attr:`Budget.notes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..coerce import positive_int
from ..config import Config, yaml_safe_load
from ..fsio import read_regular_bytes
from ..hermes_version import HermesVersion

#: Hermes' ``MINIMUM_CONTEXT_LENGTH`` (0.17-0.22 ``agent/model_metadata.py``), tokens.
MINIMUM_CONTEXT_LENGTH = 64_000
#: ``_SMALL_CTX_WINDOW_LIMIT`` / ``_SMALL_CTX_THRESHOLD_PERCENT`` (0.19+ ``context_compressor.py:316-317``).
SMALL_WINDOW = 512_000
SMALL_WINDOW_PERCENT = 0.75
#: ``_MIN_CTX_TRIGGER_RATIO`` (0.18+).
MIN_TRIGGER_RATIO = 0.85
DEFAULT_THRESHOLD = 0.50


@dataclass(frozen=True)
class Budget:
    """The compaction budget of a home (tokens), or why it is not known.

    Attributes:
        enabled: ``compression.enabled``.
        threshold_percent: the configured percentage (0-1), before Hermes' small-window raise.
        effective_percent: the percentage Hermes applies.
        context_length: tokens, or None when memdeck cannot know it (:attr:`reason`).
        context_length_source: ``"config.yaml model.context_length"`` or
            ``"context_length_cache.yaml"``.
        threshold_tokens: the token count at which Hermes compacts, or None.
        reason: why there is no threshold (compression off, unknown context length), else None.
        notes: settings memdeck does not reproduce.
        line: the Hermes line whose rule was applied.
    """

    enabled: bool
    threshold_percent: float
    effective_percent: float
    context_length: int | None
    context_length_source: str | None
    threshold_tokens: int | None
    reason: str | None
    notes: tuple[str, ...] = ()
    line: str = "0.19"

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "threshold_percent": self.threshold_percent,
                "effective_percent": self.effective_percent, "context_length": self.context_length,
                "context_length_source": self.context_length_source, "threshold_tokens": self.threshold_tokens,
                "reason": self.reason, "notes": list(self.notes), "hermes_rules": self.line}


def _section(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    v = raw.get(name)
    return v if isinstance(v, Mapping) else {}


def cached_context_length(home_path: Any, model: str | None) -> int | None:
    """The context length Hermes cached for ``model`` in ``<home>/context_length_cache.yaml``
    (keys ``<model>@<base_url>``), when every entry for that model agrees; else None. Never raises."""
    if not model:
        return None
    try:
        data = yaml_safe_load(read_regular_bytes(home_path / "context_length_cache.yaml").decode("utf-8"))
    except Exception:  # noqa: BLE001 - no cache, or one memdeck cannot read: unknown
        return None
    rows = data.get("context_lengths") if isinstance(data, Mapping) else None  # 0.19 _load_context_cache :1137-1148
    if not isinstance(rows, Mapping):
        return None
    found = {positive_int(v) for k, v in rows.items() if isinstance(k, str) and k.startswith(model + "@")}
    found.discard(None)
    return found.pop() if len(found) == 1 else None


def threshold_tokens(context_length: int, percent: float, line: str, max_tokens: int | None = None,
                     cap: int | None = None) -> tuple[float, int]:
    """``(effective percent, threshold tokens)`` by Hermes line ``line``'s rule (module docstring).

    Raises:
        ValueError: ``context_length`` is not positive.
    """
    if context_length <= 0:
        raise ValueError("context_length must be positive")
    if line == "0.17":
        return percent, max(int(context_length * percent), MINIMUM_CONTEXT_LENGTH)
    effective = percent
    if line not in ("0.18",) and context_length < SMALL_WINDOW:
        effective = max(percent, SMALL_WINDOW_PERCENT)
    window = context_length - (max_tokens or 0)
    if window <= 0:
        window = context_length
    floored = max(int(window * effective), MINIMUM_CONTEXT_LENGTH)
    if floored >= window:
        floored = max(1, min(int(window * MIN_TRIGGER_RATIO), window - 1))
    if cap is not None and line in ("0.20", "0.22"):
        floored = min(floored, min(cap, context_length))
    return effective, floored


def budget(config: Config, home_path: Any, model: str | None, version: HermesVersion) -> Budget:
    """The compaction budget of ``config`` for a session of ``model`` (``sessions.model``), by the
    rules of ``version`` (:attr:`~memdeck.core.hermes_version.HermesVersion.line`,
    ``reads_max_tokens``, ``threshold_cap``, ``default_threshold_tokens``). Never raises.

    ``model.max_tokens`` is subtracted only where that Hermes reads it from config.yaml (0.18-0.21.4
    ``agent/agent_init.py``); ``compression.threshold_tokens`` caps from 0.20, defaulting to 256,000
    on 0.21.5 (``hermes_cli/config_defaults.py:570``; an explicit ``null`` removes the cap, as
    0.21.5 ``agent_init.py:1499`` reads the merged config)."""
    line = version.line
    raw = config.raw
    comp = _section(raw, "compression")
    mcfg = _section(raw, "model")
    enabled = str(comp.get("enabled", True)).lower() in {"true", "1", "yes"}
    try:
        pct = float(comp.get("threshold", DEFAULT_THRESHOLD))
    except (TypeError, ValueError):
        pct = DEFAULT_THRESHOLD
    notes: list[str] = []
    if comp.get("model_thresholds"):
        notes.append("compression.model_thresholds is set: memdeck applies compression.threshold to every model")
    if not enabled:
        return Budget(False, pct, pct, None, None, None, "compression is off (compression.enabled: false)", tuple(notes), line)
    length = positive_int(mcfg.get("context_length"))
    source = "config.yaml model.context_length" if length else None
    if length is None:
        length = cached_context_length(home_path, model or (mcfg.get("default") if isinstance(mcfg.get("default"), str) else None))
        source = "context_length_cache.yaml" if length else None
    if length is None:
        return Budget(True, pct, pct, None, None, None,
                      "the context length is not in config.yaml (model.context_length) nor in Hermes' "
                      "context_length_cache.yaml: Hermes asks the provider, memdeck does not guess", tuple(notes), line)
    max_tokens = positive_int(mcfg.get("max_tokens")) if version.reads_max_tokens else None
    if mcfg.get("max_tokens") is not None and not version.reads_max_tokens and line != "0.17":
        notes.append(f"model.max_tokens is not read by {version.words()}: the threshold is on the whole window")
    cap = (positive_int(comp["threshold_tokens"]) if "threshold_tokens" in comp
           else version.default_threshold_tokens) if version.threshold_cap else None
    effective, threshold = threshold_tokens(length, pct, line, max_tokens, cap)
    return Budget(True, pct, effective, length, source, threshold, None, tuple(notes), line)


__all__ = ["Budget", "MINIMUM_CONTEXT_LENGTH", "budget", "cached_context_length", "threshold_tokens"]
