"""Readable themes (issue 27): layout debris is never quoted, titles name a section, summaries are
the documents' own sentences, each traceable to its chunk. Plain text and the real tokenizer only."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from librarian.graph.model import Claim, Community, Edge, Entity
from librarian.graph.query.global_offline import part_units
from librarian.graph.summarize import CommunityContext, LocalSummarizer, heading_of, summary_citations
from librarian.text.debris import clean_lines, drop_leading_headings, is_debris, is_readable_sentence

# Lines as the issue quotes them from the FHS build, and as parsers leave them
DEBRIS = [
    "Specific Options ........ 20",
    "4.7. /usr/libexec : Binaries run by other programs (optional) 20",
    "Chapter 3. The Root Filesystem 7",
    "3.3. Specific Options . . . . . . . . 12",
    "| account | Process accounting logs (optional) |",
    "| --- | --- |",
    "+------+------+",
    "1 2 3 4 5 6 7 8",
    "A.1 Something in an appendix 33",
]
PROSE = [
    "The /usr/libexec directory includes internal binaries that are not intended to be executed directly.",
    "Applications may use a single subdirectory under /usr/libexec.",
    "The total is 20",  # no section number: not a TOC entry
    "echo hi | grep h",  # one pipe is a shell example, not a table
]


def test_toc_leader_and_table_lines_are_debris_and_prose_is_not() -> None:
    assert [line for line in DEBRIS if not is_debris(line)] == []
    assert [line for line in PROSE if is_debris(line)] == []


def test_clean_lines_keeps_prose_lines_verbatim_and_in_order() -> None:
    text = "\n".join([DEBRIS[0], PROSE[0], DEBRIS[4], PROSE[1]])
    assert clean_lines(text) == f"{PROSE[0]}\n{PROSE[1]}"


def test_readable_sentences_reject_headings_fragments_lists_and_footnote_marks() -> None:
    assert is_readable_sentence(PROSE[0])
    rejected = [
        "7.3.1 Loading data",  # a heading
        "and test commands",  # a fragment
        "Editor backup files and state (optional) 5.8.4.1.",  # a heading run into the next number
        "Optional files for /sbin: - Static binaries: - ldconfig - sln - ssync are here.",
        "[30] Much of this data originally lived in /usr or /usr/lib for years.",  # reads as a citation
        "6 related entities centred on Docling, PDF and HTML ........ 4",
        " ".join(["word"] * 80) + ".",  # run-together layout
    ]
    assert [s for s in rejected if is_readable_sentence(s)] == []


def test_leading_headings_are_dropped_and_the_rest_stays_verbatim() -> None:
    claim = "Specific Options\n\nThe following directories, or symbolic links to directories, are required."
    assert (
        drop_leading_headings(claim)
        == "The following directories, or symbolic links to directories, are required."
    )
    assert drop_leading_headings(PROSE[0]) == PROSE[0]  # one line: nothing to drop


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_predicates_never_raise_and_cleaning_only_removes_whole_lines(text: str) -> None:
    cleaned = clean_lines(text)
    kept = cleaned.split("\n") if cleaned else []
    assert all(line in text.splitlines() for line in kept)
    assert not any(is_debris(line) for line in kept)
    if is_readable_sentence(text):
        assert not is_debris(text)
    assert text.endswith(drop_leading_headings(text))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(DEBRIS), min_size=1, max_size=4),
    st.lists(st.sampled_from(PROSE[:2]), min_size=1, max_size=3),
)
def test_a_mix_of_debris_and_prose_cleans_to_the_prose(debris: list[str], prose: list[str]) -> None:
    mixed = [line for pair in zip(debris, prose, strict=False) for line in pair] + debris[len(prose) :]
    mixed += prose[len(debris) :]
    assert clean_lines("\n".join(mixed)).splitlines() == [line for line in mixed if line in prose]


# --- community titles and summaries ----------------------------------------------------------------

CHUNKS = {
    "fhs:0": "Table of Contents\n\n4.7. /usr/libexec : Binaries run by other programs 20\n"
    "Specific Options ........ 20",
    "fhs:1": "4.7. /usr/libexec : Binaries run by other programs (optional)\n\nPurpose\n\n"
    "`/usr/libexec` includes internal binaries that are not intended to be executed directly by users "
    "or shell scripts.",
    "fhs:2": "4.7.2. Purpose\n\nApplications may use a single subdirectory under `/usr/libexec`.",
    "fhs:3": "5.1. Purpose\n\nSomething else entirely happens in this section of the text.",
    "fhs:4": "3.1. Purpose\n\nAnd another section opens with the same generic heading here.",
}


def fhs_context() -> CommunityContext:
    members = ["libexec", "binaries", "applications", "options"]
    community = Community(1, 0, None, members)
    entities = {m: Entity(m, m) for m in members}
    edges = [Edge("binaries", "libexec", "include", 3.0), Edge("applications", "libexec", "use", 2.0)]
    claims = [
        Claim(
            "t1",
            "options",
            "libexec",
            "4.7. /usr/libexec : Binaries run by other programs 20",
            "fhs:0",
            "fhs",
        ),
        Claim("t2", "options", None, "Specific Options ........ 20", "fhs:0", "fhs"),
        Claim(
            "c1",
            "libexec",
            "binaries",
            "Purpose\n\n`/usr/libexec` includes internal binaries that are not intended to be executed "
            "directly by users or shell scripts.",
            "fhs:1",
            "fhs",
        ),
        Claim(
            "c2",
            "applications",
            "libexec",
            "Applications may use a single subdirectory under `/usr/libexec`.",
            "fhs:2",
            "fhs",
        ),
    ]
    return CommunityContext(community, entities, edges, claims, chunk_texts=CHUNKS)


def test_the_title_is_the_section_heading_and_the_summary_is_document_sentences_only() -> None:
    context = fhs_context()
    title, summary = LocalSummarizer().summarize(context)
    assert (
        title == "/usr/libexec : Binaries run by other programs (optional)"
    )  # not "libexec, binaries and ..."
    assert summary == (
        "`/usr/libexec` includes internal binaries that are not intended to be executed directly by users "
        "or shell scripts. Applications may use a single subdirectory under `/usr/libexec`."
    )
    assert not re.search(r"\.{5,}|\|", title + summary)
    assert "related entities" not in summary and "Purpose" not in summary
    # every sentence is cited to the chunk it was read from
    assert [chunk for _, chunk in summary_citations(summary, context.claims)] == ["fhs:1", "fhs:2"]


def test_a_generic_heading_repeated_by_every_section_is_not_a_title() -> None:
    context = fhs_context()
    context.chunk_texts = {k: v for k, v in CHUNKS.items() if k != "fhs:1"}  # only "Purpose" chunks left
    title, _summary = LocalSummarizer().summarize(context)
    assert title != "Purpose"
    assert title == "libexec and binaries"  # the most central members instead


def test_heading_of_reads_a_chunks_numbered_first_line_and_not_prose() -> None:
    assert heading_of(CHUNKS["fhs:1"]) == "/usr/libexec : Binaries run by other programs (optional)"
    assert heading_of("Applications may use a subdirectory.\nMore.") is None
    assert heading_of(CHUNKS["fhs:0"]) == "Table of Contents"


def test_offline_global_reads_only_quotable_claims_never_summary_lines() -> None:
    text = (
        "/usr/libexec\n6 related entities centred on Docling, PDF and HTML and what they are about.\n"
        "Evidence from its sources:\n- Specific Options ........ 20\n"
        "- `/usr/libexec` includes internal binaries that are not intended to be executed directly.\n"
        "- | a | b | c |"
    )
    units = part_units(text)
    assert units.title == "/usr/libexec"
    assert units.claims == [
        "`/usr/libexec` includes internal binaries that are not intended to be executed directly."
    ]
