"""Who may see and change a thread: the one statement of the rule, as filters and as predicates.

"userId is the actor, organizationId is the library." A conversation (a chat thread, with its runs,
state, history, streams and crons) belongs to the user who started it; nobody else sees it, of any
role. A document status thread belongs to the organization: every member reads it, no client writes
it. The server's auth handlers (`auth.py`) hand the filters to the platform, which applies them to
thread metadata; the routes the platform leaves unchecked (`webapi.thread_gate`) apply the predicates.
Both come from here, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CHAT, DOCUMENT = "chat", "document"


def owned_filter(org: str, user: str) -> dict[str, str]:
    """What the user created in the organization (conversations, crons)."""
    return {"organization_id": org, "owner": user}


def own_conversations_filter(org: str, user: str) -> dict[str, str]:
    """The user's chat threads: what they may run on, change and delete."""
    return {**owned_filter(org, user), "kind": CHAT}


def readable_threads_filter(org: str, user: str) -> dict[str, Any]:
    """The user's own threads, and the organization's document status threads."""
    return {"organization_id": org, "$or": [{"owner": user}, {"kind": DOCUMENT}]}


def can_read(metadata: Mapping[str, Any], org: str, user: str) -> bool:
    """`readable_threads_filter` as a predicate."""
    if metadata.get("organization_id") != org:
        return False
    return metadata.get("owner") == user or metadata.get("kind") == DOCUMENT


def can_write(metadata: Mapping[str, Any], org: str, user: str) -> bool:
    """`own_conversations_filter` as a predicate."""
    return all(metadata.get(key) == value for key, value in own_conversations_filter(org, user).items())
