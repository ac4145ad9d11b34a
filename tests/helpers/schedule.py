"""The order xdist hands test files to its workers: the costliest first (issue 39 item 15).

The suite runs with ``-n auto --dist loadfile`` (pyproject addopts): a file's tests stay in one
worker, and a worker asks for the next file when it is almost done. Which file comes next is the
collection order (``--no-loadscope-reorder``; xdist's own reorder puts the files with the most tests
first, whatever they cost, so a file of a few slow tests -- real Hermes turns, a browser -- could
start last and keep one core busy while the other idles). Longest first is the classic rule for
this: the small, cheap files fill the gaps at the end, and the run ends with both workers busy.

Only the order changes: every test still runs, once, with its file's fixtures. Every worker sorts
the same collection with the same table, so they agree (xdist checks that they do). Under ``-n 0``
(one test, in-process) nothing is reordered.

``FILE_COST`` holds the measured cost of the costliest files, in seconds of one core: CPU time of
the pytest process and its children per test (the machine's load skews it far less than wall
time), or a quarter of the wall time where that is more (a test that waits, e.g. on a deadline),
measured with ``-n 0`` on a sample of each file's tests (its first and middle) and scaled to the
file's number of tests. A file not in it costs its number of tests times its area's ``PER_TEST``
(the same sample's mean over the files not listed). The numbers need not be exact, only in the right order; re-measure when a
file's cost changes by minutes (``python tests/helpers/schedule.py`` prints the estimates in
collection order).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

#: seconds of one core per file, measured (see the module docstring); the costliest first
FILE_COST: dict[str, float] = {
    "tests/core/test_hostile_homes.py": 198,
    "tests/tui/test_hostile_panels.py": 142,
    "tests/interop/test_hermes_numbers.py": 90,
    "tests/interop/test_context_hermes.py": 53,
    "tests/core/test_crash_matrix.py": 51,
    "tests/interop/test_providers_hermes.py": 47,
    "tests/core/test_semantic_model.py": 38,
    "tests/core/test_store_multiprocess.py": 45,  # 40 s of five processes (MEMDECK_STRESS_SECONDS)
    "tests/interop/test_live_memory_hermes.py": 33,
    "tests/core/test_statedb_equivalence.py": 33,
    "tests/interop/test_crash_interleave.py": 31,
    "tests/core/test_active_region.py": 23,
    "tests/interop/test_interleave_matrix.py": 20,
    "tests/tui/test_snapshots.py": 18,
    "tests/core/test_statedb_tracks.py": 16,
    "tests/tui/test_footer.py": 14,
    "tests/interop/test_matrix_smoke.py": 13,
    "tests/tui/test_keys_memory.py": 12,
    "tests/tui/test_serve_browser.py": 11,
    "tests/core/test_diskfull.py": 11,
    "tests/tui/test_textual_private.py": 10,
    "tests/tui/test_keys_anchors.py": 9,
    "tests/tui/test_review_queue.py": 9,
    "tests/core/test_applying_visible.py": 9,
    "tests/tui/test_vim_and_themes.py": 8,
    "tests/core/test_plugin_install.py": 7,
    "tests/tui/test_dialog_type_ahead.py": 7,
    "tests/interop/test_review_queue_hermes.py": 7,
    "tests/core/test_crash.py": 7,
    "tests/tui/test_charts.py": 6,
    # this round's real-Hermes files, estimated from their authors' -n 0 runs (real turns per version)
    "tests/interop/test_agent_requests_hermes.py": 55,
    "tests/interop/test_constraints_hermes.py": 50,
    "tests/interop/test_cost_hermes.py": 25,
    "tests/interop/test_chat_notice_hermes.py": 20,
    "tests/interop/test_chat_command_hermes.py": 20,
    "tests/interop/test_dashboard_tab_hermes.py": 12,
    "tests/core/test_read_parity.py": 11,
}

#: estimated seconds of one core per test, by the file's area (``tests/<area>/...``)
PER_TEST: dict[str, float] = {"interop": 0.2, "tui": 0.26, "core": 0.055}
DEFAULT_PER_TEST = 0.13


class _Item(Protocol):
    nodeid: str


def file_of(nodeid: str) -> str:
    """``tests/x/test_y.py::test_z[p]`` -> ``tests/x/test_y.py`` (xdist's loadfile unit)."""
    return nodeid.split("::", 1)[0]


def estimates(items: Sequence[_Item]) -> dict[str, float]:
    """The estimated cost of each file of ``items``, in collection order."""
    counts: dict[str, int] = {}
    for item in items:
        f = file_of(item.nodeid)
        counts[f] = counts.get(f, 0) + 1
    out: dict[str, float] = {}
    for f, n in counts.items():
        if f in FILE_COST:
            out[f] = FILE_COST[f]
        else:
            parts = f.split("/")
            area = parts[1] if len(parts) > 2 else ""
            out[f] = n * PER_TEST.get(area, DEFAULT_PER_TEST)
    return out


#: the share of the other files' cost that runs before the first file that needs an interop venv
VENV_HEAD_START = 0.4


def costliest_first(items: list[_Item], needs_venv: Collection[str] = ()) -> None:
    """Sort ``items`` in place: whole files, the costliest first; ties keep collection order, and
    so does every file's own order of tests.

    The files of ``needs_venv`` (they ask ``tests/interop/matrix/venvs.py`` for a Hermes venv,
    which a fresh machine builds in the background while the suite runs: minutes of pip) start
    only once :data:`VENV_HEAD_START` of the other files' cost has been handed out, the costliest
    of them first, then the rest of the other files: on a fresh machine the builds overlap that
    head start instead of holding both workers, and where the venvs are cached the cheap files
    still end the run. The order depends on the collection alone, never on the cache's state:
    every worker must sort the same way."""
    cost = estimates(items)
    by_cost = sorted(cost, key=lambda f: -cost[f])
    venv = [f for f in by_cost if f in needs_venv]
    rest = [f for f in by_cost if f not in needs_venv]
    head_cost = VENV_HEAD_START * sum(cost[f] for f in rest)
    order: list[str] = []
    done = 0.0
    while rest and (done < head_cost or not venv):
        done += cost[rest[0]]
        order.append(rest.pop(0))
    order += venv + rest
    rank = {f: i for i, f in enumerate(order)}
    items.sort(key=lambda item: rank[file_of(item.nodeid)])


if __name__ == "__main__":  # pragma: no cover - a maintainer's look at the table
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider"],
                         capture_output=True, text=True, check=False).stdout

    class _Id:
        def __init__(self, nodeid: str) -> None:
            self.nodeid = nodeid

    ids = [_Id(line.strip()) for line in out.splitlines() if "::" in line]
    est = estimates(ids)
    for f in sorted(est, key=lambda f: -est[f]):
        print(f"{est[f]:8.1f}  {f}")
    print(f"{sum(est.values()):8.1f}  total (s of one core)")
