"""Small-home launch -> memory on screen, alternating memdeck installs in the same run (issue 23, gap 3).

    python bench/bench_launch.py [--size 3000] [--rounds 7] [--compare LABEL=PYTHON ...]

The dashboard (``PYTHON -m memdeck.tui --home H``) starts in a pty of 120x40, key ``4`` (the
Capacity panel) is typed at once, and the launch ends when the screen shows the memory usage
(``n/2,200 chars``), as ``bench/live_beside.py`` measures it. Each round runs every install once
on a first launch (no memdeck.db: its tracks and verdicts built) and once on a later launch
(memdeck.db kept), in turn, on its own copy of the home (bench/bighome.py generator 2), and the
floor ``python -c "import textual.app"`` and hermesd's first screen (``--hermesd``) beside them.
Wall time and the process's CPU time at that moment (``/proc/PID/stat``: the machine is shared,
CPU is the steadier figure) are reported as medians, with the load average at the start.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from live_beside import Dash, _cpu_s, load  # noqa: E402

MEMORY_ON_SCREEN = r"[\d,]+/2,200 chars"


def launch(python: str, home: Path, env: dict, timeout: float = 120.0) -> tuple[float | None, float | None]:
    """(wall s, CPU s) from spawn to the memory usage on screen, or (None, None)."""
    d = Dash([python, "-m", "memdeck.tui", "--home", str(home)], env)
    try:
        d.key(b"4")
        t = d.screen.first(MEMORY_ON_SCREEN, 0, timeout)
        cpu = _cpu_s(d.pid) if t is not None else None
        return (None if t is None else t - d.t0), cpu
    finally:
        d.close()


def hermesd_launch(hermesd: str, home: Path, env: dict, timeout: float = 120.0) -> float | None:
    d = Dash([hermesd, "--hermes-home", str(home)], env)
    try:
        t = d.screen.first(r"\[q\] Quit", 0, timeout)
        return None if t is None else t - d.t0
    finally:
        d.close()


def floor(python: str, env: dict) -> tuple[float, float]:
    import resource

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([python, "-c", "import textual.app"], env=env, check=True)
    w = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return w, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=3000, help="bench/bighome.py size (generator 2)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--compare", action="append", default=[], metavar="LABEL=PYTHON")
    ap.add_argument("--hermesd", default=os.environ.get("HERMESD"), help="hermesd program (its first screen beside)")
    ap.add_argument("--out")
    args = ap.parse_args()
    from bighome import build

    src = build(args.size, progress=False)
    installs = [(c.split("=", 1)[0], c.split("=", 1)[1]) for c in args.compare] + [("this memdeck", sys.executable)]
    tmp = Path(tempfile.mkdtemp(prefix="memdeck-launch-"))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    res: dict[str, dict[str, list[float]]] = {}
    loads: list[str] = []
    try:
        homes = {}
        for label, python in installs:
            h = tmp / label.replace(" ", "_")
            shutil.copytree(src, h, ignore=shutil.ignore_patterns("memdeck"))
            homes[label] = h
            subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "core"), str(ROOT / "tui")], env=env,
                           capture_output=True)
            launch(python, h, {**env, "HERMES_HOME": str(h)})  # warm the page cache and the bytecode
        for _ in range(args.rounds):
            loads.append(load())
            for label, python in installs:
                e = {**env, "HERMES_HOME": str(homes[label])}
                r = res.setdefault(label, {})
                shutil.rmtree(homes[label] / "memdeck", ignore_errors=True)
                for kind in ("first", "later"):
                    w, c = launch(python, homes[label], e)
                    if w is not None:
                        r.setdefault(f"{kind}_wall", []).append(w)
                        r.setdefault(f"{kind}_cpu", []).append(c)
            fw, fc = floor(sys.executable, env)
            res.setdefault("floor", {}).setdefault("wall", []).append(fw)
            res["floor"].setdefault("cpu", []).append(fc)
            if args.hermesd:
                hw = hermesd_launch(args.hermesd, homes[installs[-1][0]], {**env, "HERMES_HOME": str(homes[installs[-1][0]])})
                if hw is not None:
                    res.setdefault("hermesd", {}).setdefault("wall", []).append(hw)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs: list[float] | None) -> str:
        return "-" if not xs else f"{statistics.median(xs) * 1000:.0f} ms"

    lines = [f"# Launch -> memory on screen, {args.size:,}-row home (bench/bench_launch.py, {args.rounds} rounds, "
             f"load {min(loads)}-{max(loads)})", "",
             "| measure (median) | " + " | ".join(lb for lb, _ in installs) + " |", "|---|" + "---|" * len(installs)]
    for kind, name in (("first", "first launch (no memdeck.db)"), ("later", "later launch")):
        lines.append(f"| {name}: wall | " + " | ".join(med(res[lb].get(f"{kind}_wall")) for lb, _ in installs) + " |")
        lines.append(f"| {name}: CPU | " + " | ".join(med(res[lb].get(f"{kind}_cpu")) for lb, _ in installs) + " |")
    lines.append(f"| floor `python -c 'import textual.app'`: wall / CPU | {med(res['floor']['wall'])} / "
                 f"{med(res['floor']['cpu'])} |" + " |" * (len(installs) - 1))
    if "hermesd" in res:
        lines.append(f"| hermesd first screen: wall | {med(res['hermesd']['wall'])} |" + " |" * (len(installs) - 1))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
