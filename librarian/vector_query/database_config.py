"""Mastra's `databaseConfig`, section by store, mapped onto the stores Librarian runs.

Sections for Librarian's own engines (`lancedb`, `pinecone`, `pgvector`) apply when that engine is
queried, as in Mastra: one tool may serve several stores. Sections for engines Librarian does not run
(`chroma`, `turbopuffer`) have no store of their own here, so what maps honestly onto every
Librarian store is translated and applied to whichever store is queried (Chroma's `where` is a
metadata filter in nearly Pinecone's language; turbopuffer's `consistency` is a guarantee checked
against the store), and what does not map is refused with the option, the store and the reason.
Nothing is ever accepted and then ignored, and a namespace anywhere is a TenantError.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from librarian.embeddings.base import SparseVector
from librarian.vector_query.errors import VectorQueryOptionError
from librarian.vector_query.query_filter import check_chroma_where
from librarian.vector_query.tenant_keys import normal_key, refuse_tenant_keys

NATIVE_KINDS = ("lancedb", "pinecone", "pgvector")
FOREIGN_KINDS = ("chroma", "turbopuffer")
HNSW_MAX_EF_SEARCH = 1_000  # pgvector's upper bound for hnsw.ef_search
MAX_SPARSE_INDEX = 2**32 - 1  # Pinecone's sparse indices are uint32
# Stores that answer every query from the latest committed write (read-your-writes).
STRONGLY_CONSISTENT = frozenset({"lancedb", "pgvector"})

_HYBRID = {"minscore": "min_score", "alpha": "alpha", "sparsevector": "sparse_vector"}
_OPTION_NAMES: dict[str, dict[str, str]] = {
    "lancedb": _HYBRID,
    "pinecone": _HYBRID,
    "pgvector": {**_HYBRID, "ef": "ef_search", "efsearch": "ef_search", "probes": "probes"},
    "chroma": {"where": "filter", "wheredocument": "where_document"},
    "turbopuffer": {"consistency": "consistency"},
}
_SPELLINGS = {  # as documented (snake_case spellings are accepted too)
    "lancedb": "minScore, alpha, sparseVector",
    "pinecone": "minScore, alpha, sparseVector",
    "pgvector": "minScore, alpha, sparseVector, ef, probes",
    "chroma": "where, whereDocument",
    "turbopuffer": "consistency",
}
_REFUSED = {
    ("pgvector", "probes"): "Librarian's pgvector index has no IVFFlat index (it uses HNSW, and scores "
    "namespaces of up to LIBRARIAN_PGVECTOR_EXACT_LIMIT rows exactly); tune `ef` instead",
    ("chroma", "where_document"): "Librarian's stores filter on metadata only, and filtering the text of "
    "the best candidates afterwards would silently miss matches further down; use `where` on metadata, "
    "or put the words in the query",
}


@dataclass(frozen=True)
class StoreOptions:
    """The options that apply to one query, after mapping every section onto the store in use."""

    min_score: float | None = None
    alpha: float | None = None
    sparse_vector: SparseVector | None = None
    ef_search: int | None = None
    filter: dict[str, Any] | None = None  # from chroma.where
    consistency: str | None = None  # from turbopuffer.consistency


def _number(value: Any, where: str, low: float | None = None, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise VectorQueryOptionError(f"{where} must be a finite number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise VectorQueryOptionError(f"{where} must be from {low} to {high}, got {value!r}")
    return float(value)


def check_sparse_vector(value: Any, where: str) -> SparseVector:
    """`{indices, values}` of equal length, indices unique uint32, values finite (Pinecone's rule)."""
    if not isinstance(value, Mapping) or set(value) != {"indices", "values"}:
        raise VectorQueryOptionError(f"{where} must be an object with exactly 'indices' and 'values'")
    indices, values = value["indices"], value["values"]
    if not isinstance(indices, list | tuple) or not isinstance(values, list | tuple):
        raise VectorQueryOptionError(f"{where}: indices and values must be lists")
    if len(indices) != len(values):
        raise VectorQueryOptionError(f"{where}: indices and values must have the same length")
    if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i <= MAX_SPARSE_INDEX for i in indices):
        raise VectorQueryOptionError(f"{where}: indices must be integers from 0 to {MAX_SPARSE_INDEX}")
    if len(set(indices)) != len(indices):
        raise VectorQueryOptionError(f"{where}: indices must be unique")
    checked = [_number(v, f"{where} values") for v in values]
    return SparseVector(indices=[int(i) for i in indices], values=checked)


