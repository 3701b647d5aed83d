"""Re-embed graph: rebuild a document's vectors from its cached parse, never parsing again.

Used after a change of embedding model (a new index with a new contract) or to repair an index. It
runs on the document's own thread, so the document's status stays "the latest run of its thread",
and it reuses the ingest graph's nodes from `map_chunks` on. `services/reindex_migrate.py` runs it
against a new index to convert one built under another embedding contract (`reindex --migrate`).
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.context import LibrarianContext, organization_of
from graphs.ingest import UPSERT_WORKERS, add_ingest_nodes
from graphs.ingest_nodes import IngestNodes, StackSupplier, run_reset
from graphs.ingest_state import IngestInput, IngestOutput, IngestState
from librarian.files.paths import filename_of, validate_document_path
from librarian.parsing.cache import ParseCache, content_hash
from librarian.parsing.media import guess_media_type
from librarian.runs.ingest_worker import IngestOffload, server_offload
from librarian.stack import get_stack


class ReindexNodes(IngestNodes):
    def load_cached_parse(
        self, state: IngestState, config: RunnableConfig, runtime: Runtime[LibrarianContext]
    ) -> Command:
        """Find the cached parse of the file's current bytes; without one there is nothing to do."""
        org = organization_of(config, runtime)
        stack = self._stack()
        path = validate_document_path(state["path"])
        reset = {**run_reset(), "path": path}
        filename = state.get("filename") or filename_of(path)
        try:
            data = stack.files.read(org, path)
        except FileNotFoundError:
            update = {"status": "skipped", "error": "file_not_found", "reason": "the file does not exist"}
            return Command(goto="delete_vectors", update={**reset, **update, "filename": filename})
        digest = content_hash(data)
        parser_key = stack.parser.cache_key
        if ParseCache(stack.files).get(org, path, digest, parser_key) is None:
            update = {
                "status": "failed",
                "error": "no_cached_parse",
                "reason": "no cached parse for the current file; ingest it instead",
            }
            return Command(goto="finalize", update={**reset, **update, "filename": filename})
        update = {
            "filename": filename,
            "contentHash": digest,
            "parser": parser_key,
            "parseCacheHit": True,
            "mediaType": state.get("mediaType") or guess_media_type(filename, data),
            "sizeBytes": len(data),
        }
        return Command(goto="map_chunks", update={**reset, **update})


def build_reindex_graph(
    stack: StackSupplier = get_stack, checkpointer=None, offload: IngestOffload | None = None
):
    """Compile the re-embed graph; `offload` as in `build_ingest_graph` (the server embeds in its worker)."""
    nodes = ReindexNodes(stack, offload)
    builder = StateGraph(
        IngestState, context_schema=LibrarianContext, input_schema=IngestInput, output_schema=IngestOutput
    )
    builder.add_node(
        "load_cached_parse",
        nodes.load_cached_parse,
        destinations=("map_chunks", "delete_vectors", "finalize"),
    )
    builder.add_edge(START, "load_cached_parse")
    add_ingest_nodes(builder, nodes)
    return builder.compile(checkpointer=checkpointer, name="reindex").with_config(
        max_concurrency=UPSERT_WORKERS
    )


graph = build_reindex_graph(offload=server_offload())
