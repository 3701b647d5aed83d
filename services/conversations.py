"""Retention: erase one member's conversations in an organization, without reading them.

Conversations (chat threads) belong to the user who started them; nobody else reads them, the
organization's admins included (`auth.py`). An admin still has to be able to honour a departure or
a retention request, so this deletes every chat thread a member owns in one organization and answers
only how many there were. It runs through the server's in-process client, which the auth handlers do
not filter: the route has already checked that the caller is an admin of `org`, and the search names
the organization, the owner and the kind, so document status threads and other organizations' threads
are never touched.
"""

from __future__ import annotations

from typing import Any

from librarian.runs.server_client import sdk_client

#: Threads fetched per page; deleting shifts the listing, so every page is read from offset 0.
PAGE = 100


async def erase_member_conversations(org: str, member: str, client: Any = None) -> int:
    """Delete every chat thread `member` owns in `org` (their runs and crons go with them)."""
    client = sdk_client(client)
    metadata = {"organization_id": org, "owner": member, "kind": "chat"}
    deleted = 0
    while True:
        page = await client.threads.search(metadata=metadata, limit=PAGE, select=["thread_id"])
        if not page:
            return deleted
        for thread in page:
            await client.threads.delete(thread["thread_id"])
            deleted += 1
