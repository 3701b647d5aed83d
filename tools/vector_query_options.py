"""The vector query tool's options: what may be configured, by whom, and what never may.

A run's overrides can come from the client on the LangGraph server, and a filter comes from the
model, so both are parsed with one rule: they may tune relevance within the organization, and any
key that could name a tenant (namespace, organization id, org, tenant, in any spelling, at any
depth) is refused with an error rather than silently ignored, so nobody believes it took effect.
The engines behind the options (per-store sections, named stores, per-run model choices) live in
`librarian.vector_query`; this module maps Mastra's option names onto them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from librarian.errors import TenantError
from librarian.index.base import VectorIndex
from librarian.index.filters import InvalidFilterError
from librarian.retrieval.reranker import Reranker
from librarian.vector_query.database_config import StoreOptions, options_for, parse_database_config
from librarian.vector_query.errors import UnknownVectorStoreError, VectorQueryOptionError
from librarian.vector_query.query_filter import TenantFilterError, check_query_filter
from librarian.vector_query.run_choices import parse_provider_options
from librarian.vector_query.tenant_keys import TENANT_KEYS, is_tenant_key, normal_key, refuse_tenant_keys

__all__ = [
    "OVERRIDES_KEY",
    "TENANT_KEYS",
    "InvalidFilterError",
    "QuerySettings",
    "StoreOptions",
    "TenantError",
    "TenantFilterError",
    "UnknownVectorStoreError",
    "VectorQueryOptionError",
    "apply_overrides",
    "build_reranker",
    "check_query_filter",
    "check_top_k",
    "is_tenant_key",
    "options_for",
    "parse_database_config",
    "run_overrides",
    "store_kind",
]

OVERRIDES_KEY = "vector_query"

# Accepted spellings (snake_case or Mastra's camelCase), keyed by the normalised key.
_OVERRIDE_NAMES = {
    "topk": "top_k",
    "filter": "filter",
    "includevectors": "include_vectors",
    "includesources": "include_sources",
    "databaseconfig": "database_config",
    "indexname": "index_name",
    "vectorstorename": "store_name",
    "model": "model",
    "embedder": "model",
    "reranker": "reranker",
    "provideroptions": "provider_options",
}
_STORE_KINDS = {"LanceVectorIndex": "lancedb", "PineconeVectorIndex": "pinecone", "PgVectorIndex": "pgvector"}


def store_kind(index: VectorIndex) -> str:
    """Which `database_config` section applies to this store."""
    name = type(index).__name__
    return _STORE_KINDS.get(name, name.lower())


@dataclass(frozen=True)
class QuerySettings:
    """Everything a run may override; the namespace is deliberately not a field.

    `model` and `reranker` are names a run picked (None: the tool's own); `store_name` picks a
    server-configured store (None: the tool's store, or the configured index).
    """

    top_k: int
    filter: dict[str, Any]
    include_vectors: bool
    include_sources: bool
    database_config: dict[str, StoreOptions]
    index_name: str | None
    store_name: str | None = None
    model: str | None = None
    reranker: str | None = None
    provider_options: dict[str, dict[str, Any]] = field(default_factory=dict)


def run_overrides(config: Mapping[str, Any] | None, context: Any) -> dict[str, Any]:
    """Per-run overrides from `configurable["vector_query"]`, then the context's (which wins).

    On the LangGraph server both can come from the client, which is why they may tune relevance
    but never choose the namespace.
    """
    merged: dict[str, Any] = {}
    configurable = (config or {}).get("configurable") or {}
    from_context = (
        context.get(OVERRIDES_KEY) if isinstance(context, Mapping) else getattr(context, OVERRIDES_KEY, None)
    )
    where = f"run overrides ({OVERRIDES_KEY})"
    for source in (configurable.get(OVERRIDES_KEY), from_context):
        if not source:
            continue
        if not isinstance(source, Mapping):
            raise VectorQueryOptionError(f"run overrides under {OVERRIDES_KEY!r} must be a mapping")
        refuse_tenant_keys({k: None for k in source}, where)  # the filter's own check names filters
        for key, value in source.items():
            name = _OVERRIDE_NAMES.get(normal_key(key))
            if name is None:
                raise VectorQueryOptionError(
                    f"unknown run override {key!r}; expected one of "
                    + ", ".join(sorted(set(_OVERRIDE_NAMES.values())))
                )
            if name not in ("filter", "database_config", "provider_options"):
                refuse_tenant_keys(value, f"{where}[{key!r}]")
            merged[name] = value
    return merged


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise VectorQueryOptionError(f"run override {what} must be a non-empty string, got {value!r}")
    return value.strip()


def apply_overrides(base: QuerySettings, overrides: Mapping[str, Any]) -> QuerySettings:
    changes: dict[str, Any] = {}
    if "top_k" in overrides:
        changes["top_k"] = check_top_k(overrides["top_k"], "run override top_k")
    if "filter" in overrides:
        changes["filter"] = check_query_filter(overrides["filter"])  # raises: a caller error
    for flag in ("include_vectors", "include_sources"):
        if flag in overrides:
            if not isinstance(overrides[flag], bool):
                raise VectorQueryOptionError(f"run override {flag} must be true or false")
            changes[flag] = overrides[flag]
    if "database_config" in overrides:
        changes["database_config"] = {
            **base.database_config,
            **parse_database_config(overrides["database_config"], "run overrides database_config"),
        }
    if "provider_options" in overrides:
        changes["provider_options"] = parse_provider_options(
            overrides["provider_options"], "run overrides provider_options"
        )
    if "index_name" in overrides:
        changes["index_name"] = _name(overrides["index_name"], "index_name")
    for key in ("store_name", "model", "reranker"):
        if key in overrides:
            changes[key] = _name(overrides[key], {"store_name": "vector_store_name"}.get(key, key))
    return replace(base, **changes)


def check_top_k(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise VectorQueryOptionError(f"{what} must be a positive integer, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------------
# reranker


def build_reranker(config: Reranker | Mapping[str, Any] | None) -> tuple[Reranker | None, int | None]:
    """A Reranker and its own top_k from Mastra's `{"model" | "scorer", "options": ...}`."""
    if config is None:
        return None, None
    if not isinstance(config, Mapping):
        if not callable(getattr(config, "rerank", None)):
            raise TypeError("reranker must be a Reranker or a {'scorer'|'model', 'options'} mapping")
        return config, None
    from librarian.retrieval.rerankers import WeightedReranker

    unknown = set(config) - {"scorer", "model", "options"}
    if unknown:
        raise ValueError(f"unknown reranker keys {sorted(unknown)}; expected scorer or model, and options")
    options = dict(config.get("options") or {})
    weights = options.pop("weights", None)
    top_k = options.pop("top_k", options.pop("topK", None))
    if options:
        raise ValueError(f"unknown reranker options {sorted(options)}; expected weights and top_k")
    scorer = config.get("scorer")
    if scorer is None:
        model = config.get("model")
        if model is None:
            raise ValueError("a reranker config needs a 'scorer' or a chat 'model'")
        from librarian.retrieval.scorers import LLMRelevanceScorer

        if isinstance(model, str):
            from langchain.chat_models import init_chat_model

            model = init_chat_model(model)
        scorer = LLMRelevanceScorer(model)
    reranker = WeightedReranker(scorer, weights)
    return reranker, None if top_k is None else check_top_k(top_k, "reranker options top_k")
