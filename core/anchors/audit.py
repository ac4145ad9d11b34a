"""The drift audit: probes, keyword and semantic audit, integrity score, alerts, reminder block.

Pure functions only (no disk, no clock): the Hermes plugin runs them every turn, the CLI and
the dashboard run them over state.db. Every rule reproduced from MemLock cites its source in
``Sahil-SS9/hermes-memlock`` @ ``f6cfb8b`` (0.2.0); the later ``memlock_core`` package keeps
the same logic (``memlock_core/detection.py``, ``memlock_core/__init__.py``).

Anchors are accepted as :class:`core.anchors.Anchor` objects or as MemLock anchor dicts
(``{"id", "text", "reminder", "priority", "probes", "pinned", "drifted", ...}``); messages as
Hermes/OpenAI message dicts (``content`` string, list of parts, or state.db ``\\x00json:``)
or as plain strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..sessions.compaction import message_text

#: The first line of every reminder block (MemLock ``__init__.py:57``; 38 chars, U+2014 dash).
REMINDER_MARKER = "[Standing instructions — still active]"
#: Reminder lines are cut to this many chars (MemLock ``_build_reminder_block``) and so is an
#: auto-derived reminder (``_do_pin``).
REMINDER_LINE_CHARS = 120
#: Chars each selected reminder costs against ``max_reminder_chars`` on top of its length
#: (``"  - "`` + newline; MemLock ``_select_casualties``).
REMINDER_LINE_OVERHEAD = 4
#: MemLock's probe stoplist (``_derive_probes``, ``__init__.py:461-476``): 20 words.
PROBE_STOPWORDS = frozenset(
    {
        "that", "this", "from", "with", "your", "will", "when", "they", "have", "been",
        "were", "their", "about", "would", "which", "there", "should", "could", "these", "those",
    }
)
#: Probe tokens: ASCII letters only, at least 4 of them, on word boundaries.
_PROBE_TOKEN_RE = re.compile(r"\b[a-zA-Z]{4,}\b")
#: At most this many probes are derived from a text.
MAX_DERIVED_PROBES = 5
#: The first sentence ends at ``.``, ``!`` or ``?`` followed by whitespace (``_do_pin``).
_SENTENCE_END_RE = re.compile(r"[.!?]\s+")
_WS_RE = re.compile(r"\s+")

#: Semantic windows overlap by this many chars (MemLock ``_WINDOW_OVERLAP_CHARS``).
WINDOW_OVERLAP_CHARS = 200
#: Window size is clamped to at least overlap + 100 = 300 chars (``_build_windows``).
MIN_WINDOW_CHARS = WINDOW_OVERLAP_CHARS + 100
#: Only the most recent windows are kept (``_MAX_WINDOWS``).
MAX_WINDOWS = 256
#: MemLock keeps the last 20 drift-log events (``store.py:log_drift``).
DRIFT_LOG_CAP = 20


# ── anchor field access (Anchor objects or MemLock dicts) ──────────────────


def _get(anchor: Any, key: str, default: Any = None) -> Any:
    if isinstance(anchor, Mapping):
        return anchor.get(key, default)
    return getattr(anchor, key, default)


def anchor_id_of(anchor: Any) -> str:
    """The anchor's id as a string (``""`` when it has none)."""
    value = _get(anchor, "id")
    if value is None:
        value = _get(anchor, "anchor_id", "")
    return str(value)


def probes_of(anchor: Any) -> list[str]:
    """The anchor's probes as a list of strings.

    A probes value that is a single string (a hand-edited file) counts as one probe; MemLock
    would iterate it character by character. ``None`` or a missing key gives ``[]``.
    """
    probes = _get(anchor, "probes", None)
    if probes is None:
        return []
    if isinstance(probes, str):
        return [probes] if probes else []
    try:
        return [str(p) for p in probes]
    except TypeError:
        return []


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


def priority_of(anchor: Any) -> int:
    """The anchor's priority as an int (50 when missing or not a number)."""
    return as_int(_get(anchor, "priority", 50), 50)


