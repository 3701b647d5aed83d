"""Graph local, global and DRIFT search over an organization's published graph, as runs with sources.

The engines behind the agent's graph tools (`tools.graph_tools`), the offline agent's graph route
(`librarian.answers.modes`), `librarian ask --mode` and the web app's graph page. The organization is
a parameter, checked here; callers obtain it from trusted configuration. With a chat model configured
(LIBRARIAN_CHAT_MODEL) query parsing, the community filter, the global map/reduce and DRIFT's steps use
it; without one the offline paths run (rules, no filter, `OfflineMapper`, `OfflineDrift`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from librarian.chat_model import chat_model_from_settings
from librarian.costs.question import records_question_costs
from librarian.graph.query.drift_inputs import primer_reports
from librarian.graph.query.drift_llm import LLMDrift
from librarian.graph.query.drift_offline import OfflineDrift
from librarian.graph.query.drift_search import DriftCancelled, DriftOptions, drift_search
from librarian.graph.query.global_breadth import is_overview
from librarian.graph.query.global_citations import cited_chunks, cited_community_ids, quoted_chunk_scores
from librarian.graph.query.global_inputs import (
    claim_positions,
    live_inputs,
    load_communities,
    load_outlines,
    provenance_probes,
    with_community_support,
)
from librarian.graph.query.global_llm import LLMMapper, llm_reducer
from librarian.graph.query.global_offline import OfflineMapper, offline_reducer
from librarian.graph.query.global_search import GlobalOptions, global_search
from librarian.graph.query.liveness import Liveness
from librarian.graph.query.local_search import (
    LocalOptions,
    LocalSearchCancelled,
    chunk_source,
    local_search,
)
from librarian.graph.query.source_scores import global_scores
from librarian.retrieval.search import Source
from librarian.stack import Stack
from librarian.tenancy import validate_organization_id

NO_GRAPH = (
    "This organization has no knowledge graph yet (run `librarian graph build`); "
    "use search_documents instead."
)


def chat_model(stack: Stack) -> Any | None:
    """The configured chat model for parsing, filtering and map/reduce; None offline."""
    return chat_model_from_settings(stack.settings)


def make_reranker(stack: Stack) -> Any:
    from librarian.retrieval.rerankers import make_reranker as make  # lazy: rerankers load models

    return make(stack)


@records_question_costs
async def run_local(
    stack: Stack,
    organization_id: str,
    question: str,
    *,
    model: Any | None = None,
    options: LocalOptions | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    return dict(
        await local_search(
            stack,
            organization_id,
            question,
            options,
            model=model,
            reranker=await asyncio.to_thread(make_reranker, stack),
            should_stop=should_stop,
        )
    )


@records_question_costs
async def run_global(
    stack: Stack,
    organization_id: str,
    question: str,
    *,
    model: Any | None = None,
    options: GlobalOptions | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Global search in the organization's published graph; sources are the cited chunks.

    Each source carries its graph scores (`source_scores.global_scores`: the map usefulness of the
    communities it stands for is its `score`) and, under `support`, the report and claims of those
    communities as the map read them, so the citation check can hold a sentence citing a community
    to what that community says (`librarian.answers.source_support`).
    """
    org = validate_organization_id(organization_id)
    options = options or GlobalOptions()
    graph = await asyncio.to_thread(lambda: stack.graph_store.scope(org))  # may open files: off the loop
    published = await asyncio.to_thread(graph.published_version)
    if published is None:
        return {"status": "no_graph", "answer": NO_GRAPH, "sources": [], "communities": [], "batches": []}
    version = published.version
    inputs = await asyncio.to_thread(load_communities, graph, published, options.level)
    # Only what the index still holds (`librarian.graph.query.liveness`): one probe per document the
    # communities draw on; then the cited chunks themselves, so a citation never points at a deleted
    # document.
    liveness = await asyncio.to_thread(Liveness.of, stack, org, graph, version)
    inputs = live_inputs(inputs, await asyncio.to_thread(liveness.paths, provenance_probes(inputs)))
    if model is None:
        dense = await asyncio.to_thread(lambda: stack.dense)  # loading the model reads files
        mapper: Any = OfflineMapper(dense.embed_query, dense.embed_documents)
        # overviews spread over documents and their sections (`global_breadth`)
        overview = is_overview(question)
        outlines = await asyncio.to_thread(load_outlines, graph, version, inputs) if overview else None
        reducer = offline_reducer(positions=claim_positions(inputs), outlines=outlines)
    else:
        mapper, reducer = LLMMapper(model), llm_reducer(model)
    result = await global_search(question, inputs, mapper, reducer, options, should_stop=should_stop)
    pairs = cited_chunks(result, inputs)
    cited = await asyncio.to_thread(liveness.chunks, [c for _, c in pairs])
    pairs = [(community_id, chunk_id) for community_id, chunk_id in pairs if chunk_id in cited]
    chunks = await asyncio.to_thread(graph.chunks, [c for _, c in pairs], version=version)
    by_id = {c.chunk_id: c for c in chunks}
    sources: list[Source] = []
    community_of: dict[str, list[str]] = {}
    for community_id, chunk_id in pairs:
        if chunk_id in by_id and chunk_id not in community_of:
            sources.append(chunk_source(by_id[chunk_id], 0.0))
        if chunk_id in by_id:
            community_of.setdefault(chunk_id, []).append(community_id)
    cited_order = cited_community_ids(result.answer) or result.cited_communities
    sources = global_scores(
        sources, community_of, result.selected, cited_order, quoted_chunk_scores(result, inputs)
    )
    sources = await asyncio.to_thread(  # counts tokens: off the event loop
        with_community_support, sources, community_of, inputs, options.augment_budget
    )
    return {
        "status": result.status,
        "answer": result.answer,
        "version": version,
        "level": result.level,
        "failedMapBatches": result.failed_batches,
        "communities": result.communities,
        "citedCommunities": result.cited_communities,
        "selectedMapAnswers": [
            {"answer": a.answer, "usefulness": a.usefulness, "communityIds": a.community_ids}
            for a in result.selected
        ],
        "batches": [{"communityIds": b.community_ids, "tokens": b.tokens} for b in result.batches],
        "mapBudget": options.map_budget - options.map_reserve,
        "sources": sources,
        "sourceCommunities": community_of,
    }


