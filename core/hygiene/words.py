"""The lexical view of a memory entry: content words, values and polarity, in the languages
Hermes users write (English, German, Spanish, French, Chinese, Japanese).

Latin-script text is case-folded and split on anything that is not a letter, digit or one of
``._/:@-`` inside a token (so ``pi.local``, ``~/src/app`` and ``3.12`` stay whole); stop words of
the four languages are dropped. CJK runs (Han, Hiragana, Katakana, Hangul) become character
bigrams, the usual unit of lexical overlap for languages written without spaces.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

#: function words of en/de/es/fr that carry no subject (negations are kept: they are polarity)
STOP_WORDS = frozenset("""
a an the and or but if then than so of to in on at by for from with without into onto as is are was were be been
being am do does did has have had it its this that these those there here i me my we our you your he she they them
their his her what which who whom when where why how all any some each every more most other such only own same too
very can will just should would could may might must also about over under again further once via per use uses used
using prefer prefers preferred always please user users s t
der die das den dem des ein eine einen einem einer und oder aber wenn dann als ist sind war waren sein bin bist
es er sie wir ihr ich du mit von zu im in am an auf für fur aus bei nach über uber unter um wie was wer wo auch
nur noch schon immer bitte soll sollen wird werden hat haben
el la los las un una unos unas y o pero si es son era eran ser estar está esta están de del al a en con por para
como que qué quien donde cuando también siempre muy más mas usa usar
le la les un une des et ou mais si est sont était être avec de du au aux en dans sur pour par comme que qui quoi
où ou quand aussi toujours très plus utilise utiliser il elle ils elles nous vous je tu
""".split())

#: words that turn a statement into its opposite (kept out of STOP_WORDS: they are polarity)
NEGATIONS = frozenset("""
not no never dont don't doesn't isn't aren't won't without avoid stop nor none neither instead rather
nicht nie niemals kein keine keinen keinem keiner ohne vermeide statt anstatt
no nunca jamás jamas sin ningún ninguna ninguno evita evitar
ne pas jamais aucun aucune sans éviter eviter lieu
""".split())
#: words that say a value changed ("moved to", "jetzt", "ahora", "maintenant"): a later entry
#: announcing a change contradicts the earlier state even without a value memdeck recognises
CHANGE_WORDS = frozenset("""
moved switched changed migrated replaced now anymore longer
umgezogen gewechselt geändert geandert jetzt nun mehr
cambiado cambió cambio movido ahora ya
changé change déplacé maintenant désormais plus
""".split())
#: CJK characters that say a value changed (改为 / 変更 / 换成 / 移行)
CJK_CHANGE = frozenset("改変变換换移")
#: CJK function characters (copulas, particles) that carry no subject
CJK_FUNCTION = frozenset("是的了为為はがをにのでもへとですますだ：:，、。")
#: CJK negation and prohibition markers (matched as substrings)
CJK_NEGATIONS = ("不", "没", "別", "别", "勿", "禁止", "无需", "無需", "ない", "しない", "やめ", "ません", "而不是", "ではなく")

_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_LATIN_TOKEN = re.compile(r"[\w~][\w.~/:@+-]*[\w/]|[\w]", re.UNICODE)
_VALUE = re.compile(r"\d|[./:@~]")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass(frozen=True)
class Words:
    """One entry's lexical view.

    Attributes:
        tokens: content words (stop words and negations dropped) and CJK bigrams, in order.
        values: tokens that look like values (contain a digit, ``.``, ``/``, ``:``, ``@`` or
            ``~``: a host, a path, a version, a port).
        negated: the entry carries a negation or prohibition.
        changed: the entry says a value changed (:data:`CHANGE_WORDS`, :data:`CJK_CHANGE`).
        cjk_chars: its CJK characters (the unit :mod:`.pairs` compares what two entries do not
            share, where bigrams straddle a particle).
    """

    tokens: tuple[str, ...]
    values: frozenset[str]
    negated: bool
    changed: bool = False
    cjk_chars: frozenset[str] = frozenset()

    @functools.cached_property
    def bag(self) -> frozenset[str]:
        """The set of :attr:`tokens` (computed once: every pair of a report asks for it)."""
        return frozenset(self.tokens)

    @functools.cached_property
    def subject(self) -> frozenset[str]:
        """:attr:`bag` without the :attr:`values`: what the entry is about."""
        return self.bag - self.values


def _strip_punct(tok: str) -> str:
    return tok.strip(".:,;!?-/") if not tok.startswith(("~", "/")) else tok.rstrip(".:,;!?")


def words(text: str) -> Words:
    """The :class:`Words` of ``text`` (any length; empty text gives no tokens)."""
    folded = _fold(text)
    tokens: list[str] = []
    negated = any(m in folded for m in CJK_NEGATIONS)
    pos = 0
    for m in _CJK_RUN.finditer(folded):
        _latin(folded[pos:m.start()], tokens)
        run = m.group()
        tokens.extend(run[i:i + 2] for i in range(max(1, len(run) - 1)))
        pos = m.end()
    _latin(folded[pos:], tokens)
    raw = set(_LATIN_TOKEN.findall(folded))
    negated = negated or bool(raw & NEGATIONS) or "n't" in folded
    values = frozenset(t for t in tokens if _VALUE.search(t) and not _CJK_RUN.search(t))
    cjk = frozenset(ch for m in _CJK_RUN.finditer(folded) for ch in m.group())
    changed = bool(raw & CHANGE_WORDS) or bool(cjk & CJK_CHANGE)
    return Words(tuple(tokens), values, negated, changed, cjk)


def _latin(part: str, out: list[str]) -> None:
    for tok in _LATIN_TOKEN.findall(part):
        tok = _strip_punct(tok)
        if not tok or tok in STOP_WORDS or tok in NEGATIONS or tok in CHANGE_WORDS or tok == "n't":
            continue
        if len(tok) == 1 and not tok.isdigit():
            continue
        out.append(_stem(tok))


def _stem(tok: str) -> str:
    """A light plural/inflection fold (``targets`` = ``target``) for Latin-script words; values
    are kept as they are."""
    if _VALUE.search(tok) or len(tok) <= 4:
        return tok
    for suffix in ("ies", "es", "s", "en", "er", "ed", "ing"):
        if tok.endswith(suffix) and len(tok) - len(suffix) >= 4:
            return tok[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return tok


def overlap(a: Iterable[str], b: Iterable[str]) -> tuple[float, float, frozenset[str]]:
    """``(jaccard, containment, shared)`` of two token sets: containment is the shared share of
    the smaller set (1.0 when one entry's words are all in the other)."""
    sa, sb = frozenset(a), frozenset(b)
    if not sa or not sb:
        return 0.0, 0.0, frozenset()
    shared = sa & sb
    return len(shared) / len(sa | sb), len(shared) / min(len(sa), len(sb)), shared