def reminder_of(anchor: Any) -> str:
    """The reminder MemLock would use: the ``reminder`` value if present, else ``text[:120]``.

    Matches MemLock ``_select_casualties``/``_build_reminder_block``
    (``anchor.get("reminder", anchor.get("text", "")[:120])``): an empty reminder stays empty.
    """
    value = _get(anchor, "reminder", None)
    if value is None:
        return str(_get(anchor, "text", "") or "")[:REMINDER_LINE_CHARS]
    return str(value)


def sort_key(anchor: Any) -> tuple[int, str]:
    """MemLock's anchor order: priority descending, then id ascending (``sorted_anchors``)."""
    return (-priority_of(anchor), anchor_id_of(anchor))


def sorted_anchors(anchors: Iterable[Any]) -> list[Any]:
    """``anchors`` in MemLock's order (:func:`sort_key`)."""
    return sorted(anchors, key=sort_key)


# ── text helpers ───────────────────────────────────────────────────────────


def flatten_ws(text: Any) -> str:
    """Replace every whitespace run with one space and strip (MemLock ``_do_pin``).

    Prevents a pinned text or reminder from spoofing extra ``  - `` lines or a second marker
    line inside the reminder block. ``None`` gives ``""``.
    """
    if text is None:
        return ""
    return _WS_RE.sub(" ", str(text)).strip()


def derive_probes(text: str) -> list[str]:
    """Auto-derive up to 5 probes from ``text`` (MemLock ``_derive_probes``, ``__init__.py:461-476``).

    Lowercase, tokens of >= 4 ASCII letters on word boundaries, minus the 20-word
    :data:`PROBE_STOPWORDS`, de-duplicated in order, first 5. Text made only of short or
    non-ASCII words gives ``[]`` (such an anchor is always alive in the keyword audit).

    Example: ``"Always reply in bullet points, never paragraphs."`` ->
    ``["always", "reply", "bullet", "points", "never"]``.
    """
    out: list[str] = []
    seen: set[str] = set()
    for token in _PROBE_TOKEN_RE.findall(str(text or "").lower()):
        if token in PROBE_STOPWORDS or token in seen:
            continue
        seen.add(token)
        out.append(token)
    return out[:MAX_DERIVED_PROBES]


def auto_reminder(text: str) -> str:
    """The automatic reminder of a pin: first sentence of ``text``, at most 120 chars.

    MemLock ``_do_pin``: split on ``[.!?]`` followed by whitespace, take the first part, cut
    to 120 chars. The text is whitespace-flattened first (as ``_do_pin`` does before).
    """
    flat = flatten_ws(text)
    return _SENTENCE_END_RE.split(flat, maxsplit=1)[0][:REMINDER_LINE_CHARS]


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


_ENCODERS: dict[str, Any] = {}
_ENCODER_FAILURES: dict[str, str] = {}


def load_encoder(model_name: str) -> Any:
    """Load (once per process) a ``sentence_transformers.SentenceTransformer``.

    ``sentence-transformers`` is an optional extra imported lazily here.

    A failed load is remembered for the process (later calls raise ``RuntimeError`` at once).

    Raises:
        ImportError: sentence-transformers is not installed.
        Exception: whatever the model load raises (e.g. no network for a download).
    """
    if model_name in _ENCODERS:
        return _ENCODERS[model_name]
    if model_name in _ENCODER_FAILURES:  # do not retry a slow failing load every turn
        raise RuntimeError(_ENCODER_FAILURES[model_name])
    try:
        from sentence_transformers import SentenceTransformer  # optional extra

        _ENCODERS[model_name] = SentenceTransformer(model_name)
    except Exception as exc:
        _ENCODER_FAILURES[model_name] = f"semantic model {model_name!r} unavailable: {exc}"
        raise
    return _ENCODERS[model_name]


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
            ``None`` loads ``model_name`` through :func:`load_encoder`.

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
        model = encoder if encoder is not None else load_encoder(model_name)
    except Exception:
        return fallback()
    haystack = active_text(messages)
    try:
        windows = build_windows(messages, window_chars)
        if not windows:
            sims = [None] * len(anchors)
        else:
            window_vecs = _encode(model, windows)
            anchor_vecs = _encode(model, [str(_get(a, "text", "") or "") for a in anchors])
            sims = [float(s) for s in max_cosine(anchor_vecs, window_vecs)]
    except Exception:
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


