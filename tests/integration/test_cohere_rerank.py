"""Cohere Rerank as `rerank()`'s semantic scorer (seed 002), through the real `cohere` SDK.

The SDK talks to `tests/wire/cohere_server.py`, a local `POST /v2/rerank` that checks the bearer
key and scores a document by the share of query terms it contains, so the expected order can be
computed here independently. Retrieval is the real embedded stack (MiniLM + lexical, LanceDB).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.errors import ConfigError
from librarian.retrieval.cohere_scorer import CohereRerankError, CohereRerankScorer, scores_from_results
from librarian.retrieval.rerank import DEFAULT_WEIGHTS
from librarian.retrieval.rerankers import WeightedReranker, make_reranker
from librarian.retrieval.search import SearchOptions, candidates_for, search
from librarian.settings import get_settings, load_settings
from librarian.stack import Stack
from tests.integration.test_rerankers import CHUNKS, ORG, _index
from tests.wire.cohere_server import CohereWireServer, overlap_score

QUERY = "water boils sea level degrees"
COHERE_VARIABLES = (
    "COHERE_API_KEY",
    "CO_API_KEY",
    "LIBRARIAN_COHERE_API_KEY",
    "COHERE_BASE_URL",
    "CO_API_URL",
    "LIBRARIAN_COHERE_BASE_URL",
)


@pytest.fixture
def cohere_server() -> Iterator[CohereWireServer]:
    with CohereWireServer() as server:
        yield server


@pytest.fixture
def no_cohere_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in COHERE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def cohere_stack(
    stack: Stack, cohere_server: CohereWireServer, monkeypatch: pytest.MonkeyPatch, no_cohere_env: None
) -> Stack:
    """A real Stack whose settings come from the environment, as a deployment's would, sharing the
    indexed LanceDB data of the embedded stack."""
    _index(stack, CHUNKS)
    monkeypatch.setenv("LIBRARIAN_RERANKER", "cohere")
    monkeypatch.setenv("COHERE_API_KEY", cohere_server.api_key)
    monkeypatch.setenv("COHERE_BASE_URL", cohere_server.url)
    settings = load_settings(data_dir=stack.settings.data_dir)
    cohere = Stack(settings)
    cohere.__dict__.update(index=stack.index, dense=stack.dense, sparse=stack.sparse)  # same LanceDB data
    return cohere


def expected_mastra_order(query: str, matches) -> list[tuple[str, float, float]]:
    """(id, fused score, semantic) best first, computed here from the server's scoring rule."""
    w, n = DEFAULT_WEIGHTS, len(matches)
    rows = []
    for i, m in enumerate(matches):
        semantic = overlap_score(query, m.metadata["text"])
        fused = w["semantic"] * semantic + w["vector"] * m.score + w["position"] * (1 - i / n)
        rows.append((m.id, fused, semantic))
    return sorted(rows, key=lambda r: -r[1])


# ------------------------------------------------------------------------------ the reranker seam


def test_cohere_from_settings_fuses_the_servers_scores_with_mastras_weights(
    cohere_stack: Stack, cohere_server: CohereWireServer
):
    reranker = make_reranker(cohere_stack)
    assert isinstance(reranker, WeightedReranker) and isinstance(reranker.scorer, CohereRerankScorer)
    assert reranker.scorer.model == "rerank-v3.5" and reranker.weights == DEFAULT_WEIGHTS
    matches = candidates_for(cohere_stack, ORG, QUERY, SearchOptions(candidates=10))
    ranked = reranker.rerank(QUERY, matches, top_k=len(matches))

    expected = expected_mastra_order(QUERY, matches)
    assert [r.match.id for r in ranked] == [e[0] for e in expected]
    assert [r.score for r in ranked] == pytest.approx([e[1] for e in expected])
    assert [r.details["semantic"] for r in ranked] == pytest.approx([e[2] for e in expected])
    assert ranked[0].match.metadata["path"] == "docs/handbook.txt"
    assert reranker.floor is None  # the fused score has no fixed scale (WeightedReranker)

    (request,) = cohere_server.rerank_requests()  # one round trip for every candidate
    assert request.headers["authorization"] == f"Bearer {cohere_server.api_key}"
    assert request.body["model"] == "rerank-v3.5"
    assert request.body["query"] == QUERY
    assert request.body["documents"] == [m.metadata["text"] for m in matches]  # the hybrid order
    assert request.body["top_n"] == len(matches) and request.body["max_tokens_per_doc"] == 4096


