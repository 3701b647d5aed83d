"""PineconeVectorIndex and PineconeSparseEmbedder through the real pinecone SDK against the wire server.

What every index must do (scores, filters, deletes, tenancy) runs against Pinecone too, in
`test_vector_index_contract.py`; this module keeps what is Pinecone's own: the control plane, what
goes over the wire, batching, retries and inference.
"""

from __future__ import annotations

import numpy as np
import pytest
from pinecone import ApiError, Pinecone

from librarian.embeddings.pinecone_sparse import PineconeSparseEmbedder
from librarian.errors import (
    ConfigError,
    ContractMismatchError,
    LibrarianError,
    TenantError,
    TransientProviderError,
)
from librarian.index.base import EmbeddingContract, VectorRecord
from librarian.index.pinecone import PineconeVectorIndex, _to_wire
from librarian.index.pinecone_batches import (
    DEFAULT_MAX_REQUEST_BYTES,
    RecordTooLargeError,
    byte_bounded_batches,
    request_sizes,
)
from tests.wire.pinecone_server import TEST_API_KEY as PINECONE_API_KEY
from tests.wire.pinecone_server import PineconeWireServer

INDEX = "document-chunks"
SPARSE_MODEL = "pinecone-sparse-english-v0"
CONTRACT = EmbeddingContract(dense_model="toy-dense", dimension=4, sparse_model=SPARSE_MODEL)
DATA_PATHS = ("/vectors/upsert", "/query", "/vectors/delete", "/vectors/list", "/vectors/fetch")


def open_index(
    server: PineconeWireServer, contract: EmbeddingContract = CONTRACT, **kwargs
) -> PineconeVectorIndex:
    return PineconeVectorIndex(PINECONE_API_KEY, INDEX, contract, host=server.url, **kwargs)


def record(i: int, path: str = "docs/a.pdf", values: list[float] | None = None) -> VectorRecord:
    return VectorRecord(
        id=f"{path}:{i}",
        values=values or [1.0, float(i % 3), 0.5, 0.0],
        sparse_values={"indices": [i, 1000], "values": [1.0, 0.5]},
        metadata={"path": path, "chunkIndex": i, "text": f"chunk {i} of {path}"},
    )


def fused_queries(server: PineconeWireServer):
    """The hybrid queries asked for metadata; the breakdown's dense-only query, sent alongside, is not."""
    return [r for r in server.requests_to("/query") if r.body["includeMetadata"]]


def data_plane_requests(server: PineconeWireServer):
    return [r for r in server.requests if r.path.endswith(DATA_PATHS)]


# ----------------------------------------------------------------------------- control plane


def test_missing_index_is_created_hybrid_dotproduct_with_contract_tags(pinecone_server):
    open_index(pinecone_server, region="eu-west-1")

    (create,) = pinecone_server.requests_to("/indexes", method="POST")
    assert create.body["name"] == INDEX
    assert create.body["schema"]["fields"] == {
        "_values": {"type": "dense_vector", "dimension": 4, "metric": "dotproduct"},
        "_sparse_values": {"type": "sparse_vector"},
    }
    assert create.body["deployment"] == {"deployment_type": "managed", "cloud": "aws", "region": "eu-west-1"}
    assert create.body["tags"] == {
        "librarian-dense-model": "toy-dense",
        "librarian-sparse-model": SPARSE_MODEL,
    }
    assert create.headers["x-pinecone-api-version"] == "2026-07"
    assert create.headers["api-key"] == PINECONE_API_KEY

    open_index(pinecone_server)  # a second process opens the same index: no second create
    assert len(pinecone_server.requests_to("/indexes", method="POST")) == 1


def test_dimension_mismatch_fails_before_any_write_or_search(pinecone_server):
    pinecone_server.add_index(INDEX, dimension=8)

    with pytest.raises(ContractMismatchError) as err:
        open_index(pinecone_server)

    message = str(err.value)
    assert "8-d" in message and "4-d" in message
    assert data_plane_requests(pinecone_server) == []
    assert pinecone_server.requests_to("/indexes", method="POST") == []


