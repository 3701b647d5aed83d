"""The `chunks` table's layout, and the checks that turn Pinecone-shaped records into its rows.

Document chunks always carry the same handful of metadata keys (DESIGN §4). Those get typed
columns so deletes like `{"path": ...}` run as SQL inside one atomic commit. Any other key goes
into `meta_json`, which is why metadata stays open-ended. A key lives in exactly one place, so the
typed copy and the JSON copy can never disagree (and `text`, the largest value, is stored once).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from librarian.embeddings.base import SparseVector
from librarian.errors import LibrarianError
from librarian.index.base import VectorRecord
from librarian.index.filters import SqlColumn

TABLE_NAME = "chunks"
MAX_ID_LENGTH = 512  # Pinecone's limit
MAX_TERM_ID = 2**32 - 1

# Known metadata keys -> typed columns. Column names equal the keys (SQL quotes them).
KNOWN_COLUMNS: dict[str, SqlColumn] = {
    key: SqlColumn(key, kind)  # type: ignore[arg-type]
    for key, kind in [
        ("path", "string"),
        ("filename", "string"),
        ("chunkIndex", "int"),
        ("page", "int"),
        ("blockType", "string"),
        ("text", "string"),
        ("mediaType", "string"),
        ("bbox_left", "float"),
        ("bbox_top", "float"),
        ("bbox_width", "float"),
        ("bbox_height", "float"),
    ]
}
_ARROW_TYPES = {"string": pa.string(), "int": pa.int64(), "float": pa.float64()}
INTERNAL_COLUMNS = ("ns", "id", "vector", "sp_idx", "sp_val", "meta_json")


class InvalidVectorError(LibrarianError, ValueError):
    """A record or query vector does not fit the index (wrong dimension, NaN, bad metadata ...)."""

    code = "invalid_vector"


def table_schema(dimension: int) -> pa.Schema:
    """The `chunks` schema for one embedding dimension."""
    fields = [
        pa.field("ns", pa.string(), nullable=False),
        pa.field("id", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
        pa.field("sp_idx", pa.list_(pa.uint32()), nullable=False),
        pa.field("sp_val", pa.list_(pa.float32()), nullable=False),
    ]
    fields += [pa.field(c.name, _ARROW_TYPES[c.kind]) for c in KNOWN_COLUMNS.values()]
    fields.append(pa.field("meta_json", pa.string(), nullable=False))
    return pa.schema(fields)


def check_dense(values: Any, dimension: int, what: str) -> np.ndarray:
    """The vector as float32, or InvalidVectorError saying what is wrong with it."""
    try:
        array = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidVectorError(f"{what}: values must be a list of {dimension} numbers") from exc
    if array.ndim != 1 or len(array) != dimension:
        raise InvalidVectorError(
            f"{what}: vector has {array.size} dimensions, but the index's contract has {dimension}"
        )
    if not np.isfinite(array).all():
        raise InvalidVectorError(f"{what}: vector contains NaN or infinity")
    return array


def check_sparse(sparse: SparseVector | None, what: str) -> tuple[list[int], list[float]]:
    """Indices and values of a sparse vector; duplicates are refused so dot products are unambiguous."""
    if sparse is None:
        return [], []
    try:
        indices = [int(i) for i in sparse["indices"]]
        values = [float(v) for v in sparse["values"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidVectorError(f"{what}: sparse values need 'indices' and 'values' lists") from exc
    if len(indices) != len(values):
        raise InvalidVectorError(f"{what}: sparse indices and values differ in length")
    if any(i < 0 or i > MAX_TERM_ID for i in indices):
        raise InvalidVectorError(f"{what}: sparse indices must be 32-bit unsigned integers")
    if len(set(indices)) != len(indices):
        raise InvalidVectorError(f"{what}: sparse indices must be unique")
    if not all(math.isfinite(v) for v in values):
        raise InvalidVectorError(f"{what}: sparse values contain NaN or infinity")
    return indices, values


MAX_TOP_K = 10_000


def check_query(
    namespace: str,
    vector: Any,
    sparse_vector: SparseVector | None,
    alpha: float,
    top_k: int,
    dimension: int,
) -> tuple[str, np.ndarray, list[int], list[float]]:
    """A query's arguments checked the same way by every index that scores exactly (LanceDB,
    pgvector): the namespace, alpha and top_k, then the dense and sparse vectors."""
    from librarian.tenancy import validate_organization_id

    namespace = validate_organization_id(namespace)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("alpha must be between 0 and 1")
    if not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be an integer from 1 to {MAX_TOP_K}")
    dense = check_dense(vector, dimension, "query")
    indices, values = check_sparse(sparse_vector, "query")
    return namespace, dense, indices, values


def _check_metadata(record_id: str, metadata: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split metadata into typed-column values and the rest, enforcing Pinecone's flat types."""
    typed: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise InvalidVectorError(f"record {record_id!r}: metadata keys must be non-empty strings")
        spec = KNOWN_COLUMNS.get(key)
        if spec is not None:
            typed[key] = _check_typed(record_id, key, spec.kind, value)
        elif _is_flat(value):
            extra[key] = value
        else:
            raise InvalidVectorError(
                f"record {record_id!r}: metadata {key!r} must be a string, number, boolean or list of strings"
            )
    return typed, extra


def _check_typed(record_id: str, key: str, kind: str, value: Any) -> Any:
    ok = {
        "string": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
    }[kind]
    if not ok or (isinstance(value, float) and not math.isfinite(value)):
        raise InvalidVectorError(f"record {record_id!r}: metadata {key!r} must be a {kind}")
    return float(value) if kind == "float" else value


def _is_flat(value: Any) -> bool:
    if isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def records_to_table(records: Iterable[VectorRecord], namespace: str, dimension: int) -> pa.Table:
    """Validate records and build the Arrow rows to merge; a later duplicate id wins, as in Pinecone."""
    by_id: dict[str, VectorRecord] = {}
    for record in records:
        record_id = record.get("id") if isinstance(record, Mapping) else None
        if not isinstance(record_id, str) or not record_id or len(record_id) > MAX_ID_LENGTH:
            raise InvalidVectorError(f"record ids must be non-empty strings of at most {MAX_ID_LENGTH} chars")
        by_id[record_id] = record
    schema = table_schema(dimension)
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    vectors: list[np.ndarray] = []
    for record_id, record in by_id.items():
        dense = check_dense(record.get("values"), dimension, f"record {record_id!r}")
        indices, values = check_sparse(record.get("sparse_values"), f"record {record_id!r}")
        typed, extra = _check_metadata(record_id, record.get("metadata") or {})
        columns["ns"].append(namespace)
        columns["id"].append(record_id)
        vectors.append(dense)
        columns["sp_idx"].append(indices)
        columns["sp_val"].append(values)
        for key in KNOWN_COLUMNS:
            columns[key].append(typed.get(key))
        columns["meta_json"].append(json.dumps(extra, separators=(",", ":"), ensure_ascii=False))
    flat = np.concatenate(vectors) if vectors else np.zeros(0, dtype=np.float32)
    arrays = {name: pa.array(columns[name], type=schema.field(name).type) for name in schema.names}
    arrays["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), dimension)
    return pa.table({name: arrays[name] for name in schema.names})


def row_metadata(known: Mapping[str, Any], meta_json: str) -> dict[str, Any]:
    """Reassemble one record's metadata: typed columns that are set, plus the JSON remainder."""
    metadata = {key: value for key, value in known.items() if value is not None}
    metadata.update(json.loads(meta_json))
    return metadata
