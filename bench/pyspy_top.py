"""Summarise a ``py-spy record -f raw`` profile (collapsed stacks) as text: the share of samples
in each frame (cumulative), idle waits left out (a thread blocked in ``Condition.wait``,
``select``/``poll`` or a queue get is asleep, not using a core).

    python bench/pyspy_top.py PROFILE.txt [--top 25] > PROFILE.top.txt
"""

from __future__ import annotations

import argparse
import collections

IDLE = ("Condition.wait", "run_input_thread", "_worker (concurrent/futures/thread.py:81)", "select", "poll (",
        "Event.wait", "Queue.get", "BaseEventLoop.run_forever", "_run_once", "sleep")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    cum: collections.Counter[str] = collections.Counter()
    total = busy = 0
    for line in open(args.profile, encoding="utf-8"):  # noqa: SIM115 - read to the end once
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        total += int(n)
        if any(i in frames[-1] for i in IDLE) or any(i in f for f in frames[-2:] for i in IDLE[:3]):
            continue
        busy += int(n)
        for f in set(frames):
            cum[f] += int(n)
    print(f"{total} samples, {busy} busy (not waiting); share of busy samples per frame (cumulative):")
    for f, n in cum.most_common(args.top):
        print(f"{100 * n / max(1, busy):5.1f} %  {f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
