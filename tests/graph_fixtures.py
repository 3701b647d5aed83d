"""A small hand-made graph, written and published through the real store, for retrieval tests.

No NLP model and no Leiden run: every entity, edge, claim and community is spelled out here, so a
retrieval test can compute its expectations by hand. Embeddings are deterministic unit vectors
(one axis per topic), so cosine similarities are exact: 1.0 on the same axis, 0.0 otherwise.

    edges: marley─scrooge (visits, 3), bob cratchit─scrooge (employs, 2),
           bob cratchit─tiny tim (father_of, 4), ghost of christmas past─scrooge (sees, 1),
           fezziwig─scrooge (employs, 1)
    communities: 1 (level 0, root) = all six
                 ├── 2 (level 1, leaf) = scrooge, marley, ghost of christmas past
                 └── 3 (level 1, leaf) = bob cratchit, tiny tim, fezziwig
"""

from __future__ import annotations

import numpy as np

from librarian.graph.model import (
    ChunkRef,
    Claim,
    Community,
    DocumentRef,
    Edge,
    Entity,
    GraphVersion,
    Provenance,
    claim_id,
)
from librarian.graph.store import GraphStore, OrgGraph

DIMENSION = 8
PATH_A = "docs/carol-a.txt"
PATH_B = "docs/carol-b.txt"


def axis(i: int, dimension: int = DIMENSION) -> np.ndarray:
    v = np.zeros(dimension, dtype=np.float32)
    v[i] = 1.0
    return v


def _chunk(path: str, index: int, text: str) -> ChunkRef:
    return ChunkRef(
        chunk_id=f"{path}:{index}",
        path=path,
        chunk_index=index,
        page=1 + index,
        bbox={"left": 0.1, "top": 0.1 * (index + 1), "width": 0.8, "height": 0.05},
        text=text,
        content_hash=f"hash-{path}",
    )


CHUNKS = {
    PATH_A: [
        _chunk(PATH_A, 0, "Marley was dead. Scrooge visits the grave of Marley every winter."),
        _chunk(PATH_A, 1, "Scrooge employs Bob Cratchit as his clerk for fifteen shillings."),
    ],
    PATH_B: [
        _chunk(PATH_B, 0, "Bob Cratchit is the father of Tiny Tim, who is ill."),
        _chunk(PATH_B, 1, "The Ghost of Christmas Past shows Scrooge his old master Fezziwig."),
    ],
}


def _src(path: str, index: int) -> Provenance:
    return Provenance(path, f"{path}:{index}")