def run_audit(anchors: Iterable[Any], active_messages: Iterable[Any], config: Any = None, *, encoder: Any = None) -> dict[str, AnchorVerdict]:
    """Run the audit ``config`` selects (``detection: keyword|semantic``) with its thresholds.

    Args:
        config: a :class:`core.config.MemlockConfig` (or ``Config``, whose ``.memlock`` is
            used); ``None`` means MemLock defaults.
    """
    cfg = _memlock_cfg(config)
    if str(getattr(cfg, "detection", "keyword")).strip().lower() == "semantic":
        return semantic_audit(
            anchors,
            active_messages,
            sim_threshold=float(cfg.sim_threshold),
            window_chars=int(cfg.semantic_window_chars),
            model_name=str(cfg.embedding_model),
            fallback_threshold=float(cfg.drift_threshold),
            encoder=encoder,
        )
    return keyword_audit(anchors, active_messages, float(cfg.drift_threshold))


def _memlock_cfg(config: Any) -> Any:
    if config is None:
        from ..config import MemlockConfig

        return MemlockConfig()
    return getattr(config, "memlock", config)


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
            alive += not bool(_get(a, "drifted", False))
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


# ── rehydration: selection and reminder block ──────────────────────────────


def rehydration_candidates(
    anchors: Iterable[Any], drifted_ids: Sequence[str], *, inject: str = "on-drift", safety_net: bool = False
) -> list[str]:
    """The anchor ids MemLock would try to re-inject (``__init__.py:391-399``).

    ``inject: always`` -> every anchor; else the drifted ids; else, on a safety-net turn,
    every anchor; else none.
    """
    all_ids = [anchor_id_of(a) for a in sorted_anchors(anchors)]
    if inject == "always":
        return all_ids
    if drifted_ids:
        return list(drifted_ids)
    if safety_net:
        return all_ids
    return []


def select_casualties(
    anchors: Iterable[Any], candidate_ids: Iterable[str], max_slots: int = 8, max_reminder_chars: int = 600
) -> tuple[list[Any], list[str]]:
    """Pack candidates into the reminder budget (MemLock ``_select_casualties``, ``__init__.py:148-174``).

    Candidates are the anchors whose id is in ``candidate_ids``, ordered priority descending
    then id. Selection stops once ``max_slots`` are chosen; an anchor costing
    ``len(reminder) + 4`` chars that would push the total past ``max_reminder_chars`` is
    skipped and a later, shorter one may still fit. The budget uses the untruncated reminder.

    Returns:
        ``(selected anchors in order, remaining candidate ids)``; remaining holds the skipped
        and the overflow candidates, in order.
    """
    wanted = set(candidate_ids)
    casualties = [a for a in sorted_anchors(anchors) if anchor_id_of(a) in wanted]
    selected: list[Any] = []
    chosen: set[int] = set()
    total = 0
    for i, anchor in enumerate(casualties):
        if len(selected) >= max_slots:
            break
        cost = len(reminder_of(anchor)) + REMINDER_LINE_OVERHEAD
        if total + cost > max_reminder_chars:
            continue
        selected.append(anchor)
        chosen.add(i)
        total += cost
    remaining = [anchor_id_of(a) for i, a in enumerate(casualties) if i not in chosen]
    return selected, remaining


def overflow_line(remaining_count: int) -> str:
    """The last line of a block when candidates were left out (MemLock ``_build_reminder_block``)."""
    return (
        f"  - ({remaining_count} additional instruction(s) not shown — "
        f"the user can run /guard to see the full list)"
    )


