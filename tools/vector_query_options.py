"""The vector query tool's options: what may be configured, by whom, and what never may.

A run's overrides can come from the client on the LangGraph server, and a filter comes from the
model, so both are parsed here with one rule: they may tune relevance within the organization, and
any key that could name a tenant (namespace, organization id, org, tenant, in any spelling, at any
depth of a filter) is refused with an error rather than silently ignored, so nobody believes it
took effect.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from librarian.embeddings.base import SparseVector
from librarian.errors import TenantError
from librarian.index.base import VectorIndex
from librarian.index.filters import LOGICAL_OPS, InvalidFilterError, validate_filter
from librarian.retrieval.reranker import Reranker

OVERRIDES_KEY = "vector_query"

# Keys that could name a tenant, compared after lower-casing and dropping '_', '-' and '.'.
TENANT_KEYS = frozenset(
    {"namespace", "ns", "organization", "organizationid", "org", "orgid", "tenant", "tenantid"}
)
# Accepted spellings (snake_case or Mastra's camelCase), keyed by the normalised key.
_OVERRIDE_NAMES = {
    "topk": "top_k",
    "filter": "filter",
    "includevectors": "include_vectors",
    "includesources": "include_sources",
    "databaseconfig": "database_config",
    "indexname": "index_name",
}
_STORE_OPTION_NAMES = {"minscore": "min_score", "alpha": "alpha", "sparsevector": "sparse_vector"}
_STORE_KINDS = {"LanceVectorIndex": "lancedb", "PineconeVectorIndex": "pinecone", "PgVectorIndex": "pgvector"}


class TenantFilterError(InvalidFilterError):
    """A filter names a tenant key: isolation is the namespace's job, never a filter's."""

    code = "tenant_filter"


# --------------------------------------------------------------------------------------------------
# tenant keys


def _normal_key(key: object) -> str:
    return re.sub(r"[_\-.\s]", "", str(key)).lower()


def is_tenant_key(key: object) -> bool:
    """Whether a key could select a tenant (namespace, organization_id, orgId, TENANT ...)."""
    return _normal_key(key) in TENANT_KEYS


def _tenant_keys_in_filter(node: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key, condition in node.items():
        if key in LOGICAL_OPS:
            for child in condition:
                found.extend(_tenant_keys_in_filter(child))
        elif is_tenant_key(key):
            found.append(key)
    return found


def check_query_filter(raw: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Parse (JSON text allowed, as models often send it), validate and refuse tenant keys.

    Returns the canonical filter (`{}` for none). Raises InvalidFilterError or TenantFilterError
    with a message the model can act on.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidFilterError(f"the filter is not valid JSON: {exc.msg}") from exc
    canonical = validate_filter(raw)  # type: ignore[arg-type]
    tenant = _tenant_keys_in_filter(canonical)
    if tenant:
        raise TenantFilterError(
            f"filters cannot select an organization (found {', '.join(sorted(set(tenant)))}); "
            "the search always covers the current organization's documents only"
        )
    return canonical


def _refuse_tenant_keys(mapping: Mapping[str, Any], where: str) -> None:
    named = [str(k) for k in mapping if is_tenant_key(k)]
    if named:
        raise TenantError(
            f"{where} cannot set {', '.join(named)}: the namespace is always the run's organization "
            "(authenticated user or trusted organization_id), never configuration"
        )


# --------------------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class StoreOptions:
    """The `database_config` section that applies to the store being queried."""

    min_score: float | None = None
    alpha: float | None = None
    sparse_vector: SparseVector | None = None


def parse_database_config(config: Mapping[str, Any] | None) -> dict[str, StoreOptions]:
    """Per-store options by store kind (`lancedb`, `pinecone`, ...), checked eagerly.

    Sections for other stores are kept (one tool may serve several stores, as in Mastra), but a
    namespace anywhere is refused rather than ignored, so nobody believes it took effect.
    """
    if not config:
        return {}
    if not isinstance(config, Mapping):
        raise ValueError("database_config must be a mapping of store kind to options")
    _refuse_tenant_keys(config, "database_config")
    parsed: dict[str, StoreOptions] = {}
    for kind, section in config.items():
        if not isinstance(section, Mapping):
            raise ValueError(f"database_config[{kind!r}] must be a mapping")
        _refuse_tenant_keys(section, f"database_config[{kind!r}]")
        values: dict[str, Any] = {}
        for key, value in section.items():
            name = _STORE_OPTION_NAMES.get(_normal_key(key))
            if name is None:
                raise ValueError(
                    f"unknown option {key!r} in database_config[{kind!r}]; "
                    "expected min_score, alpha or sparse_vector"
                )
            values[name] = value
        alpha = values.get("alpha")
        if alpha is not None and not (isinstance(alpha, int | float) and 0.0 <= alpha <= 1.0):
            raise ValueError(f"database_config[{kind!r}].alpha must be a number from 0 to 1")
        parsed[str(kind)] = StoreOptions(**values)
    return parsed


def store_kind(index: VectorIndex) -> str:
    """Which `database_config` section applies to this store."""
    name = type(index).__name__
    return _STORE_KINDS.get(name, name.lower())


@dataclass(frozen=True)
class QuerySettings:
    """Everything a run may override; the namespace is deliberately not a field."""

    top_k: int
    filter: dict[str, Any]
    include_vectors: bool
    include_sources: bool
    database_config: dict[str, StoreOptions]
    index_name: str | None


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
    for source in (configurable.get(OVERRIDES_KEY), from_context):
        if not source:
            continue
        if not isinstance(source, Mapping):
            raise ValueError(f"run overrides under {OVERRIDES_KEY!r} must be a mapping")
        _refuse_tenant_keys(source, f"run overrides ({OVERRIDES_KEY})")
        for key, value in source.items():
            name = _OVERRIDE_NAMES.get(_normal_key(key))
            if name is None:
                raise ValueError(
                    f"unknown run override {key!r}; expected one of top_k, filter, include_vectors, "
                    "include_sources, database_config, index_name"
                )
            merged[name] = value
    return merged


def apply_overrides(base: QuerySettings, overrides: Mapping[str, Any]) -> QuerySettings:
    changes: dict[str, Any] = {}
    if "top_k" in overrides:
        changes["top_k"] = check_top_k(overrides["top_k"], "run override top_k")
    if "filter" in overrides:
        changes["filter"] = check_query_filter(overrides["filter"])  # raises: a caller error
    for flag in ("include_vectors", "include_sources"):
        if flag in overrides:
            changes[flag] = bool(overrides[flag])
    if "database_config" in overrides:
        changes["database_config"] = {
            **base.database_config,
            **parse_database_config(overrides["database_config"]),
        }
    if "index_name" in overrides:
        changes["index_name"] = overrides["index_name"]
    return replace(base, **changes)


def check_top_k(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------------
# reranker and store


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