def test_the_model_and_base_url_come_from_settings(
    stack: Stack, cohere_server: CohereWireServer, monkeypatch: pytest.MonkeyPatch, no_cohere_env: None
):
    monkeypatch.setenv("CO_API_KEY", cohere_server.api_key)  # the SDK's own variable names work too
    monkeypatch.setenv("CO_API_URL", cohere_server.url)
    monkeypatch.setenv("LIBRARIAN_COHERE_RERANK_MODEL", "rerank-english-v3.0")
    settings = load_settings(data_dir=stack.settings.data_dir, reranker="cohere")
    reranker = make_reranker(Stack(settings))
    assert reranker.scorer.score("water", ["water here", "none"]) == [1.0, 0.0]
    assert cohere_server.rerank_requests()[0].body["model"] == "rerank-english-v3.0"


def test_the_search_tool_shows_the_cohere_score_in_each_sources_breakdown(cohere_stack: Stack):
    from tools.search import make_search_tool

    tool = make_search_tool(lambda: cohere_stack)
    result = tool.invoke({"query": QUERY, "top_k": 3}, config={"configurable": {"organization_id": ORG}})
    sources = result["sources"]
    assert len(sources) == 3 and sources[0]["path"] == "docs/handbook.txt"
    for source in sources:
        assert source["scores"]["semantic"] == pytest.approx(overlap_score(QUERY, source["text"]))
        assert source["scores"]["rerank"] == source["score"]


def test_librarian_search_shows_the_cohere_score(
    tmp_path: Path, cohere_server: CohereWireServer, monkeypatch: pytest.MonkeyPatch, capsys, no_cohere_env
):
    from librarian_cli import main

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    folder = tmp_path / "in"
    folder.mkdir()
    for name, text in CHUNKS.items():
        (folder / name).write_text(text)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        assert main(["ingest", str(folder), "--org", ORG, "--quiet"]) == 0
        monkeypatch.setenv("LIBRARIAN_RERANKER", "cohere")
        monkeypatch.setenv("COHERE_API_KEY", cohere_server.api_key)
        monkeypatch.setenv("COHERE_BASE_URL", cohere_server.url)
        get_settings.cache_clear()
        capsys.readouterr()
        assert main(["search", QUERY, "--org", ORG, "--top-k", "3", "--json"]) == 0
        sources = json.loads(capsys.readouterr().out)["sources"]
        assert sources[0]["path"] == "docs/handbook.txt"
        assert [s["scores"]["semantic"] for s in sources] == pytest.approx(
            [overlap_score(QUERY, s["text"]) for s in sources]
        )
        assert main(["search", QUERY, "--org", ORG, "--top-k", "3"]) == 0
        table = capsys.readouterr().out
        assert "semantic" in table and "handbook.txt" in table

        monkeypatch.setenv("COHERE_API_KEY", "revoked-key")  # a provider error: clear, no traceback
        get_settings.cache_clear()
        assert main(["search", QUERY, "--org", ORG]) != 0
        captured = capsys.readouterr()
        assert "HTTP 401" in captured.err and "COHERE_API_KEY" in captured.err
        assert "Traceback" not in captured.err and not captured.out.strip()
    finally:
        get_settings.cache_clear()


# ------------------------------------------------------------------------------ failures


def test_a_429_is_retried_with_the_sdks_backoff_and_then_succeeds(
    cohere_stack: Stack, cohere_server: CohereWireServer
):
    cohere_server.fail_next(2, status=429)
    result = search(
        cohere_stack, ORG, QUERY, SearchOptions(top_k=3, candidates=10), make_reranker(cohere_stack)
    )
    assert result["sources"][0]["path"] == "docs/handbook.txt"
    assert [r.status for r in cohere_server.rerank_requests()] == [429, 429, 200]


def test_rate_limited_beyond_the_retries_is_a_clear_error(
    cohere_stack: Stack, cohere_server: CohereWireServer
):
    cohere_server.fail_next(3, status=429)  # the first try and the SDK's two retries
    with pytest.raises(CohereRerankError, match=r"HTTP 429.*rate limited"):
        search(cohere_stack, ORG, QUERY, SearchOptions(top_k=3, candidates=10), make_reranker(cohere_stack))


def test_a_wrong_key_is_a_clear_error_not_a_silent_fallback(
    cohere_stack: Stack, cohere_server: CohereWireServer
):
    settings = cohere_stack.settings.model_copy(update={"cohere_api_key": "wrong-key"})
    wrong = Stack(settings)
    wrong.__dict__.update(index=cohere_stack.index, dense=cohere_stack.dense, sparse=cohere_stack.sparse)
    with pytest.raises(CohereRerankError) as raised:
        search(wrong, ORG, QUERY, SearchOptions(top_k=3, candidates=10), make_reranker(wrong))
    message = str(raised.value)
    assert "HTTP 401" in message and "invalid api token" in message and "COHERE_API_KEY" in message
    assert "wrong-key" not in message  # the key never appears in an error
    assert [r.status for r in cohere_server.rerank_requests()] == [401]  # no retry of a bad key


