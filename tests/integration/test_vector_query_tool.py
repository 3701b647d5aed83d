"""`create_vector_query_tool` on the real embedded stack: Mastra's options, and no way to another tenant.

Direct `tool.invoke(args, config)` is the plain-Python use (Mastra's `execute`); the ToolNode harness
is the agent's, where filter mistakes come back to the model as tool errors.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI

from librarian.embeddings.openai import OpenAIDenseEmbedder
from librarian.errors import ContractMismatchError, TenantError
from librarian.retrieval.rerankers import NoReranker
from librarian.stack import Stack
from tests.integration.tenant_corpus import (
    ACME,
    ANSWER,
    DEFAULT_ORG,
    EMPTY_ORG,
    GLOBEX,
    QUESTION,
    belongs_to,
    build_corpus,
    call_tool,
    clean_settings,
    leaks_into,
)
from tests.wire.openai_server import TEST_API_KEY, TextReply
from tools.vector_query import TenantFilterError, VectorStoreRequest, create_vector_query_tool


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        settings = clean_settings(tmp_path_factory.mktemp("vector-query") / "data", mp)
        yield build_corpus(Stack(settings))


@dataclass
class QueryContext:
    """An application's run context: the trusted organization plus Mastra-style request overrides."""

    organization_id: str | None = None
    vector_query: dict[str, Any] | None = None


def make_tool(corpus: Stack, **options):
    return create_vector_query_tool(stack=lambda: corpus, **options)


def run_as(org: str | None, tool, args: dict, **configurable):
    """Plain-Python invocation with a trusted organization in `configurable`."""
    config = {"configurable": {**({"organization_id": org} if org else {}), **configurable}}
    return tool.invoke(args, config=config)


# ---------------------------------------------------------------------------------------- schema


def test_the_model_sees_query_text_and_top_k_and_a_filter_only_when_enabled(corpus):
    plain = convert_to_openai_tool(make_tool(corpus))["function"]
    filtered = convert_to_openai_tool(make_tool(corpus, enable_filter=True, id="docs search"))["function"]
    assert set(plain["parameters"]["properties"]) == {"query_text", "top_k"}
    assert set(filtered["parameters"]["properties"]) == {"query_text", "top_k", "filter"}
    assert (plain["name"], filtered["name"]) == ("vector_query", "docs_search")
    for schema in (plain, filtered):
        properties = json.dumps(schema["parameters"]["properties"]).lower()
        assert "namespace" not in properties and "organization" not in properties


# ------------------------------------------------------------------------------------- isolation


@pytest.mark.parametrize("org", [ACME, GLOBEX])
def test_each_organization_sees_only_its_own_sources(corpus, org):
    result = run_as(org, make_tool(corpus), {"query_text": QUESTION})
    sources = result["sources"]
    assert sources[0]["id"] == "docs/refunds.md:0"
    assert ANSWER[org] in sources[0]["document"]
    assert all(belongs_to(org, s["document"]) for s in sources)
    assert not leaks_into(org, result["relevantContext"])


@pytest.mark.parametrize(
    "smuggled",
    [
        {"namespace": GLOBEX},
        {"organization_id": GLOBEX},
        {"org": GLOBEX},
        {"filter": {"org": GLOBEX}},
        {"config": {"configurable": {"organization_id": GLOBEX}}},
        {"runtime": {"context": {"organization_id": GLOBEX}}},
    ],
)
def test_arguments_a_model_invents_are_dropped(corpus, smuggled):
    message, _ = call_tool(
        make_tool(corpus), {"query_text": QUESTION, **smuggled}, context={"organization_id": ACME}
    )
    result = json.loads(message.content)
    assert result["sources"] and all(belongs_to(ACME, s["document"]) for s in result["sources"])


