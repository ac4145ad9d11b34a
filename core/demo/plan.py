"""The demo plan: from a seed and a clock, every id, timestamp and entry of the demo home (pure, deterministic)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .story import (
    ANCHORS,
    DEMO_MEMORY_LIMIT,
    DEMO_NOW,
    DEMO_SEED,
    DEMO_USER_LIMIT,
    ENTRY_SEP,
    MEMORY_CALL_AT,
    MEMORY_FIXED,
    MEMORY_POOL,
    MEMORY_USAGE_BAND,
    PHASE_A,
    PHASE_B,
    PHASE_C,
    PINS_AFTER,
    STATIC_IDS,
    USER_FIXED,
    USER_POOL,
    USER_USAGE_BAND,
)

# ── the plan (pure, deterministic) ─────────────────────────────────────────


@dataclass(frozen=True)
class DemoPlan:
    """Everything :func:`build_demo_home` decides from ``(seed, now)`` before writing.

    Attributes:
        seed, now: the inputs (``now`` in epoch seconds).
        memory_entries, user_entries: the entries of MEMORY.md / USER.md, in file order.
        session_ids: ``{"live", "telegram", "cron", "rotation_parent", "rotation_child",
            "review", "deploy", "release_day"}`` -> Hermes-style ids ``YYYYMMDD_HHMMSS_<6 hex>``.
        anchor_ids: anchor key (``british``, ``push``, ``uv``, ``commit``, ``pathlib``,
            ``secrets``) -> MemLock id (config id for static anchors, ``pin_<8 hex>`` for pins).
        pending_ids: four 8-hex ids of the pending writes, in creation order.
        live_started_at: start of the live session (epoch seconds).
        applied_pending_ids: two 8-hex ids of pending writes applied before ``now`` (by Hermes
            for the background review, then through memdeck): the change history's (:mod:`.changes`).
    """

    seed: int
    now: float
    memory_entries: tuple[str, ...]
    user_entries: tuple[str, ...]
    session_ids: dict[str, str] = field(default_factory=dict)
    anchor_ids: dict[str, str] = field(default_factory=dict)
    pending_ids: tuple[str, ...] = ()
    live_started_at: float = 0.0
    applied_pending_ids: tuple[str, ...] = ()

    @property
    def live_session_id(self) -> str:
        return self.session_ids["live"]


def _fill(rng: random.Random, fixed: tuple[str, ...], pool: tuple[str, ...], limit: int,
          band: tuple[float, float]) -> list[str]:
    """``fixed`` plus shuffled pool entries, usage (chars, delimiters included) inside ``band``
    percent of ``limit``; the first fixed entry stays first, the rest are shuffled."""
    lo, hi = band[0] * limit / 100.0, band[1] * limit / 100.0
    for _attempt in range(200):
        target = rng.uniform(lo + 0.25 * (hi - lo), hi)
        entries = list(fixed)
        candidates = list(pool)
        rng.shuffle(candidates)
        for cand in candidates:
            if len(ENTRY_SEP.join(entries + [cand])) <= target:
                entries.append(cand)
        for cand in sorted((c for c in candidates if c not in entries), key=len):
            if len(ENTRY_SEP.join(entries)) >= lo:
                break
            if len(ENTRY_SEP.join(entries + [cand])) <= hi:
                entries.append(cand)
        if lo <= len(ENTRY_SEP.join(entries)) <= hi:
            rest = entries[1:]
            rng.shuffle(rest)
            return [entries[0]] + rest
    raise AssertionError(f"demo memory pool cannot reach {band} of {limit}")  # pragma: no cover


def _session_id(ts: float, rng: random.Random) -> str:
    stamp = datetime.fromtimestamp(ts, tz=UTC).strftime("%Y%m%d_%H%M%S")
    return f"{stamp}_{rng.getrandbits(24):06x}"


def live_schedule(seed: int) -> list[float]:
    """Offsets (seconds from the live session's start) of every event of the live session, in
    the order :func:`_live_session` consumes them; the last one is the last message."""
    rng = random.Random(seed * 7919 + 1)
    offsets: list[float] = []
    t = 20.0

    def step(lo: int, hi: int) -> None:
        nonlocal t
        t += rng.randint(lo, hi) + 0.125
        offsets.append(t)

    for i, (_role, _text) in enumerate(PHASE_A):
        step(100, 160)
        for _ in PINS_AFTER.get(i, ()):
            step(2, 4)  # guard_pin call
            step(1, 2)  # its result
    step(120, 200)  # compaction 1
    for i, _ in enumerate(PHASE_B):
        if i == MEMORY_CALL_AT:
            step(5, 10)
            step(1, 2)
        step(100, 160)
    step(120, 200)  # compaction 2
    for _ in PHASE_C:
        step(100, 160)
    return offsets


def demo_plan(seed: int = DEMO_SEED, now: float | None = None) -> DemoPlan:
    """The deterministic plan of the demo home for ``seed`` at ``now`` (default :data:`DEMO_NOW`).

    Pure: no disk, no clock. Same arguments, same plan.
    """
    now = DEMO_NOW if now is None else float(now)
    rng = random.Random(seed)
    memory = _fill(rng, MEMORY_FIXED, MEMORY_POOL, DEMO_MEMORY_LIMIT, MEMORY_USAGE_BAND)
    user = _fill(rng, USER_FIXED, USER_POOL, DEMO_USER_LIMIT, USER_USAGE_BAND)
    # The live session's last message lands 2-5 minutes before `now`.
    schedule = live_schedule(seed)
    live_start = float(int(now - schedule[-1] - rng.randint(120, 300)))
    sids = {
        "live": _session_id(live_start, rng),
        "telegram": _session_id(now - 26 * 3600 + rng.randint(0, 1800), rng),
        "cron": _session_id(now - 14 * 3600 + rng.randint(0, 300), rng),
        "rotation_parent": _session_id(now - 2 * 86400 + rng.randint(0, 3600), rng),
        "rotation_child": _session_id(now - 2 * 86400 + 5400 + rng.randint(0, 600), rng),
        "review": _session_id(now - 4 * 86400 + rng.randint(0, 3600), rng),
    }
    anchor_ids: dict[str, str] = {}
    for spec in ANCHORS:
        anchor_ids[spec.key] = STATIC_IDS[spec.key] if spec.static else f"pin_{rng.getrandbits(32):08x}"
    pending = tuple(f"{rng.getrandbits(32):08x}" for _ in range(4))
    # Drawn last, so the ids above are those of the demo before these were added.
    sids["deploy"] = _session_id(now - 3 * 86400 + rng.randint(0, 3600), rng)
    sids["release_day"] = _session_id(now - 20 * 3600 + rng.randint(0, 1800), rng)
    applied = tuple(f"{rng.getrandbits(32):08x}" for _ in range(2))
    return DemoPlan(seed=seed, now=now, memory_entries=tuple(memory), user_entries=tuple(user),
                    session_ids=sids, anchor_ids=anchor_ids, pending_ids=pending,
                    live_started_at=live_start, applied_pending_ids=applied)
