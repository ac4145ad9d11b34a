"""The fleet's figures in the Prometheus text exposition format, through the official client
library (``prometheus_client``): a custom collector, so each scrape reads fresh figures.

Every metric is a gauge labelled ``home`` (the local path, or the ``ssh://`` address) and
``profile``; per-target metrics add ``target`` (``memory`` = MEMORY.md, ``user`` = USER.md),
the change counts add ``actor``. docs/METRICS.md lists them with their units; the shipped
alerting rules are docs/prometheus-rules.yml. A figure memdeck cannot know has no sample (an
integrity score without anchors, the age of the oldest pending write when none waits, the stale
live sessions until the agent's-view feature): an absent series, never a made-up 0. A home whose
figures are stale (its host did not answer) or unreadable has only ``memdeck_home_up 0`` and its
``memdeck_home_last_read_timestamp_seconds``: its old figures are not exported as current.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from .rows import Fleet, FleetRow

#: metric name -> (help text, extra label names). The names are docs/METRICS.md's.
METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "memdeck_home_up": ("1 when the home's figures were read (this scrape, or a remote home's last read within its "
                        "interval); 0 when it is stale or could not be read", ()),
    "memdeck_home_last_read_timestamp_seconds": ("When the home's exported figures were read (epoch seconds)", ()),
    "memdeck_home_info": ("Always 1; labels: remote, provider (memory.provider, empty = built-in), memlock_dir "
                          "(where MemLock keeps the home's state), hermes (the Hermes version memdeck detected)",
                          ("remote", "provider", "memlock_dir", "hermes")),
    "memdeck_attention_level": ("What the home needs: 0 nothing, 1 notice, 2 look soon, 3 act now (docs/FLEET.md)", ()),
    "memdeck_memory_chars": ("Usage of the memory file in characters (Hermes' count)", ("target",)),
    "memdeck_memory_limit_chars": ("Char limit of the memory file (config.yaml)", ("target",)),
    "memdeck_memory_entries": ("Entries in the memory file", ("target",)),
    "memdeck_memory_flagged_entries": ("Entries the threat scan flags", ("target",)),
    "memdeck_pending_writes": ("Staged memory writes waiting for approval", ()),
    "memdeck_pending_oldest_created_timestamp_seconds": ("created_at of the oldest pending write (epoch seconds)", ()),
    "memdeck_pending_oldest_age_seconds": ("Age of the oldest pending write when the figures were read (seconds)", ()),
    "memdeck_integrity_score": ("Integrity score (0-100) of the live session's anchors (MemLock's audit)", ()),
    "memdeck_integrity_floor": ("MemLock's alert_floor (0-100): a lower integrity score alerts", ()),
    "memdeck_drifted_anchors": ("Anchors of the live session whose state is drifted", ()),
    "memdeck_audits_below_floor": ("Audit points (compactions, MemLock's drift log) of the live session below the floor", ()),
    "memdeck_session_compactions": ("Compactions of the live session (state.db)", ()),
    "memdeck_history_changes": ("Changes recorded in the change history, by actor", ("actor",)),
    "memdeck_stale_live_sessions": ("Live sessions whose frozen memory differs from the files", ()),
    "memdeck_cache_hit_ratio": ("Prompt cache reads over every input token (0-1) of the API requests memdeck's plugin "
                                "recorded for the home (post_api_request)", ()),
    "memdeck_fleet_read_seconds": ("Seconds this scrape took to read the fleet", ()),
}


def _gauge(name: str) -> GaugeMetricFamily:
    doc, extra = METRICS[name]
    labels = [] if name == "memdeck_fleet_read_seconds" else ["home", "profile", *extra]
    return GaugeMetricFamily(name, doc, labels=labels)


def families(rows: Sequence[FleetRow], *, now: float, read_seconds: float | None = None) -> list[GaugeMetricFamily]:
    """The metric families of ``rows`` (module docstring), in :data:`METRICS` order."""
    fam = {name: _gauge(name) for name in METRICS}
    for row in rows:
        base = [row.home.address, row.home.profile]
        f = row.figures
        fresh = f is not None and not row.stale and row.error is None
        fam["memdeck_home_up"].add_metric(base, 1.0 if fresh else 0.0)
        if row.fetched_at is not None:
            fam["memdeck_home_last_read_timestamp_seconds"].add_metric(base, float(row.fetched_at))
        if not fresh or f is None:
            continue
        fam["memdeck_home_info"].add_metric(
            [*base, "true" if row.home.remote else "false", f.provider or "", f.memlock_path or "", f.hermes_version], 1.0)
        fam["memdeck_attention_level"].add_metric(base, float(row.attention.level))
        for target, st in sorted(f.memory.items()):
            if st.error:
                continue
            fam["memdeck_memory_chars"].add_metric([*base, target], float(st.chars))
            fam["memdeck_memory_limit_chars"].add_metric([*base, target], float(st.limit))
            fam["memdeck_memory_entries"].add_metric([*base, target], float(st.entries))
            fam["memdeck_memory_flagged_entries"].add_metric([*base, target], float(st.flagged))
        fam["memdeck_pending_writes"].add_metric(base, float(f.pending))
        if f.oldest_pending_at is not None:
            fam["memdeck_pending_oldest_created_timestamp_seconds"].add_metric(base, float(f.oldest_pending_at))
            age = f.oldest_pending_age(now)
            if age is not None:
                fam["memdeck_pending_oldest_age_seconds"].add_metric(base, age)
        if f.integrity_score is not None:
            fam["memdeck_integrity_score"].add_metric(base, float(f.integrity_score))
        if f.alert_floor is not None:
            fam["memdeck_integrity_floor"].add_metric(base, float(f.alert_floor))
        if f.integrity_session is not None:
            fam["memdeck_drifted_anchors"].add_metric(base, float(f.drifted_anchors))
        if f.audits_below_floor is not None and f.integrity_session is not None:
            fam["memdeck_audits_below_floor"].add_metric(base, float(f.audits_below_floor))
        if f.compactions is not None:
            fam["memdeck_session_compactions"].add_metric(base, float(f.compactions))
        for actor, n in sorted((f.changes_by_actor or {}).items()):
            fam["memdeck_history_changes"].add_metric([*base, actor], float(n))
        if f.stale_sessions.count is not None:
            fam["memdeck_stale_live_sessions"].add_metric(base, float(f.stale_sessions.count))
        if f.cache_hit_ratio is not None:
            fam["memdeck_cache_hit_ratio"].add_metric(base, f.cache_hit_ratio)
    if read_seconds is not None:
        fam["memdeck_fleet_read_seconds"].add_metric([], read_seconds)
    return list(fam.values())


class FleetCollector(Collector):
    """A ``prometheus_client`` collector that reads the fleet at each scrape.

    Local homes are read through their incremental snapshots (only what changed since the last
    scrape is read again). Remote homes are read as ``read_remote`` says: ``True`` at every
    collect (a one-shot ``--textfile`` run), ``None`` when their interval has passed, ``False``
    never (``--serve`` reads them in a background thread, so a slow host never delays a scrape).
    """

    def __init__(self, fleet: Fleet, *, read_remote: bool | None = False, clock: Callable[[], float] = time.time) -> None:
        self.fleet = fleet
        self.read_remote = read_remote
        self.clock = clock
        self.scrapes = 0

    def describe(self) -> list[Any]:
        return []  # nothing is read at registration; every name is in METRICS

    def collect(self) -> Iterator[GaugeMetricFamily]:
        started = time.perf_counter()
        rows = self.fleet.read(remote=self.read_remote)
        self.scrapes += 1
        yield from families(rows, now=self.clock(), read_seconds=time.perf_counter() - started)


def registry_for(fleet: Fleet, *, read_remote: bool | None = False) -> CollectorRegistry:
    """A fresh registry holding only the :class:`FleetCollector` (no process or platform metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(fleet, read_remote=read_remote))
    return registry


def exposition(fleet: Fleet, *, read_remote: bool | None = True) -> bytes:
    """The fleet's figures now, as Prometheus text exposition format 0.0.4 (UTF-8)."""
    from prometheus_client.exposition import generate_latest

    return generate_latest(registry_for(fleet, read_remote=read_remote))
