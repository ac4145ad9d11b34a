"""``/memdeck`` in every chat: the review queue and the memory stores through Hermes' slash commands.

Registered by :func:`.entry.register` with ``ctx.register_command("memdeck", ..., args_hint=...)``
(Hermes 0.19 ``hermes_cli/plugins.py`` ``PluginContext.register_command``); the gateway calls the
handler with the text after the command (``gateway/run.py`` ``_handle_message``, "Plugin-registered
slash commands": ``plugin_handler(user_args)``), the CLI likewise (``cli.py`` ``get_plugin_command_handler``).
This module is imported only when a ``/memdeck`` command runs (:func:`.entry.register` imports it
lazily), so the plugin's per-turn hooks never load the memory store.

Sub-commands (:func:`run`, each answer plain text: no terminal escapes, no markup):

* ``pending [PAGE]``: each record: id, action, target, age, state (``clean`` / ``stale`` /
  ``foreign`` / ``refused``, with Hermes' reason, :mod:`..memory.review`), text, threat findings.
* ``approve ID`` / ``approve --all-clean``: :func:`..memory.pending.approve` /
  :func:`..memory.review.approve_all_clean` (a stale record is refused with its reason; a record
  that turns stale mid-bulk is refused; each approval one journaled write ``memdeck undo`` reverts).
* ``reject ID`` / ``reject --stale``: :func:`..memory.pending.reject` / :func:`..memory.review.reject_all_stale`.
* ``edit ID TEXT``: approve one with ``TEXT`` in place of the staged content
  (:func:`..memory.review.edit_and_approve`: the threat scan and the char limit apply to ``TEXT``).
* ``history [N]``: the last ``N`` (default 10, at most 50) memory changes of memdeck's journal,
  with who made them (a chat's platform and sender) and the change id ``revert`` takes.
* ``revert CHANGE_ID``: reverse one change of the history (every writer's; the ids of
  ``memdeck history`` and of ``history`` here) through :func:`..history.revert`, the core of
  ``memdeck revert``: locked, checked, one journaled write that ``memdeck undo`` reverts.
* ``stale``: the open sessions whose frozen memory differs from the files
  (:func:`.dashboard_api.stale_session_rows`, the rows of ``memdeck sessions --stale`` and of the
  dashboard's Memory tab), with what
  live memory delivered and the platform's command for a new session.
* ``memory [PAGE]``: usage of MEMORY.md and USER.md and their entries, numbered.
* ``help``.

Every write's journal row has ``actor="chat"`` and ``detail["origin"]``: ``{"platform", "chat_id",
"user_id", "user_name", "chat_type"}`` as Hermes' ``SessionSource`` gives them (``{"platform":
"cli"}`` from the terminal).

Answers longer than the platform's message limit (:data:`LIMITS`; Hermes 0.19's adapters:
Discord 2,000, Telegram 4,096, ...; 2,000 when unknown) are cut between records and end with
``... N more: /memdeck pending 2``.

Authorisation (Hermes 0.19 and 0.22.2, found in their source; README "Who may decide"):

* Hermes' own ``/memory approve`` / ``reject`` (``gateway/slash_commands.py`` line
  3006, ``_handle_memory_command``) has no check of its own: what gates it is (1) the sender's
  authorisation for the gateway at all (``gateway/run.py`` lines 10041-10052,
  ``_is_user_authorized``: unauthorised senders never reach a command) and (2) the per-platform
  slash access policy at ``gateway/run.py`` lines 10763-10772: ``self._check_slash_access(source,
  canonical)`` (line 13774), i.e. ``gateway/slash_access.py`` ``policy_for_source(config,
  source).can_run(user_id, "memory")``: when ``allow_admin_from`` (``group_allow_admin_from`` in
  groups) is set for the scope, only those admins, or users whose ``user_allowed_commands`` list
  ``memory``, may run ``/memory``; when it is not set, every authorised sender may.
* So ``approve``, ``edit``, ``reject`` and ``revert`` ask that same gateway method for ``memory``
  (:func:`write_denial`); a denied sender gets Hermes' own refusal sentence and nothing is written.
  Read-only sub-commands follow the ordinary rule the gateway already applied to ``/memdeck``
  itself (the same lines 10769-10772 with ``canonical == "memdeck"``: plugin commands are
  ``is_gateway_known_command``).
* Hermes 0.22.2 (the iot build, read in its source): the same two steps, moved
  (``gateway/run_inbound.py``: ``_is_user_authorized_for_source`` after the ``pre_gateway_dispatch``
  hook; ``gateway/run_busy.py`` ``_check_slash_access`` through ``slash_access.policy_for_runner_source``),
  with ``/help`` and ``/whoami`` always open to users under gating, a blank ``chat_type`` taking the
  gated scope, and under ``multiplex_profiles`` the policy of the profile whose bot got the message
  (failing closed for a served profile whose config is not loaded). Its plugin command handler runs
  in the gateway's pool with the message's context copied (``_run_in_executor_with_context``), so
  :mod:`.chat_origin` sees the sender as on 0.19. Its refusal text is ``t("gateway.unauthorized.admin_only")``,
  which the iot wheel (no ``locales/``) leaves as the bare key: :func:`write_denial` then says it in words.
* The handler learns the sender from :mod:`.chat_origin` (the ``pre_gateway_dispatch`` hook). In
  a process that runs Hermes' gateway but without that sender (nothing to check against), writes
  are refused; the terminal (Hermes' CLI, no gateway) is the local user and may write.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import time
from typing import Any

from ..config import Config, load_config
from ..deck import journal
from ..errors import MemdeckError, Refused
from ..home import TARGETS, HermesHome, require_hermes_home
from ..memory.pending import approve, reject
from ..memory.reader import read_memory
from ..memory.review import QueueItem, approve_all_clean, edit_and_approve, reject_all_stale, review_queue
from ..text import age_words, visible
from .chat_origin import ChatOrigin, current

logger = logging.getLogger("memdeck.plugin")

#: Message length per platform (Hermes 0.19 adapters' ``MAX_MESSAGE_LENGTH``, with a margin).
LIMITS = {"discord": 1900, "telegram": 4000, "slack": 3900, "whatsapp": 4000, "signal": 7900,
          "weixin": 1900, "matrix": 3900, "mattermost": 3900}
DEFAULT_LIMIT = 1900
#: sub-commands that write: Hermes' rule for ``/memory`` applies (module docstring)
WRITES = frozenset({"approve", "reject", "edit", "revert"})
#: every sub-command (``help`` aside)
SUBCOMMANDS = ("pending", "memory", "approve", "reject", "edit", "history", "revert", "stale")

HELP = """\
/memdeck - memdeck's review queue in this chat
/memdeck pending [PAGE] - staged memory writes: id, action, state, text, threats
/memdeck approve ID - apply one (a stale record is refused with Hermes' reason)
/memdeck approve --all-clean - apply every clean record, each on its own
/memdeck edit ID TEXT - apply one with TEXT in place of the staged text
/memdeck reject ID - discard one (memdeck undo stages it again)
/memdeck reject --stale - discard every stale record
/memdeck history [N] - the last N memory changes, who made them, their change ids
/memdeck revert CHANGE_ID - reverse one change of the history
/memdeck memory [PAGE] - usage of MEMORY.md and USER.md, entries numbered
/memdeck stale [PAGE] - running sessions whose frozen memory differs from the files
Each approval, rejection or revert is one journaled write: `memdeck undo` on the host reverts it."""


def _platform(origin: ChatOrigin | None) -> str:
    if origin is None:
        return "cli"
    plat = getattr(getattr(origin.event, "source", None), "platform", None)
    return str(getattr(plat, "value", plat) or "unknown")


def origin_detail(origin: ChatOrigin | None) -> dict[str, Any]:
    """Where a decision came from, for the journal: ``{"platform": "telegram", "chat_id": "...",
    "user_id": "...", "user_name": ..., "chat_type": ...}`` (Hermes' ``SessionSource`` fields,
    as given), ``{"platform": "cli"}`` outside the gateway."""
    if origin is None:
        return {"platform": "cli"}
    src = getattr(origin.event, "source", None)
    out: dict[str, Any] = {"platform": _platform(origin)}
    for key in ("chat_id", "user_id", "user_name", "chat_type", "thread_id"):
        val = getattr(src, key, None)
        if val is not None:
            out[key] = str(val)
    return out


def _gateway_running() -> bool:
    return "gateway.run" in sys.modules


def write_denial(origin: ChatOrigin | None) -> str | None:
    """Why this sender may not approve or reject here (Hermes' own words), or None when it may
    (module docstring: the rule of Hermes' ``/memory``)."""
    if origin is None:
        if _gateway_running():
            return "memdeck: refused: the sender of this command is unknown, so approve, edit and reject are not allowed here."
        return None
    gw, src = origin.gateway, getattr(origin.event, "source", None)
    check = getattr(gw, "_check_slash_access", None)
    if src is None or check is None:
        return "memdeck: refused: this gateway does not say who may run /memory, so approve, edit and reject are not allowed here."
    denied = check(src, "memory")
    if not denied:
        return None
    text = visible(str(denied))
    if " " not in text.strip():  # a catalog key Hermes could not translate (0.22.2's iot wheel ships no locales/)
        return (f"memdeck: refused: Hermes does not let this sender run /memory here ({text}), so approve, edit, "
                "reject and revert are not allowed.")
    return f"memdeck: refused: {text}"


def _age(seconds: float | None) -> str:
    words = age_words(seconds)
    return "age unknown" if words == "?" else "staged now" if words == "now" else f"{words} old"


def _clip(text: str, width: int) -> str:
    """One line (line breaks as `` | ``), hidden characters shown as markers (:func:`..text.visible`),
    cut to ``width``."""
    return visible(" | ".join(str(text).splitlines()), width)


def record_block(item: QueueItem, now: float) -> str:
    """One record, a few plain lines."""
    rec = item.record
    head = f"{rec.id} {rec.action or '?'} {rec.target} - {_age(item.age(now))} - {item.state}"
    lines = [head, f"  text: {_clip(rec.text or rec.summary, 300)}"]
    if item.state != "clean" and item.reason:
        lines.append(f"  why: {_clip(item.reason, 300)}")
    if rec.threats:
        lines.append("  threats: " + ", ".join(rec.threats))
    return "\n".join(lines)


def paged(head: str, blocks: list[str], page: int, limit: int, more_cmd: str) -> str:
    """``head`` then the blocks of page ``page`` (1-based), as many as fit under ``limit`` chars
    with room for the footer ``... N more: /memdeck <more_cmd> <page+1>``. A block longer than the
    limit alone is cut."""
    pages: list[list[str]] = []
    cur: list[str] = []
    room = limit - len(head) - 60
    size = 0
    for b in blocks:
        b = b if len(b) <= room else b[: room - 3] + "..."
        if cur and size + len(b) + 1 > room:
            pages.append(cur)
            cur, size = [], 0
        cur.append(b)
        size += len(b) + 1
    if cur:
        pages.append(cur)
    if not pages:
        return head
    page = min(max(page, 1), len(pages))
    body = pages[page - 1]
    out = head + "\n" + "\n".join(body)
    rest = sum(len(p) for p in pages[page:])
    if rest:
        out += f"\n... {rest} more: /memdeck {more_cmd} {page + 1}"
    return out


def _page_arg(args: list[str]) -> int:
    if not args:
        return 1
    try:
        return max(1, int(args[0]))
    except ValueError:
        raise Refused(f"not a page number: {_clip(args[0], 40)}", code="invalid") from None


def cmd_pending(home: HermesHome, cfg: Config, args: list[str], limit: int) -> str:
    page = _page_arg(args)
    items = review_queue(home, cfg)
    if not items:
        return "No memory writes wait for review."
    now = time.time()
    counts: dict[str, int] = {}
    for i in items:
        counts[i.state] = counts.get(i.state, 0) + 1
    head = f"{len(items)} pending memory write{'s' if len(items) != 1 else ''} (" + ", ".join(
        f"{n} {s}" for s, n in sorted(counts.items())) + ")"
    return paged(head, [record_block(i, now) for i in items], page, limit, "pending")


def cmd_memory(home: HermesHome, cfg: Config, args: list[str], limit: int) -> str:
    blocks: list[str] = []
    heads: list[str] = []
    for t in TARGETS:
        st = read_memory(home, cfg, t)
        heads.append(f"{st.path.name}: {st.usage} chars ({st.pct}%), {len(st.entries)} entr{'y' if len(st.entries) == 1 else 'ies'}"
                     + (f" - {st.error}" if st.error else ""))
        blocks.extend(f"{st.path.name} {n}. {_clip(e.text, 300)}" for n, e in enumerate(st.entries, 1))
    return paged("\n".join(heads), blocks, _page_arg(args), limit, "memory")


def cmd_approve(home: HermesHome, cfg: Config, args: list[str], origin: dict[str, Any]) -> str:
    if args == ["--all-clean"]:
        return approve_all_clean(home, cfg, actor="chat", origin=origin).message()
    if len(args) != 1 or args[0].startswith("-"):
        return "usage: /memdeck approve ID | /memdeck approve --all-clean"
    res = approve(home, cfg, args[0], actor="chat", origin=origin)
    jid = getattr(res, "journal_id", None)
    return f"approved {args[0]}: {visible(str(getattr(res, 'message', '')))}" + (
        f" (journal #{jid}; memdeck undo reverts it)" if jid else "")


def cmd_edit(home: HermesHome, cfg: Config, raw_args: str, origin: dict[str, Any]) -> str:
    parts = raw_args.split(None, 2)
    if len(parts) < 3 or not parts[2].strip():
        return "usage: /memdeck edit ID TEXT"
    pid, text = parts[1], parts[2].strip()
    res = edit_and_approve(home, cfg, pid, text, actor="chat", origin=origin)
    jid = getattr(res, "journal_id", None)
    return f"edited and approved {pid}: {visible(str(getattr(res, 'message', '')))}" + (
        f" (journal #{jid}; memdeck undo reverts it)" if jid else "")


def _ago(seconds: float) -> str:
    words = age_words(seconds)
    return "just now" if words == "now" else f"{words} ago"


def _who(row: journal.JournalRow) -> str:
    o = row.detail.get("origin") if isinstance(row.detail, dict) else None
    if isinstance(o, dict) and o.get("platform") not in (None, "cli"):
        return f"{row.actor} ({o.get('platform')} user {o.get('user_id', '?')})"
    return row.actor


def cmd_history(home: HermesHome, args: list[str], limit: int) -> str:
    try:
        n = min(50, max(1, int(args[0]))) if args else 10
    except ValueError:
        raise Refused(f"not a number: {_clip(args[0], 40)}", code="invalid") from None
    rows = journal.entries(home, limit=n, kind="memory")
    changes = _change_ids(home, rows)  # brings the history up to date, even with nothing to show yet
    if not rows:
        return "No memory changes in memdeck's journal."
    now = time.time()
    blocks = []
    for r in rows:
        pid = r.detail.get("pending_id") if isinstance(r.detail, dict) else None
        cids = changes.get(r.journal_id)
        blocks.append(f"#{r.journal_id} {_ago(now - r.ts)} - {r.op} {r.target or ''}"
                      + (f" {pid}" if pid else "") + f" - {_who(r)}" + (" (undone)" if r.undone_by else "")
                      + (f" - change {', '.join(map(str, cids))}" if cids else ""))
    return paged(f"last {len(rows)} memory change{'s' if len(rows) != 1 else ''}, newest first", blocks, 1, limit,
                 "history")


def _change_ids(home: HermesHome, rows: list[journal.JournalRow]) -> dict[int, list[int]]:
    """journal id -> the ids of the history's changes it made (``history.attribution.journal_id``),
    the ids ``revert`` takes; the history is brought up to date first. ``{}`` when it cannot be read."""
    # the submodules by name, not the package's lazy re-exports: the directory plugin vendors only
    # the modules an import statement names (core/plugin/install.py vendored_files)
    from ..history.changes import list_changes
    from ..history.observation import observe

    try:
        observe(home)
        found: dict[int, list[int]] = {}
        wanted = {r.journal_id for r in rows}
        for c in list_changes(home, limit=max(200, 4 * len(rows))):
            jid = c.attribution.get("journal_id") if isinstance(c.attribution, dict) else None
            if isinstance(jid, int) and jid in wanted:
                found.setdefault(jid, []).insert(0, c.change_id)
        return found
    except Exception as exc:  # noqa: BLE001 - the history is an extra: the journal's lines stand without it
        logger.warning("memdeck: /memdeck history: the change history is unreadable (%s)", exc)
        return {}


def cmd_revert(home: HermesHome, cfg: Config, args: list[str], origin: dict[str, Any]) -> str:
    """``revert CHANGE_ID``: :func:`..history.revert` (the core of ``memdeck revert``) with the chat
    origin on its journal row."""
    from ..history.reverting import revert

    if len(args) != 1 or not args[0].lstrip("#").isdigit():
        return "usage: /memdeck revert CHANGE_ID (the change ids of /memdeck history)"
    res = revert(home, cfg, int(args[0].lstrip("#")), actor="chat", origin=origin)
    jid = res.get("journal_id")
    return visible(str(res.get("message", ""))) + (f" (journal #{jid}; memdeck undo reverts it)" if jid else "")


def cmd_stale(home: HermesHome, cfg: Config, args: list[str], limit: int) -> str:
    """``stale [PAGE]``: the open sessions whose frozen memory differs from the files
    (:func:`.dashboard_api.stale_session_rows`, as ``memdeck sessions --stale``)."""
    from ..sessions.statedb import StateDB
    from .dashboard_api import stale_session_rows

    page = _page_arg(args)
    if not home.state_db.exists():
        return "No state.db in this home: no sessions to compare."
    with StateDB(home.state_db) as db:
        st = db.status()
        if not st.ok:
            return f"state.db: {visible(str(st.state))}: {visible(str(st.message))}"
        rows = stale_session_rows(home, cfg, db)
    stale = [r for r in rows if r.get("in_prompt") and r.get("differences")]
    if not stale:
        return f"No running session sees old memory ({len(rows)} open session{'s' if len(rows) != 1 else ''} checked)."
    now = time.time()
    blocks = []
    for r in stale:
        n = int(r["differences"])
        live = r.get("live_memory") or {}
        frozen = r.get("frozen_at")
        when = f"frozen {_ago(now - float(frozen))}" if frozen else "frozen ?"
        line = (f"{_clip(str(r.get('session_id')), 40)} ({_clip(str(r.get('source') or '?'), 20)}) - "
                f"{n} difference{'s' if n != 1 else ''} - {when}")
        mode = live.get("mode")
        if mode and mode != "off":
            line += (f"\n  live memory ({mode}): {live.get('delivered', 0)} delivered, {live.get('waiting', 0)} waiting, "
                     f"{live.get('withheld', 0)} withheld")
        hint = r.get("new_session")
        if hint:
            line += f"\n  new session: {_clip(str(hint), 120)}"
        blocks.append(line)
    head = (f"{len(stale)} of {len(rows)} open session{'s' if len(rows) != 1 else ''} "
            f"see{'s' if len(stale) == 1 else ''} memory that differs from MEMORY.md/USER.md")
    return paged(head, blocks, page, limit, "stale")


def cmd_reject(home: HermesHome, cfg: Config, args: list[str], origin: dict[str, Any]) -> str:
    if args == ["--stale"]:
        return reject_all_stale(home, cfg, actor="chat", origin=origin).message()
    if len(args) != 1 or args[0].startswith("-"):
        return "usage: /memdeck reject ID | /memdeck reject --stale"
    res = reject(home, args[0], actor="chat", origin=origin)
    return f"rejected {args[0]} (journal #{res.get('journal_id')}; memdeck undo stages it again)"


def run(home: HermesHome, raw_args: str, origin: ChatOrigin | None) -> str:
    """Answer one ``/memdeck`` command (module docstring). Never raises for bad input, a refusal or
    a home memdeck cannot read or write (memdeck.db of a newer memdeck, a full disk, a lock held too
    long): each is the answer's one line (``memdeck: refused: ...`` / ``memdeck: error: ...``, as the CLI)."""
    args = (raw_args or "").split()
    sub = args[0].lower() if args else "help"
    rest = args[1:]
    limit = LIMITS.get(_platform(origin), DEFAULT_LIMIT)
    if sub in ("help", "-h", "--help"):
        return HELP
    if sub not in SUBCOMMANDS:
        return f"memdeck: unknown sub-command {_clip(sub, 40)!r}. " + HELP
    if sub in WRITES:
        denied = write_denial(origin)
        if denied:
            return denied
    cfg = load_config(home)
    try:
        if sub in WRITES:
            require_hermes_home(home)  # as the CLI: nothing is created where there is no Hermes home
        if sub == "pending":
            return cmd_pending(home, cfg, rest, limit)
        if sub == "memory":
            return cmd_memory(home, cfg, rest, limit)
        if sub == "history":
            return cmd_history(home, rest, limit)
        if sub == "approve":
            return cmd_approve(home, cfg, rest, origin_detail(origin))
        if sub == "edit":
            return cmd_edit(home, cfg, raw_args, origin_detail(origin))
        if sub == "revert":
            return cmd_revert(home, cfg, rest, origin_detail(origin))
        if sub == "stale":
            return cmd_stale(home, cfg, rest, limit)
        return cmd_reject(home, cfg, rest, origin_detail(origin))
    except Refused as exc:
        return f"memdeck: refused: {visible(exc.reason)}"
    except (MemdeckError, sqlite3.Error, OSError) as exc:  # as the CLI: a reason, never a traceback
        return f"memdeck: error: {_clip(str(exc) or type(exc).__name__, 600)}"


def handler(home: HermesHome, raw_args: str = "") -> str:
    """The command handler :func:`.entry.register` wraps: :func:`run` with this message's sender.
    A sender remembered for another message (its text differs) is not used."""
    origin = current()
    if origin is not None:
        get_args = getattr(origin.event, "get_command_args", None)
        if callable(get_args) and str(get_args()).strip() != (raw_args or "").strip():
            origin = None
    return run(home, raw_args, origin)
