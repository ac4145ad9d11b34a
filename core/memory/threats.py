"""Threat scan of memory text: Hermes 0.19's strict scope, written independently.

Detection rules reproduce Hermes 0.19 ``tools/threat_patterns.py`` (``_PATTERNS`` :63-135,
``INVISIBLE_CHARS`` :141-159, ``scan_for_threats`` :207-255, ``first_threat_message``
:258-276) at the ``"strict"`` scope: 36 pattern ids plus 17 invisible code points. For every
text, the *set of ids* :func:`scan` reports is the set Hermes reports, with these deliberate
differences (each checked by ``tests/interop/test_threats_interop.py``):

* the whole text is scanned; Hermes truncates to its first 65,536 chars (``MAX_SCAN_CHARS``);
* every finding carries a span, and all occurrences are reported (Hermes: ids only);
* order is deterministic: invisible characters first by position, then patterns in Hermes'
  declaration order, each by position (Hermes orders invisible ids by ``set`` iteration order,
  so with several invisible characters its *first* finding may differ from ours).

How the scan works (same as Hermes): invisible characters are looked for on the raw text;
the text is then NFKC-normalised (full-width ``ｃａｔ`` -> ``cat``) and every pattern is applied
case-insensitively (Python ``re.IGNORECASE``) to the normalised text.

No pattern is ReDoS-prone: Hermes' ``[^\\n]{0,2048}``-style gaps cost up to 2,048 steps per
candidate start (tens of seconds on a 1 MB hostile text); here the nine gap patterns are
evaluated as *chains* of anchored cores joined by gap constraints (one pass per core plus
binary searches), and the filler patterns use possessive quantifiers that cannot backtrack
inside a word or a whitespace run. The result is the same match/no-match decision.

Spans: ``Finding.start``/``end`` are offsets in the **raw** text (Python ``str`` indices,
chars). When the text is already NFKC-normal (the usual case) they are exact. Otherwise the
text is cut into segments that normalise independently (a segment starts at any character
that cannot combine with what precedes it); a span edge that falls inside a segment widens
to the whole raw segment, so a span always covers the raw characters that produced the
match. Invisible-character findings: one per run of the same character, exact.
Span semantics: leftmost start, non-overlapping, and for gap patterns the earliest end (Hermes'
regexes would report the greedy extent; only detection is compared).
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "Finding",
    "PATTERN_IDS",
    "INVISIBLE_CHARS",
    "scan",
    "scan_cached",
    "scan_ids",
    "pattern_ids",
    "threat_message",
    "invisible_id",
]


@dataclass(frozen=True)
class Finding:
    """One threat finding.

    Attributes:
        pattern_id: one of :data:`PATTERN_IDS`, or ``"invisible_unicode_U+XXXX"``.
        start, end: span in the raw (un-normalised) text, in chars (``text[start:end]``).
        excerpt: the raw text of the span, cut to 80 chars (``"..."`` appended when cut).
    """

    pattern_id: str
    start: int
    end: int
    excerpt: str

    def to_dict(self) -> dict[str, object]:
        return {"id": self.pattern_id, "start": self.start, "end": self.end, "excerpt": self.excerpt}


#: The 17 invisible / bidi code points of Hermes 0.19 (``threat_patterns.py:141-159``).
INVISIBLE_CHARS: frozenset[str] = frozenset(
    chr(cp)
    for cp in (
        0x200B, 0x200C, 0x200D,  # zero-width space / non-joiner / joiner
        0x2060,  # word joiner
        0x2062, 0x2063, 0x2064,  # invisible times / separator / plus
        0xFEFF,  # zero-width no-break space (BOM)
        0x202A, 0x202B, 0x202C, 0x202D, 0x202E,  # LRE RLE PDF LRO RLO
        0x2066, 0x2067, 0x2068, 0x2069,  # LRI RLI FSI PDI
    )
)

_INVISIBLE_RUN = re.compile("([" + "".join(sorted(INVISIBLE_CHARS)) + "])\\1*")

# Up to eight filler words between key tokens (Hermes' ``_FILLER``). Possessive: a filler word
# is always followed by whitespace and the whitespace by a word character, so giving chars back
# can never produce a match, and the engine is told not to try.
_W = r"(?:\w++\s++){0,8}"

# Plain regex patterns: (id, regex). Semantics equal Hermes' for match/no-match.
_REGEX_SPECS: dict[str, str] = {
    "prompt_injection": rf"ignore\s++{_W}(?:previous|all|above|prior)\s++{_W}instructions",
    "sys_prompt_override": r"system\s++prompt\s++override",
    "disregard_rules": rf"disregard\s++{_W}(?:your|all|any)\s++{_W}(?:instructions|rules|guidelines)",
    "bypass_restrictions": (
        rf"act\s++as\s++(?:if|though)\s++{_W}you\s++{_W}(?:have\s++no|don't\s++have)\s++{_W}"
        r"(?:restrictions|limits|rules)"
    ),
    "deception_hide": rf"do\s++not\s++{_W}tell\s++{_W}the\s++user",
    "role_hijack": rf"you\s++are\s++{_W}now\s++(?:a|an|the)\s",
    "role_pretend": rf"pretend\s++{_W}(?:you\s++are|to\s++be)\s",
    "leak_system_prompt": rf"output\s++{_W}(?:system|initial)\s++prompt",
    "remove_filters": rf"(?:respond|answer|reply)\s++without\s++{_W}(?:restrictions|limitations|filters|safety)",
    "fake_update": rf"you\s++have\s++been\s++{_W}(?:updated|upgraded|patched)\s++to",
    "identity_override": r"\bname\s++yourself\s++\w++",
    "c2_node_registration": r"register\s++(?:as\s++)?a?\s*+node",
    "c2_heartbeat": r"(?:heartbeat|beacon|check[\s\-]?in)\s++(?:to|with)\s",
    "c2_task_pull": r"pull\s++(?:down\s++)?(?:new\s++)?task(?:ing|s)?\b",
    "c2_network_connect": r"connect\s++to\s++the\s++network\b",
    "forced_action": r"you\s++must\s++(?:\w++\s++){0,3}(?:register|connect|report|beacon)\b",
    "anti_forensic_oneliner": r"only\s++use\s++one[\s\-]?liners?\b",
    "anti_forensic_disk": rf"never\s++{_W}(?:create|write)\s++{_W}(?:script|file)\s++{_W}disk",
    "env_var_unset_agent": r"unset\s++\w*?(?:CLAUDE|CODEX|HERMES|AGENT|OPENAI|ANTHROPIC)",
    "known_c2_framework": r"\b(?:cobalt\s*+strike|sliver|havoc|mythic|metasploit|brainworm)\b",
    "c2_explicit": r"\bc2\s++(?:server|channel|infrastructure|beacon)\b",
    "c2_explicit_long": r"\bcommand\s++and\s++control\b",
    "context_exfil": (
        rf"(?:include|output|print|share)\s++{_W}"
        r"(?:conversation|chat\s++history|previous\s++messages|full\s++context|entire\s++context)"
    ),
    "ssh_backdoor": r"authorized_keys",
    "ssh_access": r"\$HOME/\.ssh|~/\.ssh",
    "hermes_env": r"\$HOME/\.hermes/\.env|~/\.hermes/\.env",
    "hardcoded_secret": r"(?:api[_-]?key|token|secret|password)\s*+[=:]\s*+[\"'][A-Za-z0-9+/=_-]{20}",
}

# Gap patterns, as chains of cores. Link modes: "N" plain gap; "L" whitespace run then gap;
# "LR" whitespace run, gap, whitespace run. Each link: (mode, max gap chars, forbidden char).
_CHAIN_SPECS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, int, str], ...]]] = {
    # <!-- [^>]{0,512} keyword [^>]{0,512} -->
    "html_comment_injection": (
        (r"<!--", r"ignore|override|system|secret|hidden", r"-->"),
        (("N", 512, ">"), ("N", 512, ">")),
    ),
    # <div style=" [^>]{0,2048} display:none
    "hidden_div": (
        (r"<\s*+div\s++style\s*+=\s*+[\"']", r"display\s*+:\s*+none"),
        (("N", 2048, ">"),),
    ),
    # translate \s+ [^\n]{0,512} \s+ into \s+ [^\n]{0,512} \s+ and \s+ (execute|run|eval)
    "translate_execute": (
        (r"translate", r"into", r"and\s++(?:execute|run|eval)"),
        (("LR", 512, "\n"), ("LR", 512, "\n")),
    ),
    "exfil_curl": (
        (r"curl", r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)"),
        (("L", 2048, "\n"),),
    ),
    "exfil_wget": (
        (r"wget", r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)"),
        (("L", 2048, "\n"),),
    ),
    "read_secrets": (
        (r"cat", r"\.env|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc"),
        (("L", 2048, "\n"),),
    ),
    "send_to_url": (
        (r"send|post|upload|transmit", r"(?:to|at)\s++https?://"),
        (("LR", 2048, "\n"),),
    ),
    "agent_config_mod": (
        (r"update|modify|edit|write|change|append|add\s++to", r"AGENTS\.md|CLAUDE\.md|\.cursorrules|\.clinerules"),
        (("L", 2048, "\n"),),
    ),
    "hermes_config_mod": (
        (r"update|modify|edit|write|change|append|add\s++to", r"\.hermes/(?:config\.yaml|SOUL\.md)"),
        (("L", 2048, "\n"),),
    ),
}

# Literals every match of a pattern must contain, as groups of alternatives (all groups must
# have one alternative present in the case-folded text). A cheap ``str`` search skips a
# pattern whose literals are absent; the regex decides otherwise. Never changes a result.
_REQUIRED: dict[str, tuple[tuple[str, ...], ...]] = {
    "prompt_injection": (("ignore",), ("instructions",)),
    "sys_prompt_override": (("override",),),
    "disregard_rules": (("disregard",),),
    "bypass_restrictions": (("act",), ("restrictions", "limits", "rules")),
    "html_comment_injection": (("<!--",), ("-->",)),
    "hidden_div": (("div",), ("none",)),
    "translate_execute": (("translate",), ("into",)),
    "deception_hide": (("tell",), ("user",)),
    "role_hijack": (("now",), ("you",)),
    "role_pretend": (("pretend",),),
    "leak_system_prompt": (("output",), ("prompt",)),
    "remove_filters": (("without",),),
    "fake_update": (("been",),),
    "identity_override": (("yourself",),),
    "c2_node_registration": (("register",), ("node",)),
    "c2_heartbeat": (("heartbeat", "beacon", "check"),),
    "c2_task_pull": (("pull",),),
    "c2_network_connect": (("network",),),
    "forced_action": (("must",),),
    "anti_forensic_oneliner": (("liner",),),
    "anti_forensic_disk": (("disk",),),
    "env_var_unset_agent": (("unset",),),
    "known_c2_framework": (("cobalt", "sliver", "havoc", "mythic", "metasploit", "brainworm"),),
    "c2_explicit": (("c2",),),
    "c2_explicit_long": (("control",),),
    "exfil_curl": (("curl",), ("$",)),
    "exfil_wget": (("wget",), ("$",)),
    "read_secrets": (("cat",),),
    "send_to_url": (("http",),),
    "context_exfil": (("conversation", "history", "messages", "context"),),
    "ssh_backdoor": (("authorized_keys",),),
    "ssh_access": ((".ssh",),),
    "hermes_env": ((".hermes/.env",),),
    "agent_config_mod": (("agents.md", "claude.md", ".cursorrules", ".clinerules"),),
    "hermes_config_mod": ((".hermes/",),),
    "hardcoded_secret": (("key", "token", "secret", "password"),),
}

# Non-ASCII chars that Python's ``re.IGNORECASE`` treats as equal to an ASCII letter (after
# NFKC; checked over every code point by tests/core/test_threats.py).
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def casefold_ascii(text: str) -> str:
    """Lower-case ``text`` the way ``re.IGNORECASE`` compares it with ASCII letters."""
    return text.translate(_FOLD).lower()


#: The 36 pattern ids of Hermes 0.19's strict scope, in Hermes' declaration order.
PATTERN_IDS: tuple[str, ...] = (
    "prompt_injection", "sys_prompt_override", "disregard_rules", "bypass_restrictions",
    "html_comment_injection", "hidden_div", "translate_execute", "deception_hide",
    "role_hijack", "role_pretend", "leak_system_prompt", "remove_filters", "fake_update",
    "identity_override", "c2_node_registration", "c2_heartbeat", "c2_task_pull",
    "c2_network_connect", "forced_action", "anti_forensic_oneliner", "anti_forensic_disk",
    "env_var_unset_agent", "known_c2_framework", "c2_explicit", "c2_explicit_long",
    "exfil_curl", "exfil_wget", "read_secrets", "send_to_url", "context_exfil",
    "ssh_backdoor", "ssh_access", "hermes_env", "agent_config_mod", "hermes_config_mod",
    "hardcoded_secret",
)

assert len(PATTERN_IDS) == 36 and set(PATTERN_IDS) == set(_REGEX_SPECS) | set(_CHAIN_SPECS) == set(_REQUIRED)

_FLAGS = re.IGNORECASE
_COMPILED_REGEX = {pid: re.compile(rx, _FLAGS) for pid, rx in _REGEX_SPECS.items()}
_COMPILED_CHAINS = {
    pid: (tuple(re.compile(f"(?=({c}))", _FLAGS) for c in cores), links) for pid, (cores, links) in _CHAIN_SPECS.items()
}
_WS_RUN = re.compile(r"\s+")


def invisible_id(ch: str) -> str:
    """The finding id Hermes uses for an invisible char: ``"invisible_unicode_U+200B"``."""
    return f"invisible_unicode_U+{ord(ch):04X}"


class _Text:
    """Per-scan helpers over the normalised text: forbidden-char positions and whitespace runs."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._forbidden: dict[str, list[int]] = {}
        self._ws_starts: list[int] | None = None
        self._ws_ends: list[int] = []

    def forbidden(self, ch: str) -> list[int]:
        got = self._forbidden.get(ch)
        if got is None:
            got = [m.start() for m in re.finditer(re.escape(ch), self.text)]
            self._forbidden[ch] = got
        return got

    def last_forbidden_before(self, ch: str, pos: int) -> int:
        """Index of the last ``ch`` strictly before ``pos``, or -1."""
        lst = self.forbidden(ch)
        i = bisect.bisect_left(lst, pos)
        return lst[i - 1] if i else -1

    def _runs(self) -> None:
        if self._ws_starts is None:
            starts, ends = [], []
            for m in _WS_RUN.finditer(self.text):
                starts.append(m.start())
                ends.append(m.end())
            self._ws_starts, self._ws_ends = starts, ends

    def ws_end_after(self, pos: int) -> int:
        """End of the whitespace run starting at ``pos`` (``pos`` itself when none)."""
        self._runs()
        assert self._ws_starts is not None
        i = bisect.bisect_left(self._ws_starts, pos)
        if i < len(self._ws_starts) and self._ws_starts[i] == pos:
            return self._ws_ends[i]
        return pos

    def ws_start_before(self, pos: int) -> int:
        """Start of the whitespace run ending at ``pos`` (``pos`` itself when none)."""
        self._runs()
        i = bisect.bisect_left(self._ws_ends, pos)
        if i < len(self._ws_ends) and self._ws_ends[i] == pos:
            assert self._ws_starts is not None
            return self._ws_starts[i]
        return pos


