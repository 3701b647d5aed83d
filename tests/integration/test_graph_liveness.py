"""A deleted or replaced document leaves the graph's answers at once, before any rebuild.

Two documents are really ingested (upload, parse, embed, index); a hand-made graph over their indexed
chunks is published, both documents naming Scrooge. Then one document is deleted (or re-uploaded
with other content) through `DocumentService`, with no graph build: local and global search must no
longer cite it or quote its old text, and the other document's evidence must remain. Also here: the
CLI's word on a delete, the status's stale count, and `[n]` numbering across parallel tool calls.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from graphs.graph_index_stages import index_chunks, indexed_documents
from librarian.graph.model import (
    ChunkRef,
    Claim,
    Community,
    DocumentRef,
    Edge,
    Entity,
    Provenance,
    claim_id,
)
from librarian.graph.query.global_search import GlobalOptions
from librarian.graph.query.runs import run_global, run_local
from librarian.stack import Stack
from librarian_cli.graph import graph_status, stale_documents
from services.documents import DocumentService
from tests.wire.openai_server import TEST_API_KEY, OpenAIWireServer, TextReply, ToolCallReply

pytest_plugins = ["tests.wire.fixtures"]

ORG = "live-org"
A = "docs/carol-a.txt"
B = "docs/carol-b.txt"
TEXT_A = (
    "Ebenezer Scrooge employs Bob Cratchit as his clerk in a cold London counting-house "
    "for fifteen shillings a week."
)
TEXT_B = (
    "The Ghost of Christmas Past shows Ebenezer Scrooge his old master Fezziwig dancing "
    "at a merry Christmas ball with all his apprentices."
)
TEXT_B_NEW = "Tiny Tim sits by the fire while the whole Cratchit family shares a small goose on the table."
LOCAL_QUESTION = "Who is Scrooge?"
GLOBAL_QUESTION = "What happens to Scrooge and the people around him at Christmas?"
EXCERPT_HEADER = re.compile(r"^\[(?P<n>\d+)\] (?P<filename>\S+), page (?P<page>\d+):$", re.MULTILINE)


def unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / (np.linalg.norm(v) or 1.0)


def publish_over_index(stack: Stack) -> dict[str, ChunkRef]:
    """The graph a build would make of the two indexed documents, spelled out; returns path -> chunk.

    Community 2 (Scrooge, Bob Cratchit) draws on both documents, community 3 (the Ghost, Fezziwig)
    on B alone; each document has one claim, its own sentence.
    """
    documents, _ = indexed_documents(stack, ORG)
    chunks = {d["path"]: index_chunks(stack, ORG, d["path"], d["contentHash"]) or [] for d in documents}
    assert {p: len(c) for p, c in chunks.items()} == {A: 1, B: 1}  # short texts: one chunk each
    a, b = chunks[A][0], chunks[B][0]

    def src(chunk: ChunkRef) -> Provenance:
        return Provenance(chunk.path, chunk.chunk_id)

    entities = [
        Entity(
            "scrooge", "Ebenezer Scrooge", "PERSON", "A miser.", ["ebenezer scrooge"], [src(a), src(b)], 2
        ),
        Entity("bob cratchit", "Bob Cratchit", "PERSON", "His clerk.", [], [src(a)], 1),
        Entity("ghost of christmas past", "Ghost of Christmas Past", "PERSON", "A spirit.", [], [src(b)], 1),
        Entity("fezziwig", "Fezziwig", "PERSON", "His old master.", [], [src(b)], 1),
    ]
    edges = [
        Edge("bob cratchit", "scrooge", "employs", 2.0, "", [src(a)]),
        Edge("ghost of christmas past", "scrooge", "shows", 1.0, "", [src(b)]),
        Edge("fezziwig", "scrooge", "employed", 1.0, "", [src(b)]),
    ]
    claims = [
        Claim(claim_id("scrooge", TEXT_A), "scrooge", "bob cratchit", TEXT_A, a.chunk_id, A, [src(a)]),
        Claim(claim_id("fezziwig", TEXT_B), "fezziwig", "scrooge", TEXT_B, b.chunk_id, B, [src(b)]),
    ]
    summaries = {
        1: ("A Christmas Carol", "Scrooge, his clerk, his old master and the spirits of Christmas."),
        2: ("Scrooge at work", "Scrooge keeps his clerk Bob Cratchit working in the cold counting-house."),
        3: ("Christmas past", "The Ghost of Christmas Past takes Scrooge back to Fezziwig's merry ball."),
    }
    members = {
        1: sorted(e.name for e in entities),
        2: ["bob cratchit", "scrooge"],
        3: ["fezziwig", "ghost of christmas past"],
    }
    communities = [
        Community(
            cid,
            0 if cid == 1 else 1,
            None if cid == 1 else 1,
            members[cid],
            [2, 3] if cid == 1 else [],
            cid != 1,
            f"fp-{cid}",
            title,
            summary,
            unit(stack.dense.embed_query(summary)),
            "fixture",
            float(len(members[cid])),
        )
        for cid, (title, summary) in summaries.items()
    ]
    names = stack.dense.embed_documents([e.display_name for e in entities])
    embeddings = {e.name: unit(v) for e, v in zip(entities, names, strict=True)}
    # Written like `tests.graph_fixtures.publish_graph`, but with the documents' real content
    # hashes (that helper records `hash-{path}`), as a build records them.
    graph = stack.graph_store.scope(ORG)
    digests = {d["path"]: d["contentHash"] for d in documents}
    for path, path_chunks in chunks.items():
        graph.put_chunks(path, digests[path], path_chunks)
    version = graph.begin_version(
        extractor="fixture", summarizer="fixture", embedding_model=stack.dense.model_id
    )
    graph.write_version(
        version,
        documents=[DocumentRef(p, digests[p], "fixture", len(c)) for p, c in chunks.items()],
        entities=entities,
        edges=edges,
        claims=claims,
        entity_embeddings=embeddings,
    )
    graph.write_communities(version, communities)
    graph.publish(version)
    return {A: a, B: b}


@pytest.fixture
def corpus(settings) -> tuple[Stack, DocumentService, dict[str, ChunkRef]]:
    stack = Stack(settings)
    service = DocumentService(stack, InMemorySaver())
    for name, text in (("carol-a.txt", TEXT_A), ("carol-b.txt", TEXT_B)):
        path = service.upload(ORG, name, text.encode())
        assert service.ingest(ORG, path).status == "indexed"
    return stack, service, publish_over_index(stack)


def texts_of(result: dict[str, Any]) -> str:
    """Everything a local result shows: sources, evidence and the rendered context."""
    parts = [s["text"] for s in result["sources"]] + [e["text"] for e in result["evidence"]]
    return "\n".join([*parts, result.get("relevantContext", "")])


async def ask_both(stack: Stack) -> tuple[dict[str, Any], dict[str, Any]]:
    local = await run_local(stack, ORG, LOCAL_QUESTION)
    overview = await run_global(stack, ORG, GLOBAL_QUESTION, options=GlobalOptions())
    assert local["status"] == "completed" and overview["status"] == "completed"
    return local, overview


async def test_before_any_change_both_documents_are_cited(corpus) -> None:
    """The baseline the other tests depend on: the graph does surface B's chunk and community."""
    stack, _, chunks = corpus
    local, overview = await ask_both(stack)
    assert {s["path"] for s in local["sources"]} == {A, B}
    assert {e["text"] for e in local["evidence"] if e["kind"] == "claim"} == {TEXT_A, TEXT_B}
    assert set(overview["communities"]) == {"2", "3"}
    assert chunks[B].chunk_id in {s["id"] for s in overview["sources"]}


