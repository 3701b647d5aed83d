"""Probes of the GraphRAG channels: entities, communities, claims, global and DRIFT answers.

Each reads the way the web app and the agent do: the graph routes under `/orgs/{org}/graph/...`
(an attacker also names the owner's organization in the route) and, for global answers, an overview
question to the agent, which the mode chooser sends to the community summaries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import ClassVar

from librarian.evaluation.leaks.probe import OrganizationProbe
from librarian.evaluation.leaks.readings import Reading
from librarian.evaluation.leaks.search_probes import agent_in
from librarian.evaluation.leaks.session import AuditSession, json_of
from librarian.evaluation.leaks.world import LeakWorld, Member

OVERVIEW_QUESTION = "What are the main topics of this library?"


def entity_named(entities: Reading, names: Sequence[str]) -> str:
    """The first of `names` the entity listing holds as an entity (case-insensitive), else the first.

    The extractor decides which invented names become entities (a person's name may come out
    shortened), and a neighbourhood or evidence read for a name the graph lacks answers 404 even to
    the owner: the probes ask for an entity the owner's own graph holds."""
    body = json_of(entities) if entities.status == 200 else None
    listed = body.get("entities") if isinstance(body, dict) else None
    held = (
        {str(e.get("name")).casefold() for e in listed if isinstance(e, dict)}
        if isinstance(listed, list)
        else set()
    )
    return next((name for name in names if name.casefold() in held), names[0])


class KnownEntityProbe(OrganizationProbe):
    """A probe that asks about one entity of the owner's graph, learnt by the owner in `prepare`."""

    def __init__(self) -> None:
        self.entities: dict[str, str] = {}  # organization -> one of its entities (a marker)

    async def prepare(self, session: AuditSession, world: LeakWorld) -> None:
        for lib in world.libraries:
            listing = await session.call(lib.members[0], "GET", f"/orgs/{lib.org}/graph/entities")
            self.entities[lib.org] = entity_named(listing, (lib.person, lib.partner, lib.company))

    def entity_of(self, world: LeakWorld, owner: Member) -> str:
        return self.entities.get(owner.org) or world.library(owner.org).person


class EntitiesProbe(KnownEntityProbe):
    """The neighbourhood of one of the owner's entities (its neighbours, the owner's other names, are
    the evidence), and the entity search with no query (the best connected entities of the library)."""

    name: ClassVar[str] = "graph-entities"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        entity = self.entity_of(world, owner)
        return [
            await session.call(reader, "GET", f"/orgs/{org}/graph/neighbourhood", params={"entity": entity}),
            await session.call(reader, "GET", f"/orgs/{org}/graph/entities"),
        ]


class CommunitiesProbe(OrganizationProbe):
    """The community listing, and one of the owner's communities by its id (learnt by the owner)."""

    name: ClassVar[str] = "graph-communities"

    def __init__(self) -> None:
        self.community_ids: dict[str, int] = {}  # organization -> one of its community ids

    async def prepare(self, session: AuditSession, world: LeakWorld) -> None:
        for lib in world.libraries:
            listing = json_of(await session.call(lib.members[0], "GET", f"/orgs/{lib.org}/graph/communities"))
            communities = listing.get("communities") if isinstance(listing, dict) else None
            ids = [
                c.get("id") for c in communities or [] if isinstance(c, dict) and isinstance(c.get("id"), int)
            ]
            if ids:
                self.community_ids[lib.org] = ids[0]

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        readings = [await session.call(reader, "GET", f"/orgs/{org}/graph/communities")]
        if owner.org in self.community_ids:
            path = f"/orgs/{org}/graph/communities/{self.community_ids[owner.org]}"
            readings.append(await session.call(reader, "GET", path))
        return readings


def claims_only(reading: Reading) -> Reading:
    """A local answer reduced to its claim evidence, so chunks quoted beside them do not count."""
    body = json_of(reading)
    if reading.status != 200 or not isinstance(body, dict):
        return reading
    claims = [e for e in body.get("evidence") or [] if isinstance(e, dict) and e.get("kind") == "claim"]
    return Reading(reading.request + " (claims)", reading.sent, reading.status, json.dumps(claims))


class ClaimsProbe(KnownEntityProbe):
    """The claim evidence of a local answer about one of the owner's entities, and that entity's
    evidence."""

    name: ClassVar[str] = "graph-claims"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        entity = self.entity_of(world, owner)
        local = await session.call(
            reader, "GET", f"/orgs/{org}/graph/local", params={"q": f"What does {entity} do?"}
        )
        evidence = await session.call(reader, "GET", f"/orgs/{org}/graph/evidence", params={"entity": entity})
        return [claims_only(local), evidence]


class GlobalProbe(OrganizationProbe):
    name: ClassVar[str] = "global-answers"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        return await agent_in(session, reader, OVERVIEW_QUESTION, org)


class DriftProbe(OrganizationProbe):
    name: ClassVar[str] = "drift-answers"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        lib = world.library(owner.org)
        question = f"How does {lib.person} shape the work of the vault?"
        return [await session.call(reader, "GET", f"/orgs/{org}/graph/drift", params={"q": question})]
