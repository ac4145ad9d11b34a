"""Hermes' own size of a session's context when the provider reported usage: the usage anchor.

One concept: 0.21.5 and 0.22 decide compaction from the provider's reported ``prompt_tokens`` of
the last request (plus its ``completion_tokens``) and estimate only the messages appended since
(``agent/usage_anchor.py`` ``anchored_context_tokens``; ``agent/turn_request_assembly.py`` reads it
before the rough estimate). The anchor is persisted in ``sessions.model_config`` under
``_usage_anchor`` and honoured only while the stored transcript still matches its fingerprints
(``_anchor_matches``: the message at ``base_count - 1`` by role and a SHA-256 of its
``role``/``content``/``api_content``/``tool_call_id``/``tool_calls``; 0.22 also the whole priced
prefix, ``base_prefix_fp``, and refuses an anchor without it in ``_serialize``).

:func:`anchored_tokens` reproduces ``persisted_anchor_tokens`` on memdeck's conversation rows.
Pure; never raises.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..hermes_version import HermesVersion
from .tokens import hermes_message_estimate

#: ``USAGE_ANCHOR_MODEL_CONFIG_KEY`` (0.21.5 / 0.22 ``agent/usage_anchor.py:26``).
MODEL_CONFIG_KEY = "_usage_anchor"
#: ``_FINGERPRINT_KEYS`` (0.21.5 / 0.22 ``agent/usage_anchor.py``).
FINGERPRINT_KEYS = ("role", "content", "api_content", "tool_call_id", "tool_calls")


def message_fingerprint(msg: Mapping[str, Any]) -> str:
    """Hermes' ``message_fingerprint``: SHA-256 hex of the provider-visible fields, JSON with sorted keys."""
    payload = {k: msg.get(k) for k in FINGERPRINT_KEYS if msg.get(k) is not None}
    try:
        raw = json.dumps(payload, sort_keys=True, default=str, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError):
        raw = repr(sorted(payload.items()))
    return hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()


def _prefix_fingerprint(messages: Sequence[Mapping[str, Any]], base_count: int) -> str | None:
    if base_count <= 0 or len(messages) < base_count:
        return None
    fps = [(m.get("role"), message_fingerprint(m)) for m in messages[:base_count]]
    raw = json.dumps(fps, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()


def stored_anchor(model_config: str | None, version: HermesVersion) -> dict[str, Any] | None:
    """The anchor in ``sessions.model_config`` as that Hermes' ``_serialize`` accepts it, or None."""
    if not version.usage_anchor or not model_config:
        return None
    try:
        data = json.loads(model_config)
    except ValueError:
        return None
    anchor = data.get(MODEL_CONFIG_KEY) if isinstance(data, dict) else None
    if not isinstance(anchor, dict):
        return None
    try:
        pt, ct, base = (int(anchor.get(k) or 0) for k in ("prompt_tokens", "completion_tokens", "base_count"))
    except (TypeError, ValueError):
        return None
    fp, prefix = anchor.get("base_last_fp"), anchor.get("base_prefix_fp")
    if pt <= 0 or base <= 0 or not isinstance(fp, str) or not fp:
        return None
    needs_prefix = version.rules_number >= (0, 22, 0)
    if needs_prefix and (not isinstance(prefix, str) or not prefix):
        return None
    return {"prompt_tokens": pt, "completion_tokens": max(0, ct), "base_count": base,
            "base_last_role": anchor.get("base_last_role"), "base_last_fp": fp,
            "base_prefix_fp": prefix if needs_prefix else None}


def anchored_tokens(model_config: str | None, conversation: Sequence[Mapping[str, Any]],
                    version: HermesVersion) -> int | None:
    """Hermes' ``persisted_anchor_tokens`` of a session, in tokens: the reported prompt and completion
    tokens plus the rough estimate of the messages after the priced ones (the anchored reply
    skipped). None when that Hermes keeps no anchor, none is stored, or it is stale against the rows.

    Args:
        model_config: ``sessions.model_config`` (JSON text) or None.
        conversation: the session's active rows as Hermes loads them.
        version: the home's Hermes.
    """
    anchor = stored_anchor(model_config, version)
    if anchor is None:
        return None
    base = anchor["base_count"]
    if len(conversation) < base:
        return None
    last = conversation[base - 1]
    if last.get("role") != anchor["base_last_role"] or message_fingerprint(last) != anchor["base_last_fp"]:
        return None
    if anchor["base_prefix_fp"] is not None and _prefix_fingerprint(conversation, base) != anchor["base_prefix_fp"]:
        return None
    total = anchor["prompt_tokens"] + anchor["completion_tokens"]
    delta = list(conversation[base:])
    if delta and delta[0].get("role") == "assistant":
        delta = delta[1:]
    if delta:
        total += hermes_message_estimate(delta, version.line, version.db_persisted)
    return total


__all__ = ["FINGERPRINT_KEYS", "MODEL_CONFIG_KEY", "anchored_tokens", "message_fingerprint", "stored_anchor"]
