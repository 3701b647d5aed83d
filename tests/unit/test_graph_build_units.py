"""Units of the graph build with hand-computed expectations: names, merge + alias rule, provenance,
communities, fingerprints and the local summarizer / LLM summary context. No NLP model is loaded here."""

from __future__ import annotations

import random

from librarian.graph.communities import annotate, detect_communities, fingerprint, index_claims, index_edges
from librarian.graph.extract.local import NOUN_PHRASE, Word, mention_type
from librarian.graph.merge import fold_title, merge_extractions
from librarian.graph.model import (
    Claim,
    Community,
    Edge,
    Entity,
    Provenance,
    claim_id,
    edge_key,
    normalize_name,
    normalize_relation,
)
from librarian.graph.summarize import CommunityContext, LocalSummarizer, build_llm_context
from librarian.graph.tokens import count_tokens


def ent(name, display=None, type_="PERSON", mentions=1, chunks=("c0",), description=""):
    return {
        "name": name,
        "display": display or name.title(),
        "type": type_,
        "description": description,
        "mentions": mentions,
        "chunks": list(chunks),
    }


def rel(a, b, relation="related_to", weight=1.0, chunks=("c0",)):
    return {
        "source": a,
        "target": b,
        "relation": relation,
        "weight": weight,
        "description": "",
        "chunks": list(chunks),
    }


def claim(subject, obj, description, chunk="c0"):
    return {"subject": subject, "object": obj, "description": description, "chunk": chunk}


def payload(entities=(), relations=(), claims=()):
    return {
        "format": 1,
        "extractor": "t",
        "entities": list(entities),
        "relations": list(relations),
        "claims": list(claims),
        "stats": {},
    }


# --- names -----------------------------------------------------------------------------------------


def test_names_relations_edges_and_claim_ids_are_normalised():
    assert normalize_name("  Scrooge's ") == "scrooge"
    assert normalize_name("SCROOGE’s") == "scrooge"
    assert normalize_name('"Mr.  Scrooge,"') == "mr. scrooge"
    assert normalize_name("...") == ""
    assert normalize_relation("Works For") == "works_for"
    assert normalize_relation("  ") == "related_to"
    assert edge_key("marley", "bob") == ("bob", "marley") == edge_key("bob", "marley")
    assert claim_id("scrooge", " Scrooge is Mean. ") == claim_id("scrooge", "scrooge is mean.")
    assert claim_id("scrooge", "a") != claim_id("marley", "a")
    assert fold_title("mr. scrooge") == "scrooge" and fold_title("mrs. cratchit") == "mrs. cratchit"


# --- merge and the alias rule ----------------------------------------------------------------------


def test_scrooge_name_variants_merge_into_one_entity_with_aliases():
    merged = merge_extractions(
        [
            (
                "docs/a.txt",
                payload(
                    [
                        ent("scrooge", "Scrooge", mentions=5, chunks=["docs/a.txt:0"]),
                        ent("ebenezer scrooge", "Ebenezer Scrooge", mentions=1, chunks=["docs/a.txt:1"]),
                        ent("mr. scrooge", "Mr. Scrooge", mentions=2, chunks=["docs/a.txt:2"]),
                        ent("marley", "Marley", mentions=3, chunks=["docs/a.txt:0"]),
                    ],
                    [
                        rel("marley", "scrooge", "visit", 2.0, ["docs/a.txt:0"]),
                        rel("ebenezer scrooge", "scrooge", "related_to", 1.0, ["docs/a.txt:1"]),
                    ],
                    [claim("mr. scrooge", "marley", "Mr. Scrooge visits Marley.", "docs/a.txt:2")],
                ),
            )
        ]
    )
    names = [e.name for e in merged.entities]
    assert names == ["ebenezer scrooge", "marley"]
    scrooge = merged.entities[0]
    assert scrooge.aliases == ["mr. scrooge", "scrooge"]
    assert scrooge.display_name == "Ebenezer Scrooge"
    assert scrooge.mentions == 8
    assert [s.chunk_id for s in scrooge.sources] == ["docs/a.txt:0", "docs/a.txt:1", "docs/a.txt:2"]
    # the edge is re-keyed to the canonical name; the variant-to-variant "edge" became a self-loop and is gone
    assert [(e.source, e.target, e.relation, e.weight) for e in merged.edges] == [
        ("ebenezer scrooge", "marley", "visit", 2.0)
    ]
    assert [(c.subject, c.object) for c in merged.claims] == [("ebenezer scrooge", "marley")]
    assert merged.aliases["scrooge"] == merged.aliases["mr. scrooge"] == "ebenezer scrooge"


