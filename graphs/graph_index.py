"""The graph index build: one run per organization on thread `{org}:graph` (server: uuid5 of it; both
ids are `librarian.runs.threads.graph_thread_id` and `graph_server_thread_id`).

    await_ingests ─► collect ─► Send × stale documents ─► extract_document ─► merge
                        └──────────────(nothing stale)────────────────────────┘   │
                     publish ◄─ embed ◄─ summarize ◄─ communities ◄─────────────────┘
    (every stage but extract_document and publish also goes to END once the build is cancelled)

- `await_ingests` (server only) waits until the organization's ingest runs are idle when the build
  was scheduled by a document change;
- `collect` lists the indexed documents and marks as stale those whose cached extraction is missing or
  was made from other content or other extractor settings (a rebuild never re-extracts the rest);
- `extract_document` (fan-out) extracts one document from its cached parse chunks, so chunk ids are the
  vector index's record ids;
- `merge` recomputes the graph from the cached extractions of the documents indexed now (a deleted
  document contributes nothing), with every source kept, into a new *building* version;
- `communities` runs hierarchical Leiden; `summarize` reuses every summary whose fingerprint is
  unchanged and writes the rest; `embed` embeds the new summaries;
- `publish` switches the organization's published version in one transaction and prunes the old one.

A build over its organization's token budget (`librarian.costs.budget`) stops the same way at a
stage boundary, ending `stopped` (error `budget`, with the figures); see `graphs/graph_index_nodes.py`.

A cancelled build (POST /orgs/{org}/graph/cancel flags its run) stops at the next stage boundary:
that stage only drops the version being built and ends the build `cancelled`, and the edge after
it goes to END. Only `publish` switches the published version, so a cancel leaves it as it was.

`graph` (module level) is what `langgraph.json` serves as `graph_index` (clients cannot start it: the
server's auth handlers refuse runs of it; the server's own routes start it in-process). There the
CPU-bound stages (local extraction, merge, communities, local summaries, embed) await their work in
the server's low-priority ingest worker (`librarian/runs/ingest_worker.py`), within the
organization's share of it, so another organization's question keeps the server's CPU and GIL during
a build; `LIBRARIAN_INGEST_OFFLOAD=false` runs them in the server process. Plain Python builds its own
with `build_graph_index_graph(...)`, which runs every stage inline.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer, RetryPolicy

from graphs.context import LibrarianContext
from graphs.graph_index_nodes import ENDED, GraphIndexNodes, StackSupplier
from graphs.graph_index_state import GraphIndexInput, GraphIndexOutput, GraphIndexState
from graphs.ingest import TRANSIENT
from librarian.runs.ingest_worker import IngestOffload, server_offload
from librarian.stack import get_stack

GRAPH_NAME = "graph_index"
PROVIDER_RETRY = RetryPolicy(max_attempts=3, initial_interval=1.0, backoff_factor=2.0, retry_on=TRANSIENT)
EXTRACT_WORKERS = 2  # documents extracted at once (spaCy is CPU-bound; the machine has few cores)


def unless_cancelled(stage: str) -> Callable[[GraphIndexState], str]:
    """The edge to `stage`, or to END once a stage has ended the build `cancelled` (an admin) or
    `stopped` (over its token budget)."""

    def route(state: GraphIndexState) -> str:
        return END if state.get("status") in ENDED else stage

    route.__name__ = f"to_{stage}"
    return route


def inline_stages(nodes: GraphIndexNodes) -> dict[str, Callable[..., Any]]:
    """The CPU-bound stages as plain Python runs them: in the caller's process."""
    return {
        "extract_document": nodes.extract_document,
        "merge": nodes.merge,
        "communities": nodes.communities,
        "summarize": nodes.summarize,
        "embed": nodes.embed,
    }


def offloaded_stages(nodes: GraphIndexNodes) -> dict[str, Callable[..., Any]]:
    """The same stages on the server: awaited in its low-priority worker, so the process that answers
    questions keeps its CPU and its GIL during a build (issue 25)."""
    return {
        "extract_document": nodes.aextract_document,
        "merge": nodes.amerge,
        "communities": nodes.acommunities,
        "summarize": nodes.asummarize,
        "embed": nodes.aembed,
    }


def build_graph_index_graph(
    stack: StackSupplier = get_stack, checkpointer: Checkpointer = None, offload: IngestOffload | None = None
) -> CompiledStateGraph:
    """Compile the build graph over the given providers (default: from the environment).

    With `offload` (the server), the CPU-bound stages are async nodes that run their work in its
    low-priority worker process; without it (plain Python) they run inline, as before.
    """
    nodes = GraphIndexNodes(stack, offload)
    heavy = offloaded_stages(nodes) if offload is not None else inline_stages(nodes)
    builder = StateGraph(
        GraphIndexState,
        context_schema=LibrarianContext,
        input_schema=GraphIndexInput,
        output_schema=GraphIndexOutput,
    )
    # sync in plain Python (nothing to wait for), async on the server (waits for the org's ingests)
    builder.add_node(
        "await_ingests",
        RunnableLambda(nodes.await_ingests, afunc=nodes.await_ingests_async, name="await_ingests"),
    )
    builder.add_node("collect", nodes.collect)
    for stage, node in heavy.items():  # a worker that died fails its stage as transient: retried
        builder.add_node(stage, node, retry_policy=PROVIDER_RETRY)
    builder.add_node("publish", nodes.publish)
    builder.add_edge(START, "await_ingests")
    builder.add_conditional_edges("await_ingests", unless_cancelled("collect"), ["collect", END])
    builder.add_conditional_edges("collect", nodes.route_extraction, ["extract_document", "merge", END])
    builder.add_edge("extract_document", "merge")  # an extraction that finds the cancel skips; merge stops
    stages = ["merge", "communities", "summarize", "embed", "publish"]
    for stage, following in pairwise(stages):
        builder.add_conditional_edges(stage, unless_cancelled(following), [following, END])
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=checkpointer, name=GRAPH_NAME).with_config(
        max_concurrency=EXTRACT_WORKERS
    )


graph = build_graph_index_graph(offload=server_offload())