def test_a_slow_server_times_out_with_a_clear_error(cohere_server: CohereWireServer):
    cohere_server.stall_next(1, seconds=5.0)
    scorer = CohereRerankScorer(
        cohere_server.api_key, base_url=cohere_server.url, timeout_s=0.3, max_retries=0
    )
    with pytest.raises(CohereRerankError, match="timed out"):
        scorer.score("water", ["water"])


def test_the_async_path_scores_like_the_sync_one(cohere_server: CohereWireServer):
    import asyncio

    scorer = CohereRerankScorer(cohere_server.api_key, base_url=cohere_server.url)
    texts = ["water boils", "sea level", "nothing relevant", "water boils at sea level"]
    expected = [overlap_score(QUERY, t) for t in texts]
    assert asyncio.run(scorer.ascore(QUERY, texts)) == pytest.approx(expected)
    assert scorer.score(QUERY, texts) == pytest.approx(expected)


# ------------------------------------------------------------------------------ limits


def test_long_candidate_lists_are_split_at_the_request_limit(cohere_server: CohereWireServer):
    cohere_server.max_documents = 3  # the server refuses more, as Cohere does past its limit
    scorer = CohereRerankScorer(cohere_server.api_key, base_url=cohere_server.url, max_documents=3)
    texts = [f"passage {i} " + ("water boils" if i % 3 == 0 else "cars") for i in range(8)]
    assert scorer.score("water boils", texts) == pytest.approx(
        [overlap_score("water boils", t) for t in texts]
    )
    assert [len(r.body["documents"]) for r in cohere_server.rerank_requests()] == [3, 3, 2]


def test_documents_are_truncated_to_max_tokens_per_doc(cohere_server: CohereWireServer):
    scorer = CohereRerankScorer(cohere_server.api_key, base_url=cohere_server.url, max_tokens_per_doc=3)
    # the answer sits past the third token: Cohere (here, its stand-in) never sees it
    assert scorer.score("boils", ["one two three boils", "boils"]) == [0.0, 1.0]
    assert cohere_server.rerank_requests()[0].body["max_tokens_per_doc"] == 3


def test_max_documents_outside_cohere_limits_is_refused():
    with pytest.raises(ValueError, match="10,000"):
        CohereRerankScorer("key", max_documents=10_001)


# ------------------------------------------------------------------------------ settings


def test_reranker_cohere_without_a_key_is_refused_at_settings_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_cohere_env: None
):
    monkeypatch.setenv("LIBRARIAN_RERANKER", "cohere")
    with pytest.raises(ConfigError, match=r"COHERE_API_KEY .* LIBRARIAN_RERANKER=cohere needs it"):
        load_settings(data_dir=tmp_path)
    monkeypatch.setenv("COHERE_API_KEY", "k")
    assert load_settings(data_dir=tmp_path).cohere_api_key == "k"


def test_an_unchecked_settings_object_still_cannot_build_a_keyless_reranker(settings, no_cohere_env: None):
    keyless = settings.model_copy(update={"reranker": "cohere"})  # skips validate_providers
    with pytest.raises(ConfigError, match="COHERE_API_KEY"):
        make_reranker(Stack(keyless))


# ------------------------------------------------------------------------------ replies of any shape

_results = st.lists(
    st.builds(
        SimpleNamespace,
        index=st.one_of(st.integers(-2, 8), st.none(), st.text(max_size=2)),
        relevance_score=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none()),
    ),
    max_size=10,
)


@settings(max_examples=300, deadline=None)
@given(results=_results, count=st.integers(0, 6))
def test_any_reply_gives_every_document_a_valid_score_or_a_clear_error(results, count):
    """Whatever the provider sends, either each document has its own score in [0, 1] or it fails
    loudly: never a silent zero that would pass for a ranking."""
    try:
        scores = scores_from_results(results, count, "rerank-v3.5")
    except CohereRerankError as error:
        assert "rerank-v3.5" in str(error)
        return
    assert len(scores) == count
    assert all(0.0 <= s <= 1.0 for s in scores)
    last = {r.index: r.relevance_score for r in results}
    assert scores == [last[i] for i in range(count)]
