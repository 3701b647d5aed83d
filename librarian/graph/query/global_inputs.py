"""What global search reads of a published graph: communities with their claims, and which are live.

Each community is its summary plus the claims (verbatim source sentences) of its descendant leaves,
rendered within a token budget (`augmented_text`) so one huge community cannot turn a question into
hundreds of model calls. The inputs are read once per published version (`load_communities`);
which of them may still be quoted is decided per question against the index (`live_inputs`), since
the graph keeps deleted documents until its next build.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from librarian.graph.query.snapshot import version_key
from librarian.graph.tokens import count_tokens
from librarian.text.debris import drop_leading_headings

AUGMENT_BUDGET = 800
CLAIMS_PER_COMMUNITY = 60  # read per community before the token cap; most are cut by `augment_budget`


@dataclass
class ClaimText:
    text: str
    chunk_id: str
    path: str


@dataclass
class CommunityInput:
    """One community as global search reads it: its summary plus claims of its descendant leaves."""

    id: str
    level: int
    title: str
    summary: str
    claims: list[ClaimText] = field(default_factory=list)
    # document path -> one chunk of it that the community draws on (its claims' first, then its
    # members' sources): the community's provenance, probed for liveness and cited as a fallback
    provenance: dict[str, str] = field(default_factory=dict)


def claim_line(text: str) -> str:
    """A claim's sentence as global search reads and quotes it: one line, without a section heading
    the sentence splitter ran into it. Citations match quotes to claims by this text."""
    return " ".join(drop_leading_headings(text).split())


def summary_first(claims: Sequence[ClaimText], summary: str) -> list[ClaimText]:
    """The claims the summary quotes first (in summary order), then the others in their order: an
    extractive summary's sentences are the community's most central claims, so they are the evidence
    that must survive `augment_budget`."""

    def position(claim: ClaimText) -> int:
        at = summary.find(claim_line(claim.text)) if claim.text.strip() else -1
        return at if at >= 0 else len(summary) + 1

    return sorted(claims, key=position)  # stable: unquoted claims keep their order


def augmented_text(community: CommunityInput, augment_budget: int = AUGMENT_BUDGET) -> str:
    """Title, summary, then claims as "- sentence" lines while they fit `augment_budget` tokens."""
    head = "\n".join(part for part in (community.title.strip(), community.summary.strip()) if part)
    lines: list[str] = []
    used = 0
    seen: set[str] = set()
    for claim in community.claims:
        sentence = claim_line(claim.text)
        if not sentence or sentence in seen:
            continue
        cost = count_tokens(sentence) + 2
        if used + cost > augment_budget:
            continue  # a shorter claim further down may still fit
        seen.add(sentence)
        lines.append(f"- {sentence}")
        used += cost
    if not lines:
        return head
    return f"{head}\nEvidence from its sources:\n" + "\n".join(lines)


_INPUTS: dict[tuple[Any, ...], list[CommunityInput]] = {}


def load_communities(graph: Any, published: Any, level: int | None) -> list[CommunityInput]:
    """Leaf communities (or those of `level`) with the claims of their descendant leaves.

    A community's `members` already include every descendant's members, so the claims whose subject
    or object is a member are exactly its descendant leaves' claims. Cached per published version;
    what is still live is decided per query (`live_inputs`).
    """
    version = published.version
    key = (*version_key(graph, published), level)
    if key in _INPUTS:
        return _INPUTS[key]
    if level is None:
        communities = graph.communities(leaves_only=True, version=version)
    else:
        communities = graph.communities(level=level, version=version)
    sources = {e.name: e.sources for e in graph.entities(version=version)}
    inputs = []
    for community in communities:
        claims = graph.claims_for(community.members, limit=CLAIMS_PER_COMMUNITY, version=version)
        provenance: dict[str, str] = {}
        for claim in claims:
            provenance.setdefault(claim.path, claim.chunk_id)
        for member in community.members:
            for source in sources.get(member, []):
                provenance.setdefault(source.path, source.chunk_id)
        inputs.append(
            CommunityInput(
                str(community.id),
                community.level,
                community.title,
                community.summary,
                summary_first(
                    [ClaimText(c.description, c.chunk_id, c.path) for c in claims], community.summary
                ),
                provenance,
            )
        )
    for old in [k for k in _INPUTS if k[:2] == key[:2] and k[:4] != key[:4]]:
        del _INPUTS[old]  # keep only the current version of an organization
    _INPUTS[key] = inputs
    return inputs


def provenance_probes(inputs: Sequence[CommunityInput]) -> dict[str, str]:
    """One chunk id per document any of the communities draws on: what `Liveness.paths` fetches."""
    probes: dict[str, str] = {}
    for community in inputs:
        for path, chunk_id in community.provenance.items():
            probes.setdefault(path, chunk_id)
    return probes


def live_inputs(inputs: Sequence[CommunityInput], live_paths: set[str]) -> list[CommunityInput]:
    """The communities as the map may read them: only claims of live documents, and a community only
    while at least one document it draws on is live.

    A community whose every source document was deleted or replaced since the build is left out, so
    its summary cannot be quoted; a mixed one keeps its summary and loses the gone documents' claims
    (their sentences, verbatim source text, are what the offline map quotes and what citations use).
    """
    kept: list[CommunityInput] = []
    for community in inputs:
        provenance = {p: c for p, c in community.provenance.items() if p in live_paths}
        if not provenance:
            continue
        claims = [cl for cl in community.claims if cl.path in live_paths]
        kept.append(dataclasses.replace(community, claims=claims, provenance=provenance))
    return kept


def with_community_support(
    sources: Sequence[Any],
    communities_of: dict[str, list[str]],
    inputs: Sequence[CommunityInput],
    augment_budget: int = AUGMENT_BUDGET,
) -> list[Any]:
    """Each source with `support`: the text (`augmented_text`: title, report, live claims) of every
    community it stands for, exactly what the map step read of them.

    A global answer's sentence is written from those texts, so that is what its citation is checked
    against (`librarian.answers.source_support`), besides the chunk itself."""
    by_id = {c.id: c for c in inputs}
    out: list[Any] = []
    for source in sources:
        support = [
            {"kind": "community", "id": cid, "text": augmented_text(by_id[cid], augment_budget)}
            for cid in communities_of.get(source["id"], [])
            if cid in by_id
        ]
        out.append({**source, "support": support})
    return out


def claim_positions(inputs: Sequence[CommunityInput]) -> dict[tuple[str, str], tuple[str, int]]:
    """(community id, quoted line) -> (document path, chunk index) of every claim: where an offline
    quote sits in its document, which an overview answer spreads its themes over
    (`librarian.graph.query.global_breadth`)."""
    from librarian.graph.query.global_breadth import chunk_position

    positions: dict[tuple[str, str], tuple[str, int]] = {}
    for community in inputs:
        for claim in community.claims:
            position = chunk_position(claim.chunk_id, claim.path)
            if position is not None:
                positions.setdefault((community.id, claim_line(claim.text)), position)
    return positions


@dataclass
class DocumentOutlines:
    """Where an overview's quotes sit in their documents' outlines (`librarian.graph.query.outline`):
    (community id, quoted line) -> section, each document's chunk count and section sizes."""

    sections: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    extent: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, dict[tuple[int, ...], int]] = field(default_factory=dict)