async def test_deleted_document_is_never_cited_before_the_rebuild(corpus) -> None:
    stack, service, chunks = corpus
    assert service.delete(ORG, B).status == "deleted"  # vectors and file gone; the graph untouched
    assert stack.graph_store.scope(ORG).published_version().version == 1

    local, overview = await ask_both(stack)
    assert all(s["path"] != B for s in local["sources"])
    assert TEXT_B not in texts_of(local) and "Fezziwig dancing" not in texts_of(local)
    assert all(e["sourceId"] != chunks[B].chunk_id for e in local["evidence"])
    # A's evidence remains: its chunk, and its claim cited by a source of A
    assert any(s["id"] == chunks[A].chunk_id and s["text"] == TEXT_A for s in local["sources"])
    assert [e["text"] for e in local["evidence"] if e["kind"] == "claim"] == [TEXT_A]

    assert "3" not in overview["communities"]  # every document it drew on is gone
    assert overview["communities"] == ["2"]
    assert overview["sources"] and all(s["path"] == A for s in overview["sources"])
    assert "Fezziwig dancing" not in overview["answer"]
    assert set(overview["sourceCommunities"]) <= {chunks[A].chunk_id}


async def test_a_community_of_deleted_documents_leaves_local_context(corpus) -> None:
    """Community 3 was summarized from B alone: after B's delete its summary is not shown, although
    its members (Fezziwig, the Ghost) still match the question until the next build."""
    stack, service, _ = corpus
    question = "Who is Fezziwig, and what did the Ghost of Christmas Past show?"
    before = await run_local(stack, ORG, question)
    assert 3 in {int(c["id"]) for c in before["communities"]}
    assert "merry ball" in before["relevantContext"]

    assert service.delete(ORG, B).status == "deleted"
    after = await run_local(stack, ORG, question)
    assert 3 not in {int(c["id"]) for c in after["communities"]}
    assert "merry ball" not in after["relevantContext"]


