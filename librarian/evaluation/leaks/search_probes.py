"""Probes of the search channels: dense, sparse, and the sparse encoder's corpus statistics.

Searches run the way a member runs them, through the agent (`POST /runs/wait`, no chat model
needed: the extractive agent quotes what search found). The dense probe asks a paraphrase that shares
no rare word with the documents; the sparse probe asks only the owner's invented keyword, which only
the lexical side can match. The attacker's variant names the owner's organization in the run context.
"""

from __future__ import annotations

from typing import Any, ClassVar

from librarian.evaluation.leaks.probe import OrganizationProbe
from librarian.evaluation.leaks.readings import Reading, value_moved
from librarian.evaluation.leaks.seeding import upload, wait_indexed
from librarian.evaluation.leaks.session import AuditSession, json_of
from librarian.evaluation.leaks.world import FLOOD_NAME, LeakWorld, Member, flood_document

DENSE_QUESTION = "What is the guarded code of the vault?"


async def agent_in(session: AuditSession, reader: Member, question: str, org: str) -> list[Reading]:
    """An agent run; for another `org`, the run's context claims it (the server must ignore that)."""
    if org == reader.org:
        return [await session.agent(reader, question)]
    return [await session.agent(reader, question, context={"organization_id": org})]


class DenseProbe(OrganizationProbe):
    name: ClassVar[str] = "dense"

    async def read_in(self, session, world, reader, owner, org) -> list[Reading]:
        return await agent_in(session, reader, DENSE_QUESTION, org)


class SparseProbe(OrganizationProbe):
    name: ClassVar[str] = "sparse"

    async def read_in(self, session, world, reader, owner, org) -> list[Reading]:
        return await agent_in(session, reader, world.library(owner.org).keyword, org)


async def notes_score(
    session: AuditSession, member: Member, notes_name: str, term: str
) -> tuple[Reading, float | None]:
    """The MCP search score of the member's own notes document for `term` (None when not found)."""
    reading = await session.mcp(member, "search_documents", {"query": term, "top_k": 20})
    return reading, score_of(json_of(reading), f"docs/{notes_name}")


def score_of(body: Any, path: str) -> float | None:
    """The score of `path`'s first result in an MCP `tools/call` reply of any shape (None if absent)."""
    result = body.get("result") if isinstance(body, dict) else None
    content = result.get("structuredContent") if isinstance(result, dict) else None
    results = content.get("results") if isinstance(content, dict) else None
    for item in results if isinstance(results, list) else []:
        if isinstance(item, dict) and item.get("path") == path:
            score = item.get("score")
            return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
    return None


class SparseStatisticsProbe(OrganizationProbe):
    """Corpus statistics (per-namespace IDF) must be the library's own. Every library holds the
    statistics term once; then each library in turn uploads a document repeating it. The owner's own
    score for the term must move (control: statistics matter on this deployment), the other
    library's must not (a leak: its statistics include the owner's documents)."""

    name: ClassVar[str] = "sparse-statistics"

    def __init__(self) -> None:
        self.measured: dict[tuple[str, str], Reading] = {}

    async def _scores(
        self, session: AuditSession, world: LeakWorld
    ) -> dict[str, tuple[Reading, float | None]]:
        return {
            lib.org: await notes_score(session, lib.members[0], lib.notes_name, world.statistics_term)
            for lib in world.libraries
        }

    async def prepare(self, session: AuditSession, world: LeakWorld) -> None:
        admins = [lib.members[0] for lib in world.libraries]
        before = await self._scores(session, world)
        for admin in admins:
            path = await upload(session, admin, FLOOD_NAME, flood_document(world.statistics_term))
            await wait_indexed(session, admin, path)
            after = await self._scores(session, world)
            for reader in admins:
                reading, value = after[reader.org]
                self.measured[(reader.org, admin.org)] = Reading(
                    f"MCP search_documents after {admin.org} uploaded {FLOOD_NAME}",
                    reading.sent,
                    reading.status,
                    reading.text,
                    value=value,
                    baseline=before[reader.org][1],
                )
            before = after

    async def read(self, session, world, reader, owner) -> list[Reading]:
        measured = self.measured.get((reader.org, owner.org))
        return [measured] if measured and reader == world.library(reader.org).members[0] else []

    def evidence(self, world, reader, owner, reading) -> list[str]:
        return value_moved(reading)
