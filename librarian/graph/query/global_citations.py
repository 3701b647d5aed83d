"""Which communities a global answer cites, and which chunks stand for them as sources.

Answers cite communities (`[Community ID: n]`), but a reader needs documents: each cited community
is resolved to real chunks of live documents, the quoted claim's own chunk when the offline map
quoted one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from librarian.graph.query.global_inputs import CommunityInput, claim_line
from librarian.graph.query.global_search import GlobalResult

# "[Community ID: 3]" as the prompt asks, and "[Community IDs: 3, 5]" as models also write; never a
# map label "[Community ID: 3 | summary part 1]"
CITATION = re.compile(r"\[Community IDs?: ([^\]|]+?)\]")


def ids_in(citation: str) -> list[str]:
    """The community ids inside one citation's captured group ("3" or "3, 5")."""
    return [part.strip() for part in citation.split(",") if part.strip()]


def cited_community_ids(answer: str) -> list[str]:
    """Community ids an answer cites with `[Community ID: n]`, in order of first citation."""
    return list(dict.fromkeys(i for m in CITATION.findall(answer) for i in ids_in(m)))


def quoted_chunk_scores(result: GlobalResult, inputs: Sequence[CommunityInput]) -> dict[str, float]:
    """Chunk id -> cosine of the offline map's quote of one of its claims (best when quoted twice)."""
    by_id = {c.id: c for c in inputs}
    scores: dict[str, float] = {}
    for answer in result.selected:
        for quote in answer.quotes:
            community = by_id.get(quote.community_id)
            for claim in community.claims if community else []:
                if claim_line(claim.text) == quote.text:
                    scores[claim.chunk_id] = max(scores.get(claim.chunk_id, 0.0), quote.score)
    return scores


def cited_chunks(result: GlobalResult, inputs: Sequence[CommunityInput]) -> list[tuple[str, str]]:
    """(community id, chunk id) for every community the answer cites, in citation order.

    An offline quote that is one of the community's claims cites that claim's chunk; any other
    citation (a summary sentence, a model's answer) cites the community's first claims' chunks, or
    with no claim left the chunks its provenance names, so every cited community reaches at least
    one real chunk of a live document (given `live_inputs`).
    """
    by_id = {c.id: c for c in inputs}
    pairs: list[tuple[str, str]] = []
    # only the map's quotes the answer kept: a community quoted twice by the map but once in the answer
    # cites that one sentence's chunk, not every chunk the map looked at
    quoted = {(q.community_id, q.text) for a in result.selected for q in a.quotes if q.text in result.answer}
    cited = cited_community_ids(result.answer) or result.cited_communities
    for community_id in cited:
        community = by_id.get(community_id)
        if community is None:
            continue  # an id the model made up: not a citation
        exact = [cl.chunk_id for cl in community.claims if (community_id, claim_line(cl.text)) in quoted]
        chunk_ids = (
            exact or [cl.chunk_id for cl in community.claims[:2]] or list(community.provenance.values())[:2]
        )
        pairs.extend((community_id, chunk_id) for chunk_id in dict.fromkeys(chunk_ids))
    return pairs
