"""Every source found on Pinecone carries its dense and sparse scores, as on the embedded index.

The same chunks, embedded once by the stack's own models, go into LanceDB and into the Pinecone
wire server; `search` (what `librarian search`, the agent's tool and the API call) must then show
the same sources with the same score breakdown on both.
"""

from __future__ import annotations

import pytest

from librarian.retrieval.search import SearchOptions, search
from librarian.stack import Stack
from tests.wire.pinecone_server import PineconeWireServer

ORG = "acme"
CHUNKS = {
    "boiling.txt": "Water boils at 100 degrees Celsius at sea level, and lower on a mountain.",
    "tea.txt": "Green tea should be brewed below boiling, around 80 degrees, to avoid bitterness.",
    "error.txt": "Error code E1234 means the disk is full; free space and retry the upload.",
    "cars.txt": "Electric cars charge overnight; a home charger adds about 40 kilometres per hour.",
    "taxes.txt": "Quarterly tax filings are due at the end of the month after the quarter closes.",
}


def _records(stack: Stack) -> list[dict]:
    names, texts = list(CHUNKS), list(CHUNKS.values())
    dense = stack.dense.embed_documents(texts)
    sparse = stack.sparse.embed_documents(texts)
    return [
        {
            "id": f"docs/{name}:0",
            "values": d,
            "sparse_values": s,
            "metadata": {"path": f"docs/{name}", "filename": name, "chunkIndex": 0, "page": 1, "text": t},
        }
        for name, t, d, s in zip(names, texts, dense, sparse, strict=True)
    ]


@pytest.fixture
def twin_stacks(settings, pinecone_server: PineconeWireServer) -> tuple[Stack, Stack]:
    """(LanceDB stack, Pinecone stack) with the same models; fixed IDF, so both embed one query."""
    lance = Stack(settings.model_copy(update={"sparse_idf": "fixed"}))
    pinecone = Stack(
        lance.settings.model_copy(
            update={
                "vector_index": "pinecone",
                "pinecone_api_key": pinecone_server.api_key,
                "pinecone_host": pinecone_server.url,
            }
        )
    )
    pinecone.__dict__.update(dense=lance.dense, sparse=lance.sparse)  # load the models once
    records = _records(lance)
    lance.index.upsert(records, namespace=ORG)
    pinecone.index.upsert(records, namespace=ORG)
    return lance, pinecone


@pytest.mark.parametrize("query", ["at what temperature does water boil", "E1234 disk full"])
def test_search_sources_on_pinecone_carry_the_same_breakdown_as_lancedb(twin_stacks, query):
    lance, pinecone = twin_stacks
    options = SearchOptions(top_k=5, candidates=5, alpha=0.6)

    expected = {s["id"]: s["scores"] for s in search(lance, ORG, query, options)["sources"]}
    sources = search(pinecone, ORG, query, options)["sources"]

    assert {s["id"] for s in sources} == set(expected)
    for source in sources:
        scores = source["scores"]
        assert scores["dense"] is not None and scores["sparse"] is not None
        assert scores["dense"] == pytest.approx(expected[source["id"]]["dense"], abs=1e-5)
        assert scores["sparse"] == pytest.approx(expected[source["id"]]["sparse"], abs=1e-5)
        assert scores["fused"] == pytest.approx(expected[source["id"]]["fused"], abs=1e-5)
    assert any(s["scores"]["sparse"] > 0 for s in sources)  # the lexical channel did contribute


def test_the_breakdown_can_be_turned_off_to_save_the_extra_query(twin_stacks, pinecone_server):
    _, pinecone = twin_stacks
    frugal = Stack(pinecone.settings.model_copy(update={"pinecone_score_breakdown": False}))
    frugal.__dict__.update(dense=pinecone.dense, sparse=pinecone.sparse)
    before = len([r for r in pinecone_server.requests if r.path.endswith("/query")])
    sources = search(frugal, ORG, "E1234 disk full", SearchOptions(top_k=5, candidates=5))["sources"]
    queries = [r for r in pinecone_server.requests if r.path.endswith("/query")][before:]
    assert sources and len(queries) == 1  # the hybrid query alone
    assert all(s["scores"]["dense"] is None and s["scores"]["sparse"] is None for s in sources)
