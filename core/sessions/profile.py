"""Which Hermes wrote this home: a :class:`HermesProfile` detected from what the home holds.

Sources (all read-only): ``state.db`` (``schema_version``, tables, columns, the FTS tables'
column lists and ``content=`` option, ``state_meta`` keys), ``config.yaml`` (``_config_version``
at the top level, written only when Hermes saved the config) and ``pending/memory/*.json``
(the fields of staged records). Facts per version: docs/HERMES_VERSIONS.md.

memdeck's verified range is Hermes 0.17.0 (schema 16) to 0.22.2.post1 (schema 31). The profile
lists in plain words what memdeck cannot show or does differently on this home
(:attr:`HermesProfile.degradations`); an empty list means every feature works.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import jsondata
from ..fsio import list_names, read_regular_bytes
from ..hermes_version import HermesVersion
from .side_files import side_files_tracked

#: Schema versions memdeck was verified against -> the Hermes version that writes it
#: (``SCHEMA_VERSION``: 0.17.0 ``hermes_state.py:110``, 0.18.2 ``:125``, 0.19.0 ``:155``,
#: 0.20.1.2 ``hermes_state_common.py:219``, iot 0.21.0.post1 26 too, iot 0.21.3.post1 /
#: 0.21.4.post1 / 0.21.5.post2 30, 0.22.2.post1 ``:283``). Schema 26 is 0.20 or 0.21.0 and schema 30
#: any of 0.21.3-0.21.5: :func:`detect_profile` tells them apart by what else the home holds.
SCHEMA_VERSIONS: tuple[tuple[int, str], ...] = (
    (16, "0.17"), (19, "0.18"), (22, "0.19"), (26, "0.20"), (30, "0.21.3-0.21.5"), (31, "0.22"))
MIN_SCHEMA, MAX_SCHEMA = SCHEMA_VERSIONS[0][0], SCHEMA_VERSIONS[-1][0]
#: ``DEFAULT_CONFIG["_config_version"]`` per version (30, 33, 33, 37, iot 0.21.0.post1 39,
#: iot 0.21.5.post2 46, 50).
CONFIG_VERSIONS: tuple[tuple[int, str], ...] = (
    (30, "0.17"), (33, "0.18-0.19"), (37, "0.20"), (39, "0.21.0"), (46, "0.21.5"), (50, "0.22"))
#: What a schema-26 home of iot 0.21.0 has that 0.20 lacks: a column, a table, state_meta keys.
MARKS_0210 = ("messages._compressed_summary", "gateway_heartbeats", "store_instance_id")
#: What only 0.22 writes: ``messages.message_uid`` (and its backfill marker in ``state_meta``).
MARKS_022 = ("messages.message_uid", "message_uid_backfill")
#: ``state_meta`` keys 0.21/0.22 write on creation (docs/HERMES_VERSIONS.md section 1).
STATE_META_022 = ("store_instance_id", "store_created_at_utc", "message_uid_backfill", "db_file_generation")
#: Pending payload fields memdeck understands (0.17-0.22 ``tools/write_approval.py``, 0.21.5/0.22 ``matched_entry``).
KNOWN_PENDING_FIELDS = frozenset({"action", "target", "content", "old_text", "operations", "matched_entry", "new_text"})
KNOWN_PENDING_ACTIONS = frozenset({"add", "replace", "remove", "patch", "batch"})
#: Display names of the session stores a config can name (:attr:`memdeck.core.config.Config.session_store`).
STORE_NAMES = {"postgresql": "PostgreSQL", "postgres": "PostgreSQL", "sqlite": "SQLite (state.db)"}

#: The label of a home whose files no release memdeck knows writes (its newest rules are applied).
NEWER_UNKNOWN = "newer than memdeck knows"

_CONFIG_VERSION_RE = re.compile(r"^_config_version\s*:\s*['\"]?(\d+)['\"]?\s*(?:#.*)?$", re.MULTILINE)


@dataclass(frozen=True)
class FtsLayout:
    """One FTS5 table: ``columns`` (names, in order), ``content`` (the external content table
    or view, '' for inline content), ``tokenizer`` ('trigram' or 'unicode61')."""

    columns: tuple[str, ...] = ()
    content: str = ""
    tokenizer: str = "unicode61"

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "external_content": self.content or None, "tokenizer": self.tokenizer}


@dataclass(frozen=True)
class HermesProfile:
    """What this home's Hermes is, as far as its files tell.

    Attributes:
        schema_version: ``schema_version.version`` of state.db (None: no state.db or none recorded).
        version: the Hermes version range ("0.22", "between 0.20 and 0.22", "newer than 0.22"),
            or None when nothing tells. version_source: what told it (``state.db schema``,
            ``state_meta``, ``config.yaml _config_version``), '' when unknown.
        config_version: ``_config_version`` of config.yaml, or None.
        tables: state.db table and view names. columns: table -> column names (``sessions``,
            ``messages``, ``system_prompts``).
        fts, fts_trigram: the FTS layouts (None when the table is absent).
        system_prompt_in: ``sessions.system_prompt`` or ``system_prompts`` (schema >= 23: the
            prompt stored once by ``sessions.system_prompt_hash``), '' without a sessions table.
        in_place_compaction: True when ``messages.compacted`` exists (0.18+; 0.17 rotates).
        summary_flag: True when ``messages._compressed_summary`` exists (0.22).
        pending_fields: payload fields found in staged records; pending_actions: their actions.
        degradations: plain sentences, one per thing memdeck cannot show or does differently.
        notes: facts that are not degradations (e.g. "compaction rotates sessions").
        session_store: where this home's Hermes keeps its sessions (``sqlite``: state.db; else
            the store config.yaml names, which memdeck does not read).
    """

    schema_version: int | None = None
    version: str | None = None
    version_source: str = ""
    config_version: int | None = None
    tables: tuple[str, ...] = ()
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fts: FtsLayout | None = None
    fts_trigram: FtsLayout | None = None
    system_prompt_in: str = ""
    in_place_compaction: bool = False
    summary_flag: bool = False
    state_meta_keys: tuple[str, ...] = ()
    pending_fields: tuple[str, ...] = ()
    pending_actions: tuple[str, ...] = ()
    degradations: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    session_store: str = "sqlite"

    @property
    def hermes(self) -> HermesVersion:
        """The :class:`~memdeck.core.hermes_version.HermesVersion` every reader takes for this home."""
        return HermesVersion.of(self.version, self.version_source)

    @property
    def threat_rules(self) -> str | None:
        """The threat rule set of the Hermes that loads this home's memory ('0.17', '0.18', '0.21',
        '0.22'; see :data:`memdeck.core.memory.threats.HERMES_RULESETS`), None when unknown."""
        return self.hermes.threat_rules

    def summary(self) -> str:
        """One line for a health row: version, schema, and how many degradations."""
        who = f"Hermes {self.version}" if self.version else "Hermes version unknown"
        schema = f"schema {self.schema_version}" if self.schema_version is not None else "no state.db schema"
        n = len(self.degradations)
        return f"{who} ({schema}) · " + (f"{n} degradation{'s' if n != 1 else ''}" if n else "fully supported")

    def to_dict(self) -> dict[str, Any]:
        """JSON shape of ``status --json`` key ``hermes`` (docs/STATUS_JSON.md)."""
        return {
            "version": self.version, "version_source": self.version_source or None,
            "schema_version": self.schema_version, "config_version": self.config_version,
            "threat_rules": self.threat_rules, "tables": list(self.tables),
            "columns": {k: list(v) for k, v in self.columns.items()},
            "fts": self.fts.to_dict() if self.fts else None,
            "fts_trigram": self.fts_trigram.to_dict() if self.fts_trigram else None,
            "system_prompt_in": self.system_prompt_in or None, "in_place_compaction": self.in_place_compaction,
            "summary_flag": self.summary_flag, "state_meta_keys": list(self.state_meta_keys),
            "pending_fields": list(self.pending_fields), "pending_actions": list(self.pending_actions),
            "degradations": list(self.degradations), "notes": list(self.notes), "summary": self.summary(),
            "session_store": self.session_store,
        }


def version_for_schema(schema: int | None) -> str | None:
    """Hermes version (range) for a ``schema_version`` (see :data:`SCHEMA_VERSIONS`), before the
    refinements of :func:`detect_profile` (schema 26 may be 0.21.0; 27-29 lie inside 0.21)."""
    if schema is None:
        return None
    for n, v in SCHEMA_VERSIONS:
        if schema == n:
            return v
    if schema > MAX_SCHEMA:
        return f"newer than {SCHEMA_VERSIONS[-1][1]}"
    if schema < MIN_SCHEMA:
        return f"older than {SCHEMA_VERSIONS[0][1]}"
    if 26 < schema < 30:
        return "between 0.21.0 and 0.21.3"
    lower = [v for n, v in SCHEMA_VERSIONS if n < schema][-1]
    upper = next(v for n, v in SCHEMA_VERSIONS if n > schema)
    return f"between {lower} and {upper}"


def store_words(name: str) -> str:
    """A session store's display name ("PostgreSQL" for ``postgresql``; other names as given)."""
    return STORE_NAMES.get(name, name)


