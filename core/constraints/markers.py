"""Binding and scope words of the languages Hermes users write (English, German, Spanish,
French, Chinese, Japanese): what makes a sentence a rule, a negation a prohibition, a line a
narrative, and an instruction one operation's.

Latin-script markers are matched on word boundaries of the case-folded text; CJK markers as
substrings.
"""

from __future__ import annotations

import re
import unicodedata

#: words that make a sentence bind later behaviour (imperatives, prohibitions, obligations)
BINDING = {
    "en": ["always", "never", "do not", "don't", "dont", "must", "must not", "should", "shouldn't", "from now on",
           "going forward", "prefer", "please use", "avoid", "make sure", "remember to", "only use",
           "no more", "required", "mandatory", "forbidden"],
    "de": ["immer", "nie", "niemals", "nicht", "kein", "keine", "muss", "müssen", "sollst", "bitte", "verwende",
           "benutze", "nutze", "ab jetzt", "ab sofort", "künftig", "vermeide", "stets"],
    "es": ["siempre", "nunca", "no uses", "debe", "debes", "a partir de ahora", "evita", "prefiero", "asegúrate"],
    "fr": ["toujours", "jamais", "doit", "dois", "à partir de maintenant", "désormais", "évite", "n'utilise",
           "préfère"],
    "zh": ["总是", "始终", "永远", "不要", "别", "必须", "请", "一律", "以后", "从现在起", "务必", "禁止", "一定要", "不准", "只用"],
    "ja": ["必ず", "常に", "しないで", "ないでください", "してください", "禁止", "今後", "これから", "いつも", "使って", "使わないで",
           "すること", "しないこと"],
}

#: prohibitions (a binding negative): their loss turns "never X" into "X"
NEGATIVE = {
    "en": ["never", "do not", "don't", "dont", "must not", "shouldn't", "avoid", "stop", "no more", "forbidden", "not"],
    "de": ["nie", "niemals", "nicht", "kein", "keine", "vermeide"],
    "es": ["nunca", "no", "evita"],
    "fr": ["jamais", "ne", "n'utilise", "évite", "pas"],
    "zh": ["不要", "别", "禁止", "不准", "不"],
    "ja": ["しないで", "ないでください", "禁止", "使わないで", "しないこと", "ない"],
}

#: a one-operation scope: the instruction was for this time, this file, for now
SCOPE_ONCE = {
    "en": ["this time", "just this once", "for now", "for this file", "in this file", "this file", "for this commit",
           "in this commit", "for this task", "right now", "this one", "for this pr", "just for", "only for this",
           "temporarily", "today"],
    "de": ["diesmal", "dieses mal", "nur dieses mal", "vorerst", "für diese datei", "in dieser datei", "heute",
           "vorläufig", "für jetzt"],
    "es": ["esta vez", "por ahora", "solo esta vez", "en este archivo", "para este archivo", "hoy", "temporalmente"],
    "fr": ["cette fois", "pour l'instant", "pour ce fichier", "dans ce fichier", "aujourd'hui", "temporairement",
           "pour le moment"],
    "zh": ["这次", "暂时", "这个文件", "本次", "今天", "先", "临时", "目前"],
    "ja": ["今回", "とりあえず", "このファイル", "今日", "一旦", "ひとまず", "今だけ"],
}

#: a scope that ends at an event ("until X")
SCOPE_UNTIL = {
    "en": ["until"], "de": ["bis"], "es": ["hasta"], "fr": ["jusqu'à", "jusqu'a"], "zh": ["直到", "之前"], "ja": ["まで"],
}

#: narrative forms a summary uses for what was once an instruction ("X was discussed")
NARRATIVE = {
    "en": ["was discussed", "were discussed", "discussed", "mentioned", "asked", "wanted", "requested", "talked about",
           "considered", "noted", "had", "was", "were", "suggested", "preferred", "liked", "expressed"],
    "de": ["wurde besprochen", "erwähnt", "gefragt", "wollte", "bat", "hatte", "war", "wurde"],
    "es": ["se discutió", "mencionó", "pidió", "quería", "habló", "era", "fue"],
    "fr": ["a été discuté", "mentionné", "a demandé", "voulait", "était", "a parlé"],
    "zh": ["讨论过", "提到", "提过", "曾", "想要过", "要求过", "了"],
    "ja": ["話し合った", "言及", "と言った", "述べた", "だった", "ました"],
}

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


def fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def _compiled(table: dict[str, list[str]]) -> tuple[re.Pattern[str], tuple[str, ...]]:
    latin = sorted({w for lang, ws in table.items() if lang not in ("zh", "ja") for w in ws}, key=len, reverse=True)
    cjk = tuple(sorted({w for lang in ("zh", "ja") for w in table.get(lang, [])}, key=len, reverse=True))
    rx = re.compile(r"(?<![\w'])(" + "|".join(re.escape(w) for w in latin) + r")(?![\w'])")
    return rx, cjk


_TABLES = {name: _compiled(t) for name, t in
           (("binding", BINDING), ("negative", NEGATIVE), ("once", SCOPE_ONCE), ("until", SCOPE_UNTIL),
            ("narrative", NARRATIVE))}


def found(kind: str, text: str) -> list[str]:
    """The markers of ``kind`` (binding | negative | once | until | narrative) in ``text``,
    longest first, each once."""
    rx, cjk = _TABLES[kind]
    t = fold(text)
    out = list(dict.fromkeys(m.group(1) for m in rx.finditer(t)))
    out += [w for w in cjk if w in t and w not in out]
    return out


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


#: imperative verbs that make a sentence a rule when it starts with one ("Use uv for Python")
IMPERATIVE_START = frozenset("""
use run write put add reply answer format keep call prefer commit push name indent test deploy document respond
skip disable enable ignore leave switch remove delete rename stop avoid
verwende benutze nutze schreib schreibe antworte formatiere überspring überspringe deaktiviere
usa utiliza escribe responde formatea omite salta desactiva ejecuta
utilise écris réponds formate saute ignore désactive lance
""".split())


def imperative_start(text: str) -> bool:
    """True when ``text`` (one sentence) starts with an imperative verb (``please`` aside)."""
    words = re.findall(r"[\w']+", fold(text))
    if words and words[0] in ("please", "bitte", "por", "merci"):
        words = words[1:] if words[0] != "por" else words[2:]
    return bool(words) and words[0] in IMPERATIVE_START