def _chain_matches(tx: _Text, cores: tuple[re.Pattern[str], ...], links: tuple[tuple[str, int, str], ...]) -> list[tuple[int, int]]:
    """Every (start, end) of a non-overlapping, leftmost match of a core chain.

    Each core is found at every start position (cores may overlap, e.g. ``write``/``edit`` in
    ``writedit``); each link is then resolved with binary searches over the previous level's
    occurrences sorted by their link key, so the cost is O((occurrences) log n).
    """
    text = tx.text
    occ = [[(m.start(1), m.end(1)) for m in core.finditer(text)] for core in cores]
    if any(not o for o in occ):
        return []
    prev = occ[0]
    prev_cs: list[int | None] = [s for s, _ in prev]
    for (mode, limit, forbid), cur in zip(links, occ[1:]):
        # (key, end, chain start) of each usable previous occurrence, sorted by key:
        # key = end of the core ("N") or end of the whitespace run after it ("L", "LR").
        rows: list[tuple[int, int, int]] = []
        for (_s, e), cs in zip(prev, prev_cs):
            if cs is None:
                continue
            if mode == "N":
                rows.append((e, e, cs))
            else:
                p = tx.ws_end_after(e)
                if p > e:
                    rows.append((p, e, cs))
        rows.sort()
        keys = [r[0] for r in rows]
        cur_cs: list[int | None] = []
        for ys, _ye in cur:
            best: int | None = None
            if mode == "LR":
                q = tx.ws_start_before(ys)
                if q < ys:
                    lo_val = max(q - limit, tx.last_forbidden_before(forbid, q) + 1)
                    lo = bisect.bisect_left(keys, lo_val)
                    hi = bisect.bisect_right(keys, q - 1)  # p < q: the gap has a non-space char
                    if lo < hi:
                        best = min(r[2] for r in rows[lo:min(hi, lo + 64)])
                    # the whole region is one whitespace run shared by both \s+ (>= 2 chars)
                    lo2 = bisect.bisect_left(keys, ys)
                    hi2 = bisect.bisect_right(keys, ys)
                    for _k, e, cs in rows[lo2:min(hi2, lo2 + 64)]:
                        if q <= e <= ys - 2 and (best is None or cs < best):
                            best = cs
            else:
                lo_val = max(ys - limit, tx.last_forbidden_before(forbid, ys) + 1)
                lo = bisect.bisect_left(keys, lo_val)
                hi = bisect.bisect_right(keys, ys)
                if lo < hi:
                    best = min(r[2] for r in rows[lo:min(hi, lo + 64)])
            cur_cs.append(best)
        prev, prev_cs = cur, cur_cs
    out: list[tuple[int, int]] = []
    last_end = -1
    for (_s, e), cs in zip(prev, prev_cs):
        if cs is not None and cs >= last_end:
            out.append((cs, e))
            last_end = e
    return out


