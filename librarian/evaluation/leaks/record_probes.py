"""Probes of an organization's records: delete receipts, the evaluation gate, the graph cost ledger.

These routes hold no document text, so the evidence is what each record names: a delete receipt
names the deleted file's path, the gate's state names its questions file, and the cost ledger (all
zeros with the offline defaults, so its figures cannot tell one organization from another) names
the organization it was computed for. Each probe first creates the owner's record through the public
routes (upload and delete one document; upload a questions file), so the owner's control has
something of its own to see. An attacker reads in their own library and naming the owner's: a
successful answer labelled with the owner's organization is a leak, whatever its figures.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from librarian.evaluation.leaks.probe import OrganizationProbe
from librarian.evaluation.leaks.readings import Reading, markers_found, served_for
from librarian.evaluation.leaks.seeding import upload, wait_indexed
from librarian.evaluation.leaks.session import AuditSession
from librarian.evaluation.leaks.tokens import AuditSetupError
from librarian.evaluation.leaks.world import LeakWorld, Library, Member


class RecordProbe(OrganizationProbe):
    """One organization record route (`route`, under `/orgs/{org}`); the owner's marker in it, or an
    answer for the owner's organization given to someone else, is the owner's data."""

    route: ClassVar[str]

    async def read_in(
        self, session: AuditSession, world: LeakWorld, reader: Member, owner: Member, org: str
    ) -> list[Reading]:
        return [await session.call(reader, "GET", f"/orgs/{org}/{self.route}")]

    def evidence(self, world: LeakWorld, reader: Member, owner: Member, reading: Reading) -> list[str]:
        found = markers_found(reading, world.library(owner.org).markers)
        return found + (served_for(reading, owner.org) if reader.org != owner.org else [])


class DeleteReceiptsProbe(RecordProbe):
    """`GET /orgs/{org}/documents/receipts` (admins): each library deletes one document whose name is
    its marker, so its own receipt list shows it."""

    name: ClassVar[str] = "delete-receipts"
    route: ClassVar[str] = "documents/receipts"

    async def prepare(self, session: AuditSession, world: LeakWorld) -> None:
        await asyncio.gather(*(self._delete_one(session, lib) for lib in world.libraries))

    async def _delete_one(self, session: AuditSession, lib: Library) -> None:
        admin = lib.members[0]
        text = f"# {lib.company} scratch note\n\nThis note about {lib.company} is deleted again.\n"
        path = await upload(session, admin, lib.deleted_name, text.encode())
        await wait_indexed(session, admin, path)
        deleted = await session.call(admin, "DELETE", f"/orgs/{lib.org}/documents/{path}")
        if deleted.status != 200:
            raise AuditSetupError(
                f"deleting {lib.org}/{path} answered {deleted.status}: {deleted.text[:200]}"
            )


class EvalGateProbe(RecordProbe):
    """`GET /orgs/{org}/eval/gate` (admins): each library stores a judged-questions file named with
    its marker (`PUT /orgs/{org}/eval/questions`), which the gate's state names as its source."""

    name: ClassVar[str] = "eval-gate"
    route: ClassVar[str] = "eval/gate"

    async def prepare(self, session: AuditSession, world: LeakWorld) -> None:
        for lib in world.libraries:
            admin = lib.members[0]
            row = {"question": f"What is the guarded code of the {lib.company} vault?", "answer": lib.secret}
            stored = await session.call(
                admin,
                "PUT",
                f"/orgs/{lib.org}/eval/questions",
                json_body=row,  # one JSON object: a one-line JSONL file
                params={"filename": lib.questions_name},
            )
            if stored.status != 200:
                raise AuditSetupError(
                    f"storing the judged questions of {lib.org} answered {stored.status}: {stored.text[:200]}"
                )


class GraphCostsProbe(RecordProbe):
    """`GET /orgs/{org}/graph/costs` (members): the ledger has no marker to carry (zeros offline), so
    the owner's control is their own ledger labelled with their organization, and a leak is a ledger
    labelled with the owner's organization answered to the other organization's admin."""

    name: ClassVar[str] = "graph-costs"
    route: ClassVar[str] = "graph/costs"

    def evidence(self, world: LeakWorld, reader: Member, owner: Member, reading: Reading) -> list[str]:
        return served_for(reading, owner.org) + markers_found(reading, world.library(owner.org).markers)