def state_db_has_sessions(path: Path) -> bool:
    """Whether state.db at ``path`` holds at least one session row (read-only; False when absent
    or unreadable)."""
    if not Path(path).is_file():
        return False
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def session_store_note(config: Any, home: Any = None) -> str | None:
    """``"sessions are in PostgreSQL: not read"`` (with the config key that says so) when the
    home's config names a session store other than SQLite and ``home``'s state.db holds no
    session, else None: memdeck reads state.db only, so such a home's empty or missing state.db is
    not "no sessions". async-hermes-agent 0.20.4.1's CLI, gateway and agent all use state.db (only
    an application embedding ``hermes_state_postgres.SessionDB`` uses PostgreSQL), so a
    ``database.postgres`` section beside a state.db with sessions means nothing moved."""
    name = getattr(config, "session_store", "sqlite") or "sqlite"
    if name == "sqlite":
        return None
    if home is not None:
        with side_files_tracked(Path(home.state_db)):
            if state_db_has_sessions(Path(home.state_db)):
                return None
    return (f"sessions are in {store_words(name)}: not read (config.yaml {config.session_store_source}); "
            "sessions, recall, compactions and the audit of the active region are not shown")


def _fts_layout(conn: sqlite3.Connection, name: str) -> FtsLayout | None:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    if not row or not isinstance(row[0], str):
        return None
    sql = row[0]
    cols = tuple(r[1] for r in conn.execute(f'PRAGMA table_info("{name}")'))
    m = re.search(r"content\s*=\s*['\"]([^'\"]*)['\"]", sql)
    tok = "trigram" if re.search(r"tokenize\s*=\s*['\"]?trigram", sql) else "unicode61"
    return FtsLayout(cols, m.group(1) if m else "", tok)