def test_index_built_with_other_models_is_a_contract_mismatch(pinecone_server):
    pinecone_server.add_index(
        INDEX,
        dimension=4,
        tags={"librarian-dense-model": "other-dense", "librarian-sparse-model": SPARSE_MODEL},
    )

    with pytest.raises(ContractMismatchError, match=r"other-dense.*toy-dense"):
        open_index(pinecone_server)


def test_dense_only_index_cannot_serve_hybrid_records(pinecone_server):
    pinecone_server.add_index(INDEX, dimension=4, sparse_field=False)

    with pytest.raises(ContractMismatchError, match="no sparse vector field"):
        open_index(pinecone_server)


def test_rejected_api_key_is_a_config_error(pinecone_server):
    with pytest.raises(ConfigError, match="PINECONE_API_KEY"):
        PineconeVectorIndex("wrong-key", INDEX, CONTRACT, host=pinecone_server.url)


# ----------------------------------------------------------------------------- data plane


def test_upsert_query_fetch_roundtrip_always_names_the_namespace(pinecone_server):
    index = open_index(pinecone_server)
    assert index.upsert([record(0), record(1)], namespace="org-a") == 2

    matches = index.query(namespace="org-a", vector=[1.0, 0.0, 0.0, 0.0], top_k=5)
    assert {m.id for m in matches} == {"docs/a.pdf:0", "docs/a.pdf:1"}
    assert matches[0].metadata["text"].startswith("chunk")

    fetched = index.fetch(["docs/a.pdf:1", "missing"], namespace="org-a")
    assert list(fetched) == ["docs/a.pdf:1"]
    assert fetched["docs/a.pdf:1"]["sparse_values"] == {"indices": [1, 1000], "values": [1.0, 0.5]}
    assert fetched["docs/a.pdf:1"]["metadata"]["chunkIndex"] == 1

    sent = data_plane_requests(pinecone_server)
    assert sent and all(r.namespace == "org-a" for r in sent)


@pytest.mark.parametrize("namespace", ["", None, "../etc"])
def test_missing_or_malformed_namespace_is_a_tenant_error_and_sends_nothing(pinecone_server, namespace):
    index = open_index(pinecone_server)
    calls = [
        lambda: index.upsert([record(0)], namespace=namespace),
        lambda: index.query(namespace=namespace, vector=[1.0, 0, 0, 0]),
        lambda: index.delete(namespace=namespace, delete_all=True),
        lambda: index.fetch(["x"], namespace=namespace),
        lambda: index.list_ids(namespace=namespace),
    ]
    for call in calls:
        with pytest.raises(TenantError):
            call()
    assert data_plane_requests(pinecone_server) == []


def test_alpha_weights_dense_and_sparse_on_the_wire_and_in_scores(pinecone_server):
    index = open_index(pinecone_server)
    index.upsert([record(2)], namespace="org-a")  # values [1, 2, 0.5, 0], sparse {2: 1.0, 1000: 0.5}
    dense_q = [0.5, 0.25, 2.0, 4.0]
    sparse_q = {"indices": [2, 1000], "values": [3.0, 2.0]}

    (match,) = index.query(namespace="org-a", vector=dense_q, sparse_vector=sparse_q, alpha=0.3)

    (sent,) = fused_queries(pinecone_server)
    assert sent.body["vector"] == pytest.approx([0.3 * v for v in dense_q])
    assert sent.body["sparseVector"]["indices"] == [2, 1000]
    assert sent.body["sparseVector"]["values"] == pytest.approx([0.7 * 3.0, 0.7 * 2.0])
    dense_dot = 0.5 * 1 + 0.25 * 2 + 2.0 * 0.5
    sparse_dot = 3.0 * 1.0 + 2.0 * 0.5
    assert match.score == pytest.approx(0.3 * dense_dot + 0.7 * sparse_dot)


