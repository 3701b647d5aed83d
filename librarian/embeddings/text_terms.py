"""Text to index terms: the one tokeniser shared by the lexical sparse encoder and any lexical scorer.

Why one module: a term is only useful if write time, query time and reranking all cut text the same way; a
second tokeniser that differs by one rule silently turns exact matches into misses.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer

# A run of letters/digits, optionally joined to more runs by "_", "-", "." or "/" (no spaces). Whether the
# joined form is kept whole is decided in `split_token`.
_TOKEN = re.compile(r"[^\W_]+(?:[_\-./][^\W_]+)*")
_JOINERS = re.compile(r"[_\-./]")
# Scripts written without spaces between words (Han, kana) or with particles glued to words (Hangul):
# a run of them becomes overlapping character bigrams, the usual unit of CJK full-text search, so that
# "退款" in a question matches "退款政策" in a document. Other letters and digits are untouched.
_CJK_RUN = re.compile(
    r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)
MAX_TOKEN_CHARS = 64  # longer runs are blobs (base64, hashes of hashes), not words anyone types

# Snowball's English stop words minus "no", "not", "nor", "all", "few" and "against": they change what
# a claim or question means.
_STOPWORD_TEXT = (
    "a about above after again am an and any are as at be because been before being below between both but "
    "by can could did do does doing down during each for from further had has have having he her here hers "
    "herself him himself his how i if in into is it its itself just me more most my myself of off on once "
    "only or other our ours ourselves out over own same she should so some such than that the their theirs "
    "them themselves then there these they this those through to too under until up very was we were what "
    "when where which while who whom why will with would you your yours yourself yourselves s t d ll m o re "
    "ve y"
)
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_stemmer_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    """One stemmer per thread: PyStemmer objects keep internal buffers and are not safe to share."""
    stemmer = getattr(_stemmer_local, "stemmer", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english")
        _stemmer_local.stemmer = stemmer
    return stemmer


def split_token(token: str) -> list[str]:
    """Keep codes whole and also split them; split ordinary compounds.

    A joined token with a digit or an underscore ("x86_64", "E1234-B", "IL-6", "max_tokens") is an identifier:
    people search for it verbatim, so the whole form is a term, and its parts are terms too so that "IL 6" or
    "x86" still match (on SciFact dev, whole + parts scored nDCG@10 0.679 against 0.663 for whole only). A
    joined token of plain words ("well-known", "and/or") is only split.
    """
    parts = [part for part in _JOINERS.split(token) if part]
    if len(parts) > 1 and (any(c.isdigit() for c in token) or "_" in token):
        return [token, *parts]
    return parts


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character pairs of a CJK run; a lone character stands for itself."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _split_scripts(token: str) -> list[str]:
    """A token mixing CJK and other letters ("个按namespace"): CJK runs as bigrams, the rest as is."""
    out: list[str] = []
    position = 0
    for run in _CJK_RUN.finditer(token):
        if run.start() > position:
            out.append(token[position : run.start()])
        out.extend(cjk_bigrams(run.group()))
        position = run.end()
    if position < len(token):
        out.append(token[position:])
    return out


def raw_tokens(text: str) -> list[str]:
    """Lower-cased surface tokens, stop words included (callers that need positions or phrases start here).

    CJK text becomes character bigrams (`cjk_bigrams`), whatever the length of its run.
    """
    out: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        token = match.group()
        if _CJK_RUN.search(token):
            for part in _split_scripts(token):
                if _CJK_RUN.match(part):
                    out.append(part)
                elif len(part) <= MAX_TOKEN_CHARS:
                    out.extend(split_token(part))
        elif len(token) <= MAX_TOKEN_CHARS:
            out.extend(split_token(token))
    return out


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    """The index term of one token. Only plain words are stemmed: stemming "e1234s" or "v2.3" would invent
    a different code."""
    if token.isalpha():
        return _stemmer().stemWord(token)
    return token


def terms(text: str) -> list[str]:
    """Index terms of `text` in order, with repeats: stop words dropped, words stemmed, codes kept intact."""
    return [stem(token) for token in raw_tokens(text) if token not in STOPWORDS]