def test_ambiguous_surnames_and_mrs_stay_separate():
    merged = merge_extractions(
        [
            (
                "docs/a.txt",
                payload(
                    [
                        ent("bob cratchit", mentions=3),
                        ent("martha cratchit", mentions=2),
                        ent("cratchit", mentions=4),
                        ent("mrs. cratchit", mentions=2),
                        ent("bob", mentions=2),
                    ]
                ),
            )
        ]
    )
    by_name = {e.name: e for e in merged.entities}
    # 3 mentions is not twice the runner-up's 2: "cratchit" is ambiguous and stays its own entity
    assert set(by_name) == {"bob cratchit", "martha cratchit", "cratchit", "mrs. cratchit"}
    assert by_name["bob cratchit"].aliases == ["bob"]  # "bob" is the first word of one name only
    # a one-word name is never merged into a name under a kept title
    wives = merge_extractions(
        [("docs/a.txt", payload([ent("mrs. fezziwig", mentions=9), ent("mr. fezziwig"), ent("fezziwig")]))]
    )
    assert {e.name: e.aliases for e in wives.entities} == {"mrs. fezziwig": [], "fezziwig": ["mr. fezziwig"]}


def test_noun_phrases_named_once_are_noise_and_named_entities_are_kept():
    merged = merge_extractions(
        [
            (
                "docs/a.txt",
                payload([ent("counting-house", type_="NOUN_PHRASE"), ent("fred", type_="PERSON")]),
            ),
            ("docs/b.txt", payload([ent("old master", type_="NOUN_PHRASE")])),
            ("docs/c.txt", payload([ent("old master", type_="NOUN_PHRASE")])),
        ]
    )
    assert [e.name for e in merged.entities] == ["fred", "old master"]


def test_every_source_is_kept_and_a_removed_document_leaves_no_trace():
    a = payload(
        [ent("scrooge", chunks=["docs/a.txt:0"]), ent("marley", chunks=["docs/a.txt:0"])],
        [rel("marley", "scrooge", "warn", 1.0, ["docs/a.txt:0"])],
        [
            claim("scrooge", "marley", "Marley warns Scrooge.", "docs/a.txt:0"),
            claim("scrooge", None, "Scrooge is cold.", "docs/a.txt:0"),
        ],
    )
    b = payload(
        [ent("scrooge", chunks=["docs/b.txt:3"]), ent("fred", chunks=["docs/b.txt:3"])],
        [
            rel("fred", "scrooge", "invite", 1.0, ["docs/b.txt:3"]),
            rel("marley", "scrooge", "warn", 2.0, ["docs/b.txt:3"]),
        ],
        [
            claim("scrooge", None, "Scrooge is cold.", "docs/b.txt:3"),
            claim("fred", "scrooge", "Fred invites Scrooge.", "docs/b.txt:3"),
        ],
    )
    both = merge_extractions([("docs/a.txt", a), ("docs/b.txt", b)])
    scrooge = next(e for e in both.entities if e.name == "scrooge")
    assert scrooge.sources == [
        Provenance("docs/a.txt", "docs/a.txt:0"),
        Provenance("docs/b.txt", "docs/b.txt:3"),
    ]
    warn = next(e for e in both.edges if e.relation == "warn")
    assert warn.weight == 3.0 and [s.path for s in warn.sources] == ["docs/a.txt", "docs/b.txt"]
    cold = next(c for c in both.claims if c.description == "Scrooge is cold.")
    assert [s.path for s in cold.sources] == ["docs/a.txt", "docs/b.txt"]  # one claim, two sources

    only_b = merge_extractions([("docs/b.txt", b)])
    assert {e.name for e in only_b.entities} == {"scrooge", "fred"}  # marley had no other source
    assert all(s.path == "docs/b.txt" for e in only_b.entities for s in e.sources)
    assert [(e.source, e.target) for e in only_b.edges] == [("fred", "scrooge")]  # warn needs marley
    assert sorted(c.description for c in only_b.claims) == ["Fred invites Scrooge.", "Scrooge is cold."]
    assert all(s.path == "docs/b.txt" for c in only_b.claims for s in c.sources)