def _regex_matches(rx: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in rx.finditer(text)]


# ---------------------------------------------------------------------------------------
# NFKC with an offset map back to the raw text


def _may_start_segment(ch: str) -> bool:
    """True when NFKC never merges ``ch`` with a preceding char (conservative)."""
    if ch < "\x80":
        return True
    if unicodedata.combining(ch) or unicodedata.category(ch).startswith("M"):
        return False
    o = ord(ch)
    if 0x1160 <= o <= 0x11FF or 0xD7B0 <= o <= 0xD7FF:  # Hangul medial/final jamo
        return False
    first = unicodedata.normalize("NFKD", ch)[:1]
    return not (first and (unicodedata.combining(first) or unicodedata.category(first).startswith("M")))


@dataclass(frozen=True)
class _Norm:
    text: str
    raw_starts: tuple[int, ...] | None  # None: identity mapping
    norm_starts: tuple[int, ...] = ()
    raw_len: int = 0

    def to_raw(self, start: int, end: int) -> tuple[int, int]:
        if self.raw_starts is None:
            return start, end
        ns, rs = self.norm_starts, self.raw_starts
        i = bisect.bisect_right(ns, start) - 1
        rstart = rs[i] if i >= 0 else 0
        j = bisect.bisect_left(ns, end)  # first segment starting at or after end
        rend = rs[j] if j < len(rs) else self.raw_len
        return rstart, max(rend, rstart)