def reminder_block(selected: Sequence[Any], remaining_count: int = 0, marker: str = REMINDER_MARKER) -> str:
    """The reminder block MemLock injects (``_build_reminder_block``, ``__init__.py:177-193``).

    Line 1 is :data:`REMINDER_MARKER`; then ``"  - " + reminder[:120]`` per selected anchor;
    then, if ``remaining_count > 0``, :func:`overflow_line`; joined with ``\\n``.

    Returns:
        the block, or ``""`` when nothing is selected (MemLock injects nothing: ``None``).
    """
    if not selected:
        return ""
    lines = [marker]
    for anchor in selected:
        value = _get(anchor, "reminder", None)
        text = str(_get(anchor, "text", "") or "") if value is None else str(value)
        lines.append(f"  - {text[:REMINDER_LINE_CHARS]}")
    if remaining_count:
        lines.append(overflow_line(remaining_count))
    return "\n".join(lines)


def plan_reminder(
    anchors: Iterable[Any],
    drifted_ids: Sequence[str],
    config: Any = None,
    *,
    safety_net: bool = False,
) -> tuple[str, list[str], list[str]]:
    """Candidates -> selection -> block, with ``config``'s inject mode and budgets.

    Returns:
        ``(block, selected_ids, remaining_ids)``; ``block`` is ``""`` when nothing is injected.
    """
    cfg = _memlock_cfg(config)
    anchors = list(anchors)
    candidates = rehydration_candidates(anchors, drifted_ids, inject=str(cfg.inject), safety_net=safety_net)
    if not candidates:
        return "", [], []
    selected, remaining = select_casualties(anchors, candidates, int(cfg.max_slots), int(cfg.max_reminder_chars))
    return reminder_block(selected, len(remaining)), [anchor_id_of(a) for a in selected], remaining


_OVERFLOW_RE = re.compile(r"^  - \(\d+ additional instruction\(s\) not shown")


def reminder_lines(block: str) -> list[str]:
    """The reminder texts of a block: lines after the marker without ``"  - "``, minus the overflow line."""
    out = []
    for line in block.split("\n")[1:]:
        if line.startswith("  - ") and not _OVERFLOW_RE.match(line):
            out.append(line[4:])
    return out


# ══ the dashboard side: audits over state.db, lifecycle, history, status ═══════
#
# These read state.db through :class:`core.statedb.StateDB` and the anchor files through
# :class:`core.anchors.AnchorStore` (imported lazily: anchors imports this module).

#: Lifecycle states of an anchor (MemLock's README diagram; MemLock stores only ``drifted``).
STATES = ("pinned", "alive", "drifted", "rehydrated", "archived")


@dataclass(frozen=True)
class AnchorAudit:
    """One anchor in a :class:`SessionAudit`.

    Attributes:
        anchor: the :class:`core.anchors.Anchor`.
        state: ``pinned`` (no compaction yet), ``alive``, ``drifted``, ``rehydrated``.
        verdict: the audit of the current active region.
        at_last_compaction: the audit of the region right after the last compaction (or None).
        rehydrated_message_id: the user row whose ``api_content`` carried its reminder after
            the last compaction (or None).
        scope: ``global`` when ``persist/`` holds it, else ``session``.
    """

    anchor: Any
    state: str
    verdict: AnchorVerdict
    at_last_compaction: AnchorVerdict | None
    rehydrated_message_id: int | None
    scope: str

    def to_dict(self) -> dict[str, Any]:
        a = self.anchor
        return {
            "id": a.id, "state": self.state, "hits": self.verdict.hits, "probes": list(self.verdict.probes),
            "missing": list(self.verdict.missing), "similarity": self.verdict.similarity,
            "text": a.text, "reminder": a.reminder, "priority": a.priority, "pinned": a.pinned,
            "scope": self.scope, "rehydrated_message_id": self.rehydrated_message_id,
        }


