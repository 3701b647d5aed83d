"""The GraphRAG data model: what the build writes and what local/global retrieval reads (DESIGN §10).

Every item that comes from text keeps *all* its sources (`Provenance` = document path + chunk id), not
the single last writer the reference keeps, so deleting a document removes only its contribution.
Chunk ids are the vector index's record ids (`"{path}:{chunkIndex}"`, see `librarian.index.base`), so
graph evidence and search sources resolve to the same `path, page, bbox`.

Names are keyed by `normalize_name`: one function shared by the build (merging) and retrieval (exact
and alias matching), so both sides agree on what "the same name" means. An entity's key is the
normalised *display name*, never a lemma, so anything holding only the label (a page, a person typing
it) reaches the entity; spelling variants are aliases (`librarian.graph.merge`).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$", re.UNICODE)
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")
_RELATION = re.compile(r"[^a-z0-9]+")


def normalize_name(text: str) -> str:
    """The key of an entity name: NFKC, lower case, single spaces, no edge punctuation or possessive.

    "  Scrooge's " → "scrooge"; "Mr. Scrooge" → "mr. scrooge" (titles are folded by the alias rule of the
    extractor, not here: a key must stay a faithful spelling of one name).
    """
    value = unicodedata.normalize("NFKC", text or "").lower().strip()
    value = _SPACE.sub(" ", value)
    value = _EDGE_PUNCT.sub("", value)
    value = _POSSESSIVE.sub("", value)
    return _EDGE_PUNCT.sub("", value)


def normalize_relation(text: str) -> str:
    """Relation names are lower_snake_case ("Works For" → "works_for"); empty → "related_to"."""
    value = _RELATION.sub("_", unicodedata.normalize("NFKC", text or "").lower()).strip("_")
    return value or "related_to"


def edge_key(a: str, b: str) -> tuple[str, str]:
    """Edges are undirected: the pair is stored ordered (source < target)."""
    return (a, b) if a <= b else (b, a)


def claim_id(subject: str, description: str) -> str:
    """Claims are unique per (subject, sha256(lower(trim(description)))) as in the reference."""
    digest = hashlib.sha256(description.strip().lower().encode("utf-8")).hexdigest()
    return hashlib.sha256(f"{subject}\x1f{digest}".encode()).hexdigest()[:24]


@dataclass(frozen=True, order=True)
class Provenance:
    """One source of an item: the document path and the chunk (vector record id) it came from."""

    path: str
    chunk_id: str


@dataclass
class Entity:
    name: str  # the key within (org, version); always normalize_name(display_name) (merge's name rule)
    display_name: str  # the canonical spelling as it appears in text ("Ebenezer Scrooge")
    type: str = "CONCEPT"  # PERSON, ORG, GPE, ..., NOUN_PHRASE (local) or the LLM's label
    description: str = ""
    aliases: list[str] = field(
        default_factory=list
    )  # normalised variant keys, e.g. ["scrooge", "mr. scrooge"]
    sources: list[Provenance] = field(default_factory=list)
    mentions: int = 0  # how many times it was named (local extractor) / extracted (llm)
    degree: int = 0  # number of distinct neighbours in this version (set by the store on publish)


@dataclass
class Edge:
    source: str  # entity key, source < target
    target: str
    relation: str  # lower_snake_case; the most frequent relation name of the pair
    weight: float  # summed over all extractions (local: co-occurrence counts; llm: clamped 1-5 each)
    description: str = ""
    sources: list[Provenance] = field(default_factory=list)


@dataclass
class Claim:
    id: str  # claim_id(subject, description)
    subject: str  # entity key
    object: str | None  # entity key or None
    description: str  # verbatim sentence from the chunk text
    chunk_id: str  # first source's chunk (convenience; all are in `sources`)
    path: str
    sources: list[Provenance] = field(default_factory=list)


@dataclass
class Community:
    id: int  # unique within (org, version); stable only by fingerprint, not across versions
    level: int  # 0 = root (coarsest); deeper levels are finer
    parent: int | None
    members: list[str]  # entity keys (every member of its descendants too), sorted
    children: list[int] = field(default_factory=list)
    is_leaf: bool = True
    fingerprint: str = ""
    title: str = ""
    summary: str = ""
    summary_embedding: np.ndarray | None = None  # float32, L2-normalised, the dense embedder's space
    summarizer: str = ""  # key of the summarizer that wrote the summary (reuse only within a key)
    rank: float = 0.0  # importance (sum of member degrees), for ordering only


@dataclass
class ChunkRef:
    """A chunk of an indexed document as the vector index stores it: where evidence points."""

    chunk_id: str  # == vector record id "{path}:{chunkIndex}"
    path: str
    chunk_index: int
    page: int
    bbox: dict[str, float] | None  # {left, top, width, height} on `page` (None for non-visual text)
    text: str
    content_hash: str = ""


@dataclass
class DocumentRef:
    """An indexed document as one graph version saw it."""

    path: str
    content_hash: str
    extractor: str  # extractor cache key used for it
    chunk_count: int = 0


@dataclass
class KeywordHit:
    chunk_id: str
    matched: int  # number of distinct query terms found (case-insensitive substring)
    length: int  # characters of the chunk (tie-break: longer first, as the reference)


VersionStatus = Literal["building", "published", "superseded", "failed"]


@dataclass
class GraphVersion:
    """One build of an organization's graph. Readers only ever see the published one."""

    org: str
    version: int
    status: VersionStatus
    created_at: str
    published_at: str | None = None
    documents: int = 0
    entities: int = 0
    edges: int = 0
    claims: int = 0
    communities_per_level: dict[int, int] = field(default_factory=dict)
    extractor: str = ""
    summarizer: str = ""
    embedding_model: str = ""  # dense model of summary and entity-name embeddings
    stats: dict[str, Any] = field(default_factory=dict)  # build timings, reuse counts, ...

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "status": self.status,
            "createdAt": self.created_at,
            "publishedAt": self.published_at,
            "documents": self.documents,
            "entities": self.entities,
            "edges": self.edges,
            "claims": self.claims,
            "communitiesPerLevel": {str(k): v for k, v in sorted(self.communities_per_level.items())},
            "extractor": self.extractor,
            "summarizer": self.summarizer,
            "embeddingModel": self.embedding_model,
            "stats": self.stats,
        }