async def test_replaced_document_is_cited_only_with_its_new_text(corpus) -> None:
    stack, service, chunks = corpus
    path = service.upload(ORG, "carol-b.txt", TEXT_B_NEW.encode())  # same name, other content
    assert path == B and service.ingest(ORG, path).status == "indexed"
    record = stack.index.fetch([chunks[B].chunk_id], namespace=ORG)[chunks[B].chunk_id]
    assert record["metadata"]["text"] == TEXT_B_NEW  # same id as the graph's chunk, new hash

    local, overview = await ask_both(stack)
    assert TEXT_B not in texts_of(local) and "Fezziwig dancing" not in texts_of(local)
    assert all(s["text"] == TEXT_B_NEW for s in local["sources"] if s["path"] == B)  # the index's text
    assert all(e["kind"] == "chunk" or e["text"] == TEXT_A for e in local["evidence"])
    assert any(s["id"] == chunks[A].chunk_id and s["text"] == TEXT_A for s in local["sources"])

    assert overview["communities"] == ["2"]
    assert overview["sources"] and all(s["path"] == A for s in overview["sources"])
    assert "Fezziwig dancing" not in overview["answer"]


async def test_status_counts_the_deleted_document_as_stale(corpus) -> None:
    stack, service, _ = corpus
    before = graph_status(ORG, stack=stack)
    assert before["upToDate"] is True and stale_documents(before) == "none"
    service.delete(ORG, B)
    after = graph_status(ORG, stack=stack)
    assert after["upToDate"] is False and after["removedDocuments"] == [B]
    assert stale_documents(after) == f"1: {B} (deleted)"


# ----------------------------------------------------------------------------------- the CLI


def test_cli_delete_says_the_graph_drops_it_at_the_next_build(tmp_path: Path, monkeypatch, capsys) -> None:
    from librarian.settings import get_settings
    from librarian_cli import main

    for name in list(os.environ):
        if name.startswith("LIBRARIAN_") and name != "LIBRARIAN_SHARED_DIR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LIBRARIAN_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "carol-a.txt").write_text(TEXT_A)
    (folder / "carol-b.txt").write_text(TEXT_B)
    try:
        assert main(["ingest", str(folder), "--org", ORG, "--quiet"]) == 0
        publish_over_index(Stack(get_settings()))
        capsys.readouterr()
        assert main(["delete", B, "--org", ORG]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert f"{B}: deleted" in out
        assert f"librarian graph build --org {ORG}" in out and "no longer cite it" in out
        assert main(["graph", "status", "--org", ORG]) == 0
        status = " ".join(capsys.readouterr().out.split())
        assert f"1: {B} (deleted)" in status
    finally:
        get_settings.cache_clear()


# ------------------------------------------------------------- [n] across parallel tool calls


async def test_parallel_search_and_graph_calls_never_share_a_number(
    corpus, openai_server: OpenAIWireServer
) -> None:
    """search_documents and graph_local_search in one turn: every `[n]` the model reads is one source.

    The search asks for B's chunk alone, the graph search returns A's chunk first: each call numbers
    from the same state, so without renumbering both would show a different excerpt as [1].
    """
    from graphs.agent import build_agent

    stack, _, chunks = corpus
    openai_server.chat_script += [
        [
            ToolCallReply(
                "search_documents", {"query": "Fezziwig dancing at a merry Christmas ball", "top_k": 1}
            ),
            ToolCallReply("graph_local_search", {"query": "Who does Scrooge employ as his clerk?"}),
        ],
        TextReply("Scrooge employs Bob Cratchit [2]."),
    ]
    model = ChatOpenAI(base_url=openai_server.base_url, api_key=TEST_API_KEY, model="gpt-test", max_retries=0)
    state = await build_agent(lambda: stack, model=model).ainvoke(
        {"messages": [HumanMessage("Who works for Scrooge?")]}, context={"organization_id": ORG}
    )
    shown = [m for m in openai_server.chat_requests[1]["messages"] if m["role"] == "tool"]
    assert len(shown) == 2
    sources = state["sources"]
    assert [s["id"] for s in sources] == [chunks[B].chunk_id, chunks[A].chunk_id]  # merged in call order
    numbered: dict[str, set[str]] = {}
    for message in shown:
        for header in EXCERPT_HEADER.finditer(message["content"]):
            source = sources[int(header["n"]) - 1]  # what `[n]` in the answer refers to
            assert source["filename"] == header["filename"]
            assert source["text"] in message["content"]
            numbered.setdefault(header["n"], set()).add(source["id"])
    assert set(numbered) == {"1", "2"} and all(len(ids) == 1 for ids in numbered.values())
    assert "[2] carol-a.txt" in shown[1]["content"]  # the graph's first excerpt, renumbered
    kept = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "graph_local_search"]
    assert kept and kept[0].content == shown[1]["content"]  # the state holds what the model read
