"""One retrieval core: every read path gets the same sources, and per-stack objects are built once.

`search_documents`, the vector query tool and the CLI all go through `librarian.retrieval.search.retrieve`; if
one of them embedded, queried, reranked or floored differently, the same question would cite
different excerpts depending on which tool the agent picked.
"""

from __future__ import annotations

import pytest

from librarian.retrieval import local_rerank
from librarian.retrieval.rerankers import NoReranker, make_reranker
from librarian.retrieval.search import SearchOptions, search
from librarian.stack import Stack
from tests.integration.tenant_corpus import ACME, GLOBEX, QUESTION, build_corpus, clean_settings
from tools.search import make_search_tool
from tools.vector_query import create_vector_query_tool

QUESTIONS = [QUESTION, "Where do visitors park?", "laptop on the first day", "zzz unrelated words"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        settings = clean_settings(tmp_path_factory.mktemp("retrieval-core") / "data", mp)
        yield build_corpus(Stack(settings))


def with_settings(corpus: Stack, **overrides) -> Stack:
    with pytest.MonkeyPatch.context() as mp:
        return Stack(clean_settings(corpus.settings.data_dir, mp, **overrides))


def as_org(org: str) -> dict:
    return {"configurable": {"organization_id": org}}


def same_sources(search_result: dict, query_result: dict) -> None:
    def key(s: dict) -> tuple:
        return s["id"], s["score"], s["scores"]["fused"], s["scores"]["rerank"]

    assert [key(s) for s in search_result["sources"]] == [key(s) for s in query_result["sources"]]


@pytest.mark.parametrize("org", [ACME, GLOBEX])
@pytest.mark.parametrize("question", QUESTIONS)
def test_search_tool_and_vector_query_tool_give_identical_sources_by_default(corpus, org, question):
    assert corpus.settings.reranker == "none"  # the default: plain hybrid
    searched = make_search_tool(lambda: corpus).invoke({"query": question, "top_k": 3}, config=as_org(org))
    queried = create_vector_query_tool(stack=lambda: corpus, top_k=3).invoke(
        {"query_text": question}, config=as_org(org)
    )
    assert searched["sources"], "every organization has documents to return"
    same_sources(searched, queried)
    assert [s["text"] for s in searched["sources"]] == [s["document"] for s in queried["sources"]]


def test_identical_sources_with_the_local_reranker_and_its_floor(corpus):
    local = with_settings(corpus, reranker="local")
    searched = make_search_tool(lambda: local).invoke({"query": QUESTION, "top_k": 4}, config=as_org(ACME))
    queried = create_vector_query_tool(stack=lambda: local, top_k=4, reranker=make_reranker(local)).invoke(
        {"query_text": QUESTION}, config=as_org(ACME)
    )
    assert searched["sources"][0]["scores"]["rerank"] is not None
    assert all(s["score"] >= 0.2 for s in searched["sources"])  # the local floor, applied by both
    same_sources(searched, queried)


def test_the_reranker_is_built_once_per_stack(corpus, monkeypatch):
    built: list[object] = []

    class Counted(local_rerank.LocalReranker):
        def __init__(self, *args, **kwargs) -> None:
            built.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(local_rerank, "LocalReranker", Counted)
    local = with_settings(corpus, reranker="local")
    tool = make_search_tool(lambda: local)
    for question in QUESTIONS[:3]:
        tool.invoke({"query": question}, config=as_org(ACME))
    search(local, ACME, QUESTION, SearchOptions.from_settings(local), make_reranker(local))  # the CLI's path
    assert len(built) == 1
    assert make_reranker(local) is built[0]
    other = with_settings(corpus, reranker="local")  # another stack: its own reranker
    make_search_tool(lambda: other).invoke({"query": QUESTION}, config=as_org(ACME))
    assert len(built) == 2


def test_plain_hybrid_has_no_floor_unless_one_is_set(corpus):
    assert isinstance(make_reranker(corpus), NoReranker)
    unfloored = search(corpus, ACME, "zzz unrelated words", SearchOptions.from_settings(corpus, top_k=4))
    assert len(unfloored["sources"]) == 4
    floor = unfloored["sources"][1]["score"]
    floored = with_settings(corpus, score_floor=floor)
    kept = search(floored, ACME, "zzz unrelated words", SearchOptions.from_settings(floored, top_k=4))
    assert [s["id"] for s in kept["sources"]] == [s["id"] for s in unfloored["sources"][:2]]
