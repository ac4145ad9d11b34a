"""The dashboard's view of what the running agents see: the snapshot's ``agent_view`` part.

Built off the UI thread with the rest of the snapshot (:func:`build_agent_view`), and reused
whole when nothing it reads changed: state.db (its ``PRAGMA data_version``), the memory files,
config.yaml, the followed session and MemLock's reminder block. Each open session's stored
prompt is read once per prompt (:class:`memdeck.core.context.prompts.PromptCache`, carried from
one view to the next), so a refresh after appended messages reads no prompt, and the followed
session's report re-reads only its rows since the last compaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..context.budget import budget
from ..context.injected import InjectedView
from ..context.prompts import PromptCache
from ..context.report import (
    ContextReport,
    SessionDiff,
    build_report,
    disk_entries,
    provider_share,
    session_diff,
    session_injected,
    verdict_for,
)
from ..hermes_version import HermesVersion

#: Open sessions compared (a gateway home keeps one per chat; the newest started first).
MAX_SESSIONS = 200


@dataclass(frozen=True)
class AgentView:
    """What the open sessions see.

    Attributes:
        diffs: every open session's frozen memory against the files (newest start first, at most
            :data:`MAX_SESSIONS`).
        report: the followed session's :class:`~memdeck.core.context.report.ContextReport`
            (None without one, or when it was not asked for: the Context panel is not shown).
        followed: the followed session's id (None without an open session).
        basis: what it was built from (a rebuild with the same basis reuses this view).
        cache: the parsed prompts, carried to the next view.
        error: why it could not be built (shown as the Context panel's banner), else None.
        injected: what a memory provider and the plugins appended to each user turn of the followed
            session (built with or without the report: the provider alerts watch it).
        provider_share: the provider fences the followed session still carries against its
            compaction threshold (:func:`memdeck.core.context.report.provider_share`), or None.
        delivery: live memory's view of the followed session's differences (issue 33):
            :func:`memdeck.core.live_memory.view.delivery_view` (``{"mode", "max_chars",
            "plugin_enabled", "delivery": [one row per difference, in diff order], "counts"}``, the
            rows ``memdeck context --json`` prints as ``memory.delivery``), or None without a
            followed session whose frozen block carries memory.
    """

    diffs: tuple[SessionDiff, ...] = ()
    report: ContextReport | None = None
    basis: tuple[Any, ...] = ()
    cache: PromptCache = field(default_factory=PromptCache, compare=False, repr=False)
    error: str | None = None
    #: the files' entries it compared with, and what they were read under (``memory_key``)
    disk: Mapping[str, Sequence[str]] = field(default_factory=dict, compare=False, repr=False)
    memory_key: Any = field(default=None, compare=False, repr=False)
    #: ``(prompt key, memory key) -> FrozenMemory``: a session's comparison, kept while neither changed
    frozen_cache: Mapping[tuple[Any, Any], Any] = field(default_factory=dict, compare=False, repr=False)
    followed: str | None = None
    injected: InjectedView | None = None
    provider_share: Mapping[str, Any] | None = None
    delivery: Mapping[str, Any] | None = None

    @property
    def followed_diff(self) -> SessionDiff | None:
        """The followed session's comparison (from the report when there is one)."""
        if self.report is not None:
            return self.report.diff
        return self.diff_of(self.followed)

    def diff_of(self, session_id: str | None) -> SessionDiff | None:
        return next((d for d in self.diffs if d.session_id == session_id), None)

    @property
    def stale(self) -> tuple[SessionDiff, ...]:
        """The open sessions whose frozen memory differs from the files."""
        return tuple(d for d in self.diffs if d.frozen.in_prompt and d.differences)


def build_agent_view(home: Any, config: Any, db: Any, *, session_id: str | None, version: HermesVersion,
                     reminder_block: str, basis: tuple[Any, ...], previous: AgentView | None = None,
                     memory_key: Any = None, with_report: bool = True) -> AgentView:
    """The view for the followed ``session_id`` (None: the live one). ``memory_key`` says what the
    memory files looked like (the snapshot's memory stamps; None: unknown, read them again): while
    it and a session's prompt are unchanged, its comparison is reused. ``with_report`` False leaves
    out the followed session's report (its rows, sections and budget: the Context panel's), so a
    refresh while that panel is not shown reads no rows for it. Raises whatever the readers raise
    (the snapshot turns it into a banner)."""
    if previous is not None and previous.basis == basis and previous.error is None:
        return previous
    cache = previous.cache if previous is not None else PromptCache()
    if db is None:
        return AgentView(basis=basis, cache=cache)
    same_files = previous is not None and memory_key is not None and previous.memory_key == memory_key
    entries = dict(previous.disk) if same_files and previous is not None else disk_entries(home)
    kept = dict(previous.frozen_cache) if same_files and previous is not None else {}
    verdict = verdict_for(version)
    stamps = db.prompt_stamps(limit=MAX_SESSIONS)
    frozen_cache: dict[tuple[Any, Any], Any] = {}
    diffs_l = []
    for s in stamps:
        k = (s.prompt_key, (id(config), version))
        hit = kept.get(k)
        if hit is not None:
            d = SessionDiff(s, hit[0], hit[1])
        else:
            d = session_diff(s, cache.get(s.prompt_key, s.session_id, db), entries, config, verdict)
        frozen_cache[k] = (d.frozen, d.prompt_sha256)
        diffs_l.append(d)
    diffs = tuple(diffs_l)
    want = session_id
    if want is None and stamps:
        want = max(stamps, key=lambda s: (s.activity, s.session_id)).session_id
    stamp = next((s for s in stamps if s.session_id == want), None)
    if stamp is None and want is not None:
        found = db.prompt_stamps([want])
        stamp = found[0] if found else None
    report = None
    injected = None
    share = None
    if stamp is not None:
        injected = session_injected(db, config, stamp.session_id, version)
        if with_report:
            report = build_report(db, home, config, stamp, cache=cache, disk=entries, version=version,
                                  reminder_block=reminder_block, injected=injected,
                                  diff=next((d for d in diffs if d.session_id == stamp.session_id), None))
            share = report.provider_share()
        elif injected.provider is not None:
            share = provider_share(injected, budget(config, home.path, stamp.model, version))
    followed = report.diff if report is not None else next(
        (d for d in diffs if stamp is not None and d.session_id == stamp.session_id), None)
    delivery = None
    if followed is not None and followed.frozen.in_prompt:
        from ..live_memory.view import delivery_view

        delivery = delivery_view(home, config, followed.session_id, followed.frozen.changes, verdict)
    return AgentView(diffs, report, basis, cache, None, entries, memory_key, frozen_cache,
                     stamp.session_id if stamp is not None else want, injected, share, delivery)


__all__ = ["AgentView", "MAX_SESSIONS", "build_agent_view"]
