"""Pinecone serverless as the production `VectorIndex`: one dotproduct index, a namespace per organization.

Hybrid search on Pinecone is one dense index whose records also carry `sparse_values`; with API
2026-07 that index must declare both reserved fields (`_values`, `_sparse_values`) at creation, or
sparse upserts are refused later and the index has to be rebuilt. The embedding contract is checked
against the live index (dimension, metric, and the model names we record in its tags) before the
first write or search, because vectors from another embedding space would be silently wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from pinecone import Pinecone
from pinecone.errors.exceptions import (
    ApiError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PineconeConnectionError,
    PineconeTimeoutError,
    UnauthorizedError,
)
from pinecone.models.indexes.schema import DenseVectorField, SparseVectorField

from librarian.embeddings.base import SparseVector
from librarian.errors import ConfigError, ContractMismatchError, LibrarianError, TransientProviderError
from librarian.index.base import EmbeddingContract, IndexStats, NamespaceStats, QueryMatch, VectorRecord
from librarian.index.pinecone_batches import (
    DEFAULT_MAX_REQUEST_BYTES,
    PINECONE_MAX_REQUEST_BYTES,
    byte_bounded_batches,
)
from librarian.index.pinecone_scores import (
    MAX_SOLVE_ALPHA,
    Vectors,
    compute_from_vectors,
    dense_query_depth,
    ids_per_fetch,
    solve_from_dense,
    solve_without_lexical_query,
    sparse_query_terms,
)
from librarian.tenancy import validate_organization_id

DENSE_FIELD = "_values"
SPARSE_FIELD = "_sparse_values"
DENSE_MODEL_TAG = "librarian-dense-model"
SPARSE_MODEL_TAG = "librarian-sparse-model"
MAX_IDS_PER_CALL = 100  # fetch ids travel in the query string; delete takes up to 1000
LIST_PAGE_SIZE = 100  # Pinecone's maximum page size for list


@contextmanager
def pinecone_errors(what: str) -> Iterator[None]:
    """Translate Pinecone SDK errors into ours, so retry policies and users see one vocabulary.

    The SDK has already retried 5xx/429 and connection errors by the time they reach us; what is
    left is either worth retrying later (TransientProviderError) or a configuration problem.
    """
    try:
        yield
    except (PineconeConnectionError, PineconeTimeoutError) as exc:
        raise TransientProviderError(f"Pinecone {what} failed: could not reach Pinecone ({exc})") from exc
    except (UnauthorizedError, ForbiddenError) as exc:
        raise ConfigError(f"Pinecone {what} was refused ({exc.status_code}): check PINECONE_API_KEY") from exc
    except ApiError as exc:
        if exc.status_code in (408, 429) or exc.status_code >= 500:
            raise TransientProviderError(
                f"Pinecone {what} failed with {exc.status_code}; retry later"
            ) from exc
        raise LibrarianError(f"Pinecone {what} was rejected ({exc.status_code}): {exc.message}") from exc


def _namespace(namespace: str | None) -> str:
    """The organization is the namespace; an empty one would silently mean Pinecone's default."""
    return validate_organization_id(namespace)


def _contract_tags(contract: EmbeddingContract) -> dict[str, str]:
    """Model names as index tags, when they fit Pinecone's tag rules (printable ASCII, <= 120)."""
    tags = {DENSE_MODEL_TAG: contract.dense_model, SPARSE_MODEL_TAG: contract.sparse_model}
    return {k: v for k, v in tags.items() if v and len(v) <= 120 and v.isascii() and v.isprintable()}


def _to_wire(record: VectorRecord) -> dict[str, Any]:
    vector: dict[str, Any] = {"id": record["id"], "values": list(record["values"])}
    sparse = record.get("sparse_values")
    if sparse and sparse["indices"]:  # Pinecone rejects empty sparse vectors
        vector["sparse_values"] = {"indices": list(sparse["indices"]), "values": list(sparse["values"])}
    if record.get("metadata"):
        vector["metadata"] = dict(record["metadata"])
    return vector