@dataclass(frozen=True)
class SessionAudit:
    """The audit of one session: what MemLock's algorithm says about it now, and its history.

    Attributes:
        session_id: the session.
        score: integrity score (percent 0-100) of the current active region, None without anchors.
        anchors: per-anchor results, MemLock order (priority desc, id).
        reminder_block: the block MemLock would inject at its next audit with the current
            verdicts (``inject`` mode, ``max_slots``, ``max_reminder_chars``); ``""`` for none.
        history: ``[{time, score, casualties, source, ...}]`` oldest first: one point per
            compaction event in state.db merged with MemLock's ``drift_log`` (see
            :func:`integrity_history`).
        compactions: number of compaction events of the session in state.db.
        method: ``keyword``, ``semantic`` or ``keyword-fallback``.
    """

    session_id: str
    score: int | None
    anchors: tuple[AnchorAudit, ...]
    reminder_block: str
    history: tuple[dict[str, Any], ...]
    compactions: int
    method: str

    def to_dict(self) -> dict[str, Any]:
        """The ``audit --json`` shape: ``{session_id, score, anchors:[{id, state, hits, probes, ...}], reminder_block, ...}``."""
        return {
            "session_id": self.session_id,
            "score": self.score,
            "anchors": [a.to_dict() for a in self.anchors],
            "reminder_block": self.reminder_block,
            "history": [dict(h) for h in self.history],
            "compactions": self.compactions,
            "method": self.method,
        }


def _system_prompt(db: Any, session_id: str) -> str:
    """The session's system prompt through ``StateDB.system_prompt`` (the column, else the
    ``system_prompts`` row by ``system_prompt_hash`` on schema >= 23); '' when unavailable."""
    try:
        return str(db.system_prompt(session_id) or "")
    except Exception:
        return ""


def audited_region(messages: Sequence[Any], system_prompt: str = "") -> list[Any]:
    """The active region MemLock audits for a conversation loaded from state.db.

    MemLock sees ``[system prompt] + rows``; ``split_context`` keeps index 0 (the system
    prompt, which carries MEMORY.md/USER.md) and everything after the first summary message;
    rows before the summary (the protected head copies) and the summary itself do not count.
    Unlike MemLock, the merge-into-tail ``[PRIOR CONTEXT`` shape is recognised as a summary
    (its prior-context part, the last live turn, stays active).
    """
    from ..sessions.compaction import find_summary, split_context

    from ..sessions.compaction import MERGED_PRIOR_CONTEXT_HEADER, MERGED_SUMMARY_DELIMITER

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


def _session_events(db: Any, session_id: str) -> list[Any]:
    return [e for e in db.compactions(session_id) if e.session_id == session_id or e.child_session_id == session_id]


_LEGACY_PIN_ID = re.compile(r"^pin_(\d{9,11})_\d+$")


def anchor_pinned_at(anchor: Any) -> float | None:
    """When an anchor was pinned (epoch seconds), if known: the ``pinned_at`` key memdeck
    writes on its pins, else the time encoded in a MemLock 0.2 id ``pin_<epoch>_<n>``;
    ``None`` for config anchors and uuid-style ids without the key."""
    extra = getattr(anchor, "extra", None) or {}
    value = extra.get("pinned_at")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    m = _LEGACY_PIN_ID.match(str(getattr(anchor, "id", "")))
    return float(m.group(1)) if m else None


def _rehydrated_by(rows: Sequence[Any], after_id: int | None, reminder: str) -> int | None:
    line = f"  - {reminder[:REMINDER_LINE_CHARS]}"
    for m in rows:
        if after_id is not None and m.id <= after_id:
            continue
        if m.role == "user" and m.api_content and REMINDER_MARKER in m.api_content and line in m.api_content:
            return m.id
    return None


