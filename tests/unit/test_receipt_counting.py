"""How measured counts become a receipt's places: removed, pending until the next build, or nothing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from librarian.receipts.counting import GRAPH, IMMEDIATE, Footprint, pending, places, still_there
from librarian.receipts.model import NOTHING, PENDING, REMOVED

_counts = st.fixed_dictionaries({name: st.integers(0, 10_000) for name in {**IMMEDIATE, **GRAPH}})


@given(_counts, _counts)
def test_every_place_is_listed_with_its_measured_counts(
    before: dict[str, int], after: dict[str, int]
) -> None:
    found = {p.place: p for p in places(Footprint(before), Footprint(after))}
    assert set(found) == {*IMMEDIATE, *GRAPH, "answer_and_query_caches"}
    for name in {*IMMEDIATE, *GRAPH}:
        place = found[name]
        assert (place.before, place.after) == (before[name], after[name])
        assert place.removed == max(before[name] - after[name], 0)
        if before[name] == after[name] == 0:
            assert place.action == NOTHING
        elif name in GRAPH and after[name] > 0:
            assert place.action == PENDING  # the published graph keeps it until the next build
        else:
            assert place.action == REMOVED
    # an immediate place that still holds something is never hidden
    assert {p.place for p in still_there(list(found.values()))} == {n for n in IMMEDIATE if after[n] > 0}


@given(_counts)
def test_each_pending_place_names_the_build_that_removes_it(after: dict[str, int]) -> None:
    before = {name: count + 1 for name, count in after.items()}
    build = {"publishedVersion": 3, "scheduled": True, "runId": "r"}
    listed = pending(places(Footprint(before), Footprint(after)), build)
    assert {p["place"]: p["count"] for p in listed} == {n: after[n] for n in GRAPH if after[n] > 0}
    assert all(p["removedBy"] == build for p in listed)