def test_query_filter_is_sent_and_applied_within_the_namespace(pinecone_server):
    index = open_index(pinecone_server)
    index.upsert(
        [record(0, "docs/a.pdf"), record(1, "docs/b.pdf"), record(2, "docs/c.pdf")], namespace="org-a"
    )

    matches = index.query(
        namespace="org-a",
        vector=[1.0, 0, 0, 0],
        filter={"$or": [{"path": {"$in": ["docs/a.pdf", "docs/b.pdf"]}}, {"chunkIndex": {"$gte": 2}}]},
    )
    assert sorted(m.id for m in matches) == ["docs/a.pdf:0", "docs/b.pdf:1", "docs/c.pdf:2"]

    matches = index.query(namespace="org-a", vector=[1.0, 0, 0, 0], filter={"path": {"$ne": "docs/a.pdf"}})
    assert sorted(m.id for m in matches) == ["docs/b.pdf:1", "docs/c.pdf:2"]
    assert pinecone_server.requests_to("/query")[-1].body["filter"] == {"path": {"$ne": "docs/a.pdf"}}


def test_upserts_go_in_batches_of_batch_size(pinecone_server):
    index = open_index(pinecone_server, batch_size=100)

    assert index.upsert([record(i) for i in range(250)], namespace="org-a") == 250

    sizes = [len(r.body["vectors"]) for r in pinecone_server.requests_to("/vectors/upsert")]
    assert sizes == [100, 100, 50]
    assert index.describe_index_stats().namespaces["org-a"].vector_count == 250


def test_list_ids_follows_pagination_and_prefix(pinecone_server):
    index = open_index(pinecone_server)
    index.upsert([record(i, "docs/a.pdf") for i in range(230)] + [record(0, "docs/b.pdf")], namespace="org-a")

    ids = index.list_ids(namespace="org-a", prefix="docs/a.pdf:")

    assert len(ids) == 230 and len(set(ids)) == 230
    pages = pinecone_server.requests_to("/vectors/list")
    assert len(pages) == 3
    assert all(p.query["prefix"] == ["docs/a.pdf:"] for p in pages)


def test_server_errors_become_transient_after_the_sdk_retries(pinecone_server, instant_pinecone_retries):
    index = open_index(pinecone_server)

    pinecone_server.fail_next(1, status=503, path="/vectors/upsert")
    assert index.upsert([record(0)], namespace="org-a") == 1  # the SDK's own retry absorbed it
    assert [r.status for r in pinecone_server.requests_to("/vectors/upsert")] == [503, 200]

    pinecone_server.fail_next(10, status=503, path="/query")
    with pytest.raises(TransientProviderError):
        index.query(namespace="org-a", vector=[1.0, 0, 0, 0])

    pinecone_server.fail_next(10, status=429, path="/vectors/fetch")
    with pytest.raises(TransientProviderError):
        index.fetch(["docs/a.pdf:0"], namespace="org-a")


def test_nested_metadata_is_rejected_like_pinecone_does(pinecone_server):
    index = open_index(pinecone_server)
    bad = record(0)
    bad["metadata"]["bbox"] = {"left": 1}  # type: ignore[assignment]

    with pytest.raises(Exception, match="Metadata value"):
        index.upsert([bad], namespace="org-a")


# ----------------------------------------------------------------------------- inference


def test_sparse_embedder_batches_and_marks_passage_and_query(pinecone_server):
    embedder = PineconeSparseEmbedder(PINECONE_API_KEY, host=pinecone_server.url)
    texts = [f"refund policy number {i}" for i in range(100)]

    docs = embedder.embed_documents(texts)
    query = embedder.embed_query("refund policy")

    assert embedder.model_id == SPARSE_MODEL
    calls = pinecone_server.requests_to("/embed")
    assert [len(c.body["inputs"]) for c in calls] == [96, 4, 1]
    assert [c.body["parameters"] for c in calls] == [
        {"input_type": "passage", "truncate": "END"},
        {"input_type": "passage", "truncate": "END"},
        {"input_type": "query", "truncate": "END"},
    ]
    assert len(docs) == 100 and docs[0] != docs[1]
    assert embedder.embed_documents(texts[:1]) == docs[:1]  # deterministic
    assert set(query["indices"]) < set(docs[0]["indices"])  # shared terms share ids
    assert all(isinstance(i, int) for i in query["indices"])


