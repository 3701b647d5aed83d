"""Every `librarian ask --mode` path checks its citations, and graph sources say why they rank.

The hand-made graph of `tests.graph_fixtures` (Scrooge, the Cratchits), written through the real
SQLite store, its chunks indexed with the real MiniLM and lexical encoders; the citation check is the
real support scorer. The chat model, where one is needed to write an unsupported sentence on
purpose, is a scripted fake (`tests.graph_chat_fakes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from graphs.agent import build_agent
from librarian.answers.citations import UNSUPPORTED_MARK
from librarian.graph.query.runs import run_global
from librarian.settings import Settings
from librarian.stack import Stack
from services.ask import answer_with_mode
from tests.graph_chat_fakes import ScriptedGraphModel, map_json
from tests.graph_vectors import build_marked_graph
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

pytest_plugins = ["tests.wire.fixtures"]

ORG = "org-a"
# Not in any chunk, claim or community report of the fixture graph
INVENTED = "Scrooge sails a fleet of submarines to Paris every summer"
# Community 2's report ("Scrooge and the ghosts"), in no chunk's words
REPORT_2 = "Scrooge is visited by Marley and the spirits"
OVERVIEW = "What are the main themes of the story?"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    current = Stack(Settings(data_dir=Path(tmp_path_factory.mktemp("graph-checks")) / "data"))
    build_marked_graph(current, ORG, "[A]")
    return current


@pytest.fixture(scope="module")
def dropping(stack: Stack) -> Stack:
    """The same data, with LIBRARIAN_UNSUPPORTED_SENTENCES=drop."""
    return Stack(stack.settings.model_copy(update={"unsupported_sentences": "drop"}))


def _record_of(records: list[dict[str, Any]], words: str) -> dict[str, Any]:
    found = [r for r in records if words in r["sentence"]]
    assert found, f"no citation record for {words!r} in {[r['sentence'] for r in records]}"
    return found[0]


def _assert_record_shape(record: dict[str, Any]) -> None:
    assert set(record) >= {"sentence", "markers", "source_ids", "supported", "score", "evidence", "action"}


# ------------------------------------------------------------------------------------ 8: local


async def test_offline_local_answer_carries_checked_citations(stack: Stack) -> None:
    result = await answer_with_mode(stack, ORG, "Who employs Bob Cratchit?", "local")
    records = result["details"]["citations"]
    assert records, "the offline local answer was not checked"
    for record in records:
        _assert_record_shape(record)
    cited = [r for r in records if r["markers"]]
    assert cited and all(r["supported"] and r["action"] == "kept" for r in cited)  # quotes are supported
    ids = {s["id"] for s in result["sources"]}
    assert all(set(r["source_ids"]) <= ids for r in cited)


async def test_model_local_answer_marks_an_unsupported_sentence(stack: Stack) -> None:
    model = ScriptedGraphModel(
        local_answer=(f"Scrooge employs Bob Cratchit as his clerk for fifteen shillings [1]. {INVENTED} [1].")
    )
    result = await answer_with_mode(stack, ORG, "Who employs Bob Cratchit?", "local", model=model)
    records = result["details"]["citations"]
    invented = _record_of(records, "submarines")
    assert not invented["supported"] and invented["action"] == "marked"
    assert f"{INVENTED} [1].{UNSUPPORTED_MARK}" in result["answer"]
    assert _record_of(records, "fifteen shillings")["action"] == "kept"


async def test_model_local_answer_drops_an_unsupported_sentence_when_so_configured(dropping: Stack) -> None:
    model = ScriptedGraphModel(
        local_answer=f"Scrooge employs Bob Cratchit as his clerk for fifteen shillings [1]. {INVENTED} [1]."
    )
    result = await answer_with_mode(dropping, ORG, "Who employs Bob Cratchit?", "local", model=model)
    assert "submarines" not in result["answer"] and "fifteen shillings" in result["answer"]
    assert _record_of(result["details"]["citations"], "submarines")["action"] == "dropped"


# ----------------------------------------------------------------------------------- 8: global


async def test_offline_global_answer_carries_checked_citations(stack: Stack) -> None:
    result = await answer_with_mode(stack, ORG, OVERVIEW, "global")
    assert result["status"] == "completed"
    records = result["details"]["citations"]
    assert records and all(r["markers"] for r in records), "the offline global answer was not checked"
    assert all(r["supported"] and r["action"] == "kept" for r in records)  # quotes of its communities
    assert not any("Extractive overview" in r["sentence"] for r in records)  # the notice is no claim


def _global_model(reduce_answer: str) -> ScriptedGraphModel:
    return ScriptedGraphModel(
        map_reply=map_json("Scrooge is visited by Marley and the spirits.", 80),
        reduce_answer=reduce_answer,
    )


async def test_model_global_answer_flags_a_sentence_its_community_does_not_support(stack: Stack) -> None:
    model = _global_model(f"{REPORT_2} [Community ID: 2]. {INVENTED}. [Community ID: 2]")
    result = await answer_with_mode(stack, ORG, OVERVIEW, "global", model=model)
    records = result["details"]["citations"]
    invented = _record_of(records, "submarines")
    assert invented["markers"], "the community citation reached no source"
    assert not invented["supported"] and invented["action"] == "marked"
    assert UNSUPPORTED_MARK in result["answer"]
    # The community's report supports the first sentence, though no chunk says it in those words:
    # the check reads the report through the source's `support`, not the chunk alone.
    report = _record_of(records, "visited by Marley")
    assert report["supported"] and report["action"] == "kept"
    assert any(ev.get("via", {}).get("id") == "2" for ev in report["evidence"])


async def test_a_sentence_is_held_to_the_community_it_cites_only(stack: Stack) -> None:
    """Community 3 (the Cratchits) says nothing of Marley: citing it for community 2's report is
    flagged, even where one chunk stands for both communities."""
    model = _global_model(f"{REPORT_2} [Community ID: 3].")
    result = await answer_with_mode(stack, ORG, OVERVIEW, "global", model=model)
    record = _record_of(result["details"]["citations"], "visited by Marley")
    assert record["markers"] and not record["supported"] and record["action"] == "marked"


async def test_offline_global_check_is_real_not_a_pass_through(stack: Stack) -> None:
    """The extractive path's answer, one quote replaced by an invented sentence citing the same
    community: flagged."""
    from librarian.answers.checked import check_draft
    from librarian.answers.modes import global_answer

    result = await run_global(stack, ORG, OVERVIEW)
    lines = result["answer"].splitlines()
    quoted = next(i for i, line in enumerate(lines) if line.startswith('- "'))
    community = lines[quoted].rsplit("[Community ID:", 1)[1]
    lines[quoted] = f'- "{INVENTED}." [Community ID:{community}'
    tampered = {**result, "answer": "\n".join(lines)}
    draft = global_answer(tampered)
    answer, records = await check_draft(stack, draft, None)
    invented = _record_of(records, "submarines")
    assert invented["markers"] and not invented["supported"] and invented["action"] == "marked"
    untouched = [r for r in records if "submarines" not in r["sentence"]]
    assert all(r["supported"] for r in untouched)
    assert UNSUPPORTED_MARK in answer


# ------------------------------------------------------------------------ 9: score breakdowns


async def test_local_sources_carry_their_graph_channel_scores(stack: Stack) -> None:
    result = await answer_with_mode(stack, ORG, "Who employs Bob Cratchit?", "local")
    sources = result["sources"]
    assert sources
    graph = [s["scores"]["graph"] for s in sources]
    assert all(g["rrf"] > 0 for g in graph)
    assert [g["rrf"] for g in graph] == sorted((g["rrf"] for g in graph), reverse=True)  # the order
    top = graph[0]
    assert top["evidenceRank"] == 1 and top["vectorRank"] is not None
    assert top["entityMatch"] is not None and top["entityMatch"]["entity"] == "bob cratchit"
    # the semantic channel counts only close names (cosine >= 0.85, `match.MatchPrecision`), not this one
    assert "exact" in top["entityMatch"]["channels"]
    assert set(top["entityMatch"]["channels"]) <= {"exact", "alias", "fuzzy", "semantic", "intent"}
    assert any(g["keywordRank"] is not None for g in graph)
    assert any(g["claims"] > 0 and g["communityScore"] for g in graph)
    assert all(m["channels"] for m in result["details"]["matchedEntities"])


async def test_global_sources_carry_their_real_scores(stack: Stack) -> None:
    offline = await answer_with_mode(stack, ORG, OVERVIEW, "global")
    assert offline["sources"]
    for source in offline["sources"]:
        graph = source["scores"]["graph"]
        assert source["score"] > 0 and source["score"] == graph["usefulness"] / 100
        assert graph["communities"] and graph["communityRank"] >= 1
    assert any(s["scores"]["graph"]["quote"] for s in offline["sources"])
    model = _global_model(f"{REPORT_2} [Community ID: 2].")
    with_model = await answer_with_mode(stack, ORG, OVERVIEW, "global", model=model)
    assert with_model["sources"]
    assert all(s["score"] == 0.8 for s in with_model["sources"])  # the map step's usefulness 80
    assert all(s["scores"]["graph"]["communities"] == ["2"] for s in with_model["sources"])


def test_source_copy_leaves_the_search_result_alone() -> None:
    from librarian.graph.query.source_scores import GlobalGraphScores, with_graph_scores

    original: Any = {
        "id": "a",
        "score": 0.0,
        "scores": {"dense": None, "sparse": None, "fused": 0.0, "rerank": None},
    }
    graph = GlobalGraphScores(communities=["1"], usefulness=40, communityRank=1, quote=None)
    copy = with_graph_scores(original, graph, 0.4)
    assert copy["score"] == 0.4 and copy["scores"]["graph"] == graph
    assert original["score"] == 0.0 and "graph" not in original["scores"]


async def test_agent_graph_route_checks_global_citations_against_the_community(
    stack: Stack, openai_server: OpenAIWireServer
) -> None:
    """The agent's own check (its `VerifyCitations` middleware) reads the same `support`."""
    openai_server.chat_script += [
        ToolCallReply("graph_global_search", {"query": OVERVIEW}),
        TextReply(f"{REPORT_2} [1]. {INVENTED} [1]."),
    ]
    model = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    agent = build_agent(lambda: stack, model=model)
    state = await agent.ainvoke({"messages": [HumanMessage(OVERVIEW)]}, context={"organization_id": ORG})
    first = state["sources"][0]
    assert "2" in [s["id"] for s in first["support"]]  # source [1] stands for community 2
    assert REPORT_2 not in first["text"]
    records = state["citations"]
    assert _record_of(records, "visited by Marley")["supported"]
    assert _record_of(records, "submarines")["action"] == "marked"
