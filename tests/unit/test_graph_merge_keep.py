"""The keep rule of the graph merge: which extracted names become entities (issue 27, round 3).

Before it, every named entity reached the graph: bold and backticked words ("**without**", "`False`")
and in-text citations ("Laudet & Hänni 2002") were nodes of the built graph.
"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from librarian.graph.merge import is_citation_name, merge_extractions


def ent(display: str, type_: str, chunks: tuple[str, ...] = ("c0",)) -> dict:
    return {
        "name": display,
        "display": display,
        "type": type_,
        "mentions": len(chunks),
        "chunks": list(chunks),
    }


def names(*entities: dict, relations: tuple[dict, ...] = ()) -> set[str]:
    payload = {"format": 1, "extractor": "t", "entities": list(entities), "relations": list(relations)}
    return {e.name for e in merge_extractions([("docs/a.md", payload)]).entities}


def test_a_stop_word_in_bold_or_backticks_is_dropped_but_a_capitalised_acronym_stays():
    kept = names(
        ent("without", "CODE"), ent("this", "CODE", ("c0", "c1")), ent("US", "GPE"), ent("mount", "CODE")
    )
    assert kept == {"us", "mount"}


def test_code_literals_are_values_not_entities():
    kept = names(ent("False", "CODE"), ent("None", "CODE"), ent("null", "IDENTIFIER"), ent("ls", "CODE"))
    assert kept == {"ls"}


def test_in_text_citations_are_dropped_and_real_names_with_an_ampersand_or_a_year_stay():
    kept = names(
        ent("Laudet & Hänni 2002", "ORG", ("c0", "c1")),  # a year: a citation wherever it is
        ent("Bruner & Berrett", "ORG"),  # one chunk, no year: a reference-list entry
        ent("Smith et al.", "PERSON", ("c0", "c2")),
        ent("Procter & Gamble", "ORG", ("c0", "c3")),  # named in two chunks: a firm
        ent("Windows 2000", "PRODUCT"),  # a year without "&": a product
        ent("Goudie", "PERSON"),  # a surname named once stays
        ent("a & b 2002", "PATH"),  # paths are never citations
    )
    assert kept == {"procter & gamble", "windows 2000", "goudie", "a & b 2002"}


def test_a_relation_to_a_dropped_name_makes_no_edge():
    payload = {
        "format": 1,
        "extractor": "t",
        "entities": [ent("Goudie", "PERSON"), ent("McHugh & de Kloet 1988", "ORG")],
        "relations": [{"source": "Goudie", "target": "McHugh & de Kloet 1988", "chunks": ["c0"]}],
    }
    graph = merge_extractions([("docs/a.md", payload)])
    assert [e.name for e in graph.entities] == ["goudie"]
    assert graph.edges == []


@given(st.text(max_size=40), st.integers(0, 5))
def test_without_an_ampersand_or_et_al_nothing_is_a_citation(key: str, chunks: int):
    assume("&" not in key and "et al" not in key)
    assert not is_citation_name(key, chunks)
