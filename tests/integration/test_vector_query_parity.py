"""Parity with Mastra's `createVectorQueryTool` options (seed 003), and that none of them reaches a tenant.

Three real LanceDB stores built through the real ingest graph: the configured index (`default`), an
`archive` with other documents, and `openai-docs`, embedded by the OpenAI SDK against the local
OpenAI wire server (so its recorded contract differs). A run picks among them by name, and may
choose the embedder, reranker and top_k within what the server allows; per-store options
(`database_config`) and `provider_options` are accepted, mapped or refused with a message naming
the option, the store and the reason. pgvector runs on the embedded PostgreSQL (`tests.pg_embedded`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from langgraph.checkpoint.memory import InMemorySaver

from librarian.errors import ContractMismatchError, TenantError
from librarian.index.filters import InvalidFilterError
from librarian.index.pgvector import PgVectorIndex
from librarian.stack import Stack
from librarian.vector_query.database_config import options_for, parse_database_config
from librarian.vector_query.named_stores import named_store
from services.documents import DocumentService
from tests.integration.tenant_corpus import (
    ACME,
    GLOBEX,
    QUESTION,
    belongs_to,
    build_corpus,
    call_tool,
    clean_settings,
    leaks_into,
)
from tests.pg_embedded import pg_server, pgvector_url  # noqa: F401  (pytest fixtures)
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer
from tests.wire.pinecone_server import TEST_API_KEY as PINECONE_API_KEY
from tools.vector_query import (
    UnknownVectorStoreError,
    VectorQueryOptionError,
    create_vector_query_tool,
)

ARCHIVE = {
    ACME: {
        "old-refunds.md": "# Archived refund policy\n\nIn 2019 Acme paid refunds within 60 days, by cheque."
    },
    GLOBEX: {"old-refunds.md": "# Archived refund policy\n\nIn 2019 Globex paid refunds within 90 days."},
}
OPENAI_DOCS = {
    ACME: {"openai-refunds.md": "# Refunds\n\nAcme refunds, embedded by the OpenAI model: 14 days."},
    GLOBEX: {"openai-refunds.md": "# Refunds\n\nGlobex refunds, embedded by the OpenAI model: 30 days."},
}
MAX_TOP_K = 5


def _ingest(stack: Stack, docs: dict[str, dict[str, str]]) -> None:
    service = DocumentService(stack, InMemorySaver())
    for org, files in docs.items():
        for name, text in files.items():
            assert service.ingest(org, service.upload(org, name, text.encode())).status == "indexed"


@pytest.fixture(scope="module")
def openai_wire() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as server:
        yield server


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, openai_wire: OpenAIWireServer) -> Iterator[Stack]:
    """The server's stack with two more named stores, each built by its own stack."""
    base: Path = tmp_path_factory.mktemp("vector-parity")
    openai = {
        "openai_base_url": openai_wire.base_url,
        "openai_api_key": TEST_API_KEY,
        "openai_embedding_dimension": 32,
    }
    with pytest.MonkeyPatch.context() as mp:
        archive = Stack(clean_settings(base / "archive", mp))
        _ingest(archive, ARCHIVE)
        embedded_by_openai = Stack(clean_settings(base / "openai", mp, dense_embedder="openai", **openai))
        _ingest(embedded_by_openai, OPENAI_DOCS)
        settings = clean_settings(
            base / "data",
            mp,
            vector_stores=f"archive=lancedb:{archive.settings.lance_dir}, "
            f"openai-docs=lancedb:{embedded_by_openai.settings.lance_dir}",
            vector_query_embedders="openai",
            vector_query_rerankers="none,local",
            vector_query_max_top_k=MAX_TOP_K,
            **openai,
        )
        yield build_corpus(Stack(settings))


def make_tool(stack: Stack, **options: Any):
    return create_vector_query_tool(stack=lambda: stack, **options)


def run_as(org: str, tool, overrides: dict[str, Any] | None = None, **args: Any) -> dict[str, Any]:
    config = {"configurable": {"organization_id": org, "vector_query": overrides or {}}}
    return tool.invoke({"query_text": QUESTION, **args}, config=config)


