"""Probe of the page images (`GET /orgs/{org}/documents/{path}/pages/{n}.png`).

A PNG holds no searchable text, so the evidence is the image itself: the owner's rendered page,
fetched once by the owner, must never come back byte for byte to anyone else. Both libraries hold a
PDF under the same name, so the attacker's request for that path in their own library is answered
with their own (different) page, and naming the owner's library must be refused.
"""

from __future__ import annotations

from typing import ClassVar

from librarian.evaluation.leaks.probe import OrganizationProbe
from librarian.evaluation.leaks.readings import Reading, digest_found, markers_found
from librarian.evaluation.leaks.session import AuditSession
from librarian.evaluation.leaks.world import PAGE_NAME, LeakWorld, Member

PAGE_PATH = f"docs/{PAGE_NAME}/pages/1.png"


class PageImagesProbe(OrganizationProbe):
    name: ClassVar[str] = "page-images"

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}  # organization -> digest of its page as its owner got it

    async def prepare(self, session: AuditSession, world: LeakWorld) -> None:
        for lib in world.libraries:
            reading = await session.call(lib.members[0], "GET", f"/orgs/{lib.org}/documents/{PAGE_PATH}")
            if reading.status == 200 and reading.digest:
                self.digests[lib.org] = reading.digest

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        return [await session.call(reader, "GET", f"/orgs/{org}/documents/{PAGE_PATH}")]

    def evidence(self, world: LeakWorld, reader: Member, owner: Member, reading: Reading) -> list[str]:
        digests = [self.digests[owner.org]] if owner.org in self.digests else []
        return digest_found(reading, digests) + markers_found(reading, world.library(owner.org).markers)
