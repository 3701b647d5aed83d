"""Rerankers on the real read path: MiniLM + lexical embeddings in LanceDB,
`librarian.retrieval.search.search`, and the cloud rerankers through their SDKs against the local
wire servers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from librarian.index.base import QueryMatch
from librarian.retrieval.local_rerank import FEATURES, LocalReranker, LocalWeights, combine, split_sentences
from librarian.retrieval.rerankers import NoReranker, ScorerReranker, WeightedReranker, make_reranker
from librarian.retrieval.scorers import CrossEncoderFolderError, LLMRelevanceScorer, PineconeRerankScorer
from librarian.retrieval.search import SearchOptions, candidates_for, search
from librarian.stack import Stack
from tests.wire.openai_server import OpenAIWireServer, TextReply
from tests.wire.pinecone_server import PineconeWireServer

ORG = "acme"
BOILING = (
    "Our kitchen handbook covers knives, pans and storage. Cast iron pans need oil after washing. "
    "Water boils at 100 degrees Celsius at sea level. Store flour in a dry, sealed container. "
    "Sharpen knives on a whetstone every month."
)
CHUNKS = {
    "handbook.txt": BOILING,
    "water.txt": "Water utilities bill customers monthly. Water meters are read by the utility company.",
    "altitude.txt": "At high altitude the air pressure is lower, so hiking takes longer.",
    "tea.txt": "Green tea should be brewed below boiling, around 80 degrees, to avoid bitterness.",
    "cars.txt": "Electric cars charge overnight; a home charger adds about 40 kilometres per hour.",
    "taxes.txt": "Quarterly tax filings are due at the end of the month after the quarter closes.",
}
QUESTION = "At what temperature does water boil at sea level?"


def _index(stack: Stack, chunks: dict[str, str]) -> None:
    names, texts = list(chunks), list(chunks.values())
    dense = stack.dense.embed_documents(texts)
    sparse = stack.sparse.embed_documents(texts)
    stack.index.upsert(
        [
            {
                "id": f"docs/{name}:0",
                "values": d,
                "sparse_values": s,
                "metadata": {"path": f"docs/{name}", "filename": name, "chunkIndex": 0, "page": 1, "text": t},
            }
            for name, t, d, s in zip(names, texts, dense, sparse, strict=True)
        ],
        namespace=ORG,
    )


@pytest.fixture
def indexed(stack: Stack) -> Stack:
    _index(stack, CHUNKS)
    return stack


@pytest.fixture
def local(indexed: Stack) -> Stack:
    """The same index with the local reranker chosen (the default is none: README "Retrieval quality")."""
    return Stack(indexed.settings.model_copy(update={"reranker": "local"}))


class CountingEmbedder:
    """The stack's real MiniLM, counting how many texts it was asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.texts = 0

    def embed_array(self, texts):
        self.texts += len(texts)
        return self.inner.embed_array(texts)


# ------------------------------------------------------------------------------ local reranker


def test_split_sentences_merges_fragments():
    """Fragments under 25 characters join the next sentence (or the last one, at the end)."""
    assert split_sentences(
        "Background. We studied mice. The treatment halved tumour growth in all cohorts."
    ) == [
        "Background. We studied mice.",
        "The treatment halved tumour growth in all cohorts.",
    ]
    assert split_sentences("The effect was large and clear.\nMethods: none") == [
        "The effect was large and clear. Methods: none"
    ]
    assert split_sentences("One short.") == ["One short."]
    assert split_sentences("") == []


def test_combine_normalises_within_the_list_and_handles_unknown_channels():
    feats = np.array([[0.2, np.nan, 1.0, 0.5, 1.0], [0.4, np.nan, 3.0, 0.1, 0.5]])
    w = LocalWeights(dense=0.5, sparse=0.2, fused=0.1, maxsim=0.2, position=0.0).vector()
    # sparse unknown for all: its 0.2 moves to fused → dense 0.5, fused 0.3, maxsim 0.2
    assert combine(feats, w).tolist() == pytest.approx([0.0 + 0.0 + 0.2, 0.5 + 0.3 + 0.0])


