"""Every command of the parser against every hostile home (issue 22, "Make regressions impossible").

The homes are the catalogue of ``tests/helpers/hostile.py`` (a non-UTF-8 MemLock file name, a
pending record that is a string, MEMORY.md as a FIFO, a locked state.db, a memdeck.db of another
schema, no home at all...); the commands are every leaf of the real parser
(``tests/helpers/commands.py`` ``command_paths``) with its samples, so a command or a home added
later is run here without anyone remembering to. For each run:

* no traceback, and the process ends (a hang is killed at :data:`HANG_GUARD` and reported);
* the exit code is a documented one (``core/cli/common.py`` ``EXIT_CODES``: 0-5), and 4 for
  every command where there is no home (0 for ``NO_HOME_EXIT_0``: ``completion``, which reads no
  home and runs only there);
* an exit other than 0 and 3 (``scan``'s findings) gives its reason (``memdeck: error:`` /
  ``memdeck: refused:`` on stderr, or the JSON refusal on stdout);
* the home's files are byte-identical afterwards (type, mode and content of everything, links
  not followed) except what the command legitimately writes: nothing for a read-only command,
  nothing for a write that was refused (but the drift guard's snapshot of a file that does not
  round-trip, as Hermes makes it), only its ``WRITES`` patterns for a write that succeeded,
  and never a file the home marks ``frozen`` (memdeck must not "repair" what it could not read);
  memdeck's own directory and ``*.lock`` sidecars aside;
* ``status --json`` works on every home (exit 0 and a JSON object), and runs as a real process
  too (under ``setpriv`` where root's permission override must be dropped). The rest run in
  forked children of this process, two at a time: the same ``main``, about 0.1 s a command
  against about 1 s for a process start each; a home that needs root's permission override
  dropped has the child drop it (``capset``) before ``main``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from memdeck.core.cli.common import EXIT_CODES, EXIT_FINDINGS, EXIT_NO_HOME, EXIT_PARTIAL
from tests.helpers.commands import NO_HOME_EXIT_0, READ_ONLY, READS_NO_HOME, SAMPLES, WRITES, command_paths, fill, home_values
from tests.helpers.hostile import (
    HOMES,
    Hostile,
    Job,
    LockServer,
    Outcome,
    build_base,
    build_hostile,
    copy_home,
    fingerprint,
    holding,
    memdeck_owned,
    remove_home,
    run_jobs,
    run_process,
    unprivileged_prefix,
)

#: seconds after which a command is killed and reported as a hang (never reached by a passing run)
HANG_GUARD = 120.0
#: commands run at once (the suite's process is single-threaded: a second core runs the next one)
PARALLEL = min(2, os.cpu_count() or 1)
#: the exit codes a command may end with here (130/141 need a Ctrl-C or a closed pipe)
DOCUMENTED = {c for c in EXIT_CODES if c < 100}
#: the one file a refused memory write leaves: Hermes' drift guard snapshots a file that does not
#: round-trip before refusing (``core/memory/store.py`` ``_backup``; the same bytes only once)
DRIFT_SNAPSHOT = "memories/*.bak.*"
_REASON = re.compile(r"^memdeck(?: [\w-]+)*: (?:error|refused): \S", re.MULTILINE)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_base(tmp_path_factory.mktemp("hostile-base") / "home")


def _json_refusal(out: str) -> bool:
    try:
        body = json.loads(out)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("success") is False and bool(body.get("error"))


def _allowed(rel: str, patterns: tuple[str, ...]) -> bool:
    """``rel`` (or a file inside it, for a directory) matches one of ``patterns``."""
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel + "/x", p) for p in patterns)


def check(hostile: Hostile, cmd: str, o: Outcome, before: dict, after: dict,
          frozen_paths: tuple[str, ...]) -> list[str]:
    """What is wrong with one run (empty: nothing). ``frozen_paths``: :meth:`Hostile.frozen_in`."""
    what = f"{hostile.name}: memdeck {' '.join(o.argv[2:])}"
    if o.code is None:
        return [f"{what}: did not end within {HANG_GUARD:g} s (killed)"]
    bad: list[str] = []
    if o.traceback:
        bad.append(f"{what}: traceback\n{o.traceback[-1500:]}")
    if o.code not in DOCUMENTED:
        bad.append(f"{what}: exit {o.code}, not a documented code; stderr: {o.err[-300:]}")
    if hostile.source == "home" and o.code != (0 if cmd in NO_HOME_EXIT_0 else EXIT_NO_HOME):
        bad.append(f"{what}: exit {o.code} where there is no home (want {0 if cmd in NO_HOME_EXIT_0 else EXIT_NO_HOME})")
    if o.code not in (0, EXIT_FINDINGS) and not (_REASON.search(o.err) or _json_refusal(o.out)):
        bad.append(f"{what}: exit {o.code} without a reason; stderr: {o.err[-300:]!r}")
    changed = sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))
    frozen = [rel for rel in changed if rel in frozen_paths or any(rel.startswith(f + "/") for f in frozen_paths)]
    if frozen:
        bad.append(f"{what}: changed {frozen}, which no command may change on this home")
    if hostile.source != "home":
        changed = [rel for rel in changed if not memdeck_owned(rel)]
    if cmd in READ_ONLY and changed:
        bad.append(f"{what}: a read-only command changed {changed}")
    elif o.code not in (0, EXIT_FINDINGS, EXIT_PARTIAL) and [rel for rel in changed if not _allowed(rel, (DRIFT_SNAPSHOT,))]:
        bad.append(f"{what}: refused or failed (exit {o.code}) but changed {changed}")
    elif changed:
        extra = [rel for rel in changed if not _allowed(rel, WRITES[cmd])]
        if extra:
            bad.append(f"{what}: changed {extra}, outside what {cmd!r} writes {WRITES[cmd]}")
    return bad


@pytest.mark.parametrize("hostile", HOMES, ids=[h.name for h in HOMES])
def test_every_command_on_a_hostile_home(hostile: Hostile, base: Path, tmp_path: Path) -> None:
    prefix: list[str] | None = None
    if hostile.unprivileged:
        prefix = unprivileged_prefix()
        if prefix is None:
            pytest.skip("this home is hostile only without root's permission override, and setpriv cannot drop it here")
    template = build_hostile(hostile, base, tmp_path / "template")
    before = fingerprint(template)
    frozen = hostile.frozen_in(template)
    values = home_values(str(template))
    problems: list[str] = []
    # read-only commands share a copy per lane (a change there is a finding anyway); a writer gets its own
    shared = [copy_home(template, tmp_path / f"read-only-{i}") for i in range(PARALLEL)]
    jobs: list[Job] = []
    with holding(hostile) as server:
        for n, (cmd, argv) in enumerate((c, a) for c in _commands(hostile) for a in SAMPLES[c]):
            jobs.append(_job(hostile, server, cmd, fill(argv, values), template, before, frozen, shared,
                             tmp_path / f"run{n}", problems))
        run_jobs(jobs, parallel=PARALLEL, timeout=HANG_GUARD, unprivileged=hostile.unprivileged)
        # status --json once more as a real process: the forked runs stand for processes
        home = copy_home(template, tmp_path / "process")
        with server.hold(home):
            o = run_process(["--home", str(home), "status", "--json"], prefix=prefix, timeout=HANG_GUARD)
    problems += check(hostile, "status", o, before, fingerprint(home), frozen)
    if hostile.source != "home":
        problems += _status_json(hostile, o)
    assert len(jobs) == sum(len(SAMPLES[c]) for c in _commands(hostile))
    assert not problems, f"{len(problems)} problem(s) in {len(jobs) + 1} runs:\n" + "\n".join(problems)


def _commands(hostile: Hostile) -> list[str]:
    """Every command of the parser, but those that read no home (:data:`READS_NO_HOME`) only
    where there is no home: their output cannot depend on what a home holds."""
    return [c for c in command_paths() if hostile.source == "home" or c not in READS_NO_HOME]


def test_what_reads_no_home_needs_none() -> None:
    """The commands the hostile homes skip are those whose parser says they need no home."""
    from memdeck.core.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # noqa: SLF001
    needs_none = {name for name, p in sub.choices.items() if p.get_default("needs_home") is False}
    assert needs_none == READS_NO_HOME


def _job(hostile: Hostile, server: LockServer | Any, cmd: str, argv: list[str], template: Path, before: dict,
         frozen: tuple[str, ...], shared: list[Path], own: Path, problems: list[str]) -> Job:
    """One run: on a shared read-only copy or on its own copy, the home's condition held while it
    runs, the files compared when it ended."""
    state: dict[str, Any] = {}

    def prepare() -> list[str]:
        home = shared.pop() if cmd in READ_ONLY else copy_home(template, own)
        hold = server.hold(home)
        hold.__enter__()
        state.update(home=home, hold=hold)
        return ["--home", str(home), *argv]

    def done(o: Outcome) -> None:
        home: Path = state["home"]
        state["hold"].__exit__(None, None, None)
        problems.extend(check(hostile, cmd, o, before, fingerprint(home), frozen))
        if cmd == "status" and "--json" in argv and hostile.source != "home":
            problems.extend(_status_json(hostile, o))
        if cmd in READ_ONLY:
            shared.append(home)
        else:
            remove_home(home)

    return Job(prepare, done)


def _status_json(hostile: Hostile, o: Outcome) -> list[str]:
    """``status --json`` works on a hostile home: exit 0 and one JSON object."""
    if o.code != 0:
        return [f"{hostile.name}: status --json exited {o.code}: {o.err[-300:]}"]
    try:
        body = json.loads(o.out)
    except ValueError as exc:
        return [f"{hostile.name}: status --json printed no JSON ({exc})"]
    return [] if isinstance(body, dict) and "memory" in body else [f"{hostile.name}: status --json: {o.out[:200]}"]


def test_the_catalogue_covers_what_issue_22_lists() -> None:
    """The hostile homes the issue names are in the catalogue (a rename must keep them)."""
    names = {h.name for h in HOMES}
    want = {"memlock-name-not-utf8", "memlock-surrogates", "memlock-control-chars", "memlock-huge-strings",
            "pending-payload-string", "pending-payload-list", "pending-payload-null", "pending-payload-garbage",
            "pending-20mb", "pending-fifo", "pending-symlink-dev-zero", "memory-not-utf8", "memory-bom",
            "memory-nul-bytes", "memory-is-a-directory", "memory-fifo", "memory-50mb", "config-alias-bomb",
            "config-not-a-mapping", "config-huge", "statedb-truncated", "statedb-not-sqlite", "statedb-zero-bytes",
            "statedb-locked", "statedb-missing-tables", "statedb-other-columns", "statedb-fts-missing",
            "deckdb-newer-version", "deckdb-journal-other-columns", "deckdb-not-a-database", "deckdb-read-only",
            "memlock-is-a-file", "memories-mode-000"}
    assert want <= names, want - names
    assert len(names) == len(HOMES), "two homes share a name"


# --------------------------------------------------------------------------- /memdeck in a chat (issue 35)

#: characters a chat answer never carries raw (terminal escapes, C1 controls, bidi overrides)
_RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _forked(fn: Any, *, unprivileged: bool, timeout: float) -> dict[str, Any]:
    """``fn()`` in a forked child (root's permission override dropped for an ``unprivileged`` home),
    killed after ``timeout`` s: ``{"ok": value}``, ``{"traceback": text}`` or ``{"hang": True}``."""
    import select
    import signal
    import traceback

    from tests.helpers.hostile import drop_dac_override

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(r)
        try:
            if unprivileged and not drop_dac_override():
                raise RuntimeError("could not drop CAP_DAC_OVERRIDE")
            payload = {"ok": fn()}
        except BaseException:  # noqa: BLE001 - whatever escaped is the finding
            payload = {"traceback": traceback.format_exc()}
        with os.fdopen(w, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(payload))
        os._exit(0)
    os.close(w)
    ready, _, _ = select.select([r], [], [], timeout)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        return {"hang": True}
    with os.fdopen(r, encoding="utf-8") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"traceback": "the child wrote nothing"}


def _chat(home: Path, sub: str, text: str, pending: str) -> str | None:
    """One ``/memdeck`` answer as the plugin gives it (the terminal's origin: the local user may
    write), or for ``notice`` what the chat notice appends to a reply after Hermes staged ``pending``."""
    from memdeck.core.config import load_config
    from memdeck.core.home import HermesHome

    h = HermesHome(home)
    if sub == "notice":
        from memdeck.core.plugin.chat_notice import ChatNotices

        n = ChatNotices(h, lambda: load_config(h))
        n.post_tool_call(tool_name="memory", result=json.dumps({"staged": True, "pending_id": pending}), session_id="S")
        return n.transform_llm_output(response_text="Done.", session_id="S")
    from memdeck.core.plugin.chat_command import run

    return run(h, text, None)


def _chat_problems(hostile: Hostile, sub: str, text: str, res: dict[str, Any], before: dict, after: dict,
                   frozen_paths: tuple[str, ...]) -> list[str]:
    from memdeck.core.plugin.chat_command import DEFAULT_LIMIT
    from memdeck.core.plugin.chat_notice import notice_line
    from tests.helpers.commands import CHAT_READ_ONLY, CHAT_WRITES

    what = f"{hostile.name}: /memdeck {text}" if sub != "notice" else f"{hostile.name}: the chat notice"
    if res.get("hang"):
        return [f"{what}: did not end within {HANG_GUARD:g} s (killed)"]
    if "traceback" in res:
        return [f"{what}: an exception escaped\n{res['traceback'][-1500:]}"]
    answer = res["ok"]
    bad: list[str] = []
    if sub == "notice":
        n = re.fullmatch(r"Done\.\n\n(\d+) memory writes? waits? for review: /memdeck pending", answer or "")
        if answer is not None and (n is None or answer.split("\n\n", 1)[1] != notice_line(int(n.group(1)))):
            bad.append(f"{what}: {answer!r}")
    elif not isinstance(answer, str) or not answer.strip():
        bad.append(f"{what}: no answer ({answer!r})")
    else:
        if _RAW_CONTROLS.search(answer):
            bad.append(f"{what}: raw control characters in the answer {answer[:200]!r}")
        if len(answer) > DEFAULT_LIMIT:
            bad.append(f"{what}: {len(answer)} chars, over the message limit {DEFAULT_LIMIT}")
    changed = sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))
    frozen = [rel for rel in changed if rel in frozen_paths or any(rel.startswith(f + "/") for f in frozen_paths)]
    if frozen:
        bad.append(f"{what}: changed {frozen}, which nothing may change on this home")
    mine = [rel for rel in changed if not memdeck_owned(rel)] if hostile.source != "home" else changed
    refused = isinstance(answer, str) and answer.startswith(("memdeck: refused", "memdeck: failed", "usage:"))
    if (sub in CHAT_READ_ONLY or sub == "notice") and mine:
        bad.append(f"{what}: a read-only answer changed {mine}")
    elif refused and [rel for rel in mine if not _allowed(rel, (DRIFT_SNAPSHOT,))]:
        bad.append(f"{what}: refused ({answer[:120]!r}) but changed {mine}")
    elif mine and sub in CHAT_WRITES:
        extra = [rel for rel in mine if not _allowed(rel, CHAT_WRITES[sub])]
        if extra:
            bad.append(f"{what}: changed {extra}, outside what {sub!r} writes {CHAT_WRITES[sub]}")
    return bad


@pytest.mark.parametrize("hostile", HOMES, ids=[h.name for h in HOMES])
def test_chat_commands_and_the_notice_on_a_hostile_home(hostile: Hostile, base: Path, tmp_path: Path) -> None:
    """Every ``/memdeck`` sub-command (``tests/helpers/commands.py`` ``CHAT_SAMPLES``) and the chat
    notice's hook on every hostile home, each in a forked child on its own copy with the home's
    condition held: no exception escapes, nothing hangs, the answer is plain text under the message
    limit, and the files change only as the CLI command sharing its core may (nothing for a
    read-only answer or a refusal, never a frozen file)."""
    from tests.helpers.commands import chat_samples

    if hostile.unprivileged and unprivileged_prefix() is None:
        pytest.skip("this home is hostile only without root's permission override, which cannot be dropped here")
    template = build_hostile(hostile, base, tmp_path / "template")
    before = fingerprint(template)
    frozen = hostile.frozen_in(template)
    values = home_values(str(template))
    samples = [*chat_samples(values), ("notice", "")]
    problems: list[str] = []
    with holding(hostile) as server:
        for n, (sub, text) in enumerate(samples):
            home = copy_home(template, tmp_path / f"chat{n}")
            with server.hold(home):
                res = _forked(lambda: _chat(home, sub, text, values["pending"]),
                              unprivileged=hostile.unprivileged, timeout=HANG_GUARD)
            problems += _chat_problems(hostile, sub, text, res, before, fingerprint(home), frozen)
            remove_home(home)
    assert not problems, f"{len(problems)} problem(s) in {len(samples)} chat runs:\n" + "\n".join(problems)