def _segments(raw: str, fine: bool) -> list[int]:
    starts = [0]
    for i in range(1, len(raw)):
        ch = raw[i]
        if (ch < "\x80") if not fine else _may_start_segment(ch):
            starts.append(i)
    return starts


def _normalise(raw: str) -> _Norm:
    if unicodedata.is_normalized("NFKC", raw):
        return _Norm(raw, None)
    full = unicodedata.normalize("NFKC", raw)
    for fine in (True, False):
        starts = _segments(raw, fine)
        pieces = []
        norm_starts = []
        pos = 0
        bounds = starts + [len(raw)]
        for a, b in itertools.pairwise(bounds):
            piece = raw[a:b] if raw[a:b].isascii() else unicodedata.normalize("NFKC", raw[a:b])
            norm_starts.append(pos)
            pos += len(piece)
            pieces.append(piece)
        if "".join(pieces) == full:
            return _Norm(full, tuple(starts), tuple(norm_starts), len(raw))
    return _Norm(full, (0,), (0,), len(raw))  # pragma: no cover - spans widen to the whole text


def _excerpt(raw: str, start: int, end: int, width: int = 80) -> str:
    s = raw[start:end]
    return s if len(s) <= width else s[:width] + "..."


def scan(text: str) -> list[Finding]:
    """Scan ``text`` with Hermes 0.19's strict scope; return every finding.

    Args:
        text: any string (an entry, a whole memory file, a pending payload). No length limit.

    Returns:
        findings ordered as described in the module docstring (empty list when clean).
        Spans are raw-text char offsets.

    Never raises on any ``str``.
    """
    if not text:
        return []
    findings: list[Finding] = []
    if not INVISIBLE_CHARS.isdisjoint(text):
        for m in _INVISIBLE_RUN.finditer(text):
            findings.append(Finding(invisible_id(m.group(1)), m.start(), m.end(), _excerpt(text, m.start(), m.end())))
    norm = _normalise(text)
    tx = _Text(norm.text)
    folded = casefold_ascii(norm.text)
    for pid in PATTERN_IDS:
        if not all(any(lit in folded for lit in group) for group in _REQUIRED[pid]):
            continue
        rx = _COMPILED_REGEX.get(pid)
        spans = _regex_matches(rx, norm.text) if rx is not None else _chain_matches(tx, *_COMPILED_CHAINS[pid])
        for s, e in spans:
            rs, re_ = norm.to_raw(s, e)
            findings.append(Finding(pid, rs, re_, _excerpt(text, rs, re_)))
    return findings