def test_edge_relation_is_the_heaviest_named_one_and_weights_sum():
    merged = merge_extractions(
        [
            (
                "docs/a.txt",
                payload(
                    [ent("a"), ent("b")], [rel("a", "b", "related_to", 5.0), rel("a", "b", "employ", 1.0)]
                ),
            ),
            ("docs/b.txt", payload([ent("a"), ent("b")], [rel("b", "a", "visit", 2.0)])),
        ]
    )
    assert [(e.source, e.target, e.relation, e.weight) for e in merged.edges] == [("a", "b", "visit", 8.0)]


# --- communities -----------------------------------------------------------------------------------


def two_triangles() -> list[Edge]:
    pairs = [
        ("a1", "a2", 5),
        ("a1", "a3", 5),
        ("a2", "a3", 5),
        ("b1", "b2", 5),
        ("b1", "b3", 5),
        ("b2", "b3", 5),
        ("a1", "b1", 1),
    ]
    return [Edge(s, t, "r", float(w)) for s, t, w in pairs]


def test_leiden_finds_the_two_triangles_deterministically():
    first = detect_communities(two_triangles(), seed=7, max_cluster_size=10)
    second = detect_communities(list(reversed(two_triangles())), seed=7, max_cluster_size=10)
    assert [(c.id, c.level, c.parent, c.members, c.is_leaf) for c in first] == [
        (1, 0, None, ["a1", "a2", "a3"], True),
        (2, 0, None, ["b1", "b2", "b3"], True),
    ]
    assert [(c.id, c.members) for c in first] == [(c.id, c.members) for c in second]
    assert detect_communities([]) == []


def test_hierarchy_children_partition_their_parent_and_levels_deepen():
    # a ring of 16 triangles: modularity pairs adjacent triangles at level 0 (6 members > max 5), and each
    # pair is split again into its two triangles at level 1
    edges = []
    triangles = []
    for g in range(16):
        nodes = [f"g{g:02d}n{i}" for i in range(3)]
        triangles.append(nodes)
        edges += [Edge(a, b, "r", 1.0) for i, a in enumerate(nodes) for b in nodes[i + 1 :]]
        edges.append(Edge(f"g{g:02d}n0", f"g{(g + 1) % 16:02d}n1", "r", 1.0))
    found = detect_communities(edges, seed=42, max_cluster_size=5)
    by_id = {c.id: c for c in found}
    level0 = [c for c in found if c.level == 0]
    level1 = [c for c in found if c.level == 1]
    assert len(level0) == 8 and all(len(c.members) == 6 and c.parent is None for c in level0)
    assert sorted(c.members for c in level1) == sorted(sorted(t) for t in triangles)
    for c in level0:
        kids = [by_id[k] for k in c.children]
        assert len(kids) == 2 and not c.is_leaf
        assert sorted(m for k in kids for m in k.members) == c.members  # complete and disjoint
        assert all(k.parent == c.id and k.is_leaf for k in kids)
    # ids follow (level, smallest member): deterministic
    assert [c.id for c in found] == list(range(1, 25))
    assert found == detect_communities(list(reversed(edges)), seed=42, max_cluster_size=5)


def planted_blocks(blocks: int = 30, size: int = 10, seed: int = 3) -> list[Edge]:
    """Dense blocks with sparse links between them (a fixed pseudo-random graph)."""
    rng = random.Random(seed)
    nodes = [f"b{b:02d}n{i}" for b in range(blocks) for i in range(size)]
    edges = []
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            if rng.random() < (0.5 if a[:3] == b[:3] else 0.01):
                edges.append(Edge(a, b, "r", 1.0 + rng.randrange(3)))
    return edges


def shape(communities: list[Community]) -> set[tuple[int, tuple[str, ...]]]:
    return {(c.level, tuple(c.members)) for c in communities}


