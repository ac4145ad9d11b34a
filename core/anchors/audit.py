"""The drift audit of one active region: verdicts, the keyword and semantic audits, integrity score, alerts.

One concept: auditing anchors against the messages that are in context now (MemLock's
rules are in :mod:`.rules`, the reminder block in :mod:`.rehydration`). Pure functions only (no
disk, no clock): the Hermes plugin runs them every turn, the CLI and the dashboard run them over
state.db. Every rule reproduced from MemLock cites its source in
``Sahil-SS9/hermes-memlock`` @ ``f6cfb8b`` (0.2.0); the later ``memlock_core`` package keeps
the same logic (``memlock_core/detection.py``, ``memlock_core/__init__.py``).

Anchors are accepted as :class:`core.anchors.Anchor` objects or as MemLock anchor dicts
(``{"id", "text", "reminder", "priority", "probes", "pinned", "drifted", ...}``); messages as
Hermes/OpenAI message dicts (``content`` string, list of parts, or state.db ``\\x00json:``)
or as plain strings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..sessions.compaction import message_text
from .rules import anchor_id_of, field_of, memlock_cfg, probes_of

#: Semantic windows overlap by this many chars (MemLock ``_WINDOW_OVERLAP_CHARS``).
WINDOW_OVERLAP_CHARS = 200
#: Window size is clamped to at least overlap + 100 = 300 chars (``_build_windows``).
MIN_WINDOW_CHARS = WINDOW_OVERLAP_CHARS + 100
#: Only the most recent windows are kept (``_MAX_WINDOWS``).
MAX_WINDOWS = 256


# ── verdicts ───────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class AnchorVerdict:
    """The audit result for one anchor.

    Attributes:
        anchor_id: the anchor's id.
        alive: True when the anchor survived (keyword: hits/len(probes) >= threshold or no
            probes; semantic: max cosine >= ``sim_threshold``).
        hits: number of probes found in the active region (case-insensitive substring).
        probes: the anchor's probes, in order.
        missing: the probes that were not found.
        similarity: the max cosine similarity over the windows (semantic mode), else ``None``.
        method: ``"keyword"``, ``"semantic"``, or ``"keyword-fallback"`` (semantic failed).
    """

    anchor_id: str
    alive: bool
    hits: int
    probes: tuple[str, ...]
    missing: tuple[str, ...]
    similarity: float | None = None
    method: str = "keyword"

    @property
    def drifted(self) -> bool:
        return not self.alive

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.anchor_id,
            "alive": self.alive,
            "hits": self.hits,
            "probes": list(self.probes),
            "missing": list(self.missing),
            "similarity": self.similarity,
            "method": self.method,
        }


def active_text(active_messages: Iterable[Any]) -> str:
    """The lowercased active region as MemLock searches it: texts joined with ``\\n``.

    Message text extraction is :func:`core.compaction.message_text` (string content as is,
    list content's text parts, ``\\x00json:`` decoded); a plain string is its own text.
    """
    return "\n".join(message_text(m) for m in active_messages).lower()


def _probe_hits(haystack_lower: str, probes: Sequence[str]) -> tuple[int, tuple[str, ...]]:
    hits = 0
    missing: list[str] = []
    for probe in probes:
        if probe.lower() in haystack_lower:
            hits += 1
        else:
            missing.append(probe)
    return hits, tuple(missing)


def keyword_audit(
    anchors: Iterable[Any], active_messages: Iterable[Any], threshold: float = 0.5
) -> dict[str, AnchorVerdict]:
    """MemLock's keyword audit (``detection.py:129-164`` ``audit_anchors``).

    The active messages' texts are joined with ``\\n`` and lowercased; a probe *hits* when it
    occurs in that text as a case-insensitive substring. An anchor is alive iff
    ``hits / len(probes) >= threshold``; an anchor with no probes is always alive.

    Args:
        anchors: Anchor objects or MemLock anchor dicts.
        active_messages: the active region (message dicts or strings), e.g. the output of
            :func:`core.compaction.split_context` or the sessions reader's region.
        threshold: ``drift_threshold``, a fraction 0-1 (0 = always alive).

    Returns:
        ``{anchor_id: AnchorVerdict}`` in the order the anchors were given.
    """
    anchors = list(anchors)
    if not anchors:
        return {}
    haystack = active_text(active_messages)
    out: dict[str, AnchorVerdict] = {}
    for anchor in anchors:
        aid = anchor_id_of(anchor)
        probes = probes_of(anchor)
        if not probes:
            out[aid] = AnchorVerdict(aid, True, 0, (), ())
            continue
        hits, missing = _probe_hits(haystack, probes)
        out[aid] = AnchorVerdict(aid, hits / len(probes) >= threshold, hits, tuple(probes), missing)
    return out


# ── semantic audit ─────────────────────────────────────────────────────────


def build_windows(texts: Iterable[Any], window_chars: int = 1000) -> list[str]:
    """Embedding windows exactly as MemLock builds them (``detection.py:200-227``).

    One window per non-empty (stripped) message text; a text longer than ``window_chars`` is
    cut into chunks of ``window_chars`` with a 200-char overlap (step = window - 200). The
    window size is clamped to at least 300 chars. Only the most recent 256 windows are kept.

    Args:
        texts: message dicts or strings, oldest first.
        window_chars: ``semantic_window_chars`` (chars).
    """
    try:
        size = int(window_chars)
    except (TypeError, ValueError):
        size = 1000
    size = max(size, MIN_WINDOW_CHARS)
    step = size - WINDOW_OVERLAP_CHARS
    windows: list[str] = []
    for item in texts:
        text = message_text(item).strip()
        if not text:
            continue
        if len(text) <= size:
            windows.append(text)
            continue
        for start in range(0, len(text), step):
            chunk = text[start : start + size]
            if chunk:
                windows.append(chunk)
            if start + size >= len(text):
                break
    return windows[-MAX_WINDOWS:]


def load_encoder(model_name: str, home: Any = None) -> Any:
    """memdeck's verified encoder for ``embedding_model = model_name``
    (:func:`core.anchors.encoder.semantic_encoder`: resolved as MemLock resolves it, weights
    checked against all-MiniLM-L6-v2's sha256, numpy forward pass, vectors cached in ``home``'s
    memdeck.db).

    Raises:
        RuntimeError: the model cannot be used; the message is the reason (what failed and what
            MemLock does then).
    """
    from ..config import MemlockConfig
    from .encoder import semantic_encoder

    enc, status = semantic_encoder(MemlockConfig(detection="semantic", embedding_model=str(model_name)), home)
    if enc is None:
        raise RuntimeError(status.reason or f"semantic model {model_name!r} unavailable")
    return enc


def _encode(encoder: Any, texts: list[str]) -> Any:
    import numpy as np

    fn: Callable[[list[str]], Any] = encoder.encode if hasattr(encoder, "encode") else encoder
    arr = np.asarray(fn(texts), dtype=float)
    if arr.ndim != 2 or arr.shape[0] != len(texts):
        raise ValueError(f"encoder returned shape {arr.shape} for {len(texts)} texts")
    return arr


def max_cosine(anchor_vecs: Any, window_vecs: Any) -> Any:
    """For each anchor row, the maximum cosine similarity over the window rows (numpy).

    A zero vector has similarity 0 with everything (MemLock ``_cosine``).
    """
    import numpy as np

    a = np.asarray(anchor_vecs, dtype=float)
    w = np.asarray(window_vecs, dtype=float)
    an = np.linalg.norm(a, axis=1, keepdims=True)
    wn = np.linalg.norm(w, axis=1, keepdims=True)
    a_unit = np.divide(a, an, out=np.zeros_like(a), where=an != 0)
    w_unit = np.divide(w, wn, out=np.zeros_like(w), where=wn != 0)
    return (a_unit @ w_unit.T).max(axis=1)


def semantic_audit(
    anchors: Iterable[Any],
    active_messages: Iterable[Any],
    *,
    sim_threshold: float = 0.65,
    window_chars: int = 1000,
    model_name: str = "all-MiniLM-L6-v2",
    fallback_threshold: float = 0.5,
    encoder: Any = None,
    home: Any = None,
) -> dict[str, AnchorVerdict]:
    """MemLock's semantic audit (``detection.py:241-280`` ``semantic_audit_anchors``).

    Windows come from :func:`build_windows`; all windows are encoded in one batch and all
    anchor *texts* in a second (probes are not used for the decision). An anchor is alive iff
    its maximum cosine similarity over the windows is >= ``sim_threshold``. No windows at
    all means every anchor has drifted.

    Deliberate difference: when the model cannot be loaded or the audit raises, this falls
    back to :func:`keyword_audit` with ``fallback_threshold`` (pass the *configured*
    ``drift_threshold``); MemLock falls back with its default 0.5. Fallback verdicts carry
    ``method="keyword-fallback"``.

    Args:
        encoder: an object with ``encode(list[str]) -> array (n, dim)`` or such a callable;
            ``None`` loads ``model_name`` through :func:`load_encoder` (vectors cached in
            ``home``'s memdeck.db).

    Returns:
        ``{anchor_id: AnchorVerdict}``; ``similarity`` is the max cosine, ``hits``/``missing``
        are still the keyword probe hits (informational).
    """
    anchors = list(anchors)
    messages = list(active_messages)
    if not anchors:
        return {}

    def fallback() -> dict[str, AnchorVerdict]:
        res = keyword_audit(anchors, messages, fallback_threshold)
        return {k: _replace_method(v, "keyword-fallback") for k, v in res.items()}

    try:
        model = encoder if encoder is not None else load_encoder(model_name, home)
    except Exception:  # noqa: BLE001 - any model failure falls back to the keyword audit, said in the method
        return fallback()
    haystack = active_text(messages)
    try:
        windows = build_windows(messages, window_chars)
        if not windows:
            sims: list[float | None] = [None] * len(anchors)
        else:
            window_vecs = _encode(model, windows)
            anchor_vecs = _encode(model, [str(field_of(a, "text", "") or "") for a in anchors])
            sims = [float(s) for s in max_cosine(anchor_vecs, window_vecs)]
    except Exception:  # noqa: BLE001 - any model failure falls back to the keyword audit, said in the method
        return fallback()
    out: dict[str, AnchorVerdict] = {}
    for anchor, sim in zip(anchors, sims):
        aid = anchor_id_of(anchor)
        probes = probes_of(anchor)
        hits, missing = _probe_hits(haystack, probes)
        alive = sim is not None and not math.isnan(sim) and sim >= sim_threshold
        out[aid] = AnchorVerdict(aid, alive, hits, tuple(probes), missing, sim, "semantic")
    return out


def _replace_method(v: AnchorVerdict, method: str) -> AnchorVerdict:
    return AnchorVerdict(v.anchor_id, v.alive, v.hits, v.probes, v.missing, v.similarity, method)


def run_audit(anchors: Iterable[Any], active_messages: Iterable[Any], config: Any = None, *, encoder: Any = None,
              home: Any = None) -> dict[str, AnchorVerdict]:
    """Run the audit ``config`` selects (``detection: keyword|semantic``) with its thresholds.

    Args:
        config: a :class:`core.config.MemlockConfig` (or ``Config``, whose ``.memlock`` is
            used); ``None`` means MemLock defaults.
        encoder: the semantic encoder (None: memdeck's verified model for ``embedding_model``,
            :func:`core.anchors.encoder.semantic_encoder`; when it cannot be used the verdicts
            are the keyword fallback's, ``method="keyword-fallback"``).
        home: the Hermes home whose memdeck.db caches vectors (None: this process only).
    """
    cfg = memlock_cfg(config)
    if str(getattr(cfg, "detection", "keyword")).strip().lower() == "semantic":
        if encoder is None:
            from .encoder import semantic_encoder

            encoder, _status = semantic_encoder(cfg, home)
            if encoder is None:
                res = keyword_audit(anchors, active_messages, float(cfg.drift_threshold))
                return {k: _replace_method(v, "keyword-fallback") for k, v in res.items()}
        return semantic_audit(
            anchors,
            active_messages,
            sim_threshold=float(cfg.sim_threshold),
            window_chars=int(cfg.semantic_window_chars),
            model_name=str(cfg.embedding_model),
            fallback_threshold=float(cfg.drift_threshold),
            encoder=encoder,
            home=home,
        )
    return keyword_audit(anchors, active_messages, float(cfg.drift_threshold))



# ── score, alerts ──────────────────────────────────────────────────────────


def integrity_score(anchors: Iterable[Any]) -> int | None:
    """The integrity score in percent 0-100: ``round(100 * alive / total)``.

    MemLock ``store.py:173-183``: counts every anchor (static, pinned, probe-less); Python's
    ``round`` is banker's rounding (1/8 -> 12, 5/8 -> 62). ``None`` when there are no anchors
    (MemLock stores ``null``). Accepts anchors (alive = not ``drifted``) or
    :class:`AnchorVerdict` values (``alive``).
    """
    total = 0
    alive = 0
    for a in anchors:
        total += 1
        if isinstance(a, AnchorVerdict):
            alive += a.alive
        else:
            alive += not bool(field_of(a, "drifted", False))
    if total == 0:
        return None
    return round(100 * alive / total)


def should_alert(
    score: int | None,
    last_alert_at: float | None,
    now: float,
    alert_floor: float = 70,
    alert_cooldown_s: float = 1800,
) -> bool:
    """Whether MemLock would raise a low-integrity alert (``__init__.py:364-387``).

    True iff ``0 <= score < alert_floor`` and ``last_alert_at`` is ``None`` or at least
    ``alert_cooldown_s`` seconds before ``now`` (epoch seconds).
    """
    if score is None or score < 0 or score >= alert_floor:
        return False
    if last_alert_at is None:
        return True
    return (now - float(last_alert_at)) >= alert_cooldown_s


def alert_message(score: int, session_id: str, drifted_ids: Sequence[str]) -> str:
    """MemLock's alert text: ``[memlock] integrity score S% (session SID)`` plus
    `` — drifted: a, b`` listing at most the first 5 drifted ids (``__init__.py:364-387``)."""
    msg = f"[memlock] integrity score {score}% (session {session_id})"
    if drifted_ids:
        msg += f" — drifted: {', '.join(list(drifted_ids)[:5])}"
    return msg


# ── the audited region ─────────────────────────────────────────────────────


def audited_region(messages: Sequence[Any], system_prompt: str = "") -> list[Any]:
    """The active region MemLock audits for a conversation loaded from state.db.

    MemLock sees ``[system prompt] + rows``; ``split_context`` keeps index 0 (the system
    prompt, which carries MEMORY.md/USER.md) and everything after the first summary message;
    rows before the summary (the protected head copies) and the summary itself do not count.
    Unlike MemLock, the merge-into-tail ``[PRIOR CONTEXT`` shape is recognised as a summary
    (its prior-context part, the last live turn, stays active).
    """
    from ..sessions.compaction import MERGED_PRIOR_CONTEXT_HEADER, MERGED_SUMMARY_DELIMITER, find_summary, split_context

    conv = [{"role": "system", "content": system_prompt}]
    conv += [m.as_dict() if hasattr(m, "as_dict") else m for m in messages]
    idx, match = find_summary(conv)
    _summary, active = split_context(conv, idx)
    if idx is not None and match is not None and match.merged:
        # The merged message carries the last live user turn before the delimiter: that part
        # is conversation, not summary.
        prior = message_text(conv[idx]).split(MERGED_SUMMARY_DELIMITER, 1)[0]
        prior = prior.replace(MERGED_PRIOR_CONTEXT_HEADER, "", 1).strip()
        active.insert(1, {"role": conv[idx].get("role", "user"), "content": prior})
    return active

