"""Issue 13 #11: non-UTF-8 bytes in a CLI argument give a clear error, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from memdeck.core.cli import main
from memdeck.core.home import HermesHome


def test_surrogate_escaped_argument_is_a_usage_error(hermes_home: HermesHome, capsys) -> None:
    rc = main(["memory", "add", "--target", "memory", "caf\udce9 latte"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "not valid UTF-8" in err and "0xe9" in err
    assert not hermes_home.memory_file("memory").exists()


def test_real_process_with_latin1_bytes_has_no_traceback(hermes_home: HermesHome) -> None:
    code = "import sys; from memdeck.core.cli import main; sys.exit(main())"
    r = subprocess.run([sys.executable, "-c", code, "memory", "add", "--target", "memory", b"caf\xe9".decode("utf-8", "surrogateescape")],
                       capture_output=True, env={**os.environ, "HERMES_HOME": str(hermes_home.path), "LC_ALL": "C.UTF-8"})
    assert r.returncode == 2, r.stderr
    assert b"Traceback" not in r.stderr and b"not valid UTF-8" in r.stderr
    assert not hermes_home.memory_file("memory").exists()
