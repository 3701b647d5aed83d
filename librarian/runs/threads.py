"""Thread ids of documents and graph builds, light on purpose: status readers need not import graphs."""

from __future__ import annotations

from uuid import NAMESPACE_URL, uuid5


def thread_id(organization_id: str, path: str) -> str:
    """Plain-Python thread id of a document; the server uses uuid5 of the same string."""
    return f"{organization_id}:{path}"


def server_thread_id(organization_id: str, path: str) -> str:
    """Server thread ids must be UUIDs; the readable `org:path` key goes into thread metadata."""
    return str(uuid5(NAMESPACE_URL, thread_id(organization_id, path)))


def graph_thread_id(organization_id: str) -> str:
    """Plain-Python thread id of an organization's graph build; the server uses uuid5 of it."""
    return f"{organization_id}:graph"


def graph_server_thread_id(organization_id: str) -> str:
    """Server thread ids must be UUIDs; the readable `{org}:graph` key goes into thread metadata."""
    return str(uuid5(NAMESPACE_URL, graph_thread_id(organization_id)))
