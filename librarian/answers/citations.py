"""Verified citations: for each answer sentence, which sources it cites and whether they back it.

An answer's `[n]` cites `sources[n-1]`. Each sentence (as `librarian.text.sentences.CITED` cuts them,
markers after a full stop included) is scored against every sentence of each source it cites
(`librarian.answers.support`); the best one is the supporting span, as character offsets into the
source's `text`, so a UI can highlight it. A sentence that quotes the source is not left to the
scorer: the span is the quoted sentence, and a sentence that is wholly a quote of it scores 1
(its words are the source's own; `quoted_span`). Optionally a chat model judges the (sentence, source)
pairs instead (`LIBRARIAN_SUPPORT_JUDGE=llm`); the span still comes from the local scorer.

Unsupported sentences are never changed silently: by default they are marked in the text
(`UNSUPPORTED_MARK`), or dropped (`LIBRARIAN_UNSUPPORTED_SENTENCES=drop`); either way the record says
which, and the caller keeps the original text. The record shape is documented in the README
("Citations"); `verify_answer` is the pure entry point (`librarian eval answers` uses it too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from typing_extensions import TypedDict

from librarian.answers.quotes import clean_quote, normal_words
from librarian.answers.support import SupportScorer, strip_markers
from librarian.retrieval.search import Source
from librarian.text.sentences import split_sentences

UNSUPPORTED_MARK = " [unsupported]"
ALL_DROPPED = "No sentence of the answer is supported by the sources it cites, so none is shown."

Action = Literal["kept", "marked", "dropped"]
Policy = Literal["mark", "drop"]

_MARKERS = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_REFERENCE_ENTRY = re.compile(r"\[\d+\]\s+\S")  # "[2] handbook.pdf, page 4": a source list, not a claim


class Span(TypedDict):
    source_id: str
    marker: int
    start: int
    end: int


class Evidence(TypedDict):
    marker: int
    source_id: str
    score: float
    supported: bool
    start: int
    end: int


class Citation(TypedDict):
    sentence: str
    start: int
    end: int
    markers: list[int]
    source_ids: list[str]
    supported: bool
    score: float
    span: Span | None
    evidence: list[Evidence]
    judge: str
    action: Action


class PairJudge(Protocol):
    """Anything that scores (claim, passage) pairs in [0, 1] with a `threshold` (the LLM judge)."""

    name: str
    threshold: float

    def score_pairs(self, claims: Sequence[str], passages: Sequence[str]) -> Sequence[float]: ...


QUOTE_MIN_CHARS = 25  # a shorter shared string ("Refund policy") is a topic, not a quote


_COMMUNITY_CITATION = re.compile(r"\[Community IDs?: [^\]]*\]")


def quoted_span(
    sentence: str, text: str, spans: Sequence[tuple[int, int]]
) -> tuple[tuple[int, int], bool] | None:
    """(span, whole) for the longest source sentence that the answer sentence quotes or that contains
    the whole answer sentence, compared as cleaned, lower-cased words (markers, quotation marks,
    Markdown links ignored). `whole` when the answer sentence is that sentence or its beginning: a
    clause from its middle may follow a "not" the quote left out, so it gets the span but no verdict.
    None when no sentence of at least `QUOTE_MIN_CHARS` is shared."""
    # a global answer's "[Community ID: 3]" names where the quote came from; it is not quoted text
    claim = normal_words(clean_quote(strip_markers(_COMMUNITY_CITATION.sub("", sentence))))
    found: tuple[int, tuple[int, int], bool] | None = None
    for start, end in spans:
        piece = normal_words(clean_quote(text[start:end]))
        if len(piece) < QUOTE_MIN_CHARS:
            continue
        whole = len(claim) >= QUOTE_MIN_CHARS and f"{piece} ".startswith(f"{claim} ")
        inside = len(claim) >= QUOTE_MIN_CHARS and f" {claim} " in f" {piece} "
        if (inside or f" {piece} " in f" {claim} ") and (found is None or len(piece) > found[0]):
            found = (len(piece), (start, end), whole)
    return (found[1], found[2]) if found else None


def markers_of(sentence: str) -> list[int]:
    """Citation numbers in order of appearance, each once (`[1][3]`, `[1, 2]`)."""
    seen: list[int] = []
    for group in _MARKERS.findall(sentence):
        for number in group.split(","):
            n = int(number)
            if n not in seen:
                seen.append(n)
    return seen


Pair = tuple[int, int]  # (answer sentence index, marker)
Best = dict[Pair, tuple[float, tuple[int, int]]]  # per pair: score and the source span it was found at


@dataclass(frozen=True)
class _Reading:
    """An answer's claim sentences and each source's sentences, as spans: what every stage reads."""

    answer: str
    sentences: list[tuple[int, int]]
    sources: Sequence[Source]
    source_sentences: list[list[tuple[int, int]]]

    def sentence(self, i: int) -> str:
        return self.answer[self.sentences[i][0] : self.sentences[i][1]]


def _read(answer: str, sources: Sequence[Source], start: int, end: int) -> _Reading:
    """Lines that start with a marker ("[2] handbook.pdf, page 4") are a source list, not claims."""
    sentences = [
        (s + start, e + start)
        for s, e in split_sentences(answer[start:end])
        if not _REFERENCE_ENTRY.match(answer, s + start)
    ]
    return _Reading(answer, sentences, sources, [split_sentences(s["text"]) for s in sources])


def _best_spans(reading: _Reading, scorer: SupportScorer) -> Best:
    """For each (sentence, cited source) pair, the source sentence the scorer likes best. Every pair
    of the answer is scored in one call, so the embedder batches them."""
    claims: list[str] = []
    passages: list[str] = []
    where: list[tuple[int, int, tuple[int, int]]] = []  # (answer sentence, marker, span) per pair
    for i in range(len(reading.sentences)):
        for marker in markers_of(reading.sentence(i)):
            if not 1 <= marker <= len(reading.sources):
                continue
            text = reading.sources[marker - 1]["text"]
            for span in reading.source_sentences[marker - 1]:
                claims.append(reading.sentence(i))
                passages.append(text[span[0] : span[1]])
                where.append((i, marker, span))
    local = scorer.score_pairs(claims, passages) if claims else []
    best: Best = {}
    for (i, marker, span), score in zip(where, local, strict=True):
        key = (i, marker)
        if key not in best or score > best[key][0]:
            best[key] = (float(score), span)
    return best


def _prefer_quotes(reading: _Reading, best: Best) -> None:
    """A sentence that quotes its source gets the quoted sentence as its span, and full support when it
    is wholly the quote: its words are the source's own, whatever the scorer thinks of them."""
    for i, marker in list(best):
        quote = quoted_span(
            reading.sentence(i),
            reading.sources[marker - 1]["text"],
            reading.source_sentences[marker - 1],
        )
        if quote is not None:
            span, whole = quote
            best[(i, marker)] = (1.0 if whole else best[(i, marker)][0], span)


