"""What the prompt costs (issue 37): each turn's tokens as the provider reported them, the turn that
broke the cache and why, and what a memory write will cost before it is made.

Sources, all read-only here:

* memdeck.db ``api_usage`` (:mod:`memdeck.core.deck.usage`): one row per API request, recorded by the
  plugin's ``post_api_request`` hook with the buckets Hermes normalised (uncached input, output, cache
  read, cache write). Grouped into turns by Hermes' ``turn_id`` (a request with ``api_call_count`` 1
  opens a turn when a Hermes passes no id).
* state.db ``sessions`` counters (``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
  ``cache_write_tokens``, ``api_call_count``), Hermes' own totals of the session.
* the stored prompt's sections (:mod:`.sections`) and their tiers (:mod:`.tiers`).

A *cache break* is a request that read from the cache less than 90 % of the previous request's input
(what the provider could have kept; the session's first request is compared with the request
recorded before it, any session's), and a session's first request that wrote to the cache. Its
reason: ``new session`` (the session's first request), ``compaction`` (fewer messages than the
request before: Hermes compacted the history and rebuilt the prompt), ``rebuilt prompt`` (the system
message's hash changed, seen by the plugin's ``pre_api_request``), ``tool list change`` (the tool
count changed), ``cache expired`` (more than the provider's TTL since the previous request: 5 minutes
by default, Hermes 0.20+ may ask 1 hour), else ``unknown``.

The cost of a memory write (:func:`write_estimate`): MEMORY and USER are in the ``volatile`` tier of
every known Hermes and frozen into a session's prompt, so a write changes nothing the provider has
cached until the prompt is built again: at the next session, or the next compaction of a running one
(``invalidate_system_prompt`` reloads memory); with live memory on, the running session gets the
change next turn in its user turn, which leaves the cache alone. When the prompt is built again the
provider writes again, once:

* a provider with explicit breakpoints (Claude: Anthropic, OpenRouter, the Nous portal), Hermes
  0.17-0.19: the whole system prompt (one breakpoint at its end); 0.20+: the context and volatile
  tiers (the stable tier keeps its own breakpoint);
* an implicit prefix cache (OpenAI, DeepSeek, most OpenAI-compatible servers): everything from the
  first changed byte, the MEMORY (or USER) block on, to the end of the prompt.

Several writes before the prompt is built again cost the same as one: the rewrite happens once.
Token figures of a write are :func:`provider_tokens`; the sections' are Hermes' own estimate. Pure over its inputs;
never raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..deck.usage import ApiUsage
from ..hermes_version import HermesVersion
from .sections import SECTION_NAMES, PromptLayout
from .tiers import TierMap, tiers_for
from .tokens import hermes_estimate


def provider_tokens(text: str) -> int:
    """About how many tokens a provider counts for ``text``: 4 chars a token, a CJK char one (Hermes
    0.20's rough rule, :func:`.tokens.hermes_estimate` line ``0.20``). Not 0.21.5+'s compaction estimate,
    which counts UTF-8 bytes and so counts each box-drawing char of the memory blocks' separators three
    times; the provider's tokenizer decides, and it sees chars."""
    return hermes_estimate(text, "0.20")


#: The provider's cache lifetime assumed when telling an expired cache from a break (seconds).
CACHE_TTL = 300.0
BATCHING = "several edits before the prompt is built again cost the same as one: the provider writes it once"


def hit_ratio(read: int, prompt: int) -> float | None:
    """Cache reads over every input token, 0-1 (3 decimals); None without input."""
    return round(read / prompt, 3) if prompt > 0 else None


def _sum(rows: Sequence[ApiUsage]) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": len(rows),
           "input_tokens": sum(r.input_tokens for r in rows), "output_tokens": sum(r.output_tokens for r in rows),
           "cache_read_tokens": sum(r.cache_read_tokens for r in rows),
           "cache_write_tokens": sum(r.cache_write_tokens for r in rows)}
    out["hit_ratio"] = hit_ratio(out["cache_read_tokens"], sum(r.prompt_tokens for r in rows))
    return out