def test_a_rebuild_started_from_the_published_partition_moves_only_what_the_change_reaches():
    edges = planted_blocks()
    before = detect_communities(edges, seed=42, max_cluster_size=10)
    # the result is a fixed point: started from itself, nothing moves
    assert detect_communities(edges, seed=42, max_cluster_size=10, previous=before) == before
    changed = [*edges, Edge("b05n1", "new", "r", 1.0), Edge("b05n2", "new", "r", 1.0)]
    scratch = detect_communities(changed, seed=42, max_cluster_size=10)
    rebuilt = detect_communities(changed, seed=42, max_cluster_size=10, previous=before)
    moved_scratch, moved = len(shape(scratch) - shape(before)), len(shape(rebuilt) - shape(before))
    assert moved * 3 < moved_scratch  # from scratch, one new node re-draws communities everywhere
    assert any("new" in c.members for c in rebuilt)
    assert len(shape(rebuilt) & shape(before)) >= 0.8 * len(before)
    for c in rebuilt:  # still a hierarchy of complete partitions
        if c.children:
            kids = [k for k in rebuilt if k.id in c.children]
            assert sorted(m for k in kids for m in k.members) == c.members


def test_fingerprint_changes_only_with_what_the_summary_is_written_from():
    community = Community(1, 0, None, ["a", "b"])
    entities = {"a": Entity("a", "A", description="first"), "b": Entity("b", "B")}
    edges = [Edge("a", "b", "employ", 2.0), Edge("b", "z", "visit", 1.0)]
    claims = [Claim("1", "a", "b", "A employs B.", "c", "p")]
    base = fingerprint(community, entities, index_edges(edges), index_claims(claims))
    assert base == fingerprint(community, dict(entities), index_edges(list(edges)), index_claims(claims))
    # an edge leaving the community does not count
    assert base == fingerprint(community, entities, index_edges(edges[:1]), index_claims(claims))
    changed = {**entities, "a": Entity("a", "A", description="second")}
    assert base != fingerprint(community, changed, index_edges(edges), index_claims(claims))
    assert base != fingerprint(
        community, entities, index_edges([Edge("a", "b", "employ", 3.0)]), index_claims(claims)
    )
    assert base != fingerprint(community, entities, index_edges(edges), index_claims([]))


# --- summaries -------------------------------------------------------------------------------------


def carol_context() -> CommunityContext:
    community = Community(1, 0, None, ["bob", "marley", "scrooge", "tim"])
    entities = {
        "scrooge": Entity("scrooge", "Scrooge"),
        "marley": Entity("marley", "Marley", description="A ghost."),
        "bob": Entity("bob", "Bob"),
        "tim": Entity("tim", "Tim"),
    }
    edges = [
        Edge("marley", "scrooge", "warn", 3.0),
        Edge("bob", "scrooge", "employ", 2.0),
        Edge("bob", "tim", "carry", 1.0),
    ]
    claims = [
        Claim("c1", "tim", None, "Tim is small.", "x:0", "x"),  # weight: tim 1
        Claim(
            "c2", "scrooge", "marley", "Marley warns Scrooge about three spirits that will come.", "x:0", "x"
        ),  # 5+3
        Claim("c3", "bob", "scrooge", "Bob works for Scrooge.", "x:1", "x"),  # 3+5
    ]
    return CommunityContext(community, entities, edges, claims)


def test_local_summary_names_the_most_central_members_and_ranks_claims_by_centrality():
    title, summary = LocalSummarizer().summarize(carol_context())
    # weighted degree: scrooge 5, bob 3, marley 3, tim 1 → ties by name; no chunk headings: members
    assert title == "Scrooge and Bob"
    # only the documents' sentences (no synthetic lead); c2 and c3 both weigh 8: the shorter first
    assert summary == (
        "Bob works for Scrooge. Marley warns Scrooge about three spirits that will come. Tim is small."
    )


def test_local_summary_skips_a_claim_that_does_not_fit_and_keeps_a_later_shorter_one():
    context = carol_context()
    budget = count_tokens("Bob works for Scrooge.") + 1 + count_tokens("Tim is small.") + 1
    _title, summary = LocalSummarizer(max_tokens=budget).summarize(context)
    assert summary == "Bob works for Scrooge. Tim is small."  # the long Marley claim was skipped


