"""``memdeck status --json`` byte for byte: the output on the demo home, an empty home, the
hostile catalogue's base home and several hostile homes (``tests/helpers/hostile.py``) equals
what the second read model printed before ``status`` was read through the parts (issue 32:
"``status --json`` byte-equal on the hidden-style homes, timestamps aside").

The expected outputs live in ``tests/core/status_golden/NAME.json``, with the home's path written
``<HOME>`` and the values that depend on the clock of the run (``pending[].age_s``, the change
history's ``last.time`` of a home built now) written ``<TIME>`` (hygiene's ``stale`` and
``chars_saved``, which depend on the clock and on the paths of this machine, ``<CLOCK>``). Regenerate them, after reading
why they differ, with ``python -m tests.core.test_status_bytes --write``.
"""

from __future__ import annotations

import difflib
import io
import re
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from memdeck.core.cli import main
from memdeck.core.demo import DEMO_NOW, DEMO_SEED, build_demo_home
from tests.helpers.hostile import HOMES, build_base, build_hostile, remove_home

GOLDEN = Path(__file__).parent / "status_golden"
#: hostile homes whose status is compared (root's permission override and live holders aside)
HOSTILE = ("memlock-not-json", "memlock-wrong-types", "memlock-is-a-file", "pending-payload-garbage",
           "pending-surrogates", "memory-not-utf8", "memory-fifo", "config-not-a-mapping", "statedb-truncated",
           "statedb-fts-missing", "deckdb-not-a-database")
NAMES = ("demo", "empty", "base", *HOSTILE)
_AGE = re.compile(r'^(\s*"age_s": )[0-9.]+(,?)$', re.MULTILINE)
_LAST = re.compile(r'("last": \{\n\s*"id": [0-9]+,\n\s*"time": )[0-9.]+(,)')
#: hygiene's stale count (and the chars it would save) depends on the clock and on which paths
#: exist on this machine (``core/hygiene/detect.py`` ``_gone``, ``unused``): not the read model's
_HYGIENE = re.compile(r'^(\s*"(?:stale|chars_saved)": )[0-9]+(,?)$', re.MULTILINE)


def _normalised(text: str, home: Path) -> str:
    text = text.replace(str(home), "<HOME>")
    text = _HYGIENE.sub(r'\1"<CLOCK>"\2', text)
    return _LAST.sub(r'\1"<TIME>"\2', _AGE.sub(r'\1"<TIME>"\2', text))


def status_json(home: Path) -> str:
    """What ``memdeck --home HOME status --json`` prints, normalised (module docstring)."""
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--home", str(home), "status", "--json"]) == 0
    return _normalised(out.getvalue(), home)


def build_homes(root: Path) -> Iterator[tuple[str, Path]]:
    """``(name, path)`` of every home of :data:`NAMES`, built under ``root``."""
    yield "demo", build_demo_home(root / "demo", seed=DEMO_SEED, now=DEMO_NOW).path
    empty = root / "empty"
    empty.mkdir()
    (empty / "memories").mkdir()
    yield "empty", empty
    base = build_base(root / "base")
    yield "base", base
    by_name = {h.name: h for h in HOMES}
    for name in HOSTILE:
        yield name, build_hostile(by_name[name], base, root / name)


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    built = dict(build_homes(tmp_path_factory.mktemp("status-bytes")))
    yield built
    for path in built.values():
        remove_home(path)


@pytest.mark.parametrize("name", NAMES)
def test_status_json_is_byte_equal(homes: dict[str, Path], name: str) -> None:
    got = status_json(homes[name])
    want = (GOLDEN / f"{name}.json").read_text(encoding="utf-8")
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now", n=2))
        pytest.fail(f"status --json of the {name} home changed (regenerate only after reading the diff):\n{diff}")


def _write(root: Path) -> None:  # pragma: no cover - a maintainer's tool
    GOLDEN.mkdir(exist_ok=True)
    for name, path in list(build_homes(root)):  # every home built before the first status (which observes)
        (GOLDEN / f"{name}.json").write_text(status_json(path), encoding="utf-8")
        print(f"wrote {GOLDEN / name}.json")


if __name__ == "__main__":  # pragma: no cover
    import tempfile

    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.core.test_status_bytes --write")
    import os

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = str(Path(tmp) / "user-home")  # as tests/conftest.py does: no real home leaks in
        os.environ.pop("HERMES_HOME", None)
        (Path(tmp) / "user-home").mkdir()
        _write(Path(tmp))
