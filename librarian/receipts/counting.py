"""Counting what one document occupies in every store, so a delete's receipt can show before and after.

Why measure instead of trusting the delete's code path: the receipt is what an admin shows to prove a
deletion. Each count here is read from the store that holds the data (the index's records of the
path, the namespace's sparse statistics, the parse cache sidecar, the page cache's files, the graph
store's rows of the published version and the extraction cache), once before the delete and once
after, with the same query.

Blocking (stores are read synchronously): call `measure` in a worker thread from async code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from librarian.index.base import VectorRecord, record_id_prefix
from librarian.page_cache import page_cache
from librarian.parsing.cache import sidecar_name
from librarian.receipts.model import NOTHING, PENDING, REMOVED, Place
from librarian.stack import Stack

#: Places whose data a delete removes at once, and their units.
IMMEDIATE = {
    "stored_file": "files",
    "vectors_dense": "records",
    "vectors_sparse": "records",
    "sparse_statistics": "term-document counts",
    "parse_cache": "cached parses",
    "page_images": "images",
}
#: Places of the published graph (and its extraction cache) that the next build rewrites.
GRAPH = {
    "graph_document": "documents",
    "graph_chunks": "chunks",
    "graph_entities": "entities drawing on it",
    "graph_relations": "relations drawing on it",
    "graph_claims": "claims",
    "graph_communities": "community summaries rewritten",
    "extraction_cache": "cached extractions",
    "chunk_extraction_cache": "cached chunk observations",
}
CACHES_NOTE = (
    "no answer cache exists; query-time caches (reranker and DRIFT sentence vectors) are keyed by text, "
    "are filled only from what the index returns and cite nothing; the LanceDB namespace snapshot is keyed "
    "by table version, which the delete advanced"
)


@dataclass
class Footprint:
    """What one document occupies, measured at one moment."""

    counts: dict[str, int]
    content_hash: str | None = None
    term_ids: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # its chunks' text (the probes' questions)
    graph_version: int | None = None
    notes: dict[str, str] = field(default_factory=dict)


def _records(stack: Stack, org: str, path: str) -> list[VectorRecord]:
    """The index's records of the path: ids by prefix, then checked by their `path` metadata."""
    ids = stack.index.list_ids(namespace=org, prefix=record_id_prefix(path))
    fetched = stack.index.fetch(ids, namespace=org) if ids else {}
    return [r for r in fetched.values() if (r.get("metadata") or {}).get("path") == path]


def _sparse_statistics(stack: Stack, org: str, term_ids: list[int]) -> int | None:
    """Σ over the document's terms of the namespace's document frequency; None if the index keeps none."""
    counts = getattr(stack.index, "sparse_term_counts", None)
    if counts is None:
        return None
    if not term_ids:
        return 0
    _, frequencies = counts(term_ids, namespace=org)
    return int(sum(frequencies.values()))


def _graph_counts(stack: Stack, org: str, path: str) -> tuple[int | None, dict[str, int]]:
    """The path's rows in the published graph version and in the extraction cache."""
    graph = stack.graph_store.scope(org)
    cached = graph.cached_extractions()
    extraction = cached.get(path)
    counts = {
        "extraction_cache": 1 if extraction else 0,
        "chunk_extraction_cache": len(graph.get_chunk_extractions(path, extraction[1])) if extraction else 0,
    }
    published = graph.published_version()
    if published is None:
        return None, {**counts, **{k: 0 for k in GRAPH if k not in counts}}
    version = published.version
    document = next((d for d in graph.documents(version=version) if d.path == path), None)
    entities = [e for e in graph.entities(version=version) if any(s.path == path for s in e.sources)]
    names = {e.name for e in entities}
    edges = [e for e in graph.edges(names, version=version) if any(s.path == path for s in e.sources)]
    claims = [c for c in graph.claims_for(names, version=version) if any(s.path == path for s in c.sources)]
    communities = [c for c in graph.communities(version=version) if names.intersection(c.members)]
    counts.update(
        graph_document=1 if document else 0,
        graph_chunks=document.chunk_count if document else 0,
        graph_entities=len(entities),
        graph_relations=len(edges),
        graph_claims=len({c.id for c in claims}),
        graph_communities=len(communities),
    )
    return version, counts


def measure(stack: Stack, org: str, path: str, *, like: Footprint | None = None) -> Footprint:
    """Count the document everywhere. `like`: the footprint before the delete, whose content hash
    and term ids the second measurement reuses (the records that carried them are gone by then)."""
    records = _records(stack, org, path)
    term_ids = sorted({i for r in records for i in (r.get("sparse_values") or {}).get("indices", [])})
    hashes = {str((r.get("metadata") or {}).get("contentHash") or "") for r in records} - {""}
    content_hash = like.content_hash if like else (sorted(hashes)[0] if hashes else None)
    term_ids = like.term_ids if like else term_ids
    notes: dict[str, str] = {}
    sparse = _sparse_statistics(stack, org, term_ids)
    if sparse is None:
        notes["sparse_statistics"] = "this index keeps no per-namespace statistics (fixed IDF)"
    elif stack.settings.sparse_idf != "namespace":
        notes["sparse_statistics"] = (
            "derived from the index's rows; scoring uses them with LIBRARIAN_SPARSE_IDF=namespace"
        )
    parse = 0
    if content_hash:
        parse = int(
            stack.files.read_sidecar(org, path, sidecar_name(content_hash, stack.parser.cache_key))
            is not None
        )
    version, graph = _graph_counts(stack, org, path)
    counts = {
        "stored_file": int(stack.files.exists(org, path)),
        "vectors_dense": sum(1 for r in records if r.get("values")),
        "vectors_sparse": sum(1 for r in records if (r.get("sparse_values") or {}).get("indices")),
        "sparse_statistics": sparse or 0,
        "parse_cache": parse,
        "page_images": page_cache(stack).images_of(org, path),
        **graph,
    }
    texts = [str((r.get("metadata") or {}).get("text") or "") for r in records]
    return Footprint(counts, content_hash, term_ids, [t for t in texts if t], version, notes)


def places(before: Footprint, after: Footprint) -> list[Place]:
    """Each place with its counts and what happened there; graph rows still there are pending."""
    found: list[Place] = []
    for name, unit in {**IMMEDIATE, **GRAPH}.items():
        was, now = before.counts.get(name, 0), after.counts.get(name, 0)
        if was == 0 and now == 0:
            action = NOTHING
        elif name in GRAPH and now > 0:
            action = PENDING
        else:
            action = REMOVED
        found.append(Place(name, unit, was, now, action, before.notes.get(name, "")))
    found.append(Place("answer_and_query_caches", "entries", 0, 0, NOTHING, CACHES_NOTE))
    return found


def still_there(found: list[Place]) -> list[Place]:
    """Places the delete should have emptied at once but did not (a receipt must say so)."""
    return [p for p in found if p.place in IMMEDIATE and p.after > 0]


def pending(found: list[Place], build: dict[str, Any]) -> list[dict[str, Any]]:
    """Graph contributions that survive until the next build, each naming that build."""
    return [{"place": p.place, "count": p.after, "removedBy": build} for p in found if p.action == PENDING]
