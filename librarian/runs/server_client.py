"""The LangGraph server's in-process SDK client, and a thread's recent runs as the server reports them.

Kept in the runs package (not in the services) because a graph node needs them too: the graph build
asks the server whether the organization's ingests are idle. The SDK is imported only when used, so
plain Python never loads it.
"""

from __future__ import annotations

from typing import Any


def sdk_client(client: Any = None) -> Any:
    """`client` when given (tests pass a fake), otherwise the server's in-process client."""
    if client is not None:
        return client
    from langgraph_sdk import get_client

    return get_client()


async def thread_runs(client: Any, thread: str) -> list[dict[str, Any]]:
    """The thread's latest runs, newest first; none for a thread the server has never seen."""
    from langgraph_sdk.errors import NotFoundError

    try:
        return list(await client.runs.list(thread, limit=20))
    except NotFoundError:
        return []