def integrity_history(db: Any, session: Any, anchors: Sequence[Any], config: Any = None, *,
                      system_prompt: str = "", encoder: Any = None, events: Sequence[Any] | None = None,
                      audited: Mapping[int, Mapping[str, AnchorVerdict]] | None = None,
                      home: Any = None) -> list[dict[str, Any]]:
    """Integrity score after every compaction event of the session in state.db, merged with
    MemLock's own ``drift_log``.

    Each state.db event is audited on :meth:`StateDB.region_after` (what MemLock audited on
    the next turn) with the *current* anchor set. A ``drift_log`` entry whose time falls
    between an event and the next one is taken as MemLock's audit of that event: the point
    keeps MemLock's score and casualties (``source: "memlock+state.db"``) plus ours
    (``computed_score``). Other drift-log entries (safety-net audits, or events state.db no
    longer shows) stay as ``source: "memlock"``; events MemLock never logged are
    ``source: "state.db"``. ``audited`` maps an event's ``index`` to verdicts the caller
    already computed on that event's region (so it is not audited twice).

    Returns:
        ``[{time (epoch s), score, casualties, source, [event_index, mode, computed_score]}]``
        oldest first.
    """
    events = list(events if events is not None else _session_events(db, session.session_id))
    points: list[dict[str, Any]] = []
    cached = _cached_verdicts(db, events, anchors, config, system_prompt, home)
    fresh: list[tuple[Any, str, dict[str, AnchorVerdict]]] = []
    for ev in events:
        verdicts = (audited or {}).get(ev.index)
        if verdicts is None:
            verdicts = cached.get(ev.index)
        if verdicts is None:
            verdicts = run_audit(anchors, audited_region(db.region_after(ev), system_prompt), config, encoder=encoder)
            fresh.append((ev, _verdict_key(ev, anchors, config, system_prompt), verdicts))
        points.append({"time": float(ev.time), "score": integrity_score(verdicts.values()),
                       "casualties": [k for k, v in verdicts.items() if not v.alive],
                       "source": "state.db", "event_index": ev.index, "mode": ev.mode})
    log = sorted((e for e in map(drift_event, getattr(session, "drift_log", [])) if e is not None),
                 key=lambda e: e["time"])
    used: set[int] = set()
    for i, p in enumerate(points):
        start = p["time"]
        end = points[i + 1]["time"] if i + 1 < len(points) else math.inf
        for j, e in enumerate(log):
            if j not in used and start <= e["time"] < end:
                used.add(j)
                p.update({"computed_score": p["score"], "score": e["score"],
                          "casualties": e["casualties"], "source": "memlock+state.db",
                          "memlock_time": e["time"]})
                break
    for j, e in enumerate(log):
        if j not in used:
            points.append({"time": e["time"], "score": e["score"], "casualties": e["casualties"], "source": "memlock"})
    points.sort(key=lambda p: p["time"])
    _remember_verdicts(fresh, anchors, config, home)
    return points


# ── per-compaction verdict cache ───────────────────────────────────────────
# A compaction's verdicts depend only on its region (session, summary, region rows), the
# system prompt MemLock saw with it, the anchor set and the detection config: computed once,
# kept in this process (bounded) and, when the home has a memdeck.db, in its audit_verdicts
# table (core.deck.db), so a restart does not re-audit a thousand compactions.

_MEMO: dict[str, dict[str, AnchorVerdict]] = {}
_MEMO_MAX = 20_000


def _h(obj: Any) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8")).hexdigest()


def anchors_hash(anchors: Sequence[Any]) -> str:
    """sha256 of what an audit reads of each anchor (id, text, probes, reminder)."""
    return _h([[anchor_id_of(a), str(_get(a, "text", "")), probes_of(a)] for a in anchors])


def config_hash(config: Any) -> str:
    """sha256 of the detection config (MemLock section: method, thresholds, model)."""
    cfg = _memlock_cfg(config)
    fields = getattr(cfg, "__dataclass_fields__", None)
    return _h({k: getattr(cfg, k) for k in sorted(fields)} if fields else repr(cfg))


def _verdict_key(ev: Any, anchors: Sequence[Any], config: Any, system_prompt: str) -> str:
    return _h([ev.session_id, ev.mode, ev.summary_hash, ev.summary_message_id, ev.region_first_id, ev.region_last_id,
               ev.child_session_id, _h(system_prompt), anchors_hash(anchors), config_hash(config)])