def _offset_in(text: str, line: str) -> int:
    """Where `line` (whitespace collapsed) begins in `text`, by its first words; 0 when not found."""
    words = line.split()[:8]
    if not words:
        return 0
    match = re.search(r"\s+".join(re.escape(w) for w in words), text)
    return match.start() if match else 0


def read_outlines(
    inputs: Sequence[CommunityInput], chunks: Sequence[Any], chunk_counts: dict[str, int]
) -> DocumentOutlines:
    """The outlines of the documents the claims of `inputs` quote, read from `chunks` (every chunk of
    those documents, `ChunkRef`s), and the section each claim sits in.

    Pure: the caller reads the chunks (`load_outlines`)."""
    from librarian.graph.query.global_breadth import chunk_position
    from librarian.graph.query.outline import read_outline, section_at, section_sizes

    texts: dict[str, dict[int, str]] = {}
    for chunk in chunks:
        texts.setdefault(chunk.path, {})[chunk.chunk_index] = chunk.text
    headings = {path: read_outline(by_index) for path, by_index in texts.items()}
    out = DocumentOutlines(extent=dict(chunk_counts))
    for path, found in headings.items():
        extent = chunk_counts.get(path) or max(texts[path]) + 1
        second = {s: n for s, n in section_sizes(found, extent, 2).items() if len(s) == 2}
        out.sizes[path] = {**section_sizes(found, extent, 1), **second}
    for community in inputs:
        for claim in community.claims:
            position = chunk_position(claim.chunk_id, claim.path)
            if position is None or not headings.get(position[0]):
                continue
            line = claim_line(claim.text)
            offset = _offset_in(texts[position[0]].get(position[1], ""), line)
            out.sections.setdefault(
                (community.id, line), section_at(headings[position[0]], position[1], offset)
            )
    return out


def load_outlines(graph: Any, version: int, inputs: Sequence[CommunityInput]) -> DocumentOutlines:
    """`read_outlines` over every chunk of the documents the claims of `inputs` quote (blocking: the
    graph store reads them; only an overview question needs them)."""
    paths = {claim.path for community in inputs for claim in community.claims if claim.path}
    counts = {d.path: d.chunk_count for d in graph.documents(version=version) if d.path in paths}
    ids = [f"{path}:{i}" for path, count in counts.items() for i in range(count)]
    return read_outlines(inputs, graph.chunks(ids, version=version), counts)
