"""Response bodies of the Graph page's explorer routes (`webapi.graph_explore`), for the OpenAPI.

Kept beside the routes rather than in `webapi.models`, which many parts share; the bodies are `Open`
like the rest: the listed keys are the contract, a producer may add more.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from webapi.models import GraphCommunity, GraphEdge, GraphNode, LocalSource, Open


class EntityMatches(Open):
    organization_id: str
    version: int
    query: str
    total: int = Field(description="How many entities match (the list is the first `limit`).")
    entities: list[GraphNode] = Field(description="Best match first, then the best connected.")


class CommunityPage(Open):
    organization_id: str
    version: int
    query: str = ""
    offset: int = 0
    limit: int = 0
    total: int = Field(default=0, description="Communities matching, over all pages.")
    communities: list[GraphCommunity] = Field(
        description="Largest first; `members`/`memberKeys` are the best connected few."
    )


class CommunityDetail(Open):
    organization_id: str
    version: int
    id: int
    level: int
    parent: int | None = None
    children: list[int] = Field(default_factory=list)
    title: str
    summary: str
    size: int = Field(description="Live members (of documents still indexed).")
    members: list[GraphNode] = Field(description="Best connected first; look each up by `name`.")
    relations: list[GraphEdge] = Field(description="The strongest relations between members.")
    relationCount: int


class EvidenceItem(Open):
    kind: Literal["claim", "relation"]
    text: str
    subject: str
    object: str | None = None
    relation: str | None = None
    sources: list[int] = Field(description="1-based numbers of `sources` it cites.")


class EntityEvidence(Open):
    organization_id: str
    version: int
    entity: dict[str, Any] = Field(description="name (the key), label, type, degree, description.")
    evidence: list[EvidenceItem]
    sources: list[LocalSource] = Field(description="What a citation opens: path, page, bbox, text.")
