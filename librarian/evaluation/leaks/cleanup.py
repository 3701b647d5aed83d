"""Removing what the audit seeded, so a deployment audited before go-live keeps no test tenants' data.

Best effort, through the public routes: each library's documents (vectors first, then the file, as
every delete does; the graph is rebuilt without them) and each seeded user's conversations (the
admin's erase route, which also takes the conversations MCP and A2A opened). A failed step is
reported, never raised: the tally is already complete.
"""

from __future__ import annotations

from librarian.evaluation.leaks.seeding import Progress
from librarian.evaluation.leaks.session import AuditSession, json_of
from librarian.evaluation.leaks.world import FLOOD_NAME, PAGE_NAME, LeakWorld


async def clean_up(session: AuditSession, world: LeakWorld, progress: Progress) -> None:
    """Delete the seeded documents and erase the seeded users' conversations."""
    deleted = erased = failed = 0
    for lib in world.libraries:
        admin = lib.members[0]
        for name in (lib.notes_name, PAGE_NAME, FLOOD_NAME):
            reading = await session.call(admin, "DELETE", f"/orgs/{lib.org}/documents/docs/{name}")
            deleted += reading.status < 300
            failed += reading.status >= 300 and reading.status != 404
        for member in lib.members:
            route = f"/orgs/{lib.org}/members/{member.user}/conversations"
            reading = await session.call(admin, "DELETE", route)
            erased += int((json_of(reading) or {}).get("deleted", 0)) if reading.status == 200 else 0
            failed += reading.status != 200
    note = f", {failed} steps failed" if failed else ""
    progress(f"cleaned up: {deleted} documents deleted, {erased} conversations erased{note}")