@pytest.mark.parametrize(
    "tenant_filter",
    [
        {"namespace": GLOBEX},
        {"organization_id": {"$eq": GLOBEX}},
        {"TENANT": {"$in": [GLOBEX]}},
        {"organizationId": {"$exists": True}},
        {"$or": [{"filename": "refunds.md"}, {"$and": [{"page": 1}, {"OrgId": GLOBEX}]}]},
        json.dumps({"tenant_id": GLOBEX}),
    ],
)
def test_a_filter_naming_a_tenant_key_is_a_tool_error(corpus, tenant_filter):
    tool = make_tool(corpus, enable_filter=True)
    message, _ = call_tool(
        tool, {"query_text": QUESTION, "filter": tenant_filter}, context={"organization_id": ACME}
    )
    assert message.status == "error"
    assert "cannot select an organization" in message.content
    assert not leaks_into(ACME, message.content)


@pytest.mark.parametrize(
    ("bad_filter", "reason"),
    [
        ({"page": {"$regex": "1"}}, "unknown operator"),
        ({"$not": {"page": 1}}, "unknown or misplaced operator"),
        ("{not json", "not valid JSON"),
    ],
)
def test_an_invalid_filter_is_a_tool_error_the_model_can_fix(corpus, bad_filter, reason):
    tool = make_tool(corpus, enable_filter=True)
    message, _ = call_tool(
        tool, {"query_text": QUESTION, "filter": bad_filter}, context={"organization_id": ACME}
    )
    assert message.status == "error" and reason in message.content


def test_a_valid_filter_narrows_within_the_organization(corpus):
    tool = make_tool(corpus, enable_filter=True)
    result = run_as(ACME, tool, {"query_text": QUESTION, "filter": {"filename": {"$in": ["parking.txt"]}}})
    assert [s["metadata"]["filename"] for s in result["sources"]] == ["parking.txt"]
    as_text = run_as(ACME, tool, {"query_text": QUESTION, "filter": '{"filename": "parking.txt"}'})
    assert as_text["sources"] == result["sources"]


def test_a_filter_is_ignored_when_filtering_is_not_enabled(corpus):
    result = run_as(ACME, make_tool(corpus), {"query_text": QUESTION, "filter": {"filename": "parking.txt"}})
    assert result["sources"][0]["metadata"]["filename"] == "refunds.md"


def test_without_an_organization_the_tool_fails_instead_of_using_a_default(corpus):
    tool = make_tool(corpus)
    with pytest.raises(TenantError, match="no default namespace"):
        run_as(None, tool, {"query_text": QUESTION, "namespace": DEFAULT_ORG})
    with pytest.raises(TenantError):
        run_as(None, tool, {"query_text": QUESTION}, vector_query={"top_k": 1})


# ------------------------------------------------------------------------------- run overrides


def test_run_overrides_tune_the_query(corpus):
    tool = make_tool(corpus, include_sources=True)
    overrides = {"top_k": 1, "filter": {"filename": "onboarding.md"}}
    result = run_as(ACME, tool, {"query_text": QUESTION, "top_k": 5}, vector_query=overrides)
    assert [s["metadata"]["filename"] for s in result["sources"]] == ["onboarding.md"]
    # Mastra's camelCase spellings, from the run context, which wins over configurable.
    message, _ = call_tool(
        tool,
        {"query_text": QUESTION},
        context={"organization_id": ACME, "vector_query": {"includeSources": False, "topK": 1}},
        config={"configurable": {"vector_query": {"topK": 3, "filter": {"page": 1}}}},
        context_schema=QueryContext,
    )
    result = json.loads(message.content)
    assert "sources" not in result
    assert result["relevantContext"].startswith("[1] refunds.md, page 1:")
    assert "[2]" not in result["relevantContext"]


@pytest.mark.parametrize(
    "overrides",
    [
        {"namespace": GLOBEX},
        {"organizationId": GLOBEX},
        {"database_config": {"pinecone": {"namespace": GLOBEX}}},
        {"databaseConfig": {"lancedb": {"Namespace": GLOBEX}}},
        {"database_config": {"org": GLOBEX}},
    ],
)
def test_the_namespace_cannot_be_overridden_per_run(corpus, overrides):
    with pytest.raises(TenantError, match="namespace is always the run's organization"):
        run_as(ACME, make_tool(corpus), {"query_text": QUESTION}, vector_query=overrides)


