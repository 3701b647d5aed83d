"""PineconeVectorIndex and PineconeSparseEmbedder through the real pinecone SDK against the wire server.

What every index must do (scores, filters, deletes, tenancy) runs against Pinecone too, in
`test_vector_index_contract.py`; this module keeps what is Pinecone's own: the control plane, what
goes over the wire, batching, retries and inference.
"""

from __future__ import annotations

import pytest
from pinecone import Pinecone

from librarian.embeddings.pinecone_sparse import PineconeSparseEmbedder
from librarian.errors import ConfigError, ContractMismatchError, TenantError, TransientProviderError
from librarian.index.base import EmbeddingContract, VectorRecord
from librarian.index.pinecone import PineconeVectorIndex
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

    (sent,) = pinecone_server.requests_to("/query")
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
