"""The distribution says what it is: an MIT LICENSE file, shipped, and pyproject's PEP 639 license
fields (issue 22 #13: pyproject said MIT with no LICENSE file, in the deprecated table form)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_mit_license_file_is_there_and_pyproject_names_it() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 the memdeck authors" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND" in text
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["license"] == "MIT"  # an SPDX expression, not the deprecated {text = ...} table
    assert meta["project"]["license-files"] == ["LICENSE"]
    setuptools_req = next(r for r in meta["build-system"]["requires"] if r.startswith("setuptools"))
    assert setuptools_req == "setuptools>=77"  # the first setuptools that reads PEP 639 license fields