def _home_of(db: Any) -> Any:
    path = getattr(db, "path", None)
    return path.parent if path is not None else None


def _cached_verdicts(db: Any, events: Sequence[Any], anchors: Sequence[Any], config: Any, system_prompt: str,
                     home: Any) -> dict[int, dict[str, AnchorVerdict]]:
    out: dict[int, dict[str, AnchorVerdict]] = {}
    if not events:
        return out
    ah, ch, sh = anchors_hash(anchors), config_hash(config), _h(system_prompt)
    keys = {ev.index: _h([ev.session_id, ev.mode, ev.summary_hash, ev.summary_message_id, ev.region_first_id,
                          ev.region_last_id, ev.child_session_id, sh, ah, ch]) for ev in events}
    missing = []
    for idx, k in keys.items():
        v = _MEMO.get(k)
        if v is not None:
            out[idx] = v
        else:
            missing.append(k)
    home = home if home is not None else _home_of(db)
    if missing and home is not None:
        import json

        from ..deck.db import load_audit_verdicts

        stored = load_audit_verdicts(home, missing)
        by_key = {k: i for i, k in keys.items()}
        for k, text in stored.items():
            try:
                verdicts = {str(d["id"]): AnchorVerdict(str(d["id"]), bool(d["alive"]), int(d["hits"]),
                                                        tuple(d["probes"]), tuple(d["missing"]), d.get("similarity"),
                                                        str(d.get("method", "keyword")))
                            for d in json.loads(text)}
            except (ValueError, KeyError, TypeError):
                continue
            if set(verdicts) != {anchor_id_of(a) for a in anchors}:
                continue
            _memo_put(k, verdicts)
            out[by_key[k]] = verdicts
    return out


def _memo_put(key: str, verdicts: dict[str, AnchorVerdict]) -> None:
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = verdicts


def _remember_verdicts(fresh: Sequence[tuple[Any, str, dict[str, AnchorVerdict]]], anchors: Sequence[Any],
                       config: Any, home: Any) -> None:
    """Keep newly computed keyword verdicts in memory and append them to memdeck.db (if it exists).
    Semantic verdicts depend on the encoder available, so only keyword ones are kept."""
    import json
    import time as _time

    rows = []
    ah, ch = anchors_hash(anchors), config_hash(config)
    for ev, key, verdicts in fresh:
        if any(v.method != "keyword" for v in verdicts.values()):
            continue
        _memo_put(key, verdicts)
        rows.append((key, str(ev.session_id), ev.summary_hash, ah, ch,
                     json.dumps([v.to_dict() for v in verdicts.values()]), _time.time()))
    if rows and home is not None:
        from ..deck.db import store_audit_verdicts

        store_audit_verdicts(home, rows)


def drift_event(event: Any) -> dict[str, Any] | None:
    """A MemLock drift-log event (``{time, score, casualties[, reverse]}``, reference §1.2) as
    ``{time, score, casualties}`` with safe types, for readers of hand-editable files.

    ``time``: finite epoch seconds (float), else the event is dropped (None is returned);
    ``score``: int percent 0-100, else None; ``casualties``: the str/int items of a list, as
    strings (anything else gives ``[]``). NaN and infinities never pass, so JSON output built
    from the result stays strict.
    """
    if not isinstance(event, Mapping):
        return None
    t = event.get("time")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
        return None
    score = event.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) or not 0 <= score <= 100:
        score = None
    cas = event.get("casualties")
    casualties = [str(c) for c in cas if isinstance(c, (str, int)) and not isinstance(c, bool)] if isinstance(cas, list) else []
    return {"time": float(t), "score": None if score is None else int(score), "casualties": casualties}


