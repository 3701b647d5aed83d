"""Thread ids of documents: light on purpose, so status readers need not import the graphs."""

from __future__ import annotations

from uuid import NAMESPACE_URL, uuid5


def thread_id(organization_id: str, path: str) -> str:
    """Plain-Python thread id of a document; the server uses uuid5 of the same string."""
    return f"{organization_id}:{path}"


def server_thread_id(organization_id: str, path: str) -> str:
    """Server thread ids must be UUIDs; the readable `org:path` key goes into thread metadata."""
    return str(uuid5(NAMESPACE_URL, thread_id(organization_id, path)))
