"""The graph index build end to end on the embedded stack: real ingest, real spaCy, real Leiden, SQLite.

Documents are one or two sentences so the whole module runs in seconds (spaCy loads once per process).
"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from librarian.graph.model import Provenance
from services.documents import DocumentService
from services.graph_index_service import GraphIndexService

CAROL_A = b"Bob Cratchit carries Tiny Tim home from the church. Tiny Tim blesses Bob Cratchit."
CAROL_B = b"Jacob Marley warns Ebenezer Scrooge in London. Mr. Scrooge fears Marley."
CAROL_B2 = (
    b"Jacob Marley warns Ebenezer Scrooge in London. Mr. Scrooge fears Marley. Scrooge visits Fezziwig."
)


@pytest.fixture
def services(stack):
    saver = InMemorySaver()
    return DocumentService(stack, saver), GraphIndexService(stack, saver)


def add(docs: DocumentService, org: str, name: str, data: bytes) -> str:
    path = docs.upload(org, name, data)
    assert docs.ingest(org, path).status == "indexed"
    return path


def test_build_publishes_a_graph_whose_provenance_reaches_indexed_chunks(services, stack):
    docs, graphs = services
    a = add(docs, "acme", "a.txt", CAROL_A)
    b = add(docs, "acme", "b.txt", CAROL_B)
    nodes: list[str] = []
    report = graphs.build("acme", on_update=lambda node, _value: nodes.append(node))
    assert nodes[:2] == ["await_ingests", "collect"] and nodes.count("extract_document") == 2
    assert nodes[-1] == "publish"
    assert report["version"] == 1 and report["upToDate"] is True
    assert report["lastBuild"]["status"] == "published"
    assert sorted(report["lastBuild"]["extracted"]) == [a, b]
    assert report["entities"] > 0 and report["communitiesPerLevel"]

    g = stack.graph_store.scope("acme")
    scrooge = g.entities(["ebenezer scrooge"])[0]
    assert {"scrooge", "mr. scrooge"} <= set(scrooge.aliases)  # the alias rule merged the variants
    assert g.resolve_names(["mr. scrooge"]) == {"mr. scrooge": "ebenezer scrooge"}
    # every source chunk id is a record id of the vector index, and resolves to page/bbox/text
    index_ids = set(stack.index.list_ids(namespace="acme"))
    sources = {s for e in g.entities() for s in e.sources} | {
        s for c in g.claims_for([scrooge.name]) for s in c.sources
    }
    assert sources and {s.chunk_id for s in sources} <= index_ids
    chunk = g.chunks([sources.pop().chunk_id])[0]
    assert chunk.page == 1 and chunk.text
    claims = g.claims_for(["ebenezer scrooge"])
    assert all(c.description.encode() in CAROL_B for c in claims)  # verbatim sentences
    assert g.neighbours(["tiny tim"], hops=1) >= {"tiny tim", "bob cratchit"}
    communities = g.communities()
    assert all(c.summary and c.summary_embedding is None for c in communities)
    ids, vectors = g.summary_embeddings()
    assert ids == [c.id for c in communities] and vectors.shape == (len(ids), stack.dense.dimension)


def test_a_rebuild_after_changing_one_document_re_extracts_only_it_and_reuses_summaries(services, stack):
    docs, graphs = services
    add(docs, "acme", "a.txt", CAROL_A)
    b = add(docs, "acme", "b.txt", CAROL_B)
    graphs.build("acme")
    g = stack.graph_store.scope("acme")
    before = {c.fingerprint: c.summary for c in g.communities()}

    unchanged = graphs.build("acme")  # nothing changed: nothing re-extracted, every summary reused
    assert unchanged["lastBuild"]["extracted"] == []
    assert unchanged["lastBuild"]["summariesWritten"] == 0
    assert unchanged["lastBuild"]["summariesReused"] == len(before)

    add(docs, "acme", "b.txt", CAROL_B2)
    status = graphs.status("acme")
    assert status["staleDocuments"] == [b] and status["upToDate"] is False
    report = graphs.build("acme")
    assert report["lastBuild"]["extracted"] == [b]
    assert report["lastBuild"]["summariesReused"] >= 1 and report["lastBuild"]["summariesWritten"] >= 1
    after = {c.fingerprint: c.summary for c in g.communities()}
    cratchits = [fp for fp in after if fp in before]
    assert cratchits and all(after[fp] == before[fp] for fp in cratchits)
    assert "fezziwig" in {e.name for e in g.entities()}
    assert report["version"] == 3 and [v.version for v in g.versions()] == [3]


def test_deleting_one_of_two_documents_keeps_only_the_other_documents_contribution(services, stack):
    docs, graphs = services
    one = add(docs, "acme", "one.txt", b"Ebenezer Scrooge visits Jacob Marley. Scrooge pays Bob Cratchit.")
    two = add(docs, "acme", "two.txt", b"Scrooge sings with Fred. Fred invites Scrooge to dinner.")
    graphs.build("acme")
    g = stack.graph_store.scope("acme")
    assert {c.path for c in g.claims_for(["ebenezer scrooge"])} == {one, two}

    assert docs.delete("acme", two)
    assert graphs.status("acme")["removedDocuments"] == [two]
    graphs.build("acme")
    claims = g.claims_for(["ebenezer scrooge"])
    assert claims and {c.path for c in claims} == {one}
    assert all(s.path == one for c in claims for s in c.sources)
    scrooge = g.entities(["ebenezer scrooge"])[0]
    assert {s.path for s in scrooge.sources} == {one}
    assert "fred" not in {e.name for e in g.entities()}  # no source left: gone
    assert all(s.path == one for e in g.edges() for s in e.sources)
    assert g.keyword_search(["fred"]) == []
    assert [d.path for d in g.documents()] == [one]


def test_a_deleted_documents_cached_extractions_are_pruned_in_its_organization_only(services, stack):
    from librarian.graph.extract import extractor_key

    docs, graphs = services
    key = extractor_key(stack.settings)
    one = add(docs, "acme", "one.txt", b"Ebenezer Scrooge visits Jacob Marley.")
    two = add(docs, "acme", "two.txt", b"Scrooge sings with Fred. Fred invites Scrooge to dinner.")
    add(docs, "globex", "two.txt", b"Scrooge sings with Fred. Fred invites Scrooge to dinner.")
    graphs.build("acme")
    graphs.build("globex")
    acme, globex = stack.graph_store.scope("acme"), stack.graph_store.scope("globex")
    assert sorted(acme.cached_extractions()) == [one, two] and acme.get_chunk_extractions(two, key)

    assert docs.delete("acme", two)
    report = graphs.build("acme")
    assert report["lastBuild"]["extractionsPruned"] == 1
    assert list(acme.cached_extractions()) == [one]
    assert acme.get_chunk_extractions(two, key) == {} and acme.get_chunk_extractions(one, key)
    # the other organization's entries for the same path are untouched
    assert list(globex.cached_extractions()) == [two] and globex.get_chunk_extractions(two, key)
    assert graphs.build("globex")["lastBuild"]["extracted"] == []  # and still reused

    # a replaced version's document extraction goes too; its chunk observations stay for reuse
    acme.put_extraction("docs/gone.txt", "h", key, {"entities": []})
    acme.put_extraction(one, "an-older-hash", key, {"entities": []})
    assert acme.prune_extractions({one: "the-indexed-hash"}) == 2
    assert acme.cached_extractions() == {} and acme.get_chunk_extractions(one, key)


def test_two_organizations_with_scrooge_build_separate_graphs(services, stack):
    docs, graphs = services
    add(docs, "acme", "a.txt", b"Ebenezer Scrooge employs Bob Cratchit in London.")
    add(docs, "globex", "g.txt", b"Ebenezer Scrooge sells umbrellas to Fred in Paris.")
    graphs.build("acme")
    graphs.build("globex")
    acme, globex = stack.graph_store.scope("acme"), stack.graph_store.scope("globex")
    assert {e.name for e in acme.entities()} >= {"ebenezer scrooge", "bob cratchit"}
    assert "bob cratchit" not in {e.name for e in globex.entities()}
    assert all(s.path == "docs/a.txt" for s in acme.entities(["ebenezer scrooge"])[0].sources)
    assert all(s.path == "docs/g.txt" for s in globex.entities(["ebenezer scrooge"])[0].sources)
    assert acme.neighbours(["ebenezer scrooge"]).isdisjoint({"fred", "paris"})
    assert all("umbrella" not in c.summary for c in acme.communities())
    assert all("Bob" not in c.description for c in globex.claims_for(["ebenezer scrooge"]))
    assert list(acme.cached_extractions()) == ["docs/a.txt"]
    assert list(globex.cached_extractions()) == ["docs/g.txt"]


def test_status_before_any_build_and_an_empty_organization(services):
    _docs, graphs = services
    report = graphs.status("acme")
    assert report["version"] is None and report["lastBuild"] == {"status": "never"}
    empty = graphs.build("acme")  # no documents: an empty graph is published, not an error
    assert empty["version"] == 1 and empty["entities"] == 0 and empty["upToDate"] is True
    assert Provenance("a", "b") < Provenance("b", "a")


@pytest.mark.postgres
def test_a_build_publishes_into_the_postgres_store(settings):
    import uuid

    from librarian.stack import Stack
    from tests.conftest import POSTGRES_URL, require_postgres

    require_postgres()
    stack = Stack(settings.model_copy(update={"postgres_url": POSTGRES_URL}))
    org = f"pg-{uuid.uuid4().hex[:10]}"
    saver = InMemorySaver()
    docs, graphs = DocumentService(stack, saver), GraphIndexService(stack, saver)
    try:
        add(docs, org, "b.txt", CAROL_B)
        report = graphs.build(org)
        assert type(stack.graph_store).__name__ == "PostgresGraphStore"
        assert report["version"] == 1 and report["upToDate"] is True
        g = stack.graph_store.scope(org)
        assert "mr. scrooge" in g.entities(["ebenezer scrooge"])[0].aliases
        assert g.claims_for(["ebenezer scrooge"])[0].path == "docs/b.txt"
    finally:
        stack.graph_store.scope(org).drop_all()
        stack.graph_store.close()


def test_chunks_are_read_back_from_the_index_as_parsed_and_without_loading_the_parser(services, stack):
    from graphs.graph_index_stages import document_chunks, indexed_documents
    from graphs.ingest_nodes import chunk_records
    from librarian.index.base import record_id
    from librarian.parsing.cache import ParseCache
    from librarian.stack import Stack

    docs, _graphs = services
    add(docs, "acme", "b.txt", CAROL_B)
    (doc,), _ = indexed_documents(stack, "acme")
    parsed = ParseCache(stack.files).get("acme", doc["path"], doc["contentHash"], stack.parser.cache_key)
    assert parsed is not None
    expected = [
        (record_id(doc["path"], c["chunkIndex"]), c["chunkIndex"], c["page"], c["bbox"], c["text"])
        for c in chunk_records(parsed)
        if c["embedText"].strip()
    ]
    chunks = document_chunks(stack, "acme", doc["path"], doc["contentHash"]) or []
    assert [(c.chunk_id, c.chunk_index, c.page, c.bbox, c.text) for c in chunks] == expected
    # after a parser-settings change (no parse under the new key) the build still reads them, and a
    # build never builds the parser (its import costs a fresh process ~1 s for nothing)
    other = Stack(stack.settings.model_copy(update={"chunk_size": stack.settings.chunk_size + 7}))
    report = GraphIndexService(other, InMemorySaver()).build("acme")
    assert report["lastBuild"]["extracted"] == ["docs/b.txt"] and report["entities"] >= 2
    assert "parser" not in vars(other)
