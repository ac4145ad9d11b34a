"""What a running session sees: its frozen memory against the files, its prompt by section, the
next turn's additions, and how close it is to its next compaction. One report per session.

The composition of :mod:`.frozen`, :mod:`.sections`, :mod:`.next_turn`, :mod:`.tokens` and
:mod:`.budget` over one state.db reader; the shape of ``memdeck context --json`` and of the
dashboard's Context panel. Prompts are read once per prompt (:class:`.prompts.PromptCache`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import Config
from ..deck import usage as deck_usage
from ..fsio import read_regular_bytes
from ..hermes_version import HermesVersion
from ..memory.prompt_block import read_entries_as_hermes
from ..memory.threats import hermes_verdict, scan_ids
from ..provider_settings import configured_provider
from ..sessions.compaction import match_summary
from ..sessions.records import PromptStamp
from .budget import Budget, budget
from .cost import CostReport, build_cost
from .frozen import FrozenMemory, compare
from .injected import InjectedView, injected_view
from .new_session import new_session_hint
from .next_turn import NOT_RECORDED, NextTurn, next_turn
from .prompts import ParsedPrompt, PromptCache
from .sections import SECTION_NAMES, SECTION_TITLES, PromptLayout
from .tokens import Calibration, ExactCounter, calibration, hermes_estimate, message_size
from .usage_anchor import anchored_tokens

Verdict = Callable[[str], Sequence[str]]


def verdict_for(version: HermesVersion) -> Verdict:
    """text -> the pattern ids the Hermes of ``version`` blocks it with (its threat rules,
    ``core/memory/threats.py`` ``hermes_verdict``; memdeck's own scan when the version is unknown)."""
    rules = version.threat_rules
    if rules is None:
        return lambda text: tuple(sorted(set(scan_ids(text))))
    return lambda text: hermes_verdict(text, rules)


def disk_entries(home: Any) -> dict[str, list[str]]:
    """target -> the file's entries as Hermes loads them (``read_entries_as_hermes``). Never raises."""
    return {t: read_entries_as_hermes(home.memory_file(t)) for t in ("memory", "user")}


def soul_text(home: Any) -> str | None:
    """The home's SOUL.md (None when absent or unreadable)."""
    try:
        return read_regular_bytes(home.path / "SOUL.md").decode("utf-8", "replace")
    except OSError:
        return None


@dataclass(frozen=True)
class SessionDiff:
    """One session's frozen memory against the files.

    Attributes:
        stamp: the session (:class:`~memdeck.core.sessions.records.PromptStamp`).
        frozen: the comparison (:class:`.frozen.FrozenMemory`).
        prompt_sha256: the stored prompt's digest (None when none is stored).
    """

    stamp: PromptStamp
    frozen: FrozenMemory
    prompt_sha256: str | None = None

    @property
    def session_id(self) -> str:
        return self.stamp.session_id

    @property
    def differences(self) -> int:
        return self.frozen.differences

    def to_dict(self, *, changes: bool = True) -> dict[str, Any]:
        s = self.stamp
        d: dict[str, Any] = {
            "session_id": s.session_id, "source": s.source, "title": s.title, "started_at": s.started_at,
            "frozen_at": s.frozen_at if self.frozen.in_prompt else None, "in_prompt": self.frozen.in_prompt,
            "differences": self.differences, "reason": self.frozen.reason, "notes": list(self.frozen.notes),
            "new_session": new_session_hint(s.source),
        }
        if changes:
            d["changes"] = [c.to_dict() for c in self.frozen.changes]
        return d


def session_diff(stamp: PromptStamp, parsed: ParsedPrompt | None, disk: Mapping[str, Sequence[str]],
                 config: Config, verdict: Verdict) -> SessionDiff:
    """Compare one session's parsed prompt (None: none stored) with the files' entries ``disk``."""
    enabled = {"memory": config.memory_enabled, "user": config.user_profile_enabled}
    frozen = compare(parsed.text if parsed else None, dict(disk), enabled, verdict,
                     blocks=parsed.blocks if parsed else None)
    return SessionDiff(stamp, frozen, parsed.sha256 if parsed else None)


def open_session_diffs(db: Any, config: Config, cache: PromptCache, disk: Mapping[str, Sequence[str]],
                       verdict: Verdict, *, stamps: Sequence[PromptStamp] | None = None) -> list[SessionDiff]:
    """:class:`SessionDiff` of every open session of ``db`` (newest start first; at most 500)."""
    rows = list(stamps) if stamps is not None else db.prompt_stamps()
    return [session_diff(s, cache.get(s.prompt_key, s.session_id, db), disk, config, verdict) for s in rows]


def stale_session_count(db: Any, home: Any, config: Config, version: HermesVersion, *,
                        cache: PromptCache | None = None) -> int:
    """How many open sessions of ``db`` carry a frozen MEMORY/USER block that differs from the
    files now (:func:`open_session_diffs`: ``in_prompt`` and at least one difference) -- the figure
    ``sessions --stale`` lists per session, the fleet view counts and ``status --json`` carries as
    ``stale_sessions``. ``version``: the home's Hermes version (its threat rules decide which
    entries Hermes froze as ``[BLOCKED: ...]``; unknown: memdeck's own scan); ``cache``: a long-lived
    reader's :class:`PromptCache` (each prompt is then parsed once). Raises what the reader raises."""
    diffs = open_session_diffs(db, config, cache or PromptCache(), disk_entries(home), verdict_for(version))
    return sum(1 for d in diffs if d.frozen.in_prompt and d.differences > 0)


@dataclass(frozen=True)
class SectionCount:
    """One section of the prompt: chars, Hermes' estimate, and the exact count when asked."""

    name: str
    title: str
    chars: int
    tokens: int
    exact_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "title": self.title, "chars": self.chars, "tokens": self.tokens}
        if self.exact_tokens is not None:
            d["exact_tokens"] = self.exact_tokens
        return d