@dataclass(frozen=True)
class CacheBreak:
    """Why a request missed the cache: ``reason`` (``new session``, ``compaction``, ``cache expired``,
    ``unknown``) and ``detail`` in words."""

    reason: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class TurnCost:
    """One recorded turn: its number among the session's recorded turns (1-based), Hermes' ``turn_id``,
    its requests, and the first cache break among them (None when the cache held)."""

    turn: int
    turn_id: str | None
    requests: tuple[ApiUsage, ...]
    cache_break: CacheBreak | None

    def total(self, bucket: str) -> int:
        return int(sum(getattr(r, bucket) for r in self.requests))

    @property
    def at(self) -> float:
        return self.requests[-1].at

    @property
    def hit_ratio(self) -> float | None:
        return hit_ratio(self.total("cache_read_tokens"), sum(r.prompt_tokens for r in self.requests))

    def to_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "turn_id": self.turn_id, "at": self.at,
                "input_tokens": self.total("input_tokens"), "output_tokens": self.total("output_tokens"),
                "cache_read_tokens": self.total("cache_read_tokens"),
                "cache_write_tokens": self.total("cache_write_tokens"), "hit_ratio": self.hit_ratio,
                "break": self.cache_break.to_dict() if self.cache_break else None,
                "requests": [r.to_dict() for r in self.requests]}


def _break(row: ApiUsage, prev: ApiUsage | None, first_of_session: bool) -> CacheBreak | None:
    if prev is None:
        if not first_of_session:  # rows continuing a session recorded earlier: nothing to compare with
            return None
        missed = row.cache_write_tokens > 0 or row.input_tokens > 0
    else:
        missed = row.cache_read_tokens < 0.9 * prev.prompt_tokens or (first_of_session and row.cache_write_tokens > 0)
    if not missed:
        return None
    read = f"read {row.cache_read_tokens:,} of {row.prompt_tokens:,} input tokens from the cache, wrote {row.cache_write_tokens:,}"
    if first_of_session:
        return CacheBreak("new session", f"the session's first request: its prompt was built and sent ({read})")
    if prev is None:
        return None
    if prev.message_count is not None and row.message_count is not None and row.message_count < prev.message_count:
        return CacheBreak("compaction", f"the request holds {row.message_count} messages, the one before "
                          f"{prev.message_count}: Hermes compacted the history and rebuilt the prompt ({read})")
    if prev.prompt_sha and row.prompt_sha and prev.prompt_sha != row.prompt_sha:
        return CacheBreak("rebuilt prompt", f"the system prompt changed since the previous request (sha256 "
                          f"{prev.prompt_sha} -> {row.prompt_sha}): Hermes built it again ({read})")
    if prev.tool_count is not None and row.tool_count is not None and prev.tool_count != row.tool_count:
        return CacheBreak("tool list change", f"{prev.tool_count} tools on the previous request, {row.tool_count} on "
                          f"this one: the tool schemas before the prompt changed ({read})")
    if row.at - prev.at > CACHE_TTL:
        return CacheBreak("cache expired", f"{int((row.at - prev.at) // 60)} min since the previous request "
                          f"(the provider keeps a prefix about {int(CACHE_TTL // 60)} min; {read})")
    return CacheBreak("unknown", f"nothing memdeck saw changed: the provider dropped the prefix ({read})")


def group_turns(rows: Sequence[ApiUsage], *, before: ApiUsage | None = None, continues: bool = False) -> list[TurnCost]:
    """``rows`` (one session's, oldest first) as turns. ``before``: the request recorded just before the
    session's first (another session's, what the provider could have cached), None when none;
    ``continues``: rows of this session were recorded before ``rows`` (the first is then not the
    session's first request)."""
    groups: list[list[ApiUsage]] = []
    for r in rows:
        new = (not groups or (r.turn_id is not None and r.turn_id != groups[-1][-1].turn_id)
               or (r.turn_id is None and r.api_call_count in (None, 1)))
        if new:
            groups.append([r])
        else:
            groups[-1].append(r)
    out: list[TurnCost] = []
    prev: ApiUsage | None = None if continues else before
    first = not continues
    for i, g in enumerate(groups, 1):
        brk: CacheBreak | None = None
        for r in g:
            b = _break(r, prev, first)
            brk = brk or b
            prev, first = r, False
        out.append(TurnCost(i, g[0].turn_id, tuple(g), brk))
    return out


