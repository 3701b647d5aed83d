"""Local retrieval over the real SQLite graph store with H3's hand-made fixture graph.

Expectations are computed by hand in the comments (GRAPHRAG-NOTES.md defaults). The fixture's
vectors are unit axes, so the query embedder here returns an axis too: cosines are exactly 0 or 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from librarian.errors import ContractMismatchError, TenantError
from librarian.graph.model import Community, Edge
from librarian.graph.query.local_ranking import (
    bridge_entities,
    climb_to_level,
    edge_weight_sum,
    keyword_terms,
    merge_chunk_ids,
    rank_communities,
    topology_candidates,
)
from librarian.graph.query.local_search import LocalOptions, local_search
from librarian.graph.query.match import MatchedEntity
from librarian.graph.query.parse import ParsedQuery
from librarian.stack import Stack
from tests.graph_fixtures import axis
from tests.graph_vectors import two_org_fixture_stack


@pytest.fixture
def stack(tmp_path: Path) -> Stack:
    return two_org_fixture_stack(tmp_path / "data")


def scrooge_axis(text: str) -> list[float]:
    return axis(3).tolist()  # the fixture's axis of names containing "scrooge"


# ---------------------------------------------------------------------------------- pure parity


def test_climb_to_level_walks_parents_and_drops_branches_without_that_level() -> None:
    # 1 (L0) ─ 2 (L1) ─ 4 (L2) ; 1 ─ 3 (L1, leaf)
    parent = {1: None, 2: 1, 3: 1, 4: 2}
    level = {1: 0, 2: 1, 3: 1, 4: 2}
    assert climb_to_level([4, 3], parent, level, 1) == [2, 3]
    assert climb_to_level([4, 3], parent, level, 0) == [1]
    assert climb_to_level([4, 3], parent, level, 2) == [4]  # 3 has no descendant... nor ancestor at L2


def test_topology_takes_the_finest_community_of_each_reached_entity() -> None:
    communities = {
        1: Community(1, 0, None, ["a", "b", "c"], [2, 3], False),
        2: Community(2, 1, 1, ["a", "b"], [4], False),
        3: Community(3, 1, 1, ["c"]),
        4: Community(4, 2, 2, ["a"]),
    }
    memberships = {"a": [1, 2, 4], "b": [1, 2], "c": [1, 3]}
    assert topology_candidates(["a", "b", "c"], memberships, communities, None) == [2, 3, 4]
    assert topology_candidates(["a", "b", "c"], memberships, communities, 0) == [1]
    assert topology_candidates(["a"], memberships, communities, 1) == [2]


def test_merge_keeps_vector_order_first_dedupes_and_caps() -> None:
    vector = [f"v{i}" for i in range(12)]
    keyword = ["k0", "v3", "k1", *[f"k{i}" for i in range(2, 40)]]
    merged = merge_chunk_ids(vector, keyword, 40)
    assert merged[:12] == vector and merged[12:14] == ["k0", "k1"]  # v3 not repeated
    assert len(merged) == 40 and len(set(merged)) == 40


def test_keyword_terms_order_and_cap() -> None:
    parsed = ParsedQuery(entities=["Intent"], keywords=["kw1", "kw2"])
    matched = [
        MatchedEntity("f", "Fuzzy One", "fuzzy", 0.1),
        MatchedEntity("e", "Exact One", "exact", 0.2),
        MatchedEntity("a", "Alias One", "alias", 0.2),
    ]
    assert keyword_terms(parsed, matched) == ["Intent", "Exact One", "Alias One", "kw1", "kw2", "Fuzzy One"]
    many = ParsedQuery(keywords=[f"t{i}" for i in range(30)])
    assert len(keyword_terms(many, [])) == 16


def test_three_list_ranking_by_hand() -> None:
    members = {10: ["x", "y"], 20: ["z"], 30: ["w"]}
    edges = [Edge("x", "y", "r", 2.0), Edge("w", "x", "r", 5.0)]
    # Jaccard({x}, ·): 10 → 1/2, 20 → 0, 30 → 0              → overlap   [10, 20, 30]
    # edge sums from x: 10 → x–y 2; 20 → 0; 30 → w–x 5        → structure [30, 10, 20]
    # semantic ranking given: [20, 10]
    assert edge_weight_sum(["x"], members[30], edges) == 5.0
    ranked = rank_communities([10, 20, 30], members, ["x"], edges, [20, 10], top_k=2)
    # 10: 1/82 + 1/81 + 1/82; 20: 1/81 + 1/82 + 1/83; 30: 1/83 + 1/81
    assert [c for c, _ in ranked] == [10, 20]
    assert ranked[0][1] == pytest.approx(1 / 82 + 1 / 81 + 1 / 82)
    # both ends matched and members: the reference's query × member loop counts the edge twice
    assert edge_weight_sum(["x", "y"], ["x", "y"], edges) == 4.0


def test_bridge_entities_are_specific_names_that_lead_elsewhere() -> None:
    chunk_entities = {
        "c0": ["film", "actress", "query ent", "american", "only here"],
        "c1": ["director", "plot"],
    }
    frequency = {"film": 3, "actress": 3, "director": 2, "american": 300, "only here": 1, "plot": 5}
    types = {"plot": "NOUN_PHRASE"}
    got = bridge_entities(["c0", "c1"], chunk_entities, {"query ent"}, frequency, types)
    # fewest documents first; ties by first chunk rank, then key; a name in one document only leads
    # nowhere, a noun phrase is not a name, the question's own entity is not a bridge
    assert got == ["director", "actress", "film", "american"]


# --------------------------------------------------------------------------- over the real store


async def test_local_search_by_hand_on_the_fixture(stack: Stack) -> None:
    result = await local_search(stack, "org-a", "What did Marley tell Mr. Scrooge?", embed_query=scrooge_axis)
    assert result["status"] == "completed"
    matched = {m["name"]: m for m in result["matchedEntities"]}
    # scrooge: alias (key "scrooge"), semantic (axis 3): rank 0 in each; fuzzy no longer counts one
    # word of the two-word "Ebenezer Scrooge" (issue 27's precision; the reference gave 3 / 81)
    assert matched["scrooge"]["score"] == pytest.approx(2 / 81)
    # marley: alias rank 1 (fuzzy: "Marley" is one word of "Jacob Marley"; the reference gave 2 / 82)
    assert matched["marley"]["score"] == pytest.approx(1 / 82)
    assert set(matched) == {"scrooge", "marley"}
    # topology → leaves {2, 3}; semantic (all cosines 0, stable) → [1, 2, 3]; candidates [2, 3, 1]
    # overlap [2, 1, 3]; structure: c1 = 10, c2 = 7, c3 = 3 → [1, 2, 3]
    # RRF: c1 = 2/81 + 1/82 > c2 = 1/81 + 2/82 > c3 = 3/83
    ids = [c["id"] for c in result["communities"]]
    assert ids == [1, 2, 3]
    assert result["communities"][0]["score"] == pytest.approx(2 / 81 + 1 / 82)
    assert all(c["summary"].startswith("A: ") for c in result["communities"])  # never org-b's
    claims = [e for e in result["evidence"] if e["kind"] == "claim"]
    assert [c["subject"] for c in claims][-1] == "bob cratchit"  # matched entities' claims first
    assert len(claims) == 4
    # every evidence item resolves to a source with path, page and bbox
    by_id = {s["id"]: s for s in result["sources"]}
    for item in result["evidence"]:
        source = by_id[item["sourceId"]]
        assert source["path"].startswith("docs/carol-") and source["page"] >= 1 and source["bbox"]
    assert by_id["docs/carol-a.txt:1"]["page"] == 2  # chunk index 1 → page 2 in the fixture
    assert "[Community summaries]" in result["relevantContext"] and "[Evidence]" in result["relevantContext"]


async def test_requested_level_climbs_to_the_root(stack: Stack) -> None:
    result = await local_search(
        stack, "org-a", "What did Marley tell Mr. Scrooge?", LocalOptions(level=0), embed_query=scrooge_axis
    )
    assert [c["id"] for c in result["communities"]] == [1]  # topology [1]; semantic at level 0: [1]


async def test_no_graph_and_bad_organization(stack: Stack) -> None:
    empty = await local_search(stack, "org-c", "Who is Scrooge?", embed_query=scrooge_axis)
    assert empty["status"] == "no_graph" and empty["sources"] == []
    with pytest.raises(TenantError):
        await local_search(stack, "", "Who is Scrooge?", embed_query=scrooge_axis)


async def test_query_vectors_of_another_model_are_refused(stack: Stack) -> None:
    with pytest.raises(ContractMismatchError):
        await local_search(stack, "org-a", "Who is Scrooge?", embed_query=lambda q: np.ones(5).tolist())


async def test_cancel_flag_stops_before_the_next_stage(stack: Stack) -> None:
    from librarian.graph.query.local_search import LocalSearchCancelled

    with pytest.raises(LocalSearchCancelled):
        await local_search(
            stack, "org-a", "Who is Scrooge?", embed_query=scrooge_axis, should_stop=lambda: True
        )