@dataclass(frozen=True)
class ContextReport:
    """Everything ``memdeck context`` says about one session (see the module docstring).

    Attributes:
        diff: the session and its frozen memory against the files.
        prompt: the parsed stored prompt (None when none is stored).
        sections: the prompt's sections that hold text, in :data:`.sections.SECTION_NAMES` order.
        unattributed_chars: prompt chars in no section.
        next_turn: what the next turn adds.
        budget: the compaction budget (:class:`.budget.Budget`).
        line: the Hermes line whose rules were applied (:attr:`memdeck.core.hermes_version.HermesVersion.line`).
        estimated_tokens: Hermes' estimate of the next request without tool schemas (prompt +
            messages since the last compaction), tokens.
        calibration: the provider's recorded prompt size against the estimate, or None with
            :attr:`calibration_reason`.
        exact_tokenizer: the tokenizer of ``exact_tokens`` values (None: not asked, or
            unavailable with :attr:`exact_reason`).
        injected: what a memory provider and the plugins appended to each user turn of the
            active region (:class:`.injected.InjectedView`; ``recorded`` False on Hermes 0.17/0.18).
        cost: what the prompt costs (:class:`.cost.CostReport`: turns, totals, tiers, a write's estimate).
    """

    diff: SessionDiff
    prompt: ParsedPrompt | None
    sections: tuple[SectionCount, ...]
    unattributed_chars: int
    next_turn: NextTurn
    budget: Budget
    line: str
    estimated_tokens: int
    calibration: Calibration | None = None
    calibration_reason: str | None = None
    exact_tokenizer: str | None = None
    exact_reason: str | None = None
    exact_next_turn: dict[str, int] = field(default_factory=dict)
    layout: PromptLayout | None = None
    injected: InjectedView = field(default_factory=InjectedView)
    anchored_tokens: int | None = None
    cost: CostReport | None = None

    @property
    def hermes_tokens(self) -> tuple[int, str]:
        """``(tokens, what it is)``: the figure Hermes compares with its threshold, the usage anchor
        first as 0.21.5 / 0.22 do (``agent/turn_request_assembly.py``), else the rough estimate."""
        if self.anchored_tokens is not None:
            return self.anchored_tokens, ("usage anchor: the provider's reported prompt + completion tokens of the "
                                          "last request, plus the rough estimate of the messages since")
        return self.estimated_tokens, "rough estimate (estimate_request_tokens_rough, without tool schemas)"

    def section_text(self, name: str) -> str:
        """The text of section ``name`` of the stored prompt (``""`` when absent)."""
        if self.prompt is None or self.layout is None:
            return ""
        return self.layout.text_of(self.prompt.text, name)

    @property
    def session_id(self) -> str:
        return self.diff.session_id

    @property
    def prompt_chars(self) -> int:
        return len(self.prompt.text) if self.prompt else 0

    def next_compaction(self) -> tuple[dict[str, Any] | None, str | None]:
        """``({estimated_tokens, threshold_tokens, ...}, None)`` or ``(None, reason)``."""
        b = self.budget
        if b.threshold_tokens is None:
            return None, b.reason
        tokens, source = self.hermes_tokens
        pct = round(100 * tokens / b.threshold_tokens, 1) if b.threshold_tokens else None
        return ({"estimated_tokens": self.estimated_tokens, "threshold_tokens": b.threshold_tokens,
                 "hermes_tokens": tokens, "hermes_tokens_source": source, "anchored_tokens": self.anchored_tokens,
                 "percent_of_threshold": pct, "tokens_left": max(0, b.threshold_tokens - tokens),
                 "context_length": b.context_length, "context_length_source": b.context_length_source,
                 "threshold_percent": b.effective_percent, "excludes": [f"tool schemas ({NOT_RECORDED})"],
                 "estimator": f"Hermes {self.line} estimate_request_tokens_rough"}, None)

    def provider_share(self) -> dict[str, Any] | None:
        """The provider's share of the compaction budget: ``{tokens, threshold_tokens, percent}``,
        where ``tokens`` is Hermes' estimate of every provider fence the active region still carries
        (each is replayed with its turn on every later request, :meth:`.injected.InjectedView.provider_tokens`)
        and ``percent`` is that against the tokens Hermes compacts at (:attr:`.budget.Budget.threshold_tokens`,
        0-100, one decimal). None when nothing is recorded or the threshold is unknown."""
        return provider_share(self.injected, self.budget)

    def to_dict(self) -> dict[str, Any]:
        """The ``memdeck context --json`` object (docs/STATUS_JSON.md)."""
        s = self.diff.stamp
        nc, why = self.next_compaction()
        out: dict[str, Any] = {
            "session_id": s.session_id, "source": s.source, "title": s.title, "model": s.model,
            "started_at": s.started_at,
            "frozen_at": s.frozen_at if self.prompt is not None else None,
            "prompt_chars": self.prompt_chars,
            "prompt_sha256": self.prompt.sha256 if self.prompt else None,
            "memory": {"in_prompt": self.diff.frozen.in_prompt, "reason": self.diff.frozen.reason,
                       "differences": self.diff.differences, "notes": list(self.diff.frozen.notes),
                       "changes": [c.to_dict() for c in self.diff.frozen.changes],
                       "new_session": new_session_hint(s.source)},
            "sections": [x.to_dict() for x in self.sections],
            "unattributed_chars": self.unattributed_chars,
            "tool_schemas": NOT_RECORDED,
            "next_turn": self.next_turn.to_list(),
            "injected": self.injected.to_list(),
            "injected_reason": self.injected.reason,
            "injected_turns": [t.to_dict() for t in self.injected.turns],
            "provider_share": self.provider_share(),
            "next_compaction": nc,
            "next_compaction_reason": why,
            "budget": self.budget.to_dict(),
            "tokens": {"estimator": f"Hermes {self.line} estimate_tokens_rough (agent/model_metadata.py)",
                       "exact_tokenizer": self.exact_tokenizer, "exact_reason": self.exact_reason},
            "calibration": self.calibration.to_dict() if self.calibration else None,
            "calibration_reason": self.calibration_reason,
            "cost": self.cost.to_dict() if self.cost is not None else None,
        }
        if self.exact_next_turn:
            out["tokens"]["exact_next_turn"] = dict(self.exact_next_turn)
        return out


