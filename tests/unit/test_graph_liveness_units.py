"""The pure parts of graph liveness: which communities global search may read and what they cite.

The index side (`librarian.graph.query.liveness.Liveness`) runs against real documents in
`tests/integration/test_graph_liveness.py`; here the decisions taken from its answer are checked by hand.
"""

from __future__ import annotations

from librarian.graph.query.global_citations import cited_chunks
from librarian.graph.query.global_inputs import ClaimText, CommunityInput, live_inputs, provenance_probes
from librarian.graph.query.global_search import GlobalResult, MapAnswer

A, B = "docs/a.txt", "docs/b.txt"


def inputs() -> list[CommunityInput]:
    return [
        CommunityInput(
            "1",
            1,
            "Mixed",
            "Drawn from both documents.",
            [ClaimText("A says so.", f"{A}:0", A), ClaimText("B says so.", f"{B}:3", B)],
            {A: f"{A}:0", B: f"{B}:3"},
        ),
        CommunityInput(
            "2", 1, "Only B", "Drawn from B alone.", [ClaimText("B too.", f"{B}:1", B)], {B: f"{B}:1"}
        ),
        CommunityInput("3", 1, "Entities only", "Members named in A, no claim.", [], {A: f"{A}:2"}),
        CommunityInput("4", 1, "No provenance", "Nothing recorded.", [], {}),
    ]


def test_probes_take_one_chunk_per_document() -> None:
    assert provenance_probes(inputs()) == {A: f"{A}:0", B: f"{B}:3"}


def test_a_gone_document_takes_its_claims_and_its_only_communities_with_it() -> None:
    kept = live_inputs(inputs(), {A})
    assert [c.id for c in kept] == ["1", "3"]  # 2 drew on B alone; 4 on nothing known
    mixed = kept[0]
    assert [cl.text for cl in mixed.claims] == ["A says so."] and mixed.provenance == {A: f"{A}:0"}
    assert inputs()[0].claims[1].path == B  # the cached inputs themselves are not changed
    assert live_inputs(inputs(), set()) == []


def test_a_cited_community_without_live_claims_cites_its_provenance_chunk() -> None:
    kept = live_inputs(inputs(), {A})
    answer = "Summary [Community ID: 3]. Mixed [Community ID: 1]. Invented [Community ID: 2]."
    result = GlobalResult(
        "q", "completed", answer, None, [MapAnswer(answer, 50, ["1", "3"])], 0, [], ["1", "3"]
    )
    assert cited_chunks(result, kept) == [("3", f"{A}:2"), ("1", f"{A}:0")]  # 2 was left out: no citation