def test_llm_context_fits_the_budget_and_uses_child_reports_when_detail_does_not_fit():
    context = carol_context()
    full = build_llm_context(context, 4000)
    # entities by degree (bob 2, scrooge 2, marley 1, tim 1; ties by key)
    assert full.startswith("Entities:\n- Bob\n- Scrooge\n- Marley: A ghost.\n- Tim")
    # relationships by degree sum (bob-scrooge 4, bob-tim 3, marley-scrooge 3; ties by source)
    assert (
        "Relationships:\n- Bob -> Scrooge: employ (weight 2)\n- Bob -> Tim: carry (weight 1)\n"
        "- Marley -> Scrooge: warn (weight 3)"
    ) in full
    assert "Claims:" in full and "Sub-community reports" not in full
    small = count_tokens(full) - 10
    child = Community(2, 1, 1, ["bob", "tim"], title="The Cratchits", summary="Bob carries Tim.")
    context.children = [child]
    reduced = build_llm_context(context, small)
    assert count_tokens(reduced) <= small
    assert reduced.startswith("Sub-community reports:\n- [The Cratchits] Bob carries Tim.")
    # lowest priority goes first: claims are cut before relationships, relationships before entities
    assert "Entities:" in reduced


def test_annotate_sets_fingerprints_and_rank_from_member_degrees():
    found = detect_communities(two_triangles(), seed=7)
    entities = [Entity(n, n) for n in ("a1", "a2", "a3", "b1", "b2", "b3")]
    annotate(found, entities, two_triangles(), [])
    assert [c.rank for c in found] == [7.0, 7.0]  # a1 has 3 edges, a2 2, a3 2
    assert len({c.fingerprint for c in found}) == 2


# --- the local extractor's junk rule (plain words: no model) ----------------------------------------


def words(*spec: tuple[str, str, bool]) -> list[Word]:
    return [Word(text, pos, stop) for text, pos, stop in spec]


def test_junk_rule_drops_short_numeric_and_function_word_names():
    assert mention_type(words(("a", "DET", True)), "a", "WORK_OF_ART") is None  # too short
    assert mention_type(words(("x", "NOUN", False)), "x", NOUN_PHRASE) is None
    assert mention_type(words(("2015", "NUM", False)), "2015", "ORG") is None  # no letter
    assert mention_type(words(("Us", "PRON", True)), "us", "GPE") is None  # a pronoun
    assert mention_type(words(("thou", "PROPN", False)), "thou", "GPE") is None  # archaic pronoun
    assert mention_type(words(("this", "DET", True), ("one", "NUM", True)), "this one", "ORG") is None


def test_junk_rule_keeps_names_acronyms_and_demotes_lowercase_common_words():
    assert mention_type(words(("Scrooge", "PROPN", False)), "scrooge", "PERSON") == "PERSON"
    assert mention_type(words(("Tiny", "PROPN", False), ("Tim", "PROPN", False)), "tiny tim", "PERSON") == (
        "PERSON"
    )
    assert mention_type(words(("US", "PROPN", True)), "us", "GPE") == "GPE"  # an acronym, not "us"
    assert mention_type(words(("IT", "PRON", True)), "it", "ORG") == "ORG"
    assert mention_type(words(("Fred", "PROPN", False)), "fred", "PERSON") == "PERSON"
    # a lowercase common word tagged as an entity becomes a noun phrase (kept only if it recurs)
    assert mention_type(words(("cold", "ADJ", False)), "cold", "GPE") == NOUN_PHRASE
    assert mention_type(words(("film", "NOUN", False)), "film", "WORK_OF_ART") == NOUN_PHRASE
    assert mention_type(words(("linux", "PROPN", False)), "linux", "ORG") == "ORG"  # tagged proper
    assert mention_type(words(("old", "ADJ", False), ("man", "NOUN", False)), "old man", NOUN_PHRASE) == (
        NOUN_PHRASE
    )


def test_a_demoted_word_named_once_is_noise_and_one_named_twice_is_kept():
    once = payload([ent("gruel", type_=NOUN_PHRASE, mentions=1), ent("ebenezer scrooge", mentions=1)])
    twice = payload([ent("geese", type_=NOUN_PHRASE, mentions=2)])
    names = {e.name for e in merge_extractions([("docs/a.txt", once), ("docs/b.txt", twice)]).entities}
    assert names == {"ebenezer scrooge", "geese"}