def test_hybrid_search_end_to_end_exact_term_wins_at_low_alpha(pinecone_server):
    embedder = PineconeSparseEmbedder(PINECONE_API_KEY, host=pinecone_server.url)
    index = open_index(pinecone_server)
    texts = ["error code E1234 means the disk is full", "the weather is nice today"]
    sparse = embedder.embed_documents(texts)
    index.upsert(
        [
            VectorRecord(
                id="a", values=[0.0, 1.0, 0.0, 0.0], sparse_values=sparse[0], metadata={"text": texts[0]}
            ),
            VectorRecord(
                id="b", values=[1.0, 0.0, 0.0, 0.0], sparse_values=sparse[1], metadata={"text": texts[1]}
            ),
        ],
        namespace="org-a",
    )

    matches = index.query(
        namespace="org-a",
        vector=[1.0, 0.0, 0.0, 0.0],
        sparse_vector=embedder.embed_query("E1234"),
        alpha=0.25,
    )

    assert [m.id for m in matches] == ["a", "b"]


def test_rerank_and_dense_embed_speak_the_sdk_shapes(pinecone_server):
    pc = Pinecone(api_key=PINECONE_API_KEY, host=pinecone_server.url)
    docs = [{"id": "1", "text": "bananas are yellow"}, {"id": "2", "text": "refunds take 14 days"}]

    ranked = pc.inference.rerank(
        model="bge-reranker-v2-m3", query="how long do refunds take", documents=docs, top_n=1
    )
    assert ranked.data[0].index == 1 and ranked.data[0].document["id"] == "2"
    assert 0.0 <= ranked.data[0].score <= 1.0 and len(ranked.data) == 1

    bare = pc.inference.rerank(
        model="bge-reranker-v2-m3", query="bananas", documents=docs, return_documents=False
    )
    assert [r.index for r in bare.data] == [0, 1] and bare.data[0].document is None
    assert bare.data[0].score == 1.0 and bare.data[1].score == 0.0

    dense = pc.inference.embed(
        model="multilingual-e5-large", inputs=["hello"], parameters={"input_type": "query"}
    )
    assert len(dense.data[0].values) == 1024
    assert sum(v * v for v in dense.data[0].values) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- request byte budget

WIDE = EmbeddingContract(dense_model="text-embedding-3-large", dimension=3072, sparse_model=SPARSE_MODEL)