def _check_value(kind: str, name: str, value: Any, where: str) -> Any:
    if (kind, name) in _REFUSED:
        raise VectorQueryOptionError(f"{where} is refused for the {kind} store: {_REFUSED[(kind, name)]}")
    if name == "min_score":
        return _number(value, where)
    if name == "alpha":
        return _number(value, where, 0.0, 1.0)
    if name == "sparse_vector":
        return check_sparse_vector(value, where)
    if name == "ef_search":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= HNSW_MAX_EF_SEARCH:
            raise VectorQueryOptionError(f"{where} must be an integer from 1 to {HNSW_MAX_EF_SEARCH}")
        return value
    if name == "filter":
        return check_chroma_where(value, where)
    if name == "consistency":
        level = value.get("level") if isinstance(value, Mapping) else value
        if level not in ("strong", "eventual"):
            raise VectorQueryOptionError(f"{where} must be 'strong' or 'eventual', got {value!r}")
        return level
    raise AssertionError(name)  # pragma: no cover - every mapped name is handled above


def parse_section(kind: str, section: Any, where: str) -> StoreOptions:
    """One store's section, every option named, checked and mapped."""
    if not isinstance(section, Mapping):
        raise VectorQueryOptionError(f"{where} must be a mapping of option to value")
    names = _OPTION_NAMES[kind]
    values: dict[str, Any] = {}
    for key, value in section.items():
        name = names.get(normal_key(key))
        if name is None:
            raise VectorQueryOptionError(
                f"unknown option {key!r} in {where}; the {kind} section takes {_SPELLINGS[kind]}"
            )
        values[name] = _check_value(kind, name, value, f"{where}.{key}")
    return StoreOptions(**values)


def parse_database_config(config: Any, where: str = "database_config") -> dict[str, StoreOptions]:
    """Per-store options by store kind, checked eagerly (creation, or each run's override)."""
    if not config:
        return {}
    if not isinstance(config, Mapping):
        raise VectorQueryOptionError(f"{where} must be a mapping of store kind to options")
    refuse_tenant_keys(config, where)
    parsed: dict[str, StoreOptions] = {}
    known = (*NATIVE_KINDS, *FOREIGN_KINDS)
    for kind, section in config.items():
        canonical = normal_key(kind)
        if canonical not in known:
            raise VectorQueryOptionError(
                f"{where} has a section for {kind!r}, a store Librarian neither runs nor maps; "
                f"known sections: {', '.join(known)}"
            )
        parsed[canonical] = parse_section(canonical, section, f"{where}[{kind!r}]")
    return parsed


def options_for(kind: str, config: Mapping[str, StoreOptions]) -> StoreOptions:
    """What applies to a query of a `kind` store: its own section plus the mapped foreign ones."""
    native = config.get(kind, StoreOptions())
    chroma = config.get("chroma", StoreOptions())
    turbopuffer = config.get("turbopuffer", StoreOptions())
    consistency = turbopuffer.consistency
    if consistency == "strong" and kind not in STRONGLY_CONSISTENT:
        raise VectorQueryOptionError(
            f"turbopuffer.consistency 'strong' is refused for the {kind} store: it is eventually "
            "consistent (a recent write may not be visible yet) and cannot promise read-your-writes; "
            "use 'eventual' or a store such as lancedb or pgvector"
        )
    return replace(native, filter=chroma.filter, consistency=consistency)