def test_unknown_overrides_and_options_are_refused(corpus):
    with pytest.raises(ValueError, match="unknown run override"):
        run_as(ACME, make_tool(corpus), {"query_text": QUESTION}, vector_query={"alpha": 0.1})
    with pytest.raises(TenantFilterError):
        run_as(ACME, make_tool(corpus), {"query_text": QUESTION}, vector_query={"filter": {"ns": GLOBEX}})
    with pytest.raises(ValueError, match="unknown option"):
        make_tool(corpus, database_config={"lancedb": {"minimum": 0.5}})
    with pytest.raises(TenantError):
        make_tool(corpus, database_config={"pinecone": {"namespace": "production"}})


# ------------------------------------------------------------------------------ result shape


def test_results_have_mastra_query_result_shape(corpus):
    result = run_as(GLOBEX, make_tool(corpus, top_k=2), {"query_text": QUESTION})
    assert set(result) == {"relevantContext", "sources"}
    assert len(result["sources"]) == 2
    top = result["sources"][0]
    assert set(top) == {"id", "score", "metadata", "document", "scores"}  # no vector unless asked
    assert top["document"] == top["metadata"]["text"]
    assert top["metadata"]["path"] == "docs/refunds.md" and top["metadata"]["page"] == 1
    assert {"bbox_left", "bbox_top", "bbox_width", "bbox_height", "blockType"} <= set(top["metadata"])
    scores = top["scores"]
    assert scores["rerank"] is None and scores["fused"] == top["score"]
    alpha = corpus.settings.alpha
    assert math.isclose(
        scores["fused"], alpha * scores["dense"] + (1 - alpha) * scores["sparse"], rel_tol=1e-4
    )
    assert result["relevantContext"].startswith(f"[1] refunds.md, page 1:\n{top['document']}")


def test_include_vectors_returns_the_stored_dense_vectors(corpus):
    result = run_as(ACME, make_tool(corpus, include_vectors=True, top_k=1), {"query_text": QUESTION})
    vector = np.asarray(result["sources"][0]["vector"])
    assert vector.shape == (384,) and math.isclose(float(np.linalg.norm(vector)), 1.0, rel_tol=1e-3)
    query = np.asarray(corpus.dense.embed_query(QUESTION))
    assert math.isclose(float(vector @ query), result["sources"][0]["scores"]["dense"], rel_tol=1e-3)


def test_empty_results_are_empty_not_errors(corpus):
    assert run_as(EMPTY_ORG, make_tool(corpus), {"query_text": QUESTION}) == {
        "relevantContext": "",
        "sources": [],
    }
    assert run_as(ACME, make_tool(corpus), {"query_text": "   "}) == {"relevantContext": "", "sources": []}


# --------------------------------------------------------------------------- database config


def test_database_config_applies_alpha_and_min_score_of_the_store_in_use(corpus):
    dense_only = run_as(
        ACME, make_tool(corpus, database_config={"lancedb": {"alpha": 1.0}}), {"query_text": QUESTION}
    )
    assert all(math.isclose(s["score"], s["scores"]["dense"], rel_tol=1e-5) for s in dense_only["sources"])
    floor = dense_only["sources"][1]["score"]
    above = run_as(
        ACME,
        make_tool(corpus, database_config={"lancedb": {"alpha": 1.0, "minScore": floor}}),
        {"query_text": QUESTION},
    )
    assert len(above["sources"]) == 2 and all(s["score"] >= floor for s in above["sources"])
    other_store = make_tool(corpus, database_config={"pinecone": {"alpha": 1.0, "min_score": 99.0}})
    assert len(run_as(ACME, other_store, {"query_text": QUESTION})["sources"]) == 4