def pattern_ids(findings: list[Finding]) -> list[str]:
    """The distinct ids of ``findings``, in first-seen order."""
    return list(dict.fromkeys(f.pattern_id for f in findings))


def threat_message(findings: list[Finding]) -> str | None:
    """Hermes 0.19's refusal text for the first finding (``first_threat_message``), or None.

    Wording, verbatim from Hermes: ``"Blocked: content contains invisible unicode character
    U+XXXX (possible injection)."`` or ``"Blocked: content matches threat pattern '<id>'.
    Content is injected into the system prompt and must not contain injection or exfiltration
    payloads."``
    """
    if not findings:
        return None
    pid = findings[0].pattern_id
    if pid.startswith("invisible_unicode_"):
        return f"Blocked: content contains invisible unicode character {pid[len('invisible_unicode_'):]} (possible injection)."
    return (
        f"Blocked: content matches threat pattern '{pid}'. Content is injected into the system prompt "
        "and must not contain injection or exfiltration payloads."
    )


@lru_cache(maxsize=4096)
def scan_cached(text: str) -> tuple[Finding, ...]:
    """Cached :func:`scan` (findings are frozen) for texts shown on every refresh: the same
    entries and pending writes are read again each time a file changes."""
    return tuple(scan(text))


def scan_ids(text: str) -> tuple[str, ...]:
    """Cached ``pattern_ids(scan(text))`` for repeated display of the same entries."""
    return tuple(pattern_ids(list(scan_cached(text))))


