"""What a source stands for besides its own text, so a citation of it is checked against that too.

A graph global answer cites communities; a reader gets, for each cited community, real chunks of
live documents as sources (`librarian.graph.query.runs.run_global`). The sentence that cites
community 3 was written from community 3's report and claims, not only from the one or two chunks
shown for it, so each such source carries those texts under `support` (`SupportText`): the report
and claims exactly as the map step read them. A sentence citing the source is then supported when
the chunk itself, or the report and claims of a community the chunk stands for, support it; a
sentence that none of them support is flagged, as an unsupported sentence of any other path. A
sentence that names its communities (`[Community ID: 3]`) is held to those communities' texts only.

Sources without `support` (search results, local graph evidence) are checked exactly as before.
Offsets in the citation records stay offsets into the source's own `text`: evidence found in a
support text has no span there (start = end = 0) and says where it was found under `via`
(`{"kind", "id", "start", "end"}`, offsets into that support text). Any later path whose sources
stand for more than their text (DRIFT's community reports, say) fills `support` the same way and is
checked by the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from librarian.answers.citations import Citation, PairJudge, Span, verify_answer
from librarian.answers.support import SupportScorer
from librarian.graph.query.global_citations import cited_community_ids
from librarian.text.sentences import split_sentences

# a line break ends a sentence (`librarian.text.sentences.CITED`), so no sentence spans two texts
SEPARATOR = "\n\n"


class SupportText(TypedDict):
    kind: str  # "community": a community's report and claims as global search read them
    id: str
    text: str


def support_of(source: Mapping[str, Any]) -> list[SupportText]:
    """The source's support texts, well-formed ones only: sources are data (they travel through the
    thread state), so an entry that is not a mapping with a non-empty text is ignored."""
    raw = source.get("support")
    if not isinstance(raw, list):
        return []
    return [
        SupportText(kind=str(s.get("kind") or ""), id=str(s.get("id") or ""), text=s["text"])
        for s in raw
        if isinstance(s, Mapping) and isinstance(s.get("text"), str) and s["text"].strip()
    ]


def _checkable(source: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[int, SupportText]]]:
    """The source as the checker reads it (its text, then each support text) and where each starts."""
    texts = support_of(source)
    if not texts:
        return dict(source), []
    joined = str(source.get("text") or "")
    starts: list[tuple[int, SupportText]] = []
    for support in texts:
        joined += SEPARATOR
        starts.append((len(joined), support))
        joined += str(support["text"])
    return {**source, "text": joined}, starts


def _relocate(evidence: dict[str, Any], own_length: int, starts: list[tuple[int, SupportText]]) -> None:
    """Evidence found beyond the source's own text points into the support text it came from."""
    if evidence["end"] <= own_length or not starts:
        return
    begin, support = starts[0]
    for candidate in starts:  # the last support text starting at or before the evidence
        if candidate[0] <= evidence["start"]:
            begin, support = candidate
    evidence["via"] = {
        "kind": support["kind"],
        "id": support["id"],
        "start": evidence["start"] - begin,
        "end": evidence["end"] - begin,
    }
    evidence["start"] = evidence["end"] = 0


def _for_communities(source: Mapping[str, Any], cited: set[str]) -> Mapping[str, Any]:
    """The source with only the support of communities the sentence cites (all, if it cites none)."""
    if not cited or "support" not in source:
        return source
    kept = [t for t in support_of(source) if t["kind"] != "community" or t["id"] in cited]
    return {**source, "support": kept}


def _verify(
    answer: str,
    sources: Sequence[Mapping[str, Any]],
    scorer: SupportScorer,
    judge: PairJudge | None,
    start: int,
    end: int,
) -> list[Citation]:
    checkable = [_checkable(s) for s in sources]
    records = verify_answer(answer, [c for c, _ in checkable], scorer, judge, start, end)  # type: ignore[misc]
    for record in records:
        for evidence in record["evidence"]:
            marker = evidence["marker"]
            if 1 <= marker <= len(sources):
                own = len(str(sources[marker - 1].get("text") or ""))
                _relocate(evidence, own, checkable[marker - 1][1])  # type: ignore[arg-type]
        span = record["span"]
        if span is not None:
            top = next((e for e in record["evidence"] if e["marker"] == span["marker"]), None)
            if top is not None and "via" in top:
                record["span"] = None  # the support is a community report: nothing to highlight on a page
            elif top is not None:
                record["span"] = Span(
                    source_id=span["source_id"], marker=span["marker"], start=top["start"], end=top["end"]
                )
    return records


def verify_with_support(
    answer: str,
    sources: Sequence[Any],
    scorer: SupportScorer,
    judge: PairJudge | None,
    start: int = 0,
    end: int | None = None,
) -> list[Citation]:
    """`verify_answer`, each source read together with its support texts; spans stay in `text`.

    A sentence that names the communities it draws on (`[Community ID: 3]`) is held to those
    communities' texts only: a chunk can stand for two communities, and the other one's report must
    not vouch for it. Sentences naming the same communities are checked in one call."""
    end = len(answer) if end is None else end
    if not any(support_of(s) for s in sources):
        return verify_answer(answer, list(sources), scorer, judge, start, end)
    groups: dict[frozenset[str], list[tuple[int, int]]] = {}
    for s, e in split_sentences(answer[start:end]):
        groups.setdefault(frozenset(cited_community_ids(answer[start + s : start + e])), []).append(
            (start + s, start + e)
        )
    if len(groups) <= 1:
        cited = next(iter(groups), frozenset())
        return _verify(answer, [_for_communities(s, set(cited)) for s in sources], scorer, judge, start, end)
    records: list[Citation] = []
    for cited, spans in groups.items():
        checkable = [_for_communities(s, set(cited)) for s in sources]
        for s, e in spans:
            records.extend(_verify(answer, checkable, scorer, judge, s, e))
    return sorted(records, key=lambda r: r["start"])
