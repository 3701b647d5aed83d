"""Index a hand-made graph's chunks, so the fixture graph is one a build could have produced.

A real graph is built from the organization's vector index, and graph answers cite only what that
index still holds at the graph's content hash (`tools.graph_live`). A fixture graph published with
`librarian.graph.testing.publish_graph` must therefore have its chunks indexed too: the records are
written exactly as the ingest writes them (`graphs.ingest_nodes.vector_record`: same ids, metadata
and `contentHash`), embedded with the stack's own dense and sparse models.
"""

from __future__ import annotations

import os

from graphs.ingest_nodes import vector_record
from librarian.graph.model import ChunkRef
from librarian.stack import Stack


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
