"""The name rule of the graph merge: an entity's key is `normalize_name(display_name)`, variants are aliases.

A page that only has a display name (community members) or an alias must reach the same entity as one
that has the key; before this rule 305 of 1,916 FHS entities had a display that did not normalise to
their key ("7.3.1 Loading data" → "7.3.1 loading datum"), and their member buttons answered 404.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from librarian.graph.merge import (
    is_citation_name,
    merge_extractions,
    names_nothing,
    plural_fold,
    singular_candidates,
)
from librarian.graph.model import normalize_name


def ent(name, display=None, type_="CONCEPT", mentions=1, chunks=("c0",), **extra):
    return {
        "name": name,
        "display": display or name,
        "type": type_,
        "mentions": mentions,
        "chunks": list(chunks),
        **extra,
    }


def doc(entities, relations=(), claims=()):
    return {
        "format": 1,
        "extractor": "t",
        "entities": list(entities),
        "relations": list(relations),
        "claims": list(claims),
    }


def merged_one(*entities, relations=(), claims=()):
    return merge_extractions([("docs/a.md", doc(entities, relations, claims))])


def test_a_lemma_key_from_an_older_payload_is_replaced_by_the_display_key():
    merged = merged_one(
        ent("7.3.1 loading datum", "7.3.1 Loading data", mentions=2),
        ent("docling", "Docling", type_="ORG", mentions=3),
        relations=[{"source": "7.3.1 loading datum", "target": "docling", "relation": "uses", "weight": 1}],
        claims=[{"subject": "7.3.1 loading datum", "object": None, "description": "Load it.", "chunk": "c0"}],
    )
    by_name = {e.name: e for e in merged.entities}
    assert by_name["7.3.1 loading data"].display_name == "7.3.1 Loading data"
    # what the payload's relations and claims call it still lands on the entity
    assert [(e.source, e.target) for e in merged.edges] == [("7.3.1 loading data", "docling")]
    assert [c.subject for c in merged.claims] == ["7.3.1 loading data"]
    assert merged.aliases["7.3.1 loading datum"] == "7.3.1 loading data"


def test_plural_and_singular_merge_under_the_most_frequent_spelling():
    merged = merged_one(
        ent("absolute paths", "absolute paths", mentions=3),
        ent("absolute path", "Absolute path", mentions=1),
        ent("spirit", "Spirits", mentions=1),  # an old lemma key: grouped by what the extractor filed
        ent("spirit", "spirit", mentions=2),
    )
    by_name = {e.name: e for e in merged.entities}
    assert set(by_name) == {"absolute paths", "spirit"}
    assert by_name["absolute paths"].display_name == "absolute paths"
    assert by_name["absolute paths"].aliases == ["absolute path"]
    assert by_name["absolute paths"].mentions == 4
    assert by_name["spirit"].aliases == ["spirits"]


def test_a_lone_plural_gets_its_singular_as_alias_and_persons_are_never_folded():
    merged = merged_one(
        ent("policies", "Policies", mentions=2),
        ent("jones", "Jones", type_="PERSON"),
        ent("jone", "Jone", type_="PERSON"),
        ent("caches", "caches", mentions=2),
    )
    by_name = {e.name: e for e in merged.entities}
    assert set(by_name) == {"policies", "jones", "jone", "caches"}
    assert by_name["policies"].aliases == ["policy"]
    assert by_name["jones"].aliases == [] and by_name["caches"].aliases == []


def test_an_extractor_variant_hint_groups_spellings_the_plural_rule_cannot():
    merged = merged_one(
        ent("criteria", "criteria", mentions=2, variant="criterion"),
        ent("criterion", "Criterion", mentions=1),
    )
    assert [(e.name, e.display_name, e.aliases) for e in merged.entities] == [
        ("criteria", "criteria", ["criterion"])
    ]


def test_a_titled_name_alone_keeps_its_title_in_the_key_and_the_bare_name_as_alias():
    merged = merged_one(
        ent("mr. scrooge", "Mr. Scrooge", type_="PERSON"), ent("marley's", "Marley's", type_="PERSON")
    )
    assert [(e.name, e.display_name, e.aliases) for e in merged.entities] == [
        ("marley", "Marley", []),
        ("mr. scrooge", "Mr. Scrooge", ["scrooge"]),
    ]


def test_singular_candidates_and_plural_fold():
    assert singular_candidates("caches") == ["cach", "cache"]
    assert singular_candidates("status") == [] and singular_candidates("analysis") == []
    assert plural_fold("absolute paths") == "absolute path"
    assert plural_fold("boxes") == "box" and plural_fold("caches") == "caches"
    assert plural_fold("children") == "child"


# --- property: the rule holds for any mix of spellings ----------------------------------------------

WORDS = [
    "path",
    "paths",
    "Scrooge",
    "scrooge's",
    "Mr.",
    "policy",
    "policies",
    "data",
    "7.3.1",
    "box",
    "boxes",
]
TYPES = ["PERSON", "ORG", "CONCEPT", "NOUN_PHRASE"]
surface = st.lists(st.sampled_from(WORDS) | st.text(min_size=1, max_size=6), min_size=1, max_size=3).map(
    " ".join
)
record = st.builds(
    lambda display, lemma, type_, mentions: ent(
        normalize_name(display) if not lemma else normalize_name(display) + " datum", display, type_, mentions
    ),
    surface,
    st.booleans(),
    st.sampled_from(TYPES),
    st.integers(min_value=1, max_value=5),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(record, max_size=6), min_size=1, max_size=3))
def test_every_entity_key_is_its_display_normalised_and_every_spelling_resolves(docs):
    merged = merge_extractions([(f"docs/{i}.md", doc(es)) for i, es in enumerate(docs)])
    names = {e.name for e in merged.entities}
    assert len(names) == len(merged.entities)
    for entity in merged.entities:
        assert entity.name and normalize_name(entity.display_name) == entity.name
        assert normalize_name(entity.name) == entity.name  # keys are fixed points
        assert not set(entity.aliases) & names  # an alias never shadows another key
        for alias in entity.aliases:
            assert merged.aliases.get(alias, alias) in names

    def resolve(key: str) -> str | None:
        return key if key in names else merged.aliases.get(key)

    for es in docs:
        for r in es:
            key = normalize_name(r["display"]) or normalize_name(r["name"])
            if not key or r["type"] == "NOUN_PHRASE" or names_nothing(key, key) or is_citation_name(key, 1):
                continue  # noun phrases, stop words, literals and citations may be dropped (keep rule)
            assert resolve(key) in names, key
            assert resolve(normalize_name(r["name"])) in names, r["name"]
