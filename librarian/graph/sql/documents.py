"""What a version was built from: its documents, their chunks, keyword search over them, and retraction.

Chunks are keyed by path and content hash, not by version, and are read through a version's documents:
so a retracted document's chunks disappear from every version at once, and unchanged documents share
their chunks between versions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from librarian.graph.model import ChunkRef, DocumentRef, KeywordHit
from librarian.graph.sql.base import SqlOrgGraphBase

MAX_KEYWORD_TERMS = 16


def _like_pattern(term: str) -> str:
    escaped = term.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class DocumentContent(SqlOrgGraphBase):
    def documents(self, *, version: int | None = None) -> list[DocumentRef]:
        v = self._version(version)
        if v is None:
            return []
        rows = self._query(
            "SELECT path, content_hash, extractor, chunk_count FROM graph_documents "
            "WHERE org = :org AND version = :version ORDER BY path",
            {"version": v},
        )
        return [
            DocumentRef(path=r[0], content_hash=r[1], extractor=r[2], chunk_count=int(r[3])) for r in rows
        ]

    def chunks(self, chunk_ids: Iterable[str], *, version: int | None = None) -> list[ChunkRef]:
        v = self._version(version)
        wanted = list(dict.fromkeys(chunk_ids))
        if v is None or not wanted:
            return []
        rows = self._in_query(
            "SELECT c.chunk_id, c.path, c.chunk_index, c.page, c.bbox, c.text, c.content_hash "
            "FROM graph_chunks c JOIN graph_documents d ON d.org = c.org AND d.path = c.path "
            "AND d.content_hash = c.content_hash "
            "WHERE c.org = :org AND d.version = :version AND c.chunk_id IN {IN}",
            wanted,
            {"version": v},
        )
        found = {
            r[0]: ChunkRef(
                chunk_id=r[0],
                path=r[1],
                chunk_index=int(r[2]),
                page=int(r[3]),
                bbox=json.loads(r[4]) if r[4] else None,
                text=r[5],
                content_hash=r[6],
            )
            for r in rows
        }
        return [found[c] for c in wanted if c in found]

    def keyword_search(
        self, terms: Sequence[str], *, limit: int = 24, version: int | None = None
    ) -> list[KeywordHit]:
        v = self._version(version)
        cleaned = [t.strip().lower() for t in terms if t and t.strip()]
        cleaned = list(dict.fromkeys(cleaned))[:MAX_KEYWORD_TERMS]
        if v is None or not cleaned or limit <= 0:
            return []
        params: dict[str, Any] = {"version": v, "limit": int(limit)}
        tests = []
        for i, term in enumerate(cleaned):
            params[f"t{i}"] = _like_pattern(term)
            tests.append(f"lower(c.text) LIKE :t{i} ESCAPE '\\'")
        matched = " + ".join(f"(CASE WHEN {t} THEN 1 ELSE 0 END)" for t in tests)
        rows = self._query(
            f"SELECT c.chunk_id, {matched} AS matched, length(c.text) AS len "
            "FROM graph_chunks c JOIN graph_documents d ON d.org = c.org AND d.path = c.path "
            "AND d.content_hash = c.content_hash "
            f"WHERE c.org = :org AND d.version = :version AND ({' OR '.join(tests)}) "
            "ORDER BY matched DESC, len DESC, c.chunk_id LIMIT :limit",
            params,
        )
        return [KeywordHit(chunk_id=r[0], matched=int(r[1]), length=int(r[2])) for r in rows]

    def put_chunks(self, path: str, content_hash: str, chunks: Sequence[ChunkRef]) -> None:
        with self._tx() as tx:
            tx.run(
                "DELETE FROM graph_chunks WHERE org = :org AND path = :path AND content_hash = :hash",
                {"path": path, "hash": content_hash},
            )
            tx.many(
                "INSERT INTO graph_chunks (org, path, content_hash, chunk_index, chunk_id, page, bbox, text) "
                "VALUES (:org, :path, :hash, :idx, :cid, :page, :bbox, :text)",
                (
                    {
                        "path": path,
                        "hash": content_hash,
                        "idx": c.chunk_index,
                        "cid": c.chunk_id,
                        "page": c.page,
                        "bbox": json.dumps(c.bbox) if c.bbox else None,
                        "text": c.text,
                    }
                    for c in chunks
                ),
            )

    def has_chunks(self, path: str, content_hash: str) -> bool:
        rows = self._query(
            "SELECT 1 FROM graph_chunks WHERE org = :org AND path = :path AND content_hash = :hash LIMIT 1",
            {"path": path, "hash": content_hash},
        )
        return bool(rows)

    def retract_document(self, path: str) -> None:
        with self._tx() as tx:
            tx.run("DELETE FROM graph_documents WHERE org = :org AND path = :path", {"path": path})
            tx.run("DELETE FROM graph_chunks WHERE org = :org AND path = :path", {"path": path})
