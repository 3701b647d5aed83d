"""Overview answers pick themes for breadth (`librarian.graph.query.global_breadth`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from librarian.graph.query.global_breadth import ThemeCandidate, chunk_position, is_overview, spread_themes
from librarian.graph.query.outline import follows, read_outline, section_at, section_sizes


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


# --- sections: every chapter first -----------------------------------------------------------------


def test_outline_reads_numbered_headings_and_skips_lists_and_toc_entries() -> None:
    texts = {
        0: "Contents\n1. Introduction ........ 2\n2. Mooring ........ 4",  # TOC: dot leaders
        1: "Front matter sentence about the manual and its authors here.",
        2: "Chapter 1. Introduction\n1.1. Purpose\nThis manual explains the port.",
        3: "## 2. Mooring\nSteps:\n1. Stop the engine now.\n2.1. Lines\nDouble the lines in gales.",
        4: "3. Pilotage\n2. A numbered list item that cannot go back a chapter",
    }
    outline = read_outline(texts)
    assert [h.number for h in outline] == [(1,), (1, 1), (2,), (2, 1), (3,)]
    assert section_at(outline, 1) == ()  # before chapter 1
    assert section_at(outline, 2, 0) == (1,)
    assert section_at(outline, 3, texts[3].index("Double")) == (2, 1)
    assert section_at(outline, 3, 0) == (2,)
    assert section_sizes(outline, 6, 1) == {(1,): 1, (2,): 1, (3,): 2}  # chunks 2, 3, 4-5


@given(st.lists(st.tuples(st.integers(1, 9), st.integers(0, 4)), max_size=30))
def test_outline_only_moves_forward(numbers: list[tuple[int, int]]) -> None:
    texts = {i: f"{a}.{b}. Some title\nbody" if b else f"{a}. Some title" for i, (a, b) in enumerate(numbers)}
    outline = read_outline(texts)
    found = [h.number for h in outline]
    assert found == sorted(found) and len(set(found)) == len(found)
    assert all(follows(a, b) for a, b in zip([(), *found], found, strict=False))


def _manual(chapter_chunks: dict[int, range], front: int = 3) -> list[ThemeCandidate]:
    """Candidates of a manual: a high-scoring front matter and chapters of the given chunk ranges,
    each chunk a theme of its own; chapter 3's quotes score best."""
    found = [ThemeCandidate(f"front {i}", 0.95, ("m", i)) for i in range(front)]
    for chapter, chunks in chapter_chunks.items():
        for i in chunks:
            score = 0.9 if chapter == 3 else 0.3 + i / 1000
            section = (chapter, 1 + (i - chunks.start) // 3)
            found.append(ThemeCandidate(f"c{chapter} {i}", score, ("m", i), section=section))
    return found


def test_every_chapter_is_quoted_before_front_matter_or_a_second_quote_of_a_long_chapter() -> None:
    # a short chapter 1 and a chapter 3 with half the manual: strata would quote the front matter and
    # chapter 3 several times and miss chapter 1
    chapters = {1: range(3, 5), 2: range(5, 12), 3: range(12, 60), 4: range(60, 64), 5: range(64, 70)}
    chosen = spread_themes(_manual(chapters), 7, {"m": 70})
    assert {c.section[0] for c in chosen if c.section} == {1, 2, 3, 4, 5}
    assert len(chosen) == 7 and [c.position for c in chosen] == sorted(c.position for c in chosen)
    firsts = {c.section[0]: c for c in chosen if c.section}
    assert firsts[3].score == 0.9  # each chapter quotes its best theme
    # the two slots after the chapters go to second-level sections not yet quoted, not front matter
    assert all(c.section for c in chosen)
    assert len({c.section[:2] for c in chosen}) == 7


def test_more_chapters_than_slots_quotes_the_largest() -> None:
    chapters = {n: range(10 * n, 10 * n + (8 if n in (2, 5, 7) else 2)) for n in range(1, 9)}
    chosen = spread_themes(
        _manual(chapters, front=0), 3, {"m": 100}, {"m": {(n,): len(r) for n, r in chapters.items()}}
    )
    assert [c.section[0] for c in chosen] == [2, 5, 7]


def test_a_theme_quotable_in_two_chapters_goes_to_the_one_with_no_other() -> None:
    shared = [
        ThemeCandidate("shared", 0.9, ("m", 1), section=(1,)),
        ThemeCandidate("shared", 0.9, ("m", 5), section=(2,)),
        ThemeCandidate("other", 0.2, ("m", 2), section=(1,)),
    ]
    chosen = spread_themes(shared, 2, {"m": 8})
    assert {(c.theme, c.section) for c in chosen} == {("shared", (2,)), ("other", (1,))}


def test_a_document_without_headings_keeps_the_positional_strata() -> None:
    plain = [ThemeCandidate(f"p{i}", 0.1 * (i % 3), ("plain", i)) for i in range(30)]
    chosen = spread_themes(plain, 3, {"plain": 30})
    assert [c.position[1] // 10 for c in chosen if c.position] == [0, 1, 2]


@given(
    st.dictionaries(
        st.integers(0, 20), st.text(alphabet="1234567890.# \nChapterab/", max_size=80), max_size=8
    )
)
def test_outline_of_any_text_is_ordered_and_places_every_offset(texts: dict[int, str]) -> None:
    outline = read_outline(texts)
    assert [h.number for h in outline] == sorted({h.number for h in outline})
    for heading in outline:
        assert section_at(outline, heading.chunk, heading.offset) == heading.number
