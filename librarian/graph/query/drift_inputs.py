"""What DRIFT's primer reads: the live leaf communities closest to the question, as `Report`s.

The communities are global search's inputs (`global_inputs.load_communities`: summary plus the
members' claims, read once per published version), kept only while a document they draw on is
still in the index (`live_inputs`), so a deleted document's report is never the primer's. They are
ranked by the cosine of the question to their stored summary embedding (the dense model's space,
checked like local search's); a community stored without one is embedded on the spot. Each report
lists its members by display name, most connected first: the offline primer's follow-ups.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from librarian.graph.query.drift_search import Report
from librarian.graph.query.global_inputs import live_inputs, load_communities, provenance_probes
from librarian.graph.query.liveness import Liveness
from librarian.graph.query.snapshot import check_dimension
from librarian.stack import Stack


def _unit(vector: Any) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / (np.linalg.norm(v) or 1.0)


def rank_reports(
    question_vector: np.ndarray, ids: list[str], vectors: dict[str, np.ndarray], k: int
) -> list[tuple[str, float]]:
    """The `k` ids with the highest cosine to the question (ties keep `ids`' order)."""
    scored = [(cid, float(vectors[cid] @ question_vector)) for cid in ids if cid in vectors]
    scored.sort(key=lambda item: -item[1])  # stable: ties keep the given order
    return scored[:k]


async def primer_reports(
    stack: Stack, org: str, graph: Any, published: Any, question: str, dense: Any, k: int
) -> list[Report]:
    """The top `k` live leaf communities for `question`, best first."""
    version = published.version
    inputs = await asyncio.to_thread(load_communities, graph, published, None)
    liveness = await asyncio.to_thread(Liveness.of, stack, org, graph, version)
    inputs = live_inputs(inputs, await asyncio.to_thread(liveness.paths, provenance_probes(inputs)))
    if not inputs:
        return []
    question_vector = _unit(await asyncio.to_thread(dense.embed_query, question))
    stored_ids, matrix = await asyncio.to_thread(graph.summary_embeddings, version=version)
    check_dimension(matrix, question_vector, published.embedding_model)
    vectors = {str(cid): _unit(matrix[i]) for i, cid in enumerate(stored_ids)}
    missing = [c for c in inputs if c.id not in vectors]
    if missing:
        texts = [f"{c.title}\n{c.summary}".strip() for c in missing]
        embedded = await asyncio.to_thread(dense.embed_documents, texts)
        vectors.update({c.id: _unit(v) for c, v in zip(missing, embedded, strict=True)})
    ranked = rank_reports(question_vector, [c.id for c in inputs], vectors, k)
    by_id = {c.id: c for c in inputs}
    members = await asyncio.to_thread(_members, graph, version, [int(cid) for cid, _ in ranked])
    return [
        Report(
            cid,
            by_id[cid].title,
            by_id[cid].summary,
            [claim.text for claim in by_id[cid].claims],
            score,
            members.get(int(cid), []),
        )
        for cid, score in ranked
    ]


def _members(graph: Any, version: int, ids: list[int]) -> dict[int, list[str]]:
    """Display names of each community's members, highest degree (then mentions) first."""
    if not ids:
        return {}
    communities = graph.communities(ids=ids, version=version)
    keys = sorted({m for c in communities for m in c.members})
    entities = {e.name: e for e in graph.entities(keys, version=version)}
    out: dict[int, list[str]] = {}
    for community in communities:
        found = [entities[m] for m in community.members if m in entities]
        found.sort(key=lambda e: (-e.degree, -e.mentions, e.name))
        out[community.id] = [e.display_name or e.name for e in found]
    return out
