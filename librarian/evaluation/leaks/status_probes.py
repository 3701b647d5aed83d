"""Probe of the status routes: the document list, one document's status, the graph's status.

They carry no document text, but the document list names the library's files, so the note's file
name, unique per library, is the evidence, and so is the note's content hash (its status carries it);
the graph status names no file, so an answer labelled with the owner's organization
(`organization_id`) counts too.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

from librarian.evaluation.leaks.probe import OrganizationProbe
from librarian.evaluation.leaks.readings import Reading, markers_found, served_for
from librarian.evaluation.leaks.session import AuditSession
from librarian.evaluation.leaks.world import LeakWorld, Library, Member, notes_document


class DocumentStatusProbe(OrganizationProbe):
    name: ClassVar[str] = "document-status"

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        path = f"docs/{world.library(owner.org).notes_name}"
        return [
            await session.call(reader, "GET", f"/orgs/{org}/documents"),
            await session.call(reader, "GET", f"/orgs/{org}/documents/{path}"),
            await session.call(reader, "GET", f"/orgs/{org}/graph"),
        ]

    def evidence(self, world: LeakWorld, reader: Member, owner: Member, reading: Reading) -> list[str]:
        """The note's file name or content hash, or an answer labelled with the owner's organization:
        the note's status names only the path the caller asked for (but carries the note's
        `contentHash`), and the graph status names no file, so either served to another organization
        would otherwise pass unseen."""
        lib = world.library(owner.org)
        markers = (*lib.markers, notes_hash(world, lib))
        return markers_found(reading, markers) + served_for(reading, owner.org)


def notes_hash(world: LeakWorld, lib: Library) -> str:
    """The note's `contentHash` as the server reports it: sha256 of the uploaded bytes."""
    return hashlib.sha256(notes_document(lib, world.statistics_term)).hexdigest()