def filenames(result: dict[str, Any]) -> set[str]:
    return {s["metadata"]["filename"] for s in result["sources"]}


# ------------------------------------------------------------------------------- store by name


@pytest.mark.parametrize("org", [ACME, GLOBEX])
def test_a_run_picks_a_configured_store_by_name_and_stays_in_its_organization(stack, org):
    tool = make_tool(stack)
    archived = run_as(org, tool, {"vectorStoreName": "archive"})
    assert filenames(archived) == {"old-refunds.md"}
    assert all(belongs_to(org, s["document"]) for s in archived["sources"])
    assert not leaks_into(org, archived["relevantContext"])
    current = run_as(org, tool, {"vector_store_name": "default"})
    assert "old-refunds.md" not in filenames(current) and "refunds.md" in filenames(current)


def test_the_store_name_can_be_set_at_creation_and_through_the_run_context(stack):
    assert filenames(run_as(GLOBEX, make_tool(stack, vector_store_name="archive"))) == {"old-refunds.md"}
    message, _ = call_tool(
        make_tool(stack),
        {"query_text": QUESTION},
        context={"organization_id": ACME, "vector_query": {"vectorStoreName": "archive"}},
    )
    result = json.loads(message.content)
    assert [s["metadata"]["filename"] for s in result["sources"]] == ["old-refunds.md"]
    assert belongs_to(ACME, result["sources"][0]["document"])


def test_an_unknown_store_name_is_refused_naming_the_available_ones(stack):
    with pytest.raises(UnknownVectorStoreError, match="'default', 'archive', 'openai-docs'"):
        run_as(ACME, make_tool(stack), {"vectorStoreName": "secret"})
    with pytest.raises(VectorQueryOptionError, match="fixed vector_store"):
        run_as(ACME, make_tool(stack, vector_store=stack.index), {"vectorStoreName": "archive"})


@pytest.mark.parametrize(
    "overrides",
    [
        {"vectorStoreName": "archive", "namespace": GLOBEX},
        {"vector_store_name": {"namespace": GLOBEX}},
        {"model": {"organizationId": GLOBEX}},
        {"provider_options": {"openai": {"tenant": GLOBEX}}},
        {"databaseConfig": {"chroma": {"where": {"$and": [{"page": 1}, {"filename": "x"}]}, "org": 1}}},
        {"databaseConfig": {"pinecone": {"sparseVector": {"indices": [], "values": [], "ns": GLOBEX}}}},
    ],
)
def test_no_new_option_path_can_name_a_tenant(stack, overrides):
    with pytest.raises(TenantError, match="namespace is always the run's organization"):
        run_as(ACME, make_tool(stack), overrides)


# ------------------------------------------------------------------------- per-run model choices


def test_a_run_may_choose_an_allowed_embedder_matching_the_store_it_queries(stack, openai_wire):
    before = len(openai_wire.requests_to("/embeddings"))
    result = run_as(ACME, make_tool(stack), {"vectorStoreName": "openai-docs", "model": "openai"})
    assert filenames(result) == {"openai-refunds.md"} and belongs_to(ACME, result["sources"][0]["document"])
    assert len(openai_wire.requests_to("/embeddings")) == before + 1  # the query, embedded by OpenAI
    # The store's recorded contract decides which embedder may query it, in both directions.
    with pytest.raises(ContractMismatchError, match="text-embedding-3-small"):
        run_as(ACME, make_tool(stack), {"vectorStoreName": "openai-docs"})
    with pytest.raises(ContractMismatchError, match="all-MiniLM-L6-v2"):
        run_as(ACME, make_tool(stack), {"model": "openai"})
    assert len(openai_wire.requests_to("/embeddings")) == before + 1  # refused before embedding


def test_an_embedder_the_server_does_not_allow_is_refused(stack):
    with pytest.raises(VectorQueryOptionError, match=r"'minilm', 'openai'.*LIBRARIAN_VECTOR_QUERY_EMBEDDERS"):
        run_as(ACME, make_tool(stack), {"model": "e5"})