def audit_session(db: Any, store: Any, session_id: str, config: Any = None, *, encoder: Any = None,
                  with_history: bool = True) -> SessionAudit:
    """Audit one session from state.db and its MemLock file.

    Anchors: the session file's (or, when there is no file, what MemLock would seed: static
    config anchors + global pins). The current verdicts audit the region MemLock would audit
    now (:func:`audited_region` of the session's active rows). Lifecycle per anchor:

    * ``pinned``: no compaction event yet (``drifted`` when MemLock's file says so, e.g. after
      a safety-net audit), or pinned after the last compaction (:func:`anchor_pinned_at`) and
      not yet seen in the current region (``alive`` once it is);
    * ``alive``: alive in the region right after the last compaction, or alive again now;
    * ``drifted``: not alive after the last compaction, not re-injected and not re-stated since;
    * ``rehydrated``: drifted, and a user row after the last summary row (the compacted
      tail included: Hermes re-inserts the triggering turn there) carries its reminder line
      under the marker in ``api_content``, but the anchor is not alive in the current region yet.

    Args:
        db: a :class:`core.statedb.StateDB`; store: a :class:`core.anchors.AnchorStore`.
        config: ``Config``/``MemlockConfig`` (None: the store's config).

    Raises:
        core.errors.UnreadableFile: the session's MemLock file is not valid JSON.
    """
    cfg = _memlock_cfg(config if config is not None else store.config)
    session = store.load_session(session_id)
    report = store.load_pins_report()
    global_ids = {str(p["id"]) for p in report.pins if p.get("scope") == "global"}
    anchors = session.sorted_anchors() if session.anchors or session.path is not None else sorted_anchors(store.seeded_anchors(cfg, report.pins))
    system_prompt = _system_prompt(db, session_id)
    rows = db.active_region(session_id)
    current = run_audit(anchors, audited_region(rows, system_prompt), cfg, encoder=encoder)
    events = _session_events(db, session_id)
    last = events[-1] if events else None
    at_last = run_audit(anchors, audited_region(db.region_after(last), system_prompt), cfg, encoder=encoder) if last else {}
    # Rows after the summary row count: with Hermes' preflight compaction the turn that
    # triggered it (whose api_content carries the reminder) is re-inserted in the batch's tail.
    after_id = None
    if last is not None:
        after_id = last.summary_message_id if last.summary_message_id is not None else last.region_last_id
    results = []
    for a in anchors:
        v = current[a.id]
        ev = at_last.get(a.id)
        rehyd = None
        pinned_at = anchor_pinned_at(a)
        if last is not None and pinned_at is not None and pinned_at > float(last.time):
            # pinned after the last compaction: no compaction has tested it yet
            state = "alive" if v.alive else "pinned"
        elif last is None:
            state = "drifted" if a.drifted else "pinned"
        elif ev is not None and ev.alive:
            state = "alive"
        else:
            rehyd = _rehydrated_by(rows, after_id, reminder_of(a))
            if rehyd is not None:
                state = "alive" if v.alive else "rehydrated"
            else:
                state = "alive" if v.alive else "drifted"
        results.append(AnchorAudit(a, state, v, ev, rehyd, "global" if a.id in global_ids else "session"))
    drifted_now = [a.id for a in anchors if not current[a.id].alive]
    marked = [{"id": a.id, "text": a.text, "reminder": a.reminder, "priority": a.priority} for a in anchors]
    block, _sel, _rem = plan_reminder(marked, drifted_now, cfg)
    history = integrity_history(db, session, anchors, cfg, system_prompt=system_prompt, encoder=encoder,
                                events=events, audited={last.index: at_last} if last is not None else None,
                                home=getattr(store, "home", None)) if with_history else []
    methods = {v.method for v in current.values()} or {"keyword"}
    # MemLock scores at its first audit (a compaction or the safety net); before any, it has no
    # score (``integrity_score: null``), and neither does memdeck: the anchors wait for one.
    audited = last is not None or session.integrity_score is not None
    return SessionAudit(session_id=session_id, score=integrity_score(current.values()) if audited else None,
                        anchors=tuple(results),
                        reminder_block=block, history=tuple(history), compactions=len(events),
                        method=sorted(methods)[0])
