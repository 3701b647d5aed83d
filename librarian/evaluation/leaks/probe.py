"""What a channel probe is: reads as one member aimed at another member's data, and its evidence rule.

The auditor calls `read(reader, owner)` twice over: with the owner as reader (the positive control:
the owner must see their own marker, or the probe is not exercising the channel) and with an
attacker as reader (a leak: the owner's evidence in the attacker's response). A test substitutes a
probe with a broken one to show the auditor catches it, so the interface is small on purpose.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from librarian.evaluation.leaks.readings import Reading, markers_found
from librarian.evaluation.leaks.session import AuditSession
from librarian.evaluation.leaks.world import LeakWorld, Member

Scope = Literal["organization", "user"]


class ChannelProbe:
    """One read channel. `scope` says whose data it guards: an organization's, or one user's."""

    name: ClassVar[str]
    scope: ClassVar[Scope] = "organization"

    async def prepare(self, session: AuditSession, world: LeakWorld) -> None:
        """Anything the probe must do once before reading (most need nothing)."""

    async def read(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member
    ) -> list[Reading]:
        """Every request of this channel by `reader` aimed at `owner`'s data."""
        raise NotImplementedError

    def evidence(self, world: LeakWorld, reader: Member, owner: Member, reading: Reading) -> list[str]:
        """The owner's data in the reading. A colleague legitimately sees the library, so for a
        user-private channel only the owner's private marker counts when the reader is a colleague."""
        colleague = self.scope == "user" and reader.org == owner.org and reader != owner
        return markers_found(reading, world.markers_of(owner, user_private=colleague))


class OrganizationProbe(ChannelProbe):
    """A channel of an organization's library: read in the reader's own library and, for an attacker,
    also naming the owner's organization (in the route, or in the run's context)."""

    scope: ClassVar[Scope] = "organization"

    async def read(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member
    ) -> list[Reading]:
        readings = await self.read_in(session, world, reader, owner, reader.org)
        if reader.org != owner.org:
            readings += await self.read_in(session, world, reader, owner, owner.org)
        return readings

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        """The channel's requests by `reader` in organization `org` (their own, or the owner's)."""
        raise NotImplementedError
