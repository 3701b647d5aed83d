"""Probes of the user-private channels: threads, streams and runs of one user's conversation.

The owner's thread carries their private marker in its title and first question. A colleague in the
same organization, whatever their role, gets what another organization gets: nothing of it. The
owner's own reads are the positive control (their state, their stream, their run's input).
"""

from __future__ import annotations

from typing import ClassVar

from librarian.evaluation.leaks.probe import ChannelProbe, Scope
from librarian.evaluation.leaks.readings import Reading
from librarian.evaluation.leaks.session import AuditSession
from librarian.evaluation.leaks.world import LeakWorld, Member

FOLLOW_UP = {"role": "user", "content": "What did I ask you to keep?"}
#: Joining a finished run's stream sends nothing unless it is replayed: the seeded runs are resumable,
#: and this header asks for every event after the first id.
REPLAY_FROM_START = {"Last-Event-ID": "0"}


class ThreadsProbe(ChannelProbe):
    name: ClassVar[str] = "threads"
    scope: ClassVar[Scope] = "user"

    async def read(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member
    ) -> list[Reading]:
        thread = world.threads[owner.user]
        return [
            await session.call(reader, "GET", f"/threads/{thread}"),
            await session.call(reader, "GET", f"/threads/{thread}/state"),
            await session.call(reader, "POST", f"/threads/{thread}/history", json_body={"limit": 5}),
            await session.call(reader, "POST", "/threads/search", json_body={"limit": 100}),
            await session.call(
                reader, "POST", "/threads/search", json_body={"metadata": {"owner": owner.user}}
            ),
        ]


class StreamsProbe(ChannelProbe):
    name: ClassVar[str] = "streams"
    scope: ClassVar[Scope] = "user"

    async def read(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member
    ) -> list[Reading]:
        thread, run = world.threads[owner.user], world.runs[owner.user]
        body = {"assistant_id": "agent", "input": {"messages": [FOLLOW_UP]}, "stream_mode": ["values"]}
        return [
            await session.call(reader, "POST", f"/threads/{thread}/runs/stream", json_body=body, stream=True),
            await session.call(
                reader, "GET", f"/threads/{thread}/runs/{run}/stream", stream=True, headers=REPLAY_FROM_START
            ),
        ]


class RunsProbe(ChannelProbe):
    name: ClassVar[str] = "runs"
    scope: ClassVar[Scope] = "user"

    async def read(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member
    ) -> list[Reading]:
        thread, run = world.threads[owner.user], world.runs[owner.user]
        return [
            await session.call(reader, "GET", f"/threads/{thread}/runs"),
            await session.call(reader, "GET", f"/threads/{thread}/runs/{run}"),
            await session.call(reader, "GET", f"/threads/{thread}/runs/{run}/join"),
        ]
