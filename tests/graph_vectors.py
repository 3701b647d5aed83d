"""Fixture graphs over indexed chunks: what a build could have produced, for the graph tool tests.

A real graph is built from the organization's vector index, and graph answers cite only what that
index still holds at the graph's content hash (`librarian.graph.query.liveness`). A fixture graph
published with `tests.graph_fixtures.publish_graph` must therefore have its chunks indexed too:
the records are written exactly as the ingest writes them (`graphs.ingest_nodes.vector_record`:
same ids, metadata and `contentHash`), embedded with the stack's own dense and sparse models.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from graphs.ingest_nodes import vector_record
from librarian.graph.model import ChunkRef
from librarian.settings import Settings
from librarian.stack import Stack
from tests.graph_fixtures import CHUNKS, build_fixture_graph, fixture_graph, publish_graph


def index_graph_chunks(stack: Stack, org: str, chunks: dict[str, list[ChunkRef]]) -> int:
    """Upsert every chunk into `org`'s namespace; returns how many records were written."""
    written = 0
    for path, refs in chunks.items():
        texts = [c.text for c in refs]
        dense = stack.dense.embed_documents(texts)
        sparse = stack.sparse.embed_documents(texts)
        job = {
            "path": path,
            "filename": os.path.basename(path),
            "mediaType": "text/plain",
            "contentHash": refs[0].content_hash,
        }
        records = [
            vector_record(
                job,  # type: ignore[arg-type]  # the fields vector_record reads
                {  # type: ignore[arg-type]
                    "chunkIndex": c.chunk_index,
                    "page": c.page,
                    "blockType": "Text",
                    "text": c.text,
                    "bbox": c.bbox,
                },
                d,
                s,
            )
            for c, d, s in zip(refs, dense, sparse, strict=True)
        ]
        written += stack.index.upsert(records, namespace=org)
    return written


def unit(vector: list[float]) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    return v / (np.linalg.norm(v) or 1.0)


def build_marked_graph(stack: Stack, org: str, marker: str) -> None:
    """The fixture graph with `marker` in every chunk, claim and summary, embedded with MiniLM."""
    g = stack.graph_store.scope(org)
    entities, edges, claims, communities = fixture_graph()
    chunks = {
        path: [dataclasses.replace(c, text=f"{marker} {c.text}") for c in path_chunks]
        for path, path_chunks in CHUNKS.items()
    }
    claims = [dataclasses.replace(c, description=f"{marker} {c.description}") for c in claims]
    for community in communities:
        community.summary = f"{marker} {community.summary}"
        community.summary_embedding = unit(stack.dense.embed_query(community.summary))
    names = stack.dense.embed_documents([e.display_name for e in entities])
    embeddings = {e.name: unit(v) for e, v in zip(entities, names, strict=True)}
    publish_graph(
        g, chunks, entities, edges, claims, communities, embeddings, embedding_model=stack.dense.model_id
    )
    index_graph_chunks(stack, org, chunks)  # graph answers cite only what the index holds


def two_org_fixture_stack(data_dir: Path) -> Stack:
    """A stack holding the fixture graph twice, as organizations `org-a` and `org-b` (names prefixed
    "A: " / "B: "), with both organizations' chunks indexed."""
    current = Stack(Settings(data_dir=data_dir))
    build_fixture_graph(current.graph_store, "org-a", name_prefix="A: ")
    build_fixture_graph(current.graph_store, "org-b", name_prefix="B: ")
    for org in (
        "org-a",
        "org-b",
    ):  # graph answers cite only what the index holds (librarian.graph.query.liveness)
        index_graph_chunks(current, org, CHUNKS)
    return current
