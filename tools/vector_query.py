"""`create_vector_query_tool`: Mastra's `createVectorQueryTool` in Python, without its tenancy trap.

Mastra lets the namespace come from `databaseConfig.pinecone.namespace`, set at creation or per
request, and its filter prompt invites the model to write filters: either way a client or a model
can end up choosing the tenant (seeds 001 §6, 003). Here the namespace is always the run's
organization (`resolve_organization`); no option, override or resolver can name another one, and a
filter that mentions a tenant key is refused before anything is embedded or queried.

Everything else follows Mastra: `query_text` / `top_k` / optional `filter` for the model, a reranker
given as an object or `{"scorer" | "model", "options": {"weights", "top_k"}}`, per-store
`database_config` (pinecone, pgvector, lancedb, and chroma / turbopuffer mapped onto the store in
use: `librarian.vector_query.database_config`), `provider_options`, `include_vectors` /
`include_sources`, a store instance, a resolver, or a server-configured store by name
(`vector_store_name`, `librarian.vector_query.named_stores`), and per-run overrides (Mastra's
request context) under `vector_query` in the run's context or `configurable`, where a run may also
pick the embedder, reranker and top_k within the server's limits
(`librarian.vector_query.run_choices`). It returns `{relevantContext, sources}` with Mastra's
`QueryResult` shape (`librarian.retrieval.query_results`).

Retrieval itself is `librarian.retrieval.search.retrieve`, the pipeline `search_documents` runs: for the same
query and settings both tools return the same sources (tests/integration/test_retrieval_core.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from librarian.embeddings.base import DenseEmbedder, SparseEmbedder
from librarian.index.base import EmbeddingContract, VectorIndex
from librarian.index.contract import check_contract
from librarian.index.filters import InvalidFilterError
from librarian.retrieval.query_results import query_result, query_tool_result
from librarian.retrieval.reranker import Reranker
from librarian.retrieval.search import QueryChannels, SearchOptions, retrieve
from librarian.stack import Stack, get_stack
from librarian.tenancy import organization_of
from librarian.vector_query.named_stores import named_store
from librarian.vector_query.run_choices import (
    check_provider_options,
    check_top_k_limit,
    dense_for_run,
    parse_provider_options,
    reranker_for_run,
)
from tools.vector_query_options import (
    QuerySettings,
    StoreOptions,
    TenantFilterError,
    UnknownVectorStoreError,
    VectorQueryOptionError,
    apply_overrides,
    build_reranker,
    check_query_filter,
    check_top_k,
    is_tenant_key,
    options_for,
    parse_database_config,
    run_overrides,
    store_kind,
)

__all__ = [
    "TenantFilterError",
    "UnknownVectorStoreError",
    "VectorQueryOptionError",
    "VectorStoreRequest",
    "check_query_filter",
    "create_vector_query_tool",
    "is_tenant_key",
]

MAX_MODEL_TOP_K = 100
DEFAULT_DESCRIPTION = "Access the knowledge base to find information needed to answer user questions."
FILTER_DESCRIPTION = (
    " You may narrow the search with a metadata filter in Pinecone's syntax, e.g. "
    '{"filename": {"$eq": "handbook.pdf"}} or {"page": {"$gte": 3}}; operators: $eq $ne $in $nin '
    "$gt $gte $lt $lte $exists $and $or. Filters refine relevance inside this organization's "
    "documents; they cannot select another organization."
)


@dataclass(frozen=True)
class VectorStoreRequest:
    """What a resolver may use to pick a store (Mastra's `VectorStoreResolver` argument).

    It may route an organization to its own store, but the tool still queries the namespace of
    `organization_id` in whatever store comes back: the resolver cannot widen the search.
    """

    organization_id: str
    index_name: str | None
    config: Mapping[str, Any]
    context: Any
    store_name: str | None = None  # a run's (or the creator's) vectorStoreName, for the resolver to map


VectorStoreResolver = Callable[[VectorStoreRequest], VectorIndex]


def check_query_contract(index: VectorIndex, dense: DenseEmbedder, sparse: SparseEmbedder | None) -> None:
    """Refuse to query an index whose vectors come from other models than the query's.

    With a fixed sparse vector (or alpha 1) no sparse model embeds the query, so only the dense
    side is compared.
    """
    recorded = index.contract
    check_contract(
        recorded,
        EmbeddingContract(
            dense_model=dense.model_id,
            dimension=dense.dimension,
            sparse_model=sparse.model_id if sparse is not None else recorded.sparse_model,
            metric=recorded.metric,
        ),
    )


# --------------------------------------------------------------------------------------------------
# the tool


class VectorQueryArgs(BaseModel):
    """Model-visible arguments. Anything else a model sends (namespace, org ...) is dropped."""

    query_text: str = Field(description="What to look for, in natural language or exact terms.")
    top_k: int | None = Field(
        default=None, ge=1, le=MAX_MODEL_TOP_K, description="How many results to return."
    )


class FilteredVectorQueryArgs(VectorQueryArgs):
    filter: dict[str, Any] | str | None = Field(
        default=None, description="Optional metadata filter (Pinecone syntax), as an object or JSON text."
    )


def _tool_name(id: str | None, index_name: str | None) -> str:
    """OpenAI tool names allow [A-Za-z0-9_-] only; Mastra's default id has spaces."""
    raw = id or ("vector_query" + (f"_{index_name}" if index_name else ""))
    return re.sub(r"[^A-Za-z0-9_-]", "_", raw)[:64]


def _and(*filters: dict[str, Any]) -> dict[str, Any]:
    present = [f for f in filters if f]
    if len(present) <= 1:
        return present[0] if present else {}
    return {"$and": present}


@dataclass(frozen=True)
class VectorQuery:
    """What `create_vector_query_tool` fixed at creation; a run may override `base`, never the namespace."""

    base: QuerySettings
    enable_filter: bool
    model: DenseEmbedder | None
    reranker: Reranker | None
    rerank_top_k: int | None
    vector_store: VectorIndex | VectorStoreResolver | None
    store_is_instance: bool
    stack: Callable[[], Stack]

    def run(
        self, query_text: str, config: RunnableConfig, top_k: int | None, filter: Any, runtime: Any
    ) -> dict[str, Any]:
        """One tool call: the run's settings and organization, then the shared retrieval core."""
        # Only LangGraph's ToolNode makes a ToolRuntime; a `runtime` key in the arguments is not one.
        context = runtime.context if isinstance(runtime, ToolRuntime) else None
        organization_id = organization_of(config, runtime)
        overrides = run_overrides(config, context)
        settings = apply_overrides(self.base, overrides)
        model_filter = self.model_filter(filter)
        current = self.stack()
        k = self.top_k(current, settings, overrides, top_k)
        index = self.resolve_store(
            current,
            VectorStoreRequest(
                organization_id, settings.index_name, config or {}, context, settings.store_name
            ),
        )
        kind = store_kind(index)
        options = options_for(kind, settings.database_config)
        if options.ef_search is not None and kind == "pgvector":
            index = index.with_ef_search(options.ef_search)  # type: ignore[attr-defined]
        alpha = current.settings.alpha if options.alpha is None else float(options.alpha)
        dense = dense_for_run(current, settings.model) if settings.model else (self.model or current.dense)
        check_provider_options(settings.provider_options, dense)
        channels = self.channels(current, index, dense, options, alpha)
        reranker, rerank_top_k = self.reranker, self.rerank_top_k
        if settings.reranker is not None:
            reranker, rerank_top_k = reranker_for_run(current, settings.reranker), None
        if not query_text.strip():
            return query_tool_result([], settings.include_sources)
        search_options = SearchOptions(
            top_k=k,
            alpha=alpha,
            candidates=current.settings.candidates,
            filter=_and(settings.filter, options.filter or {}, model_filter) or None,
            min_score=options.min_score,
            include_values=settings.include_vectors,
            require_text=False,  # Mastra returns every match; a record without text has document ""
        )
        ranked = retrieve(
            current, organization_id, query_text, search_options, reranker, channels, rerank_top_k or k
        )
        results = [query_result(item, settings.include_vectors) for item in ranked]
        return query_tool_result(results, settings.include_sources)

    @staticmethod
    def top_k(
        current: Stack, settings: QuerySettings, overrides: Mapping[str, Any], asked: int | None
    ) -> int:
        """Mastra's precedence (run override, then the model's, then the creator's), within the cap.

        Too many from the model goes back to it as a ToolException to fix, and from a run's
        override it is refused; the creator's default (trusted code, Mastra's 10) is capped, so a
        lower server limit does not break every tool built with defaults.
        """
        if "top_k" in overrides:
            return check_top_k_limit(current, settings.top_k, "run override top_k")
        if asked is None:
            return min(settings.top_k, current.settings.vector_query_max_top_k)
        try:
            return check_top_k_limit(current, asked, "top_k")
        except VectorQueryOptionError as exc:
            raise ToolException(str(exc)) from exc

    def model_filter(self, raw: dict[str, Any] | str | None) -> dict[str, Any]:
        """The model's filter, checked; a bad one goes back to the model as a ToolException to fix."""
        if not self.enable_filter:
            return {}
        try:
            return check_query_filter(raw)
        except InvalidFilterError as exc:
            raise ToolException(str(exc)) from exc

    def resolve_store(self, current: Stack, request: VectorStoreRequest) -> VectorIndex:
        """The resolver's choice, the creator's store, a server-configured store by name, or the index."""
        if self.vector_store is not None and not self.store_is_instance:
            store = self.vector_store(request)  # type: ignore[operator]
            if not callable(getattr(store, "query", None)):
                raise TypeError("the vector_store resolver must return a VectorIndex")
            return store
        if request.index_name != self.base.index_name:
            raise VectorQueryOptionError(
                "index_name can be changed per run only with a vector_store resolver"
            )
        if self.store_is_instance:
            if request.store_name != self.base.store_name:
                raise VectorQueryOptionError(
                    "this tool was created with a fixed vector_store: vector_store_name cannot pick another"
                )
            return self.vector_store  # type: ignore[return-value]
        if request.store_name is None:
            return current.index
        return named_store(current, request.store_name)

    @staticmethod
    def channels(
        current: Stack, index: VectorIndex, dense: DenseEmbedder, options: StoreOptions, alpha: float
    ) -> QueryChannels:
        """The query's models and store. A fixed sparse vector (or alpha 1) needs no sparse model."""
        sparse = current.sparse if options.sparse_vector is None and alpha < 1.0 else None
        check_query_contract(index, dense, sparse)
        return QueryChannels(
            index=index,
            dense=dense,
            sparse=sparse,
            sparse_vector=options.sparse_vector,
            use_sparse=alpha < 1.0,
        )


def configure_vector_query(
    *,
    index_name: str | None,
    model: DenseEmbedder | None,
    enable_filter: bool,
    include_vectors: bool,
    include_sources: bool,
    reranker: Reranker | Mapping[str, Any] | None,
    database_config: Mapping[str, Any] | None,
    vector_store: VectorIndex | VectorStoreResolver | None,
    top_k: int,
    stack: Callable[[], Stack],
    vector_store_name: str | None = None,
    provider_options: Mapping[str, Any] | None = None,
) -> VectorQuery:
    """Check the tool's options at creation, so that a configuration error never waits for a question."""
    base = QuerySettings(
        top_k=check_top_k(top_k, "top_k"),
        filter={},
        include_vectors=include_vectors,
        include_sources=include_sources,
        database_config=parse_database_config(database_config),
        index_name=index_name,
        store_name=vector_store_name,
        provider_options=parse_provider_options(provider_options),
    )
    rerank_with, rerank_top_k = build_reranker(reranker)
    is_instance = vector_store is not None and callable(getattr(vector_store, "query", None))
    if vector_store is not None and not is_instance and not callable(vector_store):
        raise TypeError("vector_store must be a VectorIndex or a callable(VectorStoreRequest) -> VectorIndex")
    if is_instance and model is not None:
        check_query_contract(vector_store, model, None)  # type: ignore[arg-type]
    return VectorQuery(
        base=base,
        enable_filter=enable_filter,
        model=model,
        reranker=rerank_with,
        rerank_top_k=rerank_top_k,
        vector_store=vector_store,
        store_is_instance=is_instance,
        stack=stack,
    )


def create_vector_query_tool(
    *,
    id: str | None = None,
    description: str | None = None,
    index_name: str | None = None,
    model: DenseEmbedder | None = None,
    enable_filter: bool = False,
    include_vectors: bool = False,
    include_sources: bool = True,
    reranker: Reranker | Mapping[str, Any] | None = None,
    database_config: Mapping[str, Any] | None = None,
    vector_store: VectorIndex | VectorStoreResolver | None = None,
    top_k: int = 10,
    vector_store_name: str | None = None,
    provider_options: Mapping[str, Any] | None = None,
    stack: Callable[[], Stack] = get_stack,
) -> BaseTool:
    """Build a vector query tool; everything but the namespace may be set here or per run.

    Configuration errors (tenant keys in `database_config`, bad weights, unknown options) raise
    here, at creation, rather than on the first question.
    """
    query = configure_vector_query(
        index_name=index_name,
        model=model,
        enable_filter=enable_filter,
        include_vectors=include_vectors,
        include_sources=include_sources,
        reranker=reranker,
        database_config=database_config,
        vector_store=vector_store,
        top_k=top_k,
        stack=stack,
        vector_store_name=vector_store_name,
        provider_options=provider_options,
    )

    def run(
        query_text: str,
        config: RunnableConfig,
        top_k: int | None = None,
        filter: dict[str, Any] | str | None = None,
        runtime: ToolRuntime = None,  # type: ignore[assignment]  # injected inside agents only
    ) -> dict[str, Any]:
        return query.run(query_text, config, top_k, filter, runtime)

    tool = StructuredTool.from_function(
        func=run,
        name=_tool_name(id, index_name),
        description=(description or DEFAULT_DESCRIPTION) + (FILTER_DESCRIPTION if enable_filter else ""),
        args_schema=FilteredVectorQueryArgs if enable_filter else VectorQueryArgs,
    )
    tool.handle_tool_error = True  # ToolException (a bad filter) goes back to the model to fix
    return tool