def test_top_k_overrides_are_honoured_up_to_the_server_maximum(stack):
    assert len(run_as(ACME, make_tool(stack), {"topK": 2})["sources"]) == 2
    assert len(run_as(ACME, make_tool(stack, top_k=3))["sources"]) == 3
    assert len(run_as(ACME, make_tool(stack, top_k=50))["sources"]) == 4  # capped at 5; Acme has 4
    with pytest.raises(VectorQueryOptionError, match=f"limit of {MAX_TOP_K}"):
        run_as(ACME, make_tool(stack), {"topK": MAX_TOP_K + 1})
    message, _ = call_tool(
        make_tool(stack), {"query_text": QUESTION, "top_k": MAX_TOP_K + 1}, context={"organization_id": ACME}
    )
    assert message.status == "error" and f"limit of {MAX_TOP_K}" in message.content


def test_a_run_may_switch_between_allowed_rerankers(stack):
    tool = make_tool(stack, top_k=3)
    local = run_as(ACME, tool, {"reranker": "local"})
    assert all(s["scores"]["rerank"] is not None for s in local["sources"])
    assert local["sources"][0]["score"] == local["sources"][0]["scores"]["rerank"]
    assert all(belongs_to(ACME, s["document"]) for s in local["sources"])
    plain = run_as(ACME, tool, {"reranker": "none"})
    assert all(s["scores"]["rerank"] is None for s in plain["sources"])
    assert plain["sources"][0]["score"] == plain["sources"][0]["scores"]["fused"]
    with pytest.raises(VectorQueryOptionError, match=r"reranker 'pinecone' is not allowed.*'none', 'local'"):
        run_as(ACME, tool, {"reranker": "pinecone"})


# ----------------------------------------------------------------- database_config, store by store


@pytest.mark.parametrize(
    ("config", "error", "message"),
    [
        ({"pinecone": {"namespace": "production"}}, TenantError, "cannot set namespace"),
        ({"pinecone": {"sparseVector": {"indices": [1, 2], "values": [0.5]}}}, VectorQueryOptionError,
         "same length"),
        ({"pinecone": {"sparseVector": {"indices": [-1], "values": [0.5]}}}, VectorQueryOptionError,
         "from 0 to"),
        ({"pinecone": {"topK": 3}}, VectorQueryOptionError,
         r"unknown option 'topK' in .*database_config\['pinecone'\]; the pinecone section takes minScore"),
        ({"pgvector": {"ef": 5000}}, VectorQueryOptionError, "from 1 to 1000"),
        ({"pgvector": {"probes": 10}}, VectorQueryOptionError, "probes is refused for the pgvector store: "
         "Librarian's pgvector index has no IVFFlat"),
        ({"pgvector": {"minScore": "high"}}, VectorQueryOptionError, "finite number"),
        ({"chroma": {"where": {"page": {"$exists": True}}}}, InvalidFilterError,
         r"\$exists is not in Chroma's where language"),
        ({"chroma": {"where": {"orgId": "globex"}}}, TenantError, "cannot set orgId"),
        ({"chroma": {"where": {"$or": [{"page": 1}, {"Tenant": "globex"}]}}}, TenantError,
         "cannot set Tenant"),
        ({"chroma": {"whereDocument": {"$contains": "API"}}}, VectorQueryOptionError,
         "whereDocument is refused for the chroma store: Librarian's stores filter on metadata only"),
        ({"turbopuffer": {"consistency": "weak"}}, VectorQueryOptionError, "'strong' or 'eventual'"),
        ({"milvus": {"alpha": 1}}, VectorQueryOptionError, "'milvus', a store Librarian neither runs"),
    ],
)  # fmt: skip
def test_each_refused_store_option_names_the_option_the_store_and_the_reason(stack, config, error, message):
    with pytest.raises(error, match=message):
        make_tool(stack, database_config=config)  # at creation
    with pytest.raises(error, match=message):
        run_as(ACME, make_tool(stack), {"databaseConfig": config})  # and per run