def _prompt_estimates(system_prompt: str, conversation: Sequence[Mapping[str, Any]], line: str) -> list[int]:
    """Hermes' estimate of each assistant row's request: the prompt plus every message before it."""
    sys_tokens = hermes_estimate(system_prompt, line)
    out: list[int] = []
    running = 0
    chars4 = line not in ("0.20", "0.22")
    chars = 0
    for m in conversation:
        if m.get("role") == "assistant":
            out.append(sys_tokens + ((chars + 3) // 4 if chars4 else running))
        size, tokens = message_size(m, line)
        if chars4:
            chars += size
        else:
            running += tokens
    return out


def build_report(db: Any, home: Any, config: Config, stamp: PromptStamp, *, cache: PromptCache,
                 disk: Mapping[str, Sequence[str]], version: HermesVersion, reminder_block: str = "",
                 compactions: int | None = None, exact: str | None = None,
                 conversation: Sequence[Mapping[str, Any]] | None = None,
                 diff: SessionDiff | None = None, injected: InjectedView | None = None) -> ContextReport:
    """The report of one session.

    Args:
        db: the home's :class:`memdeck.core.sessions.statedb.StateDB`.
        home: the :class:`memdeck.core.home.HermesHome`; config: its config.
        stamp: the session (:meth:`StateDB.prompt_stamps`).
        cache: parsed prompts.
        disk: target -> the files' entries now (:func:`disk_entries`).
        version: the home's :class:`~memdeck.core.hermes_version.HermesVersion` (``HermesProfile.hermes``).
        reminder_block: the block MemLock would inject now.
        compactions: the session's compaction count when known (calibration needs none).
        exact: a tokenizer of :data:`.tokens.TOKENIZERS` for exact counts (None: estimates only).
        conversation: the session's rows as Hermes loads them (read from ``db`` when None).
        diff: the session's :class:`SessionDiff` when already computed for the same prompt and files.
        injected: the session's :class:`.injected.InjectedView` when already built (read from ``db``
            when None: :func:`session_injected`).

    Raises nothing: a source that cannot be read leaves its part empty and says why.
    """
    line = version.line
    parsed = cache.get(stamp.prompt_key, stamp.session_id, db)
    if diff is None or diff.stamp.prompt_key != stamp.prompt_key:
        diff = session_diff(stamp, parsed, disk, config, verdict_for(version))
    rows = list(conversation) if conversation is not None else db.conversation(stamp.session_id)
    turn = next_turn(rows, reminder_block, line, version.db_persisted)
    sections: list[SectionCount] = []
    unattributed = 0
    lay = None
    if parsed is not None:
        lay = parsed.layout(soul_text(home), configured_provider(config, version) is not None)
        for name in SECTION_NAMES:
            n = lay.chars(name)
            if n:
                sections.append(SectionCount(name, SECTION_TITLES[name], n,
                                             hermes_estimate(lay.text_of(parsed.text, name), line)))
        unattributed = lay.unattributed
    prompt_text = parsed.text if parsed else ""
    estimated = hermes_estimate(prompt_text, line) + (turn.messages.tokens or 0)
    model_config = db.model_config(stamp.session_id) if version.usage_anchor and hasattr(db, "model_config") else None
    anchored = anchored_tokens(model_config, rows, version)
    if compactions is None:  # a summary row among the active rows: the session was compacted
        # the summary row is in the compacted head (protect_first_n) or opens a continuation
        compactions = sum(1 for m in rows[:8] if isinstance(m.get("content"), str) and match_summary(m["content"]) is not None)
    if compactions:
        why: str | None
        cal, why = None, ("the session was compacted: its recorded input tokens count prompts its rows no longer "
                          "hold, so they cannot be compared")
    else:
        cal, why = calibration(stamp.input_tokens, stamp.cache_tokens, stamp.api_calls,
                               _prompt_estimates(prompt_text, rows, line))
    b = budget(config, home.path, stamp.model, version)
    if injected is None:
        injected = session_injected(db, config, stamp.session_id, version)
    cost = session_cost(home, config, stamp, version, prompt_text, lay)
    rep = ContextReport(diff, parsed, tuple(sections), unattributed, turn, b, line, estimated, cal, why,
                        None, "not asked (memdeck context --exact)", {}, lay, injected, anchored, cost)
    if not exact:
        return rep
    counts, reason = exact_counts(rep, exact)
    if counts is None:
        return replace(rep, exact_reason=reason)
    secs = tuple(replace(x, exact_tokens=counts["sections"].get(x.name)) for x in rep.sections)
    return replace(rep, sections=secs, exact_tokenizer=ExactCounter(exact).label(), exact_reason=None,
                   exact_next_turn={k: v for k, v in counts.items() if k != "sections"})


def session_cost(home: Any, config: Config, stamp: PromptStamp, version: HermesVersion, prompt: str,
                 layout: PromptLayout | None) -> CostReport:
    """The session's :class:`.cost.CostReport`: its requests recorded in memdeck.db (read-only) and the
    request recorded before its first, state.db's counters (``stamp``), the prompt's tiers."""
    rows = deck_usage.load_session(home, stamp.session_id)
    before = deck_usage.previous_session_row(home, stamp.session_id) if rows else None
    model = config.raw.get("model") if isinstance(config.raw, Mapping) else None
    provider = model.get("provider") if isinstance(model, Mapping) and isinstance(model.get("provider"), str) else None
    deck = config.raw.get("memdeck") if isinstance(config.raw, Mapping) else None
    mode = deck.get("live_memory") if isinstance(deck, Mapping) else None
    plugin = "memdeck" in config.plugins_enabled
    return build_cost(rows, stamp, version, prompt, layout, before=before, provider=provider,
                      live=plugin and mode in ("notice", "delta"), plugin_enabled=plugin)


def provider_share(injected: InjectedView, b: Budget) -> dict[str, Any] | None:
    """``{tokens, threshold_tokens, percent}``: the provider fences a session's active region still
    carries (Hermes' estimate, :meth:`.injected.InjectedView.provider_tokens`) against the tokens
    Hermes compacts at (:attr:`.budget.Budget.threshold_tokens`), percent 0-100 with one decimal.
    None when nothing is recorded or the threshold is unknown."""
    th = b.threshold_tokens
    if not injected.recorded or not th:
        return None
    tokens = injected.provider_tokens()
    return {"tokens": tokens, "threshold_tokens": th, "percent": round(100 * tokens / th, 1)}


def session_injected(db: Any, config: Config, session_id: str, version: HermesVersion) -> InjectedView:
    """What was appended to each user turn of ``session_id``'s active region (one query,
    :meth:`memdeck.core.sessions.listing.SessionReader.user_turns`), attributed with the
    provider the home's Hermes reads from config.yaml (:func:`memdeck.core.provider_settings.configured_provider`)."""
    return injected_view(db.user_turns(session_id), provider=configured_provider(config, version),
                         plugins=config.plugins_enabled, line=version.line)


def exact_counts(report: ContextReport, tokenizer: str) -> tuple[dict[str, Any] | None, str | None]:
    """Exact token counts of a report's texts with ``tokenizer`` (:class:`.tokens.ExactCounter`):
    ``({"sections": {name: tokens}, "system_prompt": n, "reminder": n, "memory_context": n}, None)``,
    or ``(None, reason)`` when the tokenizer is unavailable. Loads the vocabulary on first use (about
    half a second): call it off the UI thread."""
    counter = ExactCounter(tokenizer)
    if not counter.available:
        return None, counter.unavailable_reason
    out: dict[str, Any] = {"sections": {}}
    if report.prompt is not None:
        for s in report.sections:
            out["sections"][s.name] = counter.count(report.section_text(s.name)) or 0
        out["system_prompt"] = counter.count(report.prompt.text) or 0
    for part in (report.next_turn.reminder, report.next_turn.memory_context):
        if part.text:
            out[part.name] = counter.count(part.text) or 0
    return out, None


__all__ = ["ContextReport", "exact_counts", "SectionCount", "SessionDiff", "build_report", "disk_entries", "open_session_diffs",
           "provider_share", "session_diff", "session_injected", "soul_text", "verdict_for"]