# ---------------------------------------------------------------------------------------
# What a given Hermes would say (issue 10): memdeck keeps its one strict verdict (above,
# Hermes 0.18-0.20 rules); these tables answer "what does the Hermes that loads this file say".

#: Rule sets by the Hermes versions that use them (docs/HERMES_VERSIONS.md section 4).
HERMES_RULESETS: dict[str, str] = {
    "0.17": "Hermes 0.16-0.17 rules: unbounded filler between key words, 'praxis' is a C2 word, no NFKC folding",
    "0.18": "Hermes 0.18-0.20 rules (memdeck's own): at most 8 filler words, NFKC folding",
    "0.21": ("Hermes 0.21.0-0.21.3 rules: memdeck's, except that $VAR secrets in curl/wget must end in "
             "KEY/TOKEN/SECRET/PASSWORD/CREDENTIAL(S)"),
    "0.22": ("Hermes 0.22 rules: $VAR secrets must end in KEY/TOKEN/SECRET/PASSWORD/CREDENTIAL(S), ~/.ssh needs "
             "a write verb, ALL_CAPS env-var-name values are not secrets, translate_execute needs a short word "
             "after 'into'"),
}

_W17 = r"(?:\w++\s++)*"  # 0.17's unbounded ``(?:\w+\s+)*`` (0.17 tools/threat_patterns.py:51)
# 0.17 differs from memdeck in these ids only: the filler patterns, and "praxis" (0.17 :95).
_RULES_017 = {pid: re.compile(rx.replace(_W, _W17), _FLAGS) for pid, rx in _REGEX_SPECS.items() if _W in rx}
_RULES_017["known_c2_framework"] = re.compile(
    r"\b(?:praxis|cobalt\s*+strike|sliver|havoc|mythic|metasploit|brainworm)\b", _FLAGS)