def test_a_fixed_sparse_vector_replaces_the_query_embedding(corpus):
    """Mastra's `pinecone.sparseVector`: a sparse query the caller computed."""
    term = corpus.sparse.embed_query("garage")
    tool = make_tool(corpus, database_config={"lancedb": {"alpha": 0.0, "sparse_vector": term}})
    result = run_as(ACME, tool, {"query_text": QUESTION})
    assert result["sources"][0]["metadata"]["filename"] == "parking.txt"
    assert result["sources"][0]["score"] > 0 and result["sources"][1]["score"] == 0


# ----------------------------------------------------------------------------- vector stores


def test_a_resolver_picks_the_store_but_not_the_namespace(corpus):
    requests: list[VectorStoreRequest] = []

    def resolver(request: VectorStoreRequest):
        requests.append(request)
        return corpus.index

    tool = make_tool(corpus, vector_store=resolver, index_name="chunks")
    result = run_as(GLOBEX, tool, {"query_text": QUESTION}, vector_query={"index_name": "archive"})
    assert [(r.organization_id, r.index_name) for r in requests] == [(GLOBEX, "archive")]
    assert all(belongs_to(GLOBEX, s["document"]) for s in result["sources"])
    with pytest.raises(ValueError, match="resolver"):
        run_as(GLOBEX, make_tool(corpus), {"query_text": QUESTION}, vector_query={"index_name": "archive"})


def test_a_dense_model_other_than_the_index_contract_is_refused(corpus, openai_server):
    other = OpenAIDenseEmbedder(
        api_key=TEST_API_KEY, model="text-embedding-3-small", dimension=384, base_url=openai_server.base_url
    )
    with pytest.raises(ContractMismatchError, match="text-embedding-3-small"):
        make_tool(corpus, model=other, vector_store=corpus.index)  # caught at creation
    tool = make_tool(corpus, model=other)  # store resolved per run: caught before embedding
    with pytest.raises(ContractMismatchError, match="all-MiniLM-L6-v2"):
        run_as(ACME, tool, {"query_text": QUESTION})
    assert openai_server.requests_to("/embeddings") == []


# -------------------------------------------------------------------------------- reranking


def _judge(body: dict) -> TextReply:
    """A scripted relevance judge: the Acme refund excerpt is relevant, everything else is not."""
    prompt = json.dumps(body["messages"])
    return TextReply("0.95" if "14 days" in prompt else "0.05")


def test_mastra_reranker_config_with_a_chat_model(corpus, openai_server):
    openai_server.default_reply = _judge
    judge = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test")
    reranker = {
        "model": judge,
        "options": {"weights": {"semantic": 0.8, "vector": 0.1, "position": 0.1}, "topK": 2},
    }
    result = run_as(ACME, make_tool(corpus, reranker=reranker), {"query_text": "Where do visitors park?"})
    assert len(result["sources"]) == 2
    assert result["sources"][0]["metadata"]["filename"] == "refunds.md"  # the judge outweighs vectors
    assert result["sources"][0]["scores"]["rerank"] == result["sources"][0]["score"]
    assert len(openai_server.chat_requests) == 4  # every Acme candidate judged, nobody else's
    assert not any(leaks_into(ACME, json.dumps(body)) for body in openai_server.chat_requests)


def test_reranker_config_is_checked_at_creation(corpus):
    with pytest.raises(ValueError, match="add up to 1"):
        make_tool(corpus, reranker={"scorer": object(), "options": {"weights": {"semantic": 0.9}}})
    with pytest.raises(ValueError, match="scorer"):
        make_tool(corpus, reranker={"options": {"topK": 2}})
    plain = run_as(ACME, make_tool(corpus, reranker=NoReranker(), top_k=3), {"query_text": QUESTION})
    assert len(plain["sources"]) == 3 and plain["sources"][0]["metadata"]["filename"] == "refunds.md"
