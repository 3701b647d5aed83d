"""Which graph evidence is still live: the organization's vector index decides, at query time.

Why: a published graph version keeps a deleted or replaced document's chunks, claims, keyword hits
and community summaries until the next build (the server schedules one after a delete or an upload;
the CLI leaves it to `librarian graph build`). Delete removes the vectors first, and a re-upload's
ingest replaces them with records carrying the new `contentHash`, so the index is the source of
truth: a graph chunk is live exactly when the index holds a record with its id whose `path` and
`contentHash` are the ones the graph version was built from (`OrgGraph.documents`). A missing record
means deleted (or mid-reingest); another hash means replaced. Either way the graph's copy of that
text, and every claim or hit drawn from it, must not be cited.

Cost: one batched `index.fetch` per check (LanceDB: about 15 ms for 150 ids out of 20 000 records on
this machine; Pinecone: one call per 1000 ids). Local search checks the graph-derived chunk ids of
one query exactly; global search checks one chunk per document (`live_paths`), because every chunk
of a document is written and deleted together with the same hash, and then the few cited chunks
exactly. Ids the vector search itself returned need no check for their text: it comes from the index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from librarian.stack import Stack


@dataclass(frozen=True)
class Liveness:
    """The liveness check of one query: the organization's index against one graph version."""

    stack: Stack
    org: str
    expected: Mapping[str, str]  # path -> content hash the graph version was built from

    @classmethod
    def of(cls, stack: Stack, org: str, graph: Any, version: int) -> Liveness:
        """Blocking (reads the graph store): call it in a worker thread from async code."""
        return cls(stack, org, {d.path: d.content_hash for d in graph.documents(version=version)})

    def chunks(self, chunk_ids: Iterable[str]) -> set[str]:
        """The ids among `chunk_ids` whose index record still holds the graph version's content.

        One `fetch` for all of them; an id the index does not know, or whose record carries another
        path or content hash than the graph version's, is not live. Blocking: run it in a thread.
        """
        wanted = list(dict.fromkeys(i for i in chunk_ids if i))
        if not wanted:
            return set()
        records = self.stack.index.fetch(wanted, namespace=self.org)
        live: set[str] = set()
        for chunk_id, record in records.items():
            meta = record.get("metadata") or {}
            digest = meta.get("contentHash")
            if digest and self.expected.get(str(meta.get("path"))) == digest:
                live.add(chunk_id)
        return live

    def paths(self, representatives: Mapping[str, str]) -> set[str]:
        """Documents still indexed at the graph version's content, judged by one chunk each.

        `representatives` maps a path to any chunk id the graph holds for it: a document's records are
        deleted and rewritten together, so one record answers for all of them.
        """
        live = self.chunks(representatives.values())
        return {path for path, chunk_id in representatives.items() if chunk_id in live}
