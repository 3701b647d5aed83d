"""Probes of the standard-client endpoints: MCP, A2A and the OpenAI-compatible chat API.

These clients carry no organization of their own: the token decides. An attacker also tries to
continue the owner's conversation (MCP `thread_id`, A2A `contextId`) and to smuggle the owner's
organization into arguments the endpoint should refuse or ignore.
"""

from __future__ import annotations

from typing import ClassVar

from librarian.evaluation.leaks.probe import OrganizationProbe
from librarian.evaluation.leaks.readings import Reading
from librarian.evaluation.leaks.session import OPENAI_MODEL, AuditSession
from librarian.evaluation.leaks.world import LeakWorld, Member


def question_for(world: LeakWorld, owner: Member) -> str:
    """A question that finds the owner's secret (dense and sparse both point at it)."""
    return f"What is the guarded code of the vault with the word {world.library(owner.org).keyword}?"


class McpProbe(OrganizationProbe):
    name: ClassVar[str] = "mcp"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        question = question_for(world, owner)
        if org == reader.org:
            return [
                await session.mcp(reader, "search_documents", {"query": question}),
                await session.mcp(reader, "ask_library", {"question": question}),
            ]
        return [
            await session.mcp(reader, "search_documents", {"query": question, "organization_id": org}),
            await session.mcp(
                reader, "ask_library", {"question": question, "thread_id": world.threads[owner.user]}
            ),
        ]


class A2aProbe(OrganizationProbe):
    name: ClassVar[str] = "a2a"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        question = question_for(world, owner)
        if org == reader.org:
            return [await session.a2a(reader, question)]
        return [await session.a2a(reader, question, context_id=world.threads[owner.user])]


class OpenAiProbe(OrganizationProbe):
    name: ClassVar[str] = "openai"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        question = question_for(world, owner)
        if org == reader.org:
            return [await session.openai(reader, question)]
        body = {
            "model": OPENAI_MODEL,
            "messages": [{"role": "user", "content": question}],
            "user": owner.user,
            "metadata": {"organization_id": org},
        }
        return [await session.call(reader, "POST", "/v1/chat/completions", json_body=body)]