def fixture_graph() -> tuple[list[Entity], list[Edge], list[Claim], list[Community]]:
    entities = [
        Entity(
            "scrooge",
            "Ebenezer Scrooge",
            "PERSON",
            "A miser.",
            ["ebenezer scrooge", "mr. scrooge"],
            [_src(PATH_A, 0), _src(PATH_A, 1), _src(PATH_B, 1)],
            mentions=4,
        ),
        Entity(
            "marley",
            "Jacob Marley",
            "PERSON",
            "Scrooge's dead partner.",
            ["jacob marley"],
            [_src(PATH_A, 0)],
            mentions=2,
        ),
        Entity(
            "bob cratchit",
            "Bob Cratchit",
            "PERSON",
            "Scrooge's clerk.",
            ["cratchit"],
            [_src(PATH_A, 1), _src(PATH_B, 0)],
            mentions=2,
        ),
        Entity("tiny tim", "Tiny Tim", "PERSON", "Bob's ill son.", [], [_src(PATH_B, 0)], mentions=1),
        Entity(
            "ghost of christmas past",
            "Ghost of Christmas Past",
            "PERSON",
            "The first spirit.",
            [],
            [_src(PATH_B, 1)],
            mentions=1,
        ),
        Entity("fezziwig", "Fezziwig", "PERSON", "Scrooge's old master.", [], [_src(PATH_B, 1)], mentions=1),
    ]
    edges = [
        Edge("marley", "scrooge", "visits", 3.0, "", [_src(PATH_A, 0)]),
        Edge("bob cratchit", "scrooge", "employs", 2.0, "", [_src(PATH_A, 1)]),
        Edge("bob cratchit", "tiny tim", "father_of", 4.0, "", [_src(PATH_B, 0)]),
        Edge("ghost of christmas past", "scrooge", "sees", 1.0, "", [_src(PATH_B, 1)]),
        Edge("fezziwig", "scrooge", "employs", 1.0, "", [_src(PATH_B, 1)]),
    ]
    claim_rows = [
        ("scrooge", "marley", "Scrooge visits the grave of Marley every winter.", PATH_A, 0),
        (
            "scrooge",
            "bob cratchit",
            "Scrooge employs Bob Cratchit as his clerk for fifteen shillings.",
            PATH_A,
            1,
        ),
        ("bob cratchit", "tiny tim", "Bob Cratchit is the father of Tiny Tim, who is ill.", PATH_B, 0),
        (
            "scrooge",
            "fezziwig",
            "The Ghost of Christmas Past shows Scrooge his old master Fezziwig.",
            PATH_B,
            1,
        ),
    ]
    claims = [Claim(claim_id(s, d), s, o, d, f"{p}:{i}", p, [_src(p, i)]) for s, o, d, p, i in claim_rows]
    communities = [
        Community(
            1,
            0,
            None,
            sorted(e.name for e in entities),
            [2, 3],
            False,
            "fp-root",
            "A Christmas Carol",
            "Scrooge, his clerk and the spirits.",
            axis(0),
            "fixture",
            10.0,
        ),
        Community(
            2,
            1,
            1,
            ["ghost of christmas past", "marley", "scrooge"],
            [],
            True,
            "fp-scrooge",
            "Scrooge and the ghosts",
            "Scrooge is visited by Marley and the spirits.",
            axis(1),
            "fixture",
            6.0,
        ),
        Community(
            3,
            1,
            1,
            ["bob cratchit", "fezziwig", "tiny tim"],
            [],
            True,
            "fp-cratchit",
            "The Cratchit family",
            "Bob Cratchit's family and Tiny Tim.",
            axis(2),
            "fixture",
            4.0,
        ),
    ]
    return entities, edges, claims, communities


def build_fixture_graph(store: GraphStore, org: str, *, name_prefix: str = "") -> GraphVersion:
    """Write and publish the fixture graph for `org`; returns the published version.

    Entity-name embeddings: axis 3 for names containing "scrooge", axis 4 for the rest.
    `name_prefix` is prepended to every summary (to tell organizations apart in isolation tests).
    """
    g = store.scope(org)
    entities, edges, claims, communities = fixture_graph()
    for community in communities:
        community.summary = name_prefix + community.summary
    embeddings = {e.name: axis(3) if "scrooge" in e.name else axis(4) for e in entities}
    return publish_graph(
        g, CHUNKS, entities, edges, claims, communities, embeddings, embedding_model="axes-8"
    )


def publish_graph(
    g: OrgGraph,
    chunks: dict[str, list[ChunkRef]],
    entities: list[Entity],
    edges: list[Edge],
    claims: list[Claim],
    communities: list[Community],
    entity_embeddings: dict[str, np.ndarray],
    *,
    embedding_model: str,
) -> GraphVersion:
    """Write chunks and one version of a hand-made graph through a scoped store, and publish it."""
    for path, path_chunks in chunks.items():
        g.put_chunks(path, f"hash-{path}", path_chunks)
    version = g.begin_version(extractor="fixture", summarizer="fixture", embedding_model=embedding_model)
    documents = [DocumentRef(p, f"hash-{p}", "fixture", len(c)) for p, c in chunks.items()]
    g.write_version(
        version,
        documents=documents,
        entities=entities,
        edges=edges,
        claims=claims,
        entity_embeddings=entity_embeddings,
    )
    g.write_communities(version, communities)
    return g.publish(version, {"fixture": True})