def test_the_seed_s_accepted_options_take_effect(stack):
    seed_multi = {  # seed 003's "multiple configs", less Pinecone's namespace
        "pinecone": {"sparseVector": {"indices": [0, 1, 2, 3], "values": [0.1, 0.2, 0.15, 0.05]}},
        "pgvector": {"minScore": 0.8, "ef": 150},
        "chroma": {"where": {"filename": "parking.txt"}},
        "turbopuffer": {"consistency": "eventual"},
    }
    result = run_as(ACME, make_tool(stack, database_config=seed_multi))
    assert filenames(result) == {"parking.txt"}  # chroma.where, applied to the store in use
    strong = run_as(ACME, make_tool(stack), {"databaseConfig": {"turbopuffer": {"consistency": "strong"}}})
    assert strong["sources"]  # LanceDB reads its latest commit: strong holds
    with pytest.raises(VectorQueryOptionError, match="'strong' is refused for the pinecone store"):
        options_for("pinecone", parse_database_config({"turbopuffer": {"consistency": {"level": "strong"}}}))


def test_provider_options_may_only_confirm_the_store_s_dimension(stack):
    same = run_as(ACME, make_tool(stack, provider_options={"openai": {"dimensions": 384}}))
    assert same["sources"]
    with pytest.raises(VectorQueryOptionError, match=r"outputDimensionality=256 is refused.*384-d"):
        run_as(ACME, make_tool(stack), {"providerOptions": {"google": {"outputDimensionality": 256}}})
    with pytest.raises(VectorQueryOptionError, match="taskType is refused"):
        make_tool(stack, provider_options={"google": {"taskType": "RETRIEVAL_QUERY"}})


def test_pgvector_by_name_with_ef_answers_from_the_organization_only(stack, pgvector_url):  # noqa: F811
    """LanceDB and pgvector side by side: the pgvector store is copied from the configured index."""
    with_pg = Stack(
        stack.settings.model_copy(
            update={"postgres_url": pgvector_url, "vector_stores": "pg=pgvector:parity_chunks"}
        )
    )
    copy = PgVectorIndex(pgvector_url, stack.contract, table="parity_chunks", exact_limit=0)
    for org in (ACME, GLOBEX):
        records = stack.index.fetch(stack.index.list_ids(namespace=org), namespace=org)
        copy.upsert(list(records.values()), namespace=org)
    copy.close()
    tool = create_vector_query_tool(stack=lambda: with_pg)
    result = run_as(GLOBEX, tool, {"vectorStoreName": "pg", "databaseConfig": {"pgvector": {"ef": 300}}})
    assert result["sources"] and all(belongs_to(GLOBEX, s["document"]) for s in result["sources"])
    assert result["sources"][0]["id"] == "docs/refunds.md:0"
    # `ef` raises hnsw.ef_search on the HNSW path (namespaces above exact_limit, here every one).
    store = named_store(with_pg, "pg")
    tuned = store.with_ef_search(300)
    with store._cursor(GLOBEX) as cursor:
        assert ("hnsw.ef_search", "300") in tuned.candidate_settings(cursor, 3, 200)
        assert ("hnsw.ef_search", "200") in store.candidate_settings(cursor, 3, 200)


def test_a_pinecone_store_by_name_gets_the_run_s_namespace_and_the_seed_s_sparse_vector(
    stack, pinecone_server
):
    """The Pinecone section on the wire (SDK against the local Pinecone server), in the run's namespace."""
    with_pinecone = Stack(
        stack.settings.model_copy(
            update={
                "pinecone_api_key": PINECONE_API_KEY,
                "pinecone_host": pinecone_server.url,
                "vector_stores": "pc=pinecone:other-chunks",
            }
        )
    )
    store = named_store(with_pinecone, "pc")
    for org in (ACME, GLOBEX):
        records = stack.index.fetch(stack.index.list_ids(namespace=org), namespace=org)
        store.upsert(list(records.values()), namespace=org)
    sparse = {"indices": [0, 1, 2, 3], "values": [0.1, 0.2, 0.15, 0.05]}  # seed 003's example
    tool = create_vector_query_tool(stack=lambda: with_pinecone, top_k=3)
    result = run_as(
        ACME,
        tool,
        {"vectorStoreName": "pc", "databaseConfig": {"pinecone": {"sparseVector": sparse}}},
    )
    assert result["sources"] and all(belongs_to(ACME, s["document"]) for s in result["sources"])
    queries = [r for r in pinecone_server.requests if r.path.endswith("/query")]
    assert queries and all(r.namespace == ACME for r in queries)
    # The score breakdown's dense-only query goes out in parallel: pick the hybrid one.
    hybrid = [r for r in queries if "sparseVector" in r.body]
    assert hybrid and hybrid[-1].body["sparseVector"]["indices"] == sparse["indices"]
    with pytest.raises(VectorQueryOptionError, match="'strong' is refused for the pinecone store"):
        run_as(
            ACME,
            tool,
            {"vectorStoreName": "pc", "databaseConfig": {"turbopuffer": {"consistency": "strong"}}},
        )
    eventual = {"vectorStoreName": "pc", "databaseConfig": {"turbopuffer": {"consistency": "eventual"}}}
    assert run_as(GLOBEX, tool, eventual)["sources"][0]["id"] == "docs/refunds.md:0"
    assert [r.namespace for r in pinecone_server.requests if r.path.endswith("/query")][-1] == GLOBEX


