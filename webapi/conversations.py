"""The retention route: an admin erases a member's conversations without reading them.

Conversations are private to their owner on every other route (`auth.py`); this is the one thing an
organization admin may do with a colleague's, for a departure or a retention request.
"""

from __future__ import annotations

from typing import Annotated

from services.conversations import erase_member_conversations
from webapi.access import Access, admin
from webapi.models import ConversationsErased
from webapi.params import MemberId
from webapi.routing import librarian_router, refusals

router = librarian_router()


@router.delete(
    "/orgs/{org}/members/{member}/conversations",
    response_model=ConversationsErased,
    operation_id="eraseMemberConversations",
    summary="Organization admins: delete every conversation a member started in the organization.",
    description="Deletes the member's chat threads with their runs, without returning any of their "
    "content. Document status threads are not conversations and are not touched.",
    response_description="How many conversations were deleted.",
    responses=refusals({403: "Not an admin of the organization."}),
)
async def erase_conversations(
    member: MemberId, access: Annotated[Access, admin("erase a member's conversations")]
) -> ConversationsErased:
    deleted = await erase_member_conversations(access.org, member)
    return ConversationsErased(organization_id=access.org, member=member, deleted=deleted)