def cache_kind(model: str | None, provider: str | None = None) -> str:
    """``explicit`` where Hermes adds ``cache_control`` breakpoints (a Claude model, or the
    ``anthropic`` provider), else ``implicit`` (a prefix cache the provider keeps by itself)."""
    m, p = (model or "").lower(), (provider or "").lower()
    return "explicit" if "claude" in m or p == "anthropic" else "implicit"


def _start_of(layout: PromptLayout, names: Sequence[str]) -> int | None:
    starts = [s.start for s in layout.spans if s.section in names]
    return min(starts) if starts else None


def write_estimate(prompt: str, layout: PromptLayout | None, version: HermesVersion, *, target: str = "memory",
                   delta_chars: int = 0, kind: str = "implicit", live: bool = False) -> dict[str, Any]:
    """What a write to ``target`` (``memory``/``user``) costs in prompt cache (module docstring).

    Args:
        prompt: the followed session's stored system prompt ('' when none).
        layout: its sections (:func:`.sections.split_prompt`), None when no prompt is stored.
        version: the home's Hermes; delta_chars: how many chars the write adds (negative: removes).
        kind: :func:`cache_kind`; live: live memory is on (the running session gets the change next turn).

    Returns:
        ``{tier, when, tokens, rule, batching, live}``: ``tier`` invalidated (``volatile``, None when the
        release's tiers are unknown), ``when`` (``next session``), ``tokens`` the provider writes again once
        (Hermes' estimate; None without a stored prompt), ``rule`` (what is rewritten, in words).
    """
    tiers = tiers_for(version)
    tier = tiers.tier(target) if tiers.known else None
    when = "next session"
    also = "or the next compaction of the running session, whichever comes first"
    out: dict[str, Any] = {"tier": tier, "when": when, "also": also, "kind": kind, "tokens": None, "rule": "",
                           "batching": BATCHING, "live": (
                               "the running session gets the change on its next turn in its user turn "
                               "(live memory): the cache holds" if live else None)}
    if layout is None or not prompt:
        out["rule"] = "no stored prompt to measure"
        return out
    if kind == "explicit":
        if tiers.static_prefix:
            later = [sp.start for sp in layout.spans
                     if tiers.tier_of(sp.section, prompt[sp.start:sp.end]) in ("context", "volatile")]
            start = min(later) if later else None
            rule = "the context and volatile tiers (the stable tier keeps its breakpoint)"
        else:
            start = 0
            rule = "the whole system prompt (one breakpoint at its end), and the tool schemas before it (not recorded)"
    else:
        order = ("memory", "user") if target == "memory" else ("user",)
        block = layout.blocks.get(target)
        if block is not None:  # the first byte a write changes: the usage figure in the block's header
            head = prompt.find("[", block.start, min(block.end, block.start + 400))
            start = head if head >= 0 else block.start
        else:
            start = _start_of(layout, order)
        if start is None:  # no block yet: it goes before the volatile sections after it
            start = _start_of(layout, [n for n in ("user", "provider", "session") if n not in order])
        rule = (f"from the usage figure in the {target.upper()} block's header to the end of the prompt "
                "(the first changed byte on)")
    start = len(prompt) if start is None else start
    out["tokens"] = max(0, provider_tokens(prompt[start:]) + (delta_chars + (3 if delta_chars > 0 else 0)) // 4)
    out["rule"] = rule
    return out


def with_change(estimate: Mapping[str, Any], delta_chars: int) -> dict[str, Any]:
    """``estimate`` (:func:`write_estimate` of the files now) after a write that adds ``delta_chars`` chars
    to the block (negative: removes; an added entry also adds its ``\n§\n`` delimiter): what the edit,
    approve and archive dialogs state before writing. ``tokens`` stays None when unknown."""
    out = dict(estimate)
    if isinstance(out.get("tokens"), int):
        out["tokens"] = max(0, out["tokens"] + (delta_chars + (3 if delta_chars > 0 else 0)) // 4)
    return out


@dataclass(frozen=True)
class CostReport:
    """``context --json`` ``cost`` (docs/STATUS_JSON.md).

    Attributes:
        turns: the followed session's recorded turns (:func:`group_turns`).
        session_totals: state.db's counters of the session (Hermes' totals), None when not recorded.
        recorded: memdeck.db's totals of the session (:func:`_sum`).
        tiers: the release's :class:`.tiers.TierMap`; sections: ``[{name, tier, tokens}]`` of the prompt.
        kind: :func:`cache_kind`; estimate: :func:`write_estimate` of a memory write.
        reason: why no turn is shown ('' when some are).
    """

    turns: tuple[TurnCost, ...]
    session_totals: dict[str, Any] | None
    recorded: dict[str, Any]
    tiers: TierMap
    sections: tuple[dict[str, Any], ...]
    kind: str
    estimate: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    @property
    def last_break(self) -> TurnCost | None:
        return next((t for t in reversed(self.turns) if t.cache_break is not None), None)

    def to_dict(self) -> dict[str, Any]:
        lb = self.last_break
        return {"turns": [t.to_dict() for t in self.turns], "turns_reason": self.reason or None,
                "session_totals": self.session_totals, "recorded_totals": self.recorded,
                "last_break": ({"turn": lb.turn, **lb.cache_break.to_dict()} if lb and lb.cache_break else None),
                "cache_kind": self.kind, "tiers": self.tiers.to_dict(), "sections": list(self.sections),
                "write_estimate": self.estimate}


def state_totals(stamp: Any) -> dict[str, Any] | None:
    """state.db's counters of a session (a :class:`memdeck.core.sessions.records.PromptStamp`), None when
    Hermes recorded no API call."""
    calls = int(getattr(stamp, "api_calls", 0) or 0)
    read, write = int(getattr(stamp, "cache_read_tokens", 0) or 0), int(getattr(stamp, "cache_write_tokens", 0) or 0)
    inp = int(getattr(stamp, "input_tokens", 0) or 0)
    if not calls and not (inp or read or write):
        return None
    return {"api_calls": calls, "input_tokens": inp, "output_tokens": int(getattr(stamp, "output_tokens", 0) or 0),
            "cache_read_tokens": read, "cache_write_tokens": write, "hit_ratio": hit_ratio(read, inp + read + write)}


def build_cost(rows: Sequence[ApiUsage], stamp: Any, version: HermesVersion, prompt: str,
               layout: PromptLayout | None, *, before: ApiUsage | None = None, continues: bool = False,
               provider: str | None = None,
               live: bool = False, plugin_enabled: bool = True) -> CostReport:
    """The :class:`CostReport` of one session: ``rows`` its recorded requests (oldest first), ``stamp`` its
    state.db row, ``prompt`` / ``layout`` its stored prompt and sections, ``continues`` whether memdeck
    recorded requests of the session before ``rows``; ``provider``: config.yaml ``model.provider``."""
    tiers = tiers_for(version)
    model = getattr(stamp, "model", None) or (rows[-1].model if rows else None)
    kind = cache_kind(model, provider or (rows[-1].provider if rows else None))
    secs: list[dict[str, Any]] = []
    if layout is not None:
        for name in SECTION_NAMES:
            text = layout.text_of(prompt, name)
            if text:
                secs.append({"name": name, "tier": tiers.tier(name), "tokens": hermes_estimate(text, version.line)})
    turns = tuple(group_turns(rows, before=before, continues=continues))
    reason = "" if turns else ("no API request of this session recorded: the memdeck plugin records them "
                               "(post_api_request)" + ("" if plugin_enabled else "; it is not in plugins.enabled"))
    return CostReport(turns, state_totals(stamp), _sum(rows), tiers, tuple(secs), kind,
                      write_estimate(prompt, layout, version, kind=kind, live=live), reason)


def totals_dict(totals: Mapping[str, int] | None) -> dict[str, Any] | None:
    """``status --json`` ``cost``: the home's recorded totals with their hit ratio, None when nothing recorded."""
    if not totals:
        return None
    prompt = totals["input_tokens"] + totals["cache_read_tokens"] + totals["cache_write_tokens"]
    return {**totals, "hit_ratio": hit_ratio(totals["cache_read_tokens"], prompt)}


__all__ = ["BATCHING", "CACHE_TTL", "CacheBreak", "CostReport", "TurnCost", "build_cost", "cache_kind",
           "group_turns", "hit_ratio", "provider_tokens", "state_totals", "totals_dict", "with_change", "write_estimate"]