def _sparse_of(sparse: Any) -> SparseVector | None:
    if sparse is None:
        return None
    return SparseVector(indices=list(sparse.indices), values=list(sparse.values))


def _needs_dense_query(sparse_vector: SparseVector | None, alpha: float) -> bool:
    """The dense-only query helps when there is a sparse score to solve for, and alpha allows it."""
    return alpha <= MAX_SOLVE_ALPHA and (bool(sparse_query_terms(sparse_vector)) or alpha == 0.0)


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class PineconeVectorIndex:
    """`VectorIndex` over one Pinecone serverless index. Opening it checks (or creates) the index."""

    def __init__(
        self,
        api_key: str,
        index_name: str,
        contract: EmbeddingContract,
        host: str | None = None,
        cloud: str = "aws",
        region: str = "us-east-1",
        batch_size: int = 100,
        *,
        create_timeout: int = 300,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        score_breakdown: bool = True,
    ) -> None:
        if not api_key:
            raise ConfigError("PINECONE_API_KEY is not set, but the Pinecone vector index was chosen")
        if contract.metric != "dotproduct":
            raise ConfigError("hybrid search on Pinecone needs metric 'dotproduct'")
        if batch_size < 1:
            raise ConfigError("the upsert batch size must be at least 1")
        if not 0 < max_request_bytes <= PINECONE_MAX_REQUEST_BYTES:
            raise ConfigError(
                f"the upsert byte budget must be between 1 and {PINECONE_MAX_REQUEST_BYTES:,} "
                f"(Pinecone's 2 MB request cap), got {max_request_bytes}"
            )
        self.contract = contract
        self.index_name = index_name
        self._batch_size = batch_size
        self._max_request_bytes = max_request_bytes
        self._score_breakdown = score_breakdown
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="pinecone-breakdown")
        self._pc = Pinecone(api_key=api_key, host=host)
        data_host = self._ensure_index(cloud=cloud, region=region, create_timeout=create_timeout)
        self._index = self._pc.index(host=data_host)

    # ----- contract
    def _ensure_index(self, *, cloud: str, region: str, create_timeout: int) -> str:
        """Describe the index (creating it if missing), check the contract, return its data host."""
        with pinecone_errors(f"describe of index {self.index_name!r}"):
            try:
                model = self._pc.indexes.describe(self.index_name)
            except NotFoundError:
                model = self._create(cloud=cloud, region=region, create_timeout=create_timeout)
        self._check_contract(model)
        if not model.host:
            raise TransientProviderError(f"Pinecone index {self.index_name!r} has no host yet (initializing)")
        return model.host

    def _create(self, *, cloud: str, region: str, create_timeout: int) -> Any:
        schema = {
            "fields": {
                DENSE_FIELD: {
                    "type": "dense_vector",
                    "dimension": self.contract.dimension,
                    "metric": self.contract.metric,
                },
                SPARSE_FIELD: {"type": "sparse_vector"},
            }
        }
        try:
            return self._pc.indexes.create(
                name=self.index_name,
                schema=schema,
                deployment={"deployment_type": "managed", "cloud": cloud, "region": region},
                tags=_contract_tags(self.contract) or None,
                timeout=create_timeout,
            )
        except ConflictError:  # another process created it first: use (and check) theirs
            return self._pc.indexes.describe(self.index_name)

    def _check_contract(self, model: Any) -> None:
        fields = model.schema.fields
        dense = fields.get(DENSE_FIELD)
        tags = dict(model.tags or {})
        found = EmbeddingContract(
            dense_model=tags.get(DENSE_MODEL_TAG, "unrecorded"),
            dimension=dense.dimension if isinstance(dense, DenseVectorField) else 0,
            sparse_model=tags.get(SPARSE_MODEL_TAG, "unrecorded"),
            metric=dense.metric if isinstance(dense, DenseVectorField) else "none",
        )
        problems = []
        if not isinstance(dense, DenseVectorField):
            problems.append("it has no dense vector field")
        elif (found.dimension, found.metric) != (self.contract.dimension, self.contract.metric):
            problems.append("dimension or metric differ")
        if not isinstance(fields.get(SPARSE_FIELD), SparseVectorField):
            problems.append("it has no sparse vector field, so it cannot store hybrid records")
        for tag, wanted in (
            (DENSE_MODEL_TAG, self.contract.dense_model),
            (SPARSE_MODEL_TAG, self.contract.sparse_model),
        ):
            if tag in tags and tags[tag] != wanted:
                problems.append(f"it was built with {tags[tag]!r}, not {wanted!r}")
        if problems:
            raise ContractMismatchError(
                f"Pinecone index {self.index_name!r} does not match the configured embedding contract "
                f"({'; '.join(problems)}). Index: {found.describe()}. Configured: "
                f"{self.contract.describe()}. Set LIBRARIAN_PINECONE_INDEX_NAME to a new index name and "
                "run `librarian reindex --org ORG` for each organization (no re-parse), or configure the "
                "original models."
            )

    # ----- VectorIndex
    def upsert(self, records: list[VectorRecord], *, namespace: str) -> int:
        """Send records in requests bounded by count and encoded bytes, all planned before the first.

        A record too large for any request raises `RecordTooLargeError` naming it, before anything
        of this call is written.
        """
        ns = _namespace(namespace)
        batches = byte_bounded_batches(
            [_to_wire(r) for r in records],
            namespace=ns,
            max_count=self._batch_size,
            max_bytes=self._max_request_bytes,
        )
        written = 0
        for batch in batches:
            with pinecone_errors("upsert"):
                written += self._index.upsert(vectors=batch, namespace=ns).upserted_count
        return written

    def query(
        self,
        *,
        namespace: str,
        vector: list[float],
        sparse_vector: SparseVector | None = None,
        alpha: float = 0.75,
        top_k: int = 40,
        filter: dict[str, Any] | None = None,
        include_values: bool = False,
        include_metadata: bool = True,
    ) -> list[QueryMatch]:
        """Pinecone sums dense and sparse dot products, so the alpha weighting happens here.

        The fused score is Pinecone's own. The channel scores (`dense_score`, `sparse_score`), which
        Pinecone does not return, come from a dense-only query sent alongside and the fused score,
        or from the records' vectors (see `librarian.index.pinecone_scores`).
        """
        ns = _namespace(namespace)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
        kwargs: dict[str, Any] = {
            "namespace": ns,
            "top_k": top_k,
            "vector": [v * alpha for v in vector],
            "include_values": include_values,
            "include_metadata": include_metadata,
        }
        if sparse_vector and sparse_vector["indices"]:
            kwargs["sparse_vector"] = {
                "indices": list(sparse_vector["indices"]),
                "values": [v * (1.0 - alpha) for v in sparse_vector["values"]],
            }
        if filter:
            kwargs["filter"] = filter
        # The breakdown's dense-only query does not depend on the fused one: send both at once.
        dense_only = (
            self._pool.submit(self._dense_only_scores, ns, vector, top_k, filter)
            if self._score_breakdown and not include_values and _needs_dense_query(sparse_vector, alpha)
            else None
        )
        with pinecone_errors("query"):
            response = self._index.query(**kwargs)
        matches = [
            QueryMatch(
                id=m.id,
                score=m.score,
                metadata=dict(m.metadata or {}),
                values=list(m.values) if include_values and m.values else None,
            )
            for m in response.matches
        ]
        if self._score_breakdown and matches:
            if include_values:  # the vectors are here already: exact, nothing more to ask
                vectors = {m.id: (m.values, _sparse_of(m.sparse_values)) for m in response.matches}
                compute_from_vectors(matches, vectors, vector, sparse_vector)
            elif not sparse_query_terms(sparse_vector) and alpha > 0:
                solve_without_lexical_query(matches, alpha)
            else:
                missing = solve_from_dense(matches, dense_only.result(), alpha) if dense_only else matches
                if missing:  # outside the dense list, or alpha near 1: from the vectors themselves
                    vectors = self._fetch_vectors([m.id for m in missing], ns)
                    compute_from_vectors(missing, vectors, vector, sparse_vector)
        return matches

    def _dense_only_scores(
        self, ns: str, vector: list[float], top_k: int, filter: dict[str, Any] | None
    ) -> dict[str, float]:
        """id -> unweighted dense score, a few times deeper than the fused top k; ids and scores only."""
        kwargs: dict[str, Any] = {
            "namespace": ns,
            "top_k": dense_query_depth(top_k),
            "vector": list(vector),
            "include_values": False,
            "include_metadata": False,
        }
        if filter:
            kwargs["filter"] = filter
        with pinecone_errors("dense-only query for the score breakdown"):
            return {m.id: m.score for m in self._index.query(**kwargs).matches}

    def _fetch_vectors(self, ids: list[str], ns: str) -> Vectors:
        """Dense and sparse values of `ids`, in fetches small enough to stay under the result cap."""
        found: Vectors = {}
        per_call = ids_per_fetch(self.contract.dimension, MAX_IDS_PER_CALL)
        for batch in _batches(ids, per_call):
            with pinecone_errors("fetch of values for the score breakdown"):
                response = self._index.fetch(ids=batch, namespace=ns)
            for vid, vec in response.vectors.items():
                found[vid] = (vec.values, _sparse_of(vec.sparse_values))
        return found

    def delete(
        self,
        *,
        namespace: str,
        ids: list[str] | None = None,
        filter: dict[str, Any] | None = None,
        delete_all: bool = False,
    ) -> None:
        ns = _namespace(namespace)
        if sum((ids is not None, filter is not None, delete_all)) != 1:
            raise ValueError("delete needs exactly one of ids, filter or delete_all")
        if filter is not None and not filter:
            raise ValueError("an empty filter would match everything; use delete_all=True")
        with pinecone_errors("delete"):
            if delete_all:
                self._index.delete(delete_all=True, namespace=ns)
            elif filter is not None:
                self._index.delete(filter=filter, namespace=ns)
            else:
                for batch in _batches(list(ids or []), MAX_IDS_PER_CALL):
                    self._index.delete(ids=batch, namespace=ns)

    def fetch(self, ids: list[str], *, namespace: str) -> dict[str, VectorRecord]:
        ns = _namespace(namespace)
        found: dict[str, VectorRecord] = {}
        for batch in _batches(list(ids), MAX_IDS_PER_CALL):
            with pinecone_errors("fetch"):
                response = self._index.fetch(ids=batch, namespace=ns)
            for vid, vec in response.vectors.items():
                record = VectorRecord(id=vid, values=list(vec.values), metadata=dict(vec.metadata or {}))
                if vec.sparse_values is not None:
                    record["sparse_values"] = SparseVector(
                        indices=list(vec.sparse_values.indices), values=list(vec.sparse_values.values)
                    )
                found[vid] = record
        return found

    def list_ids(self, *, namespace: str, prefix: str | None = None) -> list[str]:
        ns = _namespace(namespace)
        ids: list[str] = []
        token: str | None = None
        while True:
            with pinecone_errors("list"):
                page = self._index.list_paginated(
                    namespace=ns, prefix=prefix or None, limit=LIST_PAGE_SIZE, pagination_token=token
                )
            ids.extend(item.id for item in page.vectors if item.id)
            token = page.pagination.next if page.pagination else None
            if not token:
                return ids

    def describe_index_stats(self) -> IndexStats:
        with pinecone_errors("describe_index_stats"):
            stats = self._index.describe_index_stats()
        return IndexStats(
            dimension=stats.dimension or self.contract.dimension,
            namespaces={
                name: NamespaceStats(vector_count=s.vector_count) for name, s in stats.namespaces.items()
            },
            total_vector_count=stats.total_vector_count,
        )