# ---------------------------------------------------------------------- generated option dicts

_TENANTISH = ["namespace", "orgId", "organization_id", "Tenant", "ns"]
_OPTION_KEYS = [
    "topK", "top_k", "filter", "includeVectors", "includeSources", "databaseConfig", "indexName",
    "vectorStoreName", "model", "reranker", "providerOptions", "pinecone", "pgvector", "chroma",
    "turbopuffer", "lancedb", "where", "whereDocument", "sparseVector", "minScore", "ef", "probes",
    "consistency", "alpha", "indices", "values", "dimensions", "$and", "$or", "$eq", "$in", "$exists",
    "filename", "page", *_TENANTISH,
]  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["archive", "default", "openai-docs", "openai", "local", "none", "strong", GLOBEX]),
    st.text(max_size=8),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(_OPTION_KEYS), st.text(max_size=6)), children, max_size=3),
    ),
    max_leaves=12,
)
_WELL_FORMED = st.fixed_dictionaries(
    {},
    optional={
        "topK": st.integers(0, MAX_TOP_K + 1),
        "vectorStoreName": st.sampled_from(["default", "archive", "openai-docs", "elsewhere"]),
        "model": st.sampled_from(["minilm", "openai", "e5"]),
        "reranker": st.sampled_from(["none", "local", "llm"]),
        "filter": st.sampled_from([{"page": 1}, {"filename": {"$in": ["refunds.md", "parking.txt"]}}]),
        "databaseConfig": st.fixed_dictionaries(
            {},
            optional={
                "lancedb": st.fixed_dictionaries(
                    {}, optional={"alpha": st.floats(0, 1), "minScore": st.floats(-1, 1)}
                ),
                "chroma": st.fixed_dictionaries(
                    {"where": st.sampled_from([{"filename": "parking.txt"}, {"page": 1}])}
                ),
                "turbopuffer": st.fixed_dictionaries(
                    {"consistency": st.sampled_from(["strong", "eventual"])}
                ),
            },
        ),
        "providerOptions": st.sampled_from([{"openai": {"dimensions": 384}}, {"openai": {"dimensions": 32}}]),
    },
)
_WITH_TENANT = st.builds(
    lambda options, key: {**options, key: GLOBEX}, _WELL_FORMED, st.sampled_from(_TENANTISH)
)
_OVERRIDES = st.one_of(
    st.dictionaries(st.sampled_from(_OPTION_KEYS), _VALUES, max_size=4), _WELL_FORMED, _WITH_TENANT
)
DOCUMENTED = (VectorQueryOptionError, InvalidFilterError, TenantError, ContractMismatchError, ValueError)


@hypothesis_settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(overrides=_OVERRIDES, config=st.one_of(st.none(), _VALUES))
def test_generated_options_never_reach_another_namespace(stack, overrides, config):
    try:
        tool = make_tool(stack, database_config=config)
        result = run_as(ACME, tool, overrides)
    except DOCUMENTED as exc:
        event(f"refused: {type(exc).__name__}")
        assert str(exc) and not leaks_into(ACME, str(exc))
        return
    event("answered")
    for source in result.get("sources", []):
        assert belongs_to(ACME, source["document"]), source
    assert not leaks_into(ACME, result["relevantContext"])