# 0.22 narrows five ids (0.22 tools/threat_patterns.py :21, :33-37, :75-76, :87-89, :102-104).
_SECRET_VAR_022 = r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)S?\b"
_RULES_022 = {
    "exfil_curl": re.compile(rf"curl\s+[^\n]{{0,2048}}{_SECRET_VAR_022}", _FLAGS),
    "exfil_wget": re.compile(rf"wget\s+[^\n]{{0,2048}}{_SECRET_VAR_022}", _FLAGS),
    "ssh_access": re.compile(r"(?:\b(?:echo|cat|cp|mv|dd|tee|install|printf|rsync|scp|ln|append|add|write"
                             r"|sed|chmod|chown|truncate|rm|touch|curl|wget|git)\b|\bopen\s*\(|>>?)"
                             r"[^\n]{0,512}(?:\$HOME/\.ssh|~/\.ssh)", _FLAGS),
    "hardcoded_secret": re.compile(r"(?:api[_-]?key|token|secret|password)\s*[=:]\s*[\"']"
                                   r"(?!(?-i:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)[\"'])"
                                   r"[A-Za-z0-9+/=_-]{20,}", _FLAGS),
    "translate_execute": re.compile(r"translate\s+[^\n]{0,512}\s+into\s+\w+(?:[\s-]+\w+){0,2}\s+and\s+"
                                    r"(execute|run|eval)\b", _FLAGS),
}
_MAX_017_SCAN = 65_536  # unbounded filler is quadratic: 0.17's rules are checked on this many chars


def hermes_verdict(text: str, rules: str) -> tuple[str, ...]:
    """The sorted pattern ids Hermes with rule set ``rules`` ('0.17', '0.18', '0.21', '0.22') reports for
    ``text`` in strict scope (invisible characters included), derived from memdeck's scan plus
    the regex differences of docs/HERMES_VERSIONS.md section 4.

    0.17's missing NFKC folding is approximated: a finding whose raw span holds a character NFKC
    changes is dropped (0.17 could not have matched those characters).

    Raises:
        ValueError: an unknown ``rules`` key.
    """
    if rules not in HERMES_RULESETS:
        raise ValueError(f"unknown Hermes rule set {rules!r}; known: {', '.join(HERMES_RULESETS)}")
    findings = scan_cached(text)
    if rules == "0.18":
        return tuple(sorted({f.pattern_id for f in findings}))
    if rules in ("0.21", "0.22"):
        narrowed = _RULES_022 if rules == "0.22" else {k: _RULES_022[k] for k in ("exfil_curl", "exfil_wget")}
        norm = _normalise(text).text
        return tuple(sorted({f.pattern_id for f in findings
                             if f.pattern_id not in narrowed or narrowed[f.pattern_id].search(norm)}))
    ids = set()
    for f in findings:
        if f.pattern_id in _RULES_017:
            continue
        span = text[f.start:f.end]
        if f.pattern_id.startswith("invisible_unicode_") or unicodedata.normalize("NFKC", span) == span:
            ids.add(f.pattern_id)
    head = text[:_MAX_017_SCAN]
    ids.update(pid for pid, rx in _RULES_017.items() if rx.search(head))
    return tuple(sorted(ids))


def compare_verdicts(text: str, rules: str | None) -> dict[str, object]:
    """memdeck's verdict next to the verdict of the Hermes that loads the file.

    Returns ``{"memdeck": [ids], "hermes": [ids] | None, "rules": key | None, "rules_text": str,
    "differs": bool}``; ``hermes`` is None when the loading Hermes is unknown (``rules`` None).
    """
    ours = sorted({f.pattern_id for f in scan_cached(text)})
    if rules is None:
        return {"memdeck": ours, "hermes": None, "rules": None, "differs": False,
                "rules_text": "the Hermes that loads this file is unknown: memdeck's rules only"}
    theirs = list(hermes_verdict(text, rules))
    return {"memdeck": ours, "hermes": theirs, "rules": rules, "rules_text": HERMES_RULESETS[rules],
            "differs": ours != theirs}