def _judged(reading: _Reading, best: Best, judge: PairJudge | None) -> dict[Pair, float]:
    """The judge's score per pair, from the whole source text; its verdict stands, quotes included."""
    keys = list(best)
    if judge is None or not keys:
        return {}
    scores = judge.score_pairs(
        [reading.sentence(i) for i, _ in keys],
        [reading.sources[m - 1]["text"] for _, m in keys],
    )
    return {key: float(score) for key, score in zip(keys, scores, strict=True)}


def _evidence(
    reading: _Reading, i: int, marker: int, best: Best, judged: dict[Pair, float], threshold: float
) -> Evidence:
    if (i, marker) not in best:  # a marker with no such source, or a source with no sentence
        sources = reading.sources
        source_id = sources[marker - 1]["id"] if 1 <= marker <= len(sources) else ""
        return Evidence(marker=marker, source_id=source_id, score=0.0, supported=False, start=0, end=0)
    local_score, (s, e) = best[(i, marker)]
    score = judged.get((i, marker), local_score)
    return Evidence(
        marker=marker,
        source_id=reading.sources[marker - 1]["id"],
        score=round(score, 4),
        supported=score >= threshold,
        start=s,
        end=e,
    )


def _record(reading: _Reading, i: int, evidence: list[Evidence], judge_name: str) -> Citation:
    """The sentence's record: its best-scoring evidence gives the score and the span."""
    top = max(evidence, key=lambda ev: ev["score"], default=None)
    span = None
    if top and top["end"] > top["start"]:
        span = Span(source_id=top["source_id"], marker=top["marker"], start=top["start"], end=top["end"])
    return Citation(
        sentence=reading.sentence(i),
        start=reading.sentences[i][0],
        end=reading.sentences[i][1],
        markers=[ev["marker"] for ev in evidence],
        source_ids=[ev["source_id"] for ev in evidence],
        supported=any(ev["supported"] for ev in evidence),
        score=top["score"] if top else 0.0,
        span=span,
        evidence=evidence,
        judge=judge_name,
        action="kept",
    )


def verify_answer(
    answer: str,
    sources: Sequence[Source],
    scorer: SupportScorer | None = None,
    judge: PairJudge | None = None,
    start: int = 0,
    end: int | None = None,
) -> list[Citation]:
    """One record per answer sentence: markers, cited ids, support score, best span, supported.

    Only sentences inside `answer[start:end]` are checked (offsets stay those of `answer`); lines that
    start with a marker ("[2] handbook.pdf, page 4") are a source list, not claims. The local scorer
    always runs, because the span a UI highlights is its choice even when a judge gives the verdict.
    """
    scorer = scorer or SupportScorer()
    reading = _read(answer, sources, start, len(answer) if end is None else end)
    best = _best_spans(reading, scorer)
    _prefer_quotes(reading, best)
    judged = _judged(reading, best, judge)
    threshold = judge.threshold if judge is not None else scorer.threshold
    judge_name = judge.name if judge is not None else scorer.name
    records: list[Citation] = []
    for i in range(len(reading.sentences)):
        markers = markers_of(reading.sentence(i))
        evidence = [_evidence(reading, i, m, best, judged, threshold) for m in markers]
        records.append(_record(reading, i, evidence, judge_name))
    return records


def apply_policy(
    answer: str, citations: list[Citation], policy: Policy = "mark"
) -> tuple[str, list[Citation]]:
    """The answer with its unsupported cited sentences marked or dropped, and the updated records.

    Sentences that cite nothing are left alone (a reader already sees they carry no citation).
    """
    out: list[str] = []
    cursor = 0
    updated: list[Citation] = []
    kept_any = False
    for record in citations:
        flagged = bool(record["markers"]) and not record["supported"]
        action: Action = "kept" if not flagged else ("dropped" if policy == "drop" else "marked")
        updated.append({**record, "action": action})
        out.append(answer[cursor : record["start"]])
        if action == "dropped":
            while out and out[-1].endswith((" ", "\t")):
                out[-1] = out[-1].rstrip(" \t")
        else:
            kept_any = True
            out.append(record["sentence"] + (UNSUPPORTED_MARK if action == "marked" else ""))
        cursor = record["end"]
    out.append(answer[cursor:])
    text = "".join(out).strip()
    if citations and not kept_any:
        text = ALL_DROPPED
    return text, updated


def claim_text(sentence: str) -> str:
    """A sentence as a judge should read it: without its citation markers."""
    return strip_markers(sentence)