def test_local_reranker_scores_every_signal_on_the_real_index(local: Stack):
    reranker = make_reranker(local)
    assert isinstance(reranker, LocalReranker)
    assert reranker.embedder is local.dense  # the bundled MiniLM, loaded once
    matches = candidates_for(local, ORG, QUESTION, SearchOptions(candidates=10))
    ranked = reranker.rerank(QUESTION, matches, top_k=4)
    assert len(ranked) == 4
    scores = [r.score for r in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert set(ranked[0].details) == {"rerank", *FEATURES}
    assert ranked[0].match.metadata["path"] == "docs/handbook.txt"


def test_sentence_max_sim_finds_the_answer_buried_in_a_long_chunk(indexed: Stack):
    """The handbook's chunk vector is mostly about knives and pans; one sentence answers the question."""
    matches = candidates_for(indexed, ORG, QUESTION, SearchOptions(candidates=10))
    only_maxsim = LocalReranker(indexed.dense, LocalWeights(dense=0, sparse=0, fused=0, maxsim=1, position=0))
    feats = only_maxsim.features(QUESTION, matches)
    by_path = {m.metadata["path"]: feats[i] for i, m in enumerate(matches)}
    maxsim, dense = FEATURES.index("maxsim"), FEATURES.index("dense")
    handbook = by_path["docs/handbook.txt"]
    assert handbook[maxsim] > handbook[dense] + 0.1  # the best sentence beats the whole chunk
    assert handbook[maxsim] == max(f[maxsim] for f in by_path.values())
    assert only_maxsim.rerank(QUESTION, matches, 1)[0].match.metadata["path"] == "docs/handbook.txt"


def test_sentence_vectors_are_cached_per_chunk_text(indexed: Stack):
    embedder = CountingEmbedder(indexed.dense)
    reranker = LocalReranker(embedder)
    matches = candidates_for(indexed, ORG, QUESTION, SearchOptions(candidates=10))
    reranker.rerank(QUESTION, matches, 3)
    first = embedder.texts
    assert first > len(matches)  # the query plus every sentence of every candidate
    reranker.rerank("How are knives sharpened?", matches, 3)
    assert embedder.texts == first + 1  # only the new query


def test_sentence_cache_is_bounded(indexed: Stack):
    embedder = CountingEmbedder(indexed.dense)
    reranker = LocalReranker(embedder, cache_vectors=3)
    matches = candidates_for(indexed, ORG, QUESTION, SearchOptions(candidates=10))
    reranker.rerank(QUESTION, matches, 3)
    assert reranker.sentences._size <= 3 + max(len(split_sentences(t)) for t in CHUNKS.values())


def test_search_applies_the_local_floor(local: Stack):
    reranker = make_reranker(local)
    result = search(local, ORG, QUESTION, SearchOptions(top_k=6, candidates=10), reranker)
    sources = result["sources"]
    assert sources, "the answer passes any floor"
    assert all(s["score"] >= reranker.floor for s in sources)
    assert len(sources) < len(CHUNKS)  # the bottom of the list is cut by the floor
    assert sources[0]["path"] == "docs/handbook.txt"
    assert sources[0]["scores"]["rerank"] == sources[0]["score"]
    assert "[1] handbook.txt" in result["relevantContext"]


def test_local_reranker_without_channel_scores_uses_the_fused_score(indexed: Stack):
    """Pinecone returns no per-channel scores; the reranker must still produce a [0, 1] score."""
    matches = [
        QueryMatch(id=str(i), score=1.0 - i / 10, metadata={"text": t}) for i, t in enumerate(CHUNKS.values())
    ]
    ranked = LocalReranker(indexed.dense).rerank(QUESTION, matches, top_k=6)
    assert all(0.0 <= r.score <= 1.0 for r in ranked)
    assert "dense" not in ranked[0].details


# ------------------------------------------------------------------------------ the other rerankers


def test_no_reranker_keeps_the_fused_order(indexed: Stack):
    assert isinstance(make_reranker(indexed), NoReranker)  # the default
    matches = candidates_for(indexed, ORG, QUESTION, SearchOptions(candidates=10))
    ranked = NoReranker().rerank(QUESTION, matches, 3)
    assert [r.match.id for r in ranked] == [m.id for m in matches[:3]]
    assert NoReranker.floor is None
    result = search(indexed, ORG, QUESTION, SearchOptions(top_k=6, candidates=10), NoReranker())
    assert len(result["sources"]) == 6  # no floor


def _pinecone_settings(settings, server: PineconeWireServer):
    return settings.model_copy(
        update={"reranker": "pinecone", "pinecone_api_key": server.api_key, "pinecone_host": server.url}
    )


def test_pinecone_reranker_through_search(stack: Stack, pinecone_server: PineconeWireServer):
    _index(stack, CHUNKS)
    pine = Stack(_pinecone_settings(stack.settings, pinecone_server))
    pine.__dict__.update(index=stack.index, dense=stack.dense, sparse=stack.sparse)  # same LanceDB data
    reranker = make_reranker(pine)
    assert isinstance(reranker, ScorerReranker) and reranker.floor == 0.2
    result = search(pine, ORG, "water boils sea level", SearchOptions(top_k=6, candidates=10), reranker)
    # the wire server scores the share of query words in the passage; below 0.2 is cut
    paths = [s["path"] for s in result["sources"]]
    assert paths[0] == "docs/handbook.txt"
    assert "docs/cars.txt" not in paths and "docs/taxes.txt" not in paths
    assert all(s["score"] >= 0.2 for s in result["sources"])
    assert len(pinecone_server.requests_to("/rerank")) == 1


def test_weighted_reranker_fuses_like_mastra(indexed: Stack, pinecone_server: PineconeWireServer):
    scorer = PineconeRerankScorer(api_key=pinecone_server.api_key, host=pinecone_server.url)
    matches = candidates_for(indexed, ORG, QUESTION, SearchOptions(candidates=10))
    ranked = WeightedReranker(scorer, {"semantic": 0.6, "vector": 0.2, "position": 0.2}).rerank(
        QUESTION, matches, 3
    )
    first = ranked[0]
    expected = (
        0.6 * first.details["semantic"] + 0.2 * first.details["vector"] + 0.2 * first.details["position"]
    )
    assert first.score == pytest.approx(expected)
    with pytest.raises(ValueError, match="add up to 1"):
        WeightedReranker(scorer, {"semantic": 0.9})


def test_llm_reranker_from_settings(stack: Stack, openai_server: OpenAIWireServer, monkeypatch):
    _index(stack, CHUNKS)
    monkeypatch.setenv("OPENAI_API_KEY", openai_server.api_key)
    settings = stack.settings.model_copy(
        update={"reranker": "llm", "chat_model": "openai:gpt-test", "chat_base_url": openai_server.base_url}
    )
    llm_stack = Stack(settings)
    llm_stack.__dict__.update(index=stack.index, dense=stack.dense, sparse=stack.sparse)
    reranker = make_reranker(llm_stack)
    assert isinstance(reranker, ScorerReranker) and isinstance(reranker.scorer, LLMRelevanceScorer)

    def judge(body: dict) -> TextReply:
        return TextReply("0.95" if "100 degrees" in body["messages"][-1]["content"] else "irrelevant")

    openai_server.chat_script.extend([judge] * 10)
    result = search(llm_stack, ORG, QUESTION, SearchOptions(top_k=3, candidates=10), reranker)
    assert [s["path"] for s in result["sources"]] == [
        "docs/handbook.txt"
    ]  # the rest scored 0, under the floor
    assert result["sources"][0]["score"] == pytest.approx(0.95)


def test_cross_encoder_reranker_names_the_missing_model(stack: Stack, tmp_path: Path):
    settings = stack.settings.model_copy(update={"reranker": "cross-encoder", "rerank_model_path": tmp_path})
    with pytest.raises(CrossEncoderFolderError, match=r"model\.onnx"):
        make_reranker(Stack(settings))


def test_a_lone_candidate_passes_the_local_floor(stack: Stack):
    """A one-chunk library must still answer: no spread in a signal is not evidence against."""
    _index(stack, {"handbook.txt": BOILING})
    result = search(stack, ORG, QUESTION, SearchOptions(top_k=8), LocalReranker(stack.dense))
    assert [s["filename"] for s in result["sources"]] == ["handbook.txt"]
    assert result["sources"][0]["score"] >= LocalReranker(stack.dense).floor
