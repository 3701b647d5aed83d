"""Model objects to statement parameters, one builder per table written (no SQL, no database).

Kept apart from `writes` so the mapping of each field to its column can be read, and changed, in one
place; each builder yields rows lazily in the order the items were given (sources: sorted).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from librarian.graph.model import Claim, Community, DocumentRef, Edge, Entity, Provenance
from librarian.graph.sql.codec import to_blob

Row = dict[str, Any]


def degrees(edges: Sequence[Edge]) -> dict[str, int]:
    """Edges per entity, stored with the entity so reads can rank by it without counting."""
    degree: dict[str, int] = defaultdict(int)
    for e in edges:
        degree[e.source] += 1
        degree[e.target] += 1
    return degree


def document_rows(v: Row, documents: Sequence[DocumentRef]) -> Iterator[Row]:
    for d in documents:
        yield {**v, "path": d.path, "hash": d.content_hash, "extractor": d.extractor, "count": d.chunk_count}


def entity_rows(
    v: Row, entities: Sequence[Entity], degree: Mapping[str, int], embeddings: Mapping[str, np.ndarray]
) -> Iterator[Row]:
    for e in entities:
        yield {
            **v,
            "name": e.name,
            "display": e.display_name,
            "type": e.type,
            "description": e.description,
            "mentions": e.mentions,
            "degree": degree.get(e.name, 0),
            "embedding": to_blob(embeddings.get(e.name)),
        }


def alias_rows(v: Row, entities: Sequence[Entity]) -> Iterator[Row]:
    """One row per alias; an alias claimed by two entities goes to the first (the key is unique)."""
    aliases: dict[str, str] = {}
    for e in entities:
        for alias in e.aliases:
            if alias and alias != e.name:
                aliases.setdefault(alias, e.name)
    return ({**v, "alias": a, "name": n} for a, n in aliases.items())


def edge_rows(v: Row, edges: Sequence[Edge]) -> Iterator[Row]:
    for e in edges:
        yield {
            **v,
            "source": e.source,
            "target": e.target,
            "relation": e.relation,
            "weight": float(e.weight),
            "description": e.description,
        }


def claim_rows(v: Row, claims: Sequence[Claim]) -> Iterator[Row]:
    for c in claims:
        yield {
            **v,
            "id": c.id,
            "subject": c.subject,
            "object": c.object,
            "description": c.description,
            "chunk": c.chunk_id,
            "path": c.path,
        }


def source_rows(
    v: Row, entities: Sequence[Entity], edges: Sequence[Edge], claims: Sequence[Claim]
) -> Iterator[Row]:
    """Every (kind, item, path, chunk) once; a claim without sources is sourced by its own chunk."""
    sources: set[tuple[str, str, str, str]] = set()
    for e in entities:
        sources.update(("e", e.name, s.path, s.chunk_id) for s in e.sources)
    for r in edges:
        sources.update(("r", f"{r.source}\x1f{r.target}", s.path, s.chunk_id) for s in r.sources)
    for c in claims:
        sources.update(
            ("c", c.id, s.path, s.chunk_id) for s in (c.sources or [Provenance(c.path, c.chunk_id)])
        )
    return ({**v, "kind": k, "item": i, "path": p, "chunk": ch} for k, i, p, ch in sorted(sources))


def community_rows(v: Row, communities: Sequence[Community]) -> Iterator[Row]:
    for c in communities:
        yield {
            **v,
            "id": c.id,
            "level": c.level,
            "parent": c.parent,
            "children": json.dumps(sorted(c.children)),
            "leaf": 1 if c.is_leaf else 0,
            "fp": c.fingerprint,
            "title": c.title,
            "summary": c.summary,
            "embedding": to_blob(c.summary_embedding),
            "summarizer": c.summarizer,
            "rank": float(c.rank),
        }


def member_rows(v: Row, communities: Sequence[Community]) -> Iterator[Row]:
    return ({**v, "community": c.id, "name": m} for c in communities for m in sorted(set(c.members)))


def summary_rows(version: int, communities: Sequence[Community]) -> Iterator[Row]:
    for c in communities:
        yield {
            "version": int(version),
            "id": c.id,
            "title": c.title,
            "summary": c.summary,
            "summarizer": c.summarizer,
            "embedding": to_blob(c.summary_embedding),
        }
