"""The graph store contract, run on both engines: SQLite (embedded) and the real PostgreSQL server.

Expectations are computed by hand from the fixture graph in `tests.graph_fixtures` (its docstring
draws it). PostgreSQL tests fail, not skip, when the server is unreachable under CI.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from librarian.errors import TenantError
from librarian.graph.model import ChunkRef, Claim, Community, DocumentRef, Edge, Entity, Provenance, claim_id
from tests.conftest import POSTGRES_URL, require_postgres
from tests.graph_fixtures import PATH_A, PATH_B, axis, build_fixture_graph


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    if request.param == "sqlite":
        from librarian.graph.store_sqlite import SqliteGraphStore

        engine = SqliteGraphStore(tmp_path / "graph.sqlite")
    else:
        require_postgres()
        from librarian.graph.store_postgres import PostgresGraphStore

        engine = PostgresGraphStore(POSTGRES_URL)
    orgs: list[str] = []
    engine.test_orgs = orgs  # type: ignore[attr-defined]
    yield engine
    for org in orgs:
        engine.scope(org).drop_all()
    engine.close()


def new_org(store, label: str) -> str:
    org = f"{label}-{uuid.uuid4().hex[:10]}"
    store.test_orgs.append(org)
    return org


def test_every_read_and_write_needs_a_valid_organization(store):
    for bad in (None, "", "../other", "a b"):
        with pytest.raises(TenantError):
            store.scope(bad)


def test_fixture_graph_reads_match_hand_computed_values(store):
    org = new_org(store, "acme")
    published = build_fixture_graph(store, org)
    g = store.scope(org)
    assert published.version == 1 and published.status == "published"
    assert (published.documents, published.entities, published.edges, published.claims) == (2, 6, 5, 4)
    assert published.communities_per_level == {0: 1, 1: 2}

    by_name = {e.name: e for e in g.entities()}
    assert sorted(by_name) == sorted(
        ["scrooge", "marley", "bob cratchit", "tiny tim", "ghost of christmas past", "fezziwig"]
    )
    scrooge = by_name["scrooge"]
    assert scrooge.aliases == ["ebenezer scrooge", "mr. scrooge"]
    assert scrooge.degree == 4  # marley, bob cratchit, ghost, fezziwig
    assert scrooge.sources == [
        Provenance(PATH_A, f"{PATH_A}:0"),
        Provenance(PATH_A, f"{PATH_A}:1"),
        Provenance(PATH_B, f"{PATH_B}:1"),
    ]
    assert g.resolve_names(["mr. scrooge", "scrooge", "cratchit", "nobody"]) == {
        "mr. scrooge": "scrooge",
        "scrooge": "scrooge",
        "cratchit": "bob cratchit",
    }

    assert g.neighbours(["tiny tim"], hops=1) == {"tiny tim", "bob cratchit"}
    assert g.neighbours(["tiny tim"], hops=2) == {"tiny tim", "bob cratchit", "scrooge"}
    assert g.neighbours(["unknown"], hops=2) == set()
    assert {(e.source, e.target) for e in g.edges(["tiny tim"])} == {("bob cratchit", "tiny tim")}

    communities = g.communities()
    assert [(c.id, c.level, c.parent, c.children, c.is_leaf) for c in communities] == [
        (1, 0, None, [2, 3], False),
        (2, 1, 1, [], True),
        (3, 1, 1, [], True),
    ]
    assert communities[2].members == ["bob cratchit", "fezziwig", "tiny tim"]
    assert [c.id for c in g.communities(leaves_only=True)] == [2, 3]
    assert [c.id for c in g.communities(level=0)] == [1]
    assert g.communities_of(["tiny tim", "marley"]) == {"tiny tim": [1, 3], "marley": [1, 2]}

    ids, matrix = g.summary_embeddings()
    assert ids == [1, 2, 3]
    assert np.allclose(matrix, np.stack([axis(0), axis(1), axis(2)]))
    assert [c.id for c in g.communities(with_embeddings=True) if c.summary_embedding is not None] == [1, 2, 3]
    names, vectors = g.entity_name_embeddings()
    assert names == sorted(by_name)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)

    claims = g.claims_for(["tiny tim"])
    assert [(c.subject, c.object, c.path, c.chunk_id) for c in claims] == [
        ("bob cratchit", "tiny tim", PATH_B, f"{PATH_B}:0")
    ]
    # ordered by subject degree (scrooge 4 before bob cratchit 2)
    subjects = [c.subject for c in g.claims_for(["scrooge", "bob cratchit"])]
    assert subjects[:3] == ["scrooge", "scrooge", "scrooge"] and subjects[3] == "bob cratchit"

    chunks = g.chunks([f"{PATH_B}:1", "docs/none.txt:0", f"{PATH_A}:0"])
    assert [c.chunk_id for c in chunks] == [f"{PATH_B}:1", f"{PATH_A}:0"]
    assert chunks[0].page == 2 and chunks[0].bbox == {"left": 0.1, "top": 0.2, "width": 0.8, "height": 0.05}


def test_keyword_search_counts_terms_case_insensitively_and_breaks_ties_by_length(store):
    org = new_org(store, "acme")
    build_fixture_graph(store, org)
    hits = store.scope(org).keyword_search(["SCROOGE", "marley", "Bob", "scrooge"])
    # A:0 scrooge+marley (2 terms, 65 chars), A:1 scrooge+bob (2, 64), B:1 scrooge (1, 66), B:0 bob (1, 51)
    assert [(h.chunk_id, h.matched, h.length) for h in hits] == [
        (f"{PATH_A}:0", 2, 65),
        (f"{PATH_A}:1", 2, 64),
        (f"{PATH_B}:1", 1, 66),
        (f"{PATH_B}:0", 1, 51),
    ]
    assert len(store.scope(org).keyword_search(["scrooge"], limit=2)) == 2
    assert store.scope(org).keyword_search(["%"]) == []  # LIKE wildcards are literal
    assert store.scope(org).keyword_search(["_"]) == []


def test_two_organizations_with_the_same_entity_share_nothing(store):
    a, b = new_org(store, "a"), new_org(store, "b")
    build_fixture_graph(store, a, name_prefix="[A] ")
    gb = store.scope(b)
    path = "docs/b-only.txt"
    gb.put_chunks(path, "hash-b", [ChunkRef(f"{path}:0", path, 0, 7, None, "Scrooge of B sells umbrellas.")])
    gb.put_extraction(path, "hash-b", "x", {"entities": ["b"]})
    gb.put_chunk_extractions(path, "x", {"h1": {"mentions": ["b"]}})
    version = gb.begin_version(extractor="x", summarizer="x", embedding_model="axes-8")
    source = [Provenance(path, f"{path}:0")]
    gb.write_version(
        version,
        documents=[DocumentRef(path, "hash-b", "x", 1)],
        entities=[
            Entity("scrooge", "Scrooge", "PERSON", "B's umbrella seller.", ["mr. scrooge"], source),
            Entity("umbrella", "umbrella", "NOUN_PHRASE", "", [], source),
        ],
        edges=[Edge("scrooge", "umbrella", "sell", 1.0, "", source)],
        claims=[
            Claim(
                claim_id("scrooge", "Scrooge of B sells umbrellas."),
                "scrooge",
                "umbrella",
                "Scrooge of B sells umbrellas.",
                f"{path}:0",
                path,
                source,
            )
        ],
        entity_embeddings={"scrooge": axis(5), "umbrella": axis(6)},
    )
    gb.write_communities(
        version,
        [
            Community(
                1, 0, None, ["scrooge", "umbrella"], [], True, "fp-b", "B", "[B] umbrellas", axis(7), "x"
            )
        ],
    )
    gb.publish(version)

    ga = store.scope(a)
    assert ga.entities(["scrooge"])[0].description == "A miser."
    assert gb.entities(["scrooge"])[0].description == "B's umbrella seller."
    assert {(e.source, e.target) for e in gb.edges(["scrooge"])} == {("scrooge", "umbrella")}
    assert "umbrella" not in {n for e in ga.edges(["scrooge"]) for n in (e.source, e.target)}
    assert gb.neighbours(["scrooge"]) == {"scrooge", "umbrella"}
    assert [c.description for c in gb.claims_for(["scrooge"])] == ["Scrooge of B sells umbrellas."]
    assert all("umbrella" not in c.description for c in ga.claims_for(["scrooge"]))
    assert [c.summary for c in gb.communities()] == ["[B] umbrellas"]
    assert all(c.summary.startswith("[A] ") for c in ga.communities())
    ids_b, vectors_b = gb.summary_embeddings()
    assert ids_b == [1] and np.allclose(vectors_b, [axis(7)])
    _ids_a, vectors_a = ga.summary_embeddings()
    assert np.allclose(vectors_a[0], axis(0))  # A's community 1 keeps its own vector
    names_b, _ = gb.entity_name_embeddings()
    assert names_b == ["scrooge", "umbrella"]
    assert gb.resolve_names(["ebenezer scrooge"]) == {}  # A's alias is not B's
    assert ga.get_extraction(path, "hash-b", "x") is None
    assert gb.get_extraction(path, "hash-b", "x") == {"entities": ["b"]}
    assert ga.cached_extractions() == {}
    assert ga.get_chunk_extractions(path, "x") == {}
    assert gb.get_chunk_extractions(path, "x") == {"h1": {"mentions": ["b"]}}
    assert [h.chunk_id for h in ga.keyword_search(["umbrella"])] == []
    assert [h.chunk_id for h in gb.keyword_search(["scrooge"])] == [f"{path}:0"]
    assert ga.chunks([f"{path}:0"]) == []
    assert ga.published_version().version == 1 and gb.published_version().entities == 2


def test_publish_is_atomic_and_prunes_the_previous_version(store):
    org = new_org(store, "acme")
    build_fixture_graph(store, org)
    g = store.scope(org)
    version = g.begin_version(extractor="x", summarizer="x", embedding_model="axes-8")
    source = [Provenance(PATH_A, f"{PATH_A}:0")]
    g.write_version(
        version,
        documents=[DocumentRef(PATH_A, f"hash-{PATH_A}", "x", 2)],
        entities=[Entity("marley", "Marley", "PERSON", "", [], source)],
        edges=[],
        claims=[],
    )
    # half-written: readers still see version 1 completely
    assert g.published_version().version == 1
    assert len(g.entities()) == 6 and len(g.communities()) == 3
    assert g.entities(["marley"], version=version)[0].display_name == "Marley"
    published = g.publish(version)
    assert published.version == version == 2
    assert [e.name for e in g.entities()] == ["marley"]
    assert g.communities() == []
    assert [v.version for v in g.versions()] == [2]  # version 1 pruned
    assert g.entities(version=1) == []
    # chunks of documents no version refers to are pruned too
    assert g.chunks([f"{PATH_B}:0"]) == [] and not g.has_chunks(PATH_B, f"hash-{PATH_B}")


def test_an_aborted_build_leaves_the_published_version_untouched(store):
    org = new_org(store, "acme")
    build_fixture_graph(store, org)
    g = store.scope(org)
    version = g.begin_version(extractor="x", summarizer="x", embedding_model="axes-8")
    g.write_version(version, documents=[], entities=[], edges=[], claims=[])
    g.abort(version)
    assert g.published_version().version == 1 and len(g.entities()) == 6
    assert [v.version for v in g.versions()] == [1]
    with pytest.raises(ValueError):
        g.publish(version)


def test_a_retracted_document_stops_being_cited_before_the_rebuild(store):
    org = new_org(store, "acme")
    build_fixture_graph(store, org)
    g = store.scope(org)
    g.retract_document(PATH_A)
    claims = g.claims_for(["scrooge"])
    assert [c.path for c in claims] == [PATH_B]  # the two claims of docs/carol-a.txt are gone
    assert g.entities(["scrooge"])[0].sources == [Provenance(PATH_B, f"{PATH_B}:1")]
    assert all(h.chunk_id.startswith(PATH_B) for h in g.keyword_search(["scrooge", "marley"]))
    assert g.chunks([f"{PATH_A}:0"]) == []


def test_reuse_lookups_match_fingerprint_summarizer_and_model(store):
    org = new_org(store, "acme")
    build_fixture_graph(store, org)
    g = store.scope(org)
    reused = g.reusable_summaries(["fp-scrooge", "fp-missing"], "fixture")
    assert list(reused) == ["fp-scrooge"] and reused["fp-scrooge"].title == "Scrooge and the ghosts"
    assert np.allclose(reused["fp-scrooge"].summary_embedding, axis(1))
    assert g.reusable_summaries(["fp-scrooge"], "another-summarizer") == {}
    assert set(g.reusable_entity_embeddings(["scrooge", "nobody"], "axes-8")) == {"scrooge"}
    assert g.reusable_entity_embeddings(["scrooge"], "another-model") == {}


def test_extraction_cache_is_keyed_by_content_hash_and_extractor(store):
    org = new_org(store, "acme")
    g = store.scope(org)
    g.put_extraction("docs/a.txt", "h1", "local:1", {"n": 1})
    assert g.get_extraction("docs/a.txt", "h1", "local:1") == {"n": 1}
    assert g.get_extraction("docs/a.txt", "h2", "local:1") is None
    assert g.get_extraction("docs/a.txt", "h1", "llm:1") is None
    g.put_extraction("docs/a.txt", "h2", "local:1", {"n": 2})  # a new version replaces the entry
    assert g.cached_extractions() == {"docs/a.txt": ("h2", "local:1")}
    assert g.get_extraction("docs/a.txt", "h1", "local:1") is None
    g.put_chunk_extractions("docs/a.txt", "local:1", {"t1": {"n": 1}, "t2": {"n": 2}})
    g.put_chunk_extractions("docs/a.txt", "local:1", {"t2": {"n": 2}, "t3": {"n": 3}})  # replaces
    assert g.get_chunk_extractions("docs/a.txt", "local:1") == {"t2": {"n": 2}, "t3": {"n": 3}}
    assert g.get_chunk_extractions("docs/a.txt", "llm:1") == {}


def test_pruning_drops_extractions_of_unindexed_documents_in_one_organization_only(store):
    acme, globex = new_org(store, "acme"), new_org(store, "globex")
    a, g = store.scope(acme), store.scope(globex)
    for graph in (a, g):
        for path in ("docs/kept.txt", "docs/changed.txt", "docs/deleted.txt"):
            graph.put_extraction(path, "h1", "local:1", {"path": path})
            graph.put_chunk_extractions(path, "local:1", {"t1": {"n": 1}})
    # changed.txt is indexed at another content now, deleted.txt not at all
    assert a.prune_extractions({"docs/kept.txt": "h1", "docs/changed.txt": "h2"}) == 2
    assert a.cached_extractions() == {"docs/kept.txt": ("h1", "local:1")}
    assert a.get_chunk_extractions("docs/changed.txt", "local:1") == {"t1": {"n": 1}}  # for reuse
    assert a.get_chunk_extractions("docs/deleted.txt", "local:1") == {}
    assert len(g.cached_extractions()) == 3  # the other organization's same paths are untouched
    assert g.get_chunk_extractions("docs/deleted.txt", "local:1") == {"t1": {"n": 1}}
    assert a.prune_extractions({"docs/kept.txt": "h1", "docs/changed.txt": "h2"}) == 0
    assert a.prune_extractions({}) == 1 and a.cached_extractions() == {}