def _read_db(path: Path) -> dict[str, Any]:
    """Raw facts of state.db (empty dict when absent or unreadable)."""
    if not path.is_file():
        return {}
    with side_files_tracked(path):
        return _read_db_facts(path)


def _read_db_facts(path: Path) -> dict[str, Any]:
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error as exc:
        return {"error": str(exc)}
    try:
        tables = tuple(sorted(r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")))
        cols = {t: tuple(r[1] for r in conn.execute(f'PRAGMA table_info("{t}")'))
                for t in ("sessions", "messages", "system_prompts") if t in tables}
        schema = None
        if "schema_version" in tables:
            r = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
            schema = int(r[0]) if r and r[0] is not None else None
        meta: tuple[str, ...] = ()
        if "state_meta" in tables:
            meta = tuple(sorted(str(r[0]) for r in conn.execute("SELECT key FROM state_meta")))
        return {"tables": tables, "columns": cols, "schema": schema, "meta": meta,
                "fts": _fts_layout(conn, "messages_fts") if "messages_fts" in tables else None,
                "tri": _fts_layout(conn, "messages_fts_trigram") if "messages_fts_trigram" in tables else None}
    except (sqlite3.Error, ValueError, TypeError) as exc:
        return {"error": str(exc)}
    finally:
        conn.close()


def _config_version(path: Path) -> int | None:
    try:
        m = _CONFIG_VERSION_RE.search(read_regular_bytes(path).decode("utf-8-sig", errors="replace"))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _pending(directory: Path) -> tuple[set[str], set[str]]:
    from ..memory.pending import (
        MAX_PENDING_BYTES,  # here: a recall process never imports the memory write code (issue 23)
    )

    fields: set[str] = set()
    actions: set[str] = set()
    try:
        paths = [directory / n for n in list_names(directory, ".json")[0][:500]]
    except OSError:
        return fields, actions
    for p in paths:
        try:
            raw = read_regular_bytes(p, max_bytes=MAX_PENDING_BYTES)
            payload = jsondata.loads(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw).get("payload")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(payload, dict):
            continue
        ops = payload.get("operations") if payload.get("action") == "batch" else None
        for op in [payload] + [o for o in (ops if isinstance(ops, list) else []) if isinstance(o, dict)]:
            fields.update(str(k) for k in op)
            if isinstance(op.get("action"), str):
                actions.add(op["action"])
    return fields, actions


def _version(schema: int | None, tables: tuple[str, ...], mcols: set[str], meta: tuple[str, ...],
             cfg: int | None, fields: set[str]) -> tuple[str | None, str]:
    """``(version, what told it)`` from what the home shows (docs/HERMES_VERSIONS.md):

    * the schema (:data:`SCHEMA_VERSIONS`); schema 26 is 0.21.0 when any of :data:`MARKS_0210` is
      present (0.20 has none); schema 30 is 0.21.5 when a staged record carries ``matched_entry``
      (0.21.5 pins staged writes; 0.21.3/0.21.4 do not) or ``_config_version`` is 46;
    * a schema memdeck has no row for, but ``messages.message_uid`` / ``message_uid_backfill``
      (only 0.22 writes them): 0.22;
    * no schema: ``config.yaml`` ``_config_version`` (:data:`CONFIG_VERSIONS`);
    * :data:`NEWER_UNKNOWN` when the home shows what no release memdeck knows writes: a
      ``_config_version`` above the newest known, or schema 30 (which upstream's state.db files
      write too) with 0.22's marks or a ``_config_version`` above iot 0.21.5's 46.
    """
    version = version_for_schema(schema)
    if schema is None:
        if cfg is None:
            return None, ""
        for n, v in CONFIG_VERSIONS:
            if cfg == n:
                return v, "config.yaml _config_version"
        if cfg > CONFIG_VERSIONS[-1][0]:
            return f"newer than {CONFIG_VERSIONS[-1][1]}", "config.yaml _config_version"
        return None, ""
    present = {f"messages.{c}" for c in mcols} | set(tables) | set(meta)
    if cfg is not None and cfg > CONFIG_VERSIONS[-1][0]:
        return NEWER_UNKNOWN, (f"state.db schema {schema} + config.yaml _config_version {cfg} (newer than "
                               f"{CONFIG_VERSIONS[-1][0]}, Hermes {CONFIG_VERSIONS[-1][1]})")
    if schema == 26 and any(m in present for m in MARKS_0210):
        found = [m for m in MARKS_0210 if m in present]
        return "0.21.0", "state.db schema 26 + " + ", ".join(found)
    if schema == 30:
        if "matched_entry" in fields:
            return "0.21.5", "state.db schema 30 + pending records with matched_entry"
        if cfg == 46:
            return "0.21.5", "state.db schema 30 + config.yaml _config_version 46"
        # schema 30 is also what upstream's state.db files write: iot 0.21.3-0.21.5 write no
        # message_uid and a _config_version of at most 46; anything beyond is a Hermes memdeck does not know
        beyond = [m for m in MARKS_022 if m in present]
        if cfg is not None and cfg > 46:
            beyond.append(f"config.yaml _config_version {cfg}")
        if beyond:
            return NEWER_UNKNOWN, "state.db schema 30 + " + ", ".join(beyond) + " (no release memdeck knows writes both)"
    if version is not None and version.startswith("between") and any(m in present for m in MARKS_022):
        return "0.22", "state.db " + ", ".join(m for m in MARKS_022 if m in present)
    return version, "state.db schema"


def detect_profile(home: Any) -> HermesProfile:
    """Detect the :class:`HermesProfile` of ``home`` (a :class:`memdeck.core.home.HermesHome`).

    Reads state.db read-only (``mode=ro``), config.yaml and the pending records. Never raises;
    an unreadable state.db is one degradation sentence.
    """
    db = _read_db(Path(home.state_db))
    cfg = _config_version(Path(home.path) / "config.yaml")
    fields, actions = _pending(Path(home.pending_dir))
    from ..config import load_config

    config = load_config(home)
    deg: list[str] = []
    notes: list[str] = []
    store_note = session_store_note(config, home)
    if store_note:
        deg.append(store_note)
    elif config.session_store != "sqlite":
        notes.append(f"config.yaml {config.session_store_source} is set, but state.db holds the sessions: "
                     "async-hermes-agent's CLI, gateway and agent write state.db (only an application embedding "
                     "it uses PostgreSQL); state.db is read")
    if "error" in db:
        deg.append(f"state.db could not be read ({db['error']}): sessions, recall and the audit are not shown")
    tables: tuple[str, ...] = db.get("tables", ())
    cols: dict[str, tuple[str, ...]] = db.get("columns", {})
    schema = db.get("schema")
    meta: tuple[str, ...] = db.get("meta", ())
    scols, mcols = set(cols.get("sessions", ())), set(cols.get("messages", ()))
    version, source = _version(schema, tables, mcols, meta, cfg, fields)
    prompt_in = ""
    if "sessions" in tables:
        if "system_prompt_hash" in scols and "system_prompts" in tables:
            prompt_in = "system_prompts"
            if not {"hash", "prompt"} <= set(cols.get("system_prompts", ())):
                deg.append("system_prompts lacks hash/prompt columns: the audit cannot see the system prompt, "
                           "so anchors kept alive only by the memory block read as drifted")
        elif "system_prompt" in scols:
            prompt_in = "sessions.system_prompt"
        else:
            deg.append("sessions has no system_prompt column: the audit cannot see the system prompt")
    if schema is not None and schema > MAX_SCHEMA:
        deg.append(f"schema {schema} is newer than memdeck knows ({MAX_SCHEMA}, Hermes 0.22): tables and columns "
                   "added after 0.22 are not shown, and recall, the audit and compaction detection may miss rows "
                   "they describe")
    elif schema is not None and schema < MIN_SCHEMA:
        deg.append(f"schema {schema} is older than memdeck was verified with ({MIN_SCHEMA}, Hermes 0.17): "
                   "missing columns are treated as absent")
    elif version == NEWER_UNKNOWN:
        deg.append(f"this home was written by a Hermes memdeck does not know ({source}): the rules of Hermes "
                   f"{SCHEMA_VERSIONS[-1][1]} are applied, and figures labelled as Hermes' own may differ")
    elif schema is not None and version and version.startswith("between"):
        notes.append(f"schema {schema} lies between versions memdeck was verified with ({version})")
    if tables and "messages" in tables:
        if "active" not in mcols:
            deg.append("messages has no active column: every row is treated as active (rewound rows are shown)")
        if "compacted" not in mcols:
            notes.append("no in-place compaction (Hermes 0.17): a compaction ends the session and continues in a "
                         "child session; memdeck follows the rotation")
        if "api_content" not in mcols:
            deg.append("messages has no api_content column (Hermes 0.17 / 0.18): what a memory provider or a plugin "
                       "appended to each user turn is not recorded, so Context cannot show what was injected")
        if "messages_fts" not in tables:
            deg.append("no messages_fts: recall falls back to LIKE (no ranking, slower on large homes)")
        if "messages_fts_trigram" not in tables:
            deg.append("no messages_fts_trigram: CJK recall uses LIKE")
    fts, tri = db.get("fts"), db.get("tri")
    if tri is not None and "tool_calls" not in tri.columns and len(tri.columns) > 1:
        notes.append("the trigram index holds no tool calls (Hermes 0.22): CJK recall does not find tool-call "
                     "text, as in Hermes itself")
    unknown_fields = sorted(fields - KNOWN_PENDING_FIELDS)
    if unknown_fields:
        deg.append("pending records carry fields memdeck does not know (" + ", ".join(unknown_fields) +
                   "): they are shown but approving them may not match the Hermes that staged them")
    unknown_actions = sorted(actions - KNOWN_PENDING_ACTIONS)
    if unknown_actions:
        deg.append("pending records use actions memdeck does not know (" + ", ".join(unknown_actions) +
                   "): they are listed as malformed and cannot be approved")
    profile = HermesProfile(
        schema_version=schema, version=version, version_source=source, config_version=cfg, tables=tables,
        columns=dict(cols), fts=fts, fts_trigram=tri, system_prompt_in=prompt_in,
        in_place_compaction="compacted" in mcols, summary_flag="_compressed_summary" in mcols,
        state_meta_keys=meta, pending_fields=tuple(sorted(fields)), pending_actions=tuple(sorted(actions)),
        degradations=tuple(deg), notes=tuple(notes),
        session_store=config.session_store if store_note else "sqlite")
    rules = profile.threat_rules
    if rules is not None and rules != "0.18":
        from ..memory.threats import HERMES_RULESETS

        profile = HermesProfile(**{**profile.__dict__, "notes": profile.notes + (
            f"threat rules differ from memdeck's: {HERMES_RULESETS[rules]}; where the verdicts differ both are "
            "shown",)})
    return profile


def home_version(home: Any) -> HermesVersion:
    """The :class:`~memdeck.core.hermes_version.HermesVersion` of ``home`` (:func:`detect_profile`);
    the unknown value when detection fails. Never raises."""
    try:
        return detect_profile(home).hermes
    except Exception:  # noqa: BLE001 - an undetectable home is read by the default rules, said by the value
        return HermesVersion()


def threat_differences(profile: HermesProfile | None, texts: Any) -> list[dict[str, Any]]:
    """Where memdeck's strict verdict differs from the verdict of the Hermes that loads the file.

    Args:
        profile: the home's profile (None or an unknown version: nothing to compare, ``[]``).
        texts: iterable of ``(where, text)``: ``where`` names the place ("memory", "user",
            "pending <id>").

    Returns:
        ``[{"where", "text", "memdeck": [ids], "hermes": [ids], "rules", "rules_text"}]``, one
        per text whose verdicts differ, in input order.
    """
    from ..memory.threats import compare_verdicts

    rules = profile.threat_rules if profile is not None else None
    if rules is None:
        return []
    out = []
    for where, text in texts:
        if not text:
            continue
        c = compare_verdicts(text, rules)
        if c["differs"]:
            out.append({"where": where, "text": text, "memdeck": c["memdeck"], "hermes": c["hermes"],
                        "rules": rules, "rules_text": c["rules_text"]})
    return out