def wide_record(i: int, text_chars: int = 4000, seed: int = 0) -> VectorRecord:
    """A text-embedding-3-large-sized record: 3,072 floats and a long chunk text in metadata."""
    rng = np.random.default_rng(seed + i)
    values = rng.normal(size=3072)
    return VectorRecord(
        id=f"docs/long.pdf:{i}",
        values=(values / np.linalg.norm(values)).tolist(),
        sparse_values={
            "indices": sorted(rng.choice(10_000, 80, replace=False).tolist()),
            "values": [0.5] * 80,
        },
        metadata={
            "path": "docs/long.pdf",
            "chunkIndex": i,
            "text": ("lorem ipsum " * (text_chars // 12 + 1))[:text_chars],
        },
    )


def test_wide_vectors_and_long_chunks_are_split_under_the_2mb_request_cap(pinecone_server):
    index = open_index(pinecone_server, WIDE, batch_size=100)
    records = [wide_record(i) for i in range(100)]  # ~6.5 MB as one request of 100

    assert index.upsert(records, namespace="org-a") == 100

    upserts = pinecone_server.requests_to("/vectors/upsert")
    assert [r.status for r in upserts] == [200] * len(upserts)
    assert len(upserts) > 1 and all(r.size <= DEFAULT_MAX_REQUEST_BYTES for r in upserts)
    # the planner's byte count is what the SDK actually sent
    planned = byte_bounded_batches(
        [_to_wire(r) for r in records], namespace="org-a", max_count=100, max_bytes=DEFAULT_MAX_REQUEST_BYTES
    )
    assert list(request_sizes(planned, "org-a")) == [r.size for r in upserts]
    assert sum(len(r.body["vectors"]) for r in upserts) == 100
    assert index.describe_index_stats().namespaces["org-a"].vector_count == 100
    fetched = index.fetch(["docs/long.pdf:99"], namespace="org-a")["docs/long.pdf:99"]
    assert fetched["metadata"]["text"] == records[99]["metadata"]["text"]


def test_the_wire_server_refuses_oversized_upserts_like_pinecone(pinecone_server):
    """The cap the budget protects against is real here: one unsplit request is refused with a 400."""
    index = open_index(pinecone_server, WIDE)
    del index  # it created the index; now send one unsplit request straight through the SDK
    pc = Pinecone(api_key=PINECONE_API_KEY, host=pinecone_server.url)
    raw = pc.index(host=f"{pinecone_server.url}/data/{INDEX}")

    with pytest.raises(ApiError) as err:
        raw.upsert(vectors=[_to_wire(wide_record(i)) for i in range(40)], namespace="org-a")

    assert err.value.status_code == 400
    assert "exceeds the maximum supported size of 2MB" in str(err.value)


def test_the_byte_budget_is_configurable_and_also_bounds_count(pinecone_server):
    index = open_index(pinecone_server, WIDE, batch_size=3, max_request_bytes=300_000)

    assert index.upsert([wide_record(i, text_chars=200) for i in range(12)], namespace="org-a") == 12

    upserts = pinecone_server.requests_to("/vectors/upsert")
    assert all(r.size <= 300_000 and len(r.body["vectors"]) <= 3 for r in upserts)
    assert max(r.size for r in upserts) > 150_000  # batches are filled, not one record each
    with pytest.raises(ConfigError, match="2 MB"):
        open_index(pinecone_server, WIDE, max_request_bytes=2_500_000)


def test_a_record_too_large_alone_is_refused_by_name_before_anything_is_written(pinecone_server):
    index = open_index(pinecone_server, WIDE, batch_size=2)
    records = [wide_record(0), wide_record(1), wide_record(2, text_chars=2_100_000), wide_record(3)]

    with pytest.raises(RecordTooLargeError) as err:
        index.upsert(records, namespace="org-a")

    message = str(err.value)
    assert "'docs/long.pdf:2'" in message and "'text'" in message and "metadata" in message
    assert pinecone_server.requests_to("/vectors/upsert") == []
    assert index.describe_index_stats().total_vector_count == 0


# ----------------------------------------------------------------------------- score breakdown


def brute_force_channels(records: list[VectorRecord], q: list[float], sq: dict) -> dict[str, tuple]:
    """id -> (dense, sparse) computed from the records as written."""
    terms = dict(zip(sq["indices"], sq["values"], strict=True)) if sq else {}
    out = {}
    for r in records:
        sparse = r.get("sparse_values") or {"indices": [], "values": []}
        lexical = sum(terms.get(i, 0.0) * v for i, v in zip(sparse["indices"], sparse["values"], strict=True))
        out[r["id"]] = (float(np.dot(q, r["values"])), lexical)
    return out


def test_channel_scores_come_from_one_dense_only_query_and_the_fused_score_is_pinecones(pinecone_server):
    index = open_index(pinecone_server)
    records = [record(i) for i in range(6)]
    index.upsert(records, namespace="org-a")
    dense_q = [0.5, 0.25, 2.0, 4.0]
    sparse_q = {"indices": [2, 1000], "values": [3.0, 2.0]}
    flt = {"chunkIndex": {"$lte": 4}}

    matches = index.query(
        namespace="org-a", vector=dense_q, sparse_vector=sparse_q, alpha=0.3, top_k=5, filter=flt
    )

    (fused,) = fused_queries(pinecone_server)
    (dense_only,) = [r for r in pinecone_server.requests_to("/query") if r is not fused]
    assert dense_only.body["vector"] == dense_q and "sparseVector" not in dense_only.body
    assert dense_only.body["namespace"] == "org-a" and dense_only.body["filter"] == flt
    assert dense_only.body["includeMetadata"] is False and dense_only.body["includeValues"] is False
    assert dense_only.body["topK"] == 20  # a few times deeper than the fused top k
    assert pinecone_server.requests_to("/vectors/fetch") == []
    returned = {m["id"]: m["score"] for m in fused.response["matches"]}
    expected = brute_force_channels(records, dense_q, sparse_q)
    assert len(matches) == 5
    for m in matches:
        assert (m.dense_score, m.sparse_score) == pytest.approx(expected[m.id])
        assert m.score == returned[m.id]  # Pinecone's own fused score, untouched
        assert m.values is None


def test_a_match_outside_the_dense_list_has_its_vectors_fetched(pinecone_server):
    index = open_index(pinecone_server)
    q = [1.0, 0.0, 0.0, 0.0]
    semantic = [
        VectorRecord(
            id=f"dense:{i}", values=[1.0, 0.01 * i, 0.0, 0.0], sparse_values={"indices": [7], "values": [1.0]}
        )
        for i in range(20)
    ]
    lexical = [
        VectorRecord(
            id=f"lexical:{i}",
            values=[-1.0, 0.0, 0.1 * i, 0.0],
            sparse_values={"indices": [1, 2], "values": [5.0, 4.0]},
        )
        for i in range(3)
    ]
    index.upsert(semantic + lexical, namespace="org-a")
    sq = {"indices": [1, 2], "values": [1.0, 1.0]}

    matches = index.query(namespace="org-a", vector=q, sparse_vector=sq, alpha=0.5, top_k=3)

    assert sorted(m.id for m in matches) == ["lexical:0", "lexical:1", "lexical:2"]  # last in dense order
    (fetch,) = pinecone_server.requests_to("/vectors/fetch")
    assert sorted(fetch.query["ids"]) == ["lexical:0", "lexical:1", "lexical:2"]
    expected = brute_force_channels(semantic + lexical, q, sq)
    for m in matches:
        assert (m.dense_score, m.sparse_score) == pytest.approx(expected[m.id])


def test_without_a_lexical_query_the_breakdown_costs_no_request(pinecone_server):
    index = open_index(pinecone_server)
    records = [record(i) for i in range(4)]
    index.upsert(records, namespace="org-a")
    q = [0.5, 0.25, 2.0, 4.0]

    matches = index.query(namespace="org-a", vector=q, alpha=0.75, top_k=4)

    assert len(pinecone_server.requests_to("/query")) == 1
    assert pinecone_server.requests_to("/vectors/fetch") == []
    for m in matches:
        assert m.sparse_score == 0.0
        assert m.dense_score == pytest.approx(float(np.dot(q, record(int(m.id.rsplit(":", 1)[1]))["values"])))


def test_pure_dense_alpha_fetches_wide_vectors_in_batches_under_the_result_cap(pinecone_server):
    """At alpha 1 the fused score says nothing of the sparse one: the vectors are fetched, bounded."""
    index = open_index(pinecone_server, WIDE)
    records = [wide_record(i, text_chars=100) for i in range(60)]
    index.upsert(records, namespace="org-a")
    q = records[0]["values"]
    sq = {"indices": records[0]["sparse_values"]["indices"][:10], "values": [1.0] * 10}
    pinecone_server.clear_requests()

    matches = index.query(namespace="org-a", vector=q, sparse_vector=sq, alpha=1.0, top_k=60)

    assert len(pinecone_server.requests_to("/query")) == 1
    fetches = pinecone_server.requests_to("/vectors/fetch")
    assert [len(f.query["ids"]) for f in fetches] == [50, 10]  # 50 x 3,072 floats stay far below 4 MB
    assert all(f.status == 200 for f in fetches)
    expected = brute_force_channels(records, q, sq)
    assert len(matches) == 60
    for m in matches:
        assert m.dense_score == pytest.approx(expected[m.id][0], abs=1e-9)
        assert m.sparse_score == pytest.approx(expected[m.id][1])
        assert m.score == pytest.approx(m.dense_score)


def test_the_wire_server_refuses_query_results_over_4mb(pinecone_server):
    index = open_index(pinecone_server, WIDE)
    index.upsert([wide_record(i, text_chars=100) for i in range(90)], namespace="org-a")

    with pytest.raises(LibrarianError, match="4MB"):
        index.query(namespace="org-a", vector=[1.0] * 3072, top_k=90, include_values=True)
