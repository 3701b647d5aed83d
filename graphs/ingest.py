"""The ingest graph: one run per (organization, path), wired exactly as DESIGN §4.

    load_file ─(Command)─► parse ─(Command)─► map_chunks ─► delete_vectors ─► plan_batches
        │                    └─(job submitted)─► await_parse ─┘       ▲                │
        └──────────(missing/empty)────────────────────────────────────┘                │
                                              Send × ceil(n/batch) ─► upsert_batch ─► finalize
                                                          (no chunks / skipped) ───────► finalize

With Reducto in job mode (`LIBRARIAN_REDUCTO_MODE=job`, the default), `parse` submits the document
and ends, so the job id is in the checkpoint before anything waits; `await_parse` polls it. That node
has a blocking form (plain Python) and an awaitable one (async runs: the server), so a slow or
rate-limited parse waits on the event loop without a thread or the ingest worker, and a run resumed
after a restart polls the same job. The local parser keeps its one synchronous `parse` step.

`graph` (module level) is what `langgraph.json` serves: the server supplies the checkpointer, and
parse and embed run in the server's low-priority ingest worker (`librarian/runs/ingest_worker.py`). Plain
Python builds its own with `build_ingest_graph(checkpointer=...)`, which parses and embeds inline.
"""

from __future__ import annotations

import functools
from typing import Any

from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.types import Checkpointer, RetryPolicy

from graphs.context import LibrarianContext
from graphs.ingest_nodes import IngestNodes, StackSupplier
from graphs.ingest_state import IngestInput, IngestOutput, IngestState
from librarian.errors import TransientProviderError
from librarian.runs.ingest_worker import IngestOffload, server_offload
from librarian.runs.threads import thread_id
from librarian.stack import get_stack

# The default policy skips OSError/RuntimeError/ValueError, so name exactly what is worth retrying:
# provider hiccups and network failures, not bad documents or bugs.
TRANSIENT = (TransientProviderError, ConnectionError, TimeoutError)
PROVIDER_RETRY = RetryPolicy(max_attempts=4, initial_interval=1.0, backoff_factor=2.0, retry_on=TRANSIENT)
# Upsert batches running at once in one run. Dense embedding is serial on the one model anyway, so
# two workers keep it busy (one embeds while the other writes); more only held more batches in memory
# and raced each other's index commits (peak RSS of a 250-page PDF: 1,162 MiB unbounded, 1,000 at 2).
# A run's own config may still set `max_concurrency`.
UPSERT_WORKERS = 2
__all__ = ["UPSERT_WORKERS", "add_ingest_nodes", "build_ingest_graph", "graph", "thread_id"]


def add_ingest_nodes(builder: StateGraph, nodes: IngestNodes) -> StateGraph:
    """Nodes shared by the ingest and re-embed graphs, from map_chunks to finalize."""
    builder.add_node("map_chunks", nodes.map_chunks)
    builder.add_node("delete_vectors", nodes.delete_vectors, retry_policy=PROVIDER_RETRY)
    upsert = nodes.aupsert_batch if nodes.offloaded else nodes.upsert_batch
    builder.add_node("upsert_batch", upsert, retry_policy=PROVIDER_RETRY)
    builder.add_node("finalize", nodes.finalize)
    builder.add_edge("map_chunks", "delete_vectors")
    builder.add_conditional_edges("delete_vectors", nodes.plan_batches, ["upsert_batch", "finalize"])
    builder.add_edge("upsert_batch", "finalize")
    builder.add_edge("finalize", END)
    return builder


class _NodeLambda(RunnableLambda):
    """A node with a blocking and an awaitable form, holding no stack after the graph is dropped.

    `RunnableLambda.deps` looks for nested runnables through langchain_core's process-wide
    `get_function_nonlocals` cache, keyed by the function: for a bound method of `IngestNodes` that
    keeps the nodes, and so their stack (models, index), alive for the life of the process. The
    node's forms call no nested runnable, so there is nothing to find.
    """

    @functools.cached_property
    def deps(self) -> list[Runnable[Any, Any]]:
        return []


def build_ingest_graph(
    stack: StackSupplier = get_stack, checkpointer: Checkpointer = None, offload: IngestOffload | None = None
):
    """Compile the ingest graph over the given providers (default: from the environment).

    With `offload` (the server), parse and embed run as async nodes in its low-priority worker
    process; without it (plain Python) they run inline and the graph can be invoked synchronously.
    """
    nodes = IngestNodes(stack, offload)
    builder = StateGraph(
        IngestState, context_schema=LibrarianContext, input_schema=IngestInput, output_schema=IngestOutput
    )
    builder.add_node("load_file", nodes.load_file, destinations=("parse", "delete_vectors", "finalize"))
    builder.add_node(
        "parse",
        nodes.aparse if offload else nodes.parse,
        retry_policy=PROVIDER_RETRY,
        destinations=("await_parse", "map_chunks", "delete_vectors"),
    )
    # Both forms in one node: LangGraph runs `afunc` when the graph runs async (the server, whatever
    # the offload setting) and `func` for plain Python's synchronous stream.
    await_parse = _NodeLambda(nodes.await_parse, afunc=nodes.aawait_parse, name="await_parse")
    builder.add_node(
        "await_parse",
        await_parse,
        retry_policy=PROVIDER_RETRY,
        destinations=("map_chunks", "delete_vectors"),
    )
    builder.add_edge(START, "load_file")
    add_ingest_nodes(builder, nodes)
    return builder.compile(checkpointer=checkpointer, name="ingest").with_config(
        max_concurrency=UPSERT_WORKERS
    )


graph = build_ingest_graph(offload=server_offload())
