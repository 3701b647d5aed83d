"""Overview answers pick themes for breadth (`librarian.graph.query.global_breadth`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from librarian.graph.query.global_breadth import ThemeCandidate, chunk_position, is_overview, spread_themes


def test_overview_cues_come_from_the_query_parser() -> None:
    assert is_overview("What are the main topics of this library?")
    assert is_overview("Give me an overview of the manuals")
    assert not is_overview("Where do mail spools live?")


def test_chunk_position_reads_the_vector_record_id() -> None:
    assert chunk_position("docs/a:b.html:12", "docs/a:b.html") == ("docs/a:b.html", 12)
    assert chunk_position("no-index", "x") is None


def test_quotes_bunched_by_score_are_spread_over_the_document() -> None:
    # the best-scored quotes all sit in chunks 70-79 of a 100-chunk manual: similarity would quote
    # only them; breadth takes one per tenth of the document
    bunched = [ThemeCandidate(f"share {i}", 0.9, ("m.pdf", 70 + i)) for i in range(10)]
    spread = [ThemeCandidate(f"part {i}", 0.2, ("m.pdf", 10 * i + 5)) for i in range(10) if i != 7]
    chosen = spread_themes(bunched + spread, 10, {"m.pdf": 100})
    assert [c.position[1] // 10 for c in chosen if c.position] == list(range(10))
    assert next(c for c in chosen if c.position and c.position[1] // 10 == 7).score == 0.9


def test_every_document_gets_a_slot_before_a_long_one_gets_more() -> None:
    candidates = [ThemeCandidate(f"long {i}", 0.9, ("long", i)) for i in range(100)]
    candidates.append(ThemeCandidate("short", 0.1, ("short", 0)))
    chosen = spread_themes(candidates, 4, {"long": 100, "short": 1})
    assert "short" in {c.theme for c in chosen} and len(chosen) == 4


positions = st.one_of(st.none(), st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 50)))
candidates = st.lists(
    st.builds(ThemeCandidate, st.sampled_from([f"t{i}" for i in range(8)]), st.floats(0, 1), positions),
    max_size=40,
)


@given(candidates, st.integers(0, 12))
def test_spread_picks_distinct_themes_up_to_the_slots(found: list[ThemeCandidate], slots: int) -> None:
    chosen = spread_themes(found, slots)
    themes = [c.theme for c in chosen]
    assert len(themes) == len(set(themes)) == min(slots, len({c.theme for c in found}))
    assert all(c in found for c in chosen)
    placed = [c.position for c in chosen if c.position is not None]
    assert placed == sorted(placed)  # reading order
