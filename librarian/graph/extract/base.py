"""The extractor interface and the payload it returns (what the extraction cache stores per document).

An extractor turns one document's chunks into surface-level entities, relations and claims. It does not
merge name variants across documents: that is the merge step's job (`librarian.graph.merge`), because
"Scrooge" in one document and "Ebenezer Scrooge" in another are only known to be one person once both
are seen. Payloads are plain JSON so they can be cached by content hash + `cache_key`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired, Protocol, TypedDict

from librarian.graph.model import ChunkRef

PAYLOAD_FORMAT = 1


class EntityRecord(TypedDict):
    name: str  # normalize_name of the surface form
    display: str  # the most frequent surface spelling
    type: str
    description: str
    mentions: int
    chunks: list[str]  # chunk ids where it is named
    variant: NotRequired[str]  # local extractor: the plural-folded key ("loading datum"), a merge hint


class RelationRecord(TypedDict):
    source: str  # entity key (source < target)
    target: str
    relation: str  # lower_snake_case
    weight: float
    description: str
    chunks: list[str]


class ClaimRecord(TypedDict):
    subject: str
    object: str | None
    description: str  # verbatim sentence
    chunk: str  # chunk id


class ExtractionPayload(TypedDict):
    format: int
    extractor: str
    entities: list[EntityRecord]
    relations: list[RelationRecord]
    claims: list[ClaimRecord]
    stats: dict[str, Any]


class Extractor(Protocol):
    """Turns one document's chunks into an extraction payload. Never raises on bad model output."""

    @property
    def cache_key(self) -> str:
        """Everything that changes the output (model, version, options): part of the cache key."""
        ...

    def extract(self, chunks: Sequence[ChunkRef]) -> ExtractionPayload: ...


def empty_payload(extractor: str, **stats: Any) -> ExtractionPayload:
    return {
        "format": PAYLOAD_FORMAT,
        "extractor": extractor,
        "entities": [],
        "relations": [],
        "claims": [],
        "stats": dict(stats),
    }
