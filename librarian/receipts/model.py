"""The receipt of one delete: every place the document lived, with counts measured before and after.

Why counts in pairs: a receipt is evidence. "Removed 12 vectors" means 12 were counted by a query of
the index before the delete and 0 by the same query after; a place whose `after` is not 0 is said so,
never rounded away. Graph contributions survive in the published graph version until the next build
(queries already skip them, `librarian.graph.query.liveness`): they are listed as `pending`, with
the build that removes them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: What happened at a place: gone now, or rewritten/removed by the next graph build.
REMOVED, PENDING, NOTHING = "removed", "pending_rebuild", "nothing_there"


@dataclass(frozen=True)
class Place:
    """One place the document lived: `before` and `after` are counts of `unit` measured there."""

    place: str
    unit: str
    before: int
    after: int
    action: str  # REMOVED, PENDING or NOTHING
    note: str = ""

    @property
    def removed(self) -> int:
        return max(self.before - self.after, 0)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "removed": self.removed}


@dataclass(frozen=True)
class Probe:
    """One post-condition check: a retrieval channel asked the document's own text."""

    channel: str
    found: bool
    query: str
    detail: str = ""


@dataclass
class Receipt:
    """What `DELETE /orgs/{org}/documents/{path}` and `librarian delete` answer, and what is kept."""

    id: str
    organization_id: str
    path: str
    deleted_at: str  # ISO 8601, UTC
    deleted_by: str | None
    places: list[Place] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)  # place, count, removedBy (a build)
    probes: list[Probe] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """True only if probes ran and none found the document."""
        return bool(self.probes) and not any(p.found for p in self.probes)

    @property
    def found_in(self) -> list[str]:
        return [p.channel for p in self.probes if p.found]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "organizationId": self.organization_id,
            "path": self.path,
            "deletedAt": self.deleted_at,
            "deletedBy": self.deleted_by,
            "verified": self.verified,
            "foundIn": self.found_in,
            "places": [p.as_dict() for p in self.places],
            "pending": list(self.pending),
            "probes": [asdict(p) for p in self.probes],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Receipt:
        """The inverse of `as_dict` (derived fields `verified`, `foundIn`, `removed` are recomputed)."""
        places = [
            Place(p["place"], p["unit"], int(p["before"]), int(p["after"]), p["action"], p.get("note", ""))
            for p in data.get("places") or []
        ]
        probes = [
            Probe(p["channel"], bool(p["found"]), p["query"], p.get("detail", ""))
            for p in data.get("probes") or []
        ]
        return cls(
            id=data["id"],
            organization_id=data["organizationId"],
            path=data["path"],
            deleted_at=data["deletedAt"],
            deleted_by=data.get("deletedBy"),
            places=places,
            pending=list(data.get("pending") or []),
            probes=probes,
        )