NO_DRIFT_RESULTS = "The follow-up searches found no evidence that answers this question."


@records_question_costs
async def run_drift(
    stack: Stack,
    organization_id: str,
    question: str,
    *,
    model: Any | None = None,
    options: DriftOptions | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """DRIFT search (`librarian.graph.query.drift_search`) in the organization's published graph.

    The primer reads the live leaf communities closest to the question; each follow-up is a
    `run_local` with the same model and stop check; `sources` are the evidence the answer cites as
    `[n]`. Raises `DriftCancelled` (code `cancelled`) when `should_stop` turns true: no further step,
    local search or model call starts.
    """
    org = validate_organization_id(organization_id)
    question = question.strip()
    if not question:
        raise ValueError("the question is empty")
    options = options or DriftOptions.from_settings(stack.settings)
    graph = await asyncio.to_thread(lambda: stack.graph_store.scope(org))
    published = await asyncio.to_thread(graph.published_version)
    if published is None:
        return {"status": "no_graph", "answer": NO_GRAPH, "sources": [], "primer": None, "followUps": []}
    dense = await asyncio.to_thread(lambda: stack.dense)  # loading the model reads files
    reports = await primer_reports(stack, org, graph, published, question, dense, options.primer_k)
    engine: Any = (
        OfflineDrift(dense.embed_query, dense.embed_documents)
        if model is None
        else LLMDrift(model, followups=options.followups)
    )

    async def local(followup: str) -> dict[str, Any]:
        try:
            return await run_local(stack, org, followup, model=model, should_stop=should_stop)
        except LocalSearchCancelled as exc:
            raise DriftCancelled("the DRIFT search was cancelled") from exc

    result = await drift_search(question, reports, local, engine, options, should_stop=should_stop)
    status = "completed" if result.answer else "no_results"
    return {
        "status": status,
        "answer": result.answer or NO_DRIFT_RESULTS,
        "version": published.version,
        "primer": {
            "answer": result.primer.answer,
            "confidence": result.primer.confidence,
            "communityIds": result.primer.community_ids,
        },
        "communities": [{"id": r.id, "title": r.title, "score": round(r.score, 4)} for r in reports],
        "followUps": [
            {
                "question": step.question,
                "depth": step.depth,
                "score": round(step.score, 4),
                "answer": step.answer,
                "helpfulness": step.helpfulness,
                "sourceIds": [s["id"] for s in step.sources],
            }
            for step in result.steps
        ],
        "options": {"primerK": options.primer_k, "followUps": options.followups, "depth": options.depth},
        "sources": result.sources if result.answer else [],
    }
