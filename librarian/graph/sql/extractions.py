"""The extraction cache: per-document payloads and per-chunk observations, keyed by content, not version.

A rebuild after a small change re-extracts only what changed: a document whose content hash and
extractor key match reuses its payload, and a changed document reuses the observations of its
unchanged chunks (by text hash).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from librarian.graph.sql.base import SqlOrgGraphBase
from librarian.graph.sql.codec import now
from librarian.graph.sql.runner import batches, in_list


def _compact(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


class ExtractionCache(SqlOrgGraphBase):
    def get_extraction(self, path: str, content_hash: str, extractor: str) -> dict[str, Any] | None:
        rows = self._query(
            "SELECT payload FROM graph_extractions WHERE org = :org AND path = :path "
            "AND content_hash = :hash AND extractor = :extractor",
            {"path": path, "hash": content_hash, "extractor": extractor},
        )
        if not rows:
            return None
        try:
            payload = json.loads(rows[0][0])
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None

    def put_extraction(self, path: str, content_hash: str, extractor: str, payload: dict[str, Any]) -> None:
        with self._tx() as tx:
            tx.run(
                "INSERT INTO graph_extractions (org, path, content_hash, extractor, payload, created_at) "
                "VALUES (:org, :path, :hash, :extractor, :payload, :created) "
                "ON CONFLICT (org, path) DO UPDATE SET content_hash = excluded.content_hash, "
                "extractor = excluded.extractor, payload = excluded.payload, "
                "created_at = excluded.created_at",
                {
                    "path": path,
                    "hash": content_hash,
                    "extractor": extractor,
                    "payload": _compact(payload),
                    "created": now(),
                },
            )

    def cached_extractions(self) -> dict[str, tuple[str, str]]:
        rows = self._query("SELECT path, content_hash, extractor FROM graph_extractions WHERE org = :org")
        return {r[0]: (r[1], r[2]) for r in rows}

    def prune_extractions(self, indexed: Mapping[str, str]) -> int:
        with self._tx() as tx:
            cached = tx.run("SELECT path, content_hash FROM graph_extractions WHERE org = :org")
            gone = sorted({path for path, digest in cached if indexed.get(path) != digest})
            observed = tx.run("SELECT DISTINCT path FROM graph_chunk_extractions WHERE org = :org")
            orphans = sorted({path for (path,) in observed if path not in indexed})
            for table, paths in (("graph_extractions", gone), ("graph_chunk_extractions", orphans)):
                for batch in batches(paths):
                    params: dict[str, Any] = {}
                    tx.run(
                        f"DELETE FROM {table} WHERE org = :org AND path IN {in_list('p', batch, params)}",
                        params,
                    )
        return len(gone)

    def get_chunk_extractions(self, path: str, extractor: str) -> dict[str, dict[str, Any]]:
        rows = self._query(
            "SELECT text_hash, payload FROM graph_chunk_extractions WHERE org = :org AND path = :path "
            "AND extractor = :extractor",
            {"path": path, "extractor": extractor},
        )
        out: dict[str, dict[str, Any]] = {}
        for text_hash, payload in rows:
            try:
                out[text_hash] = json.loads(payload)
            except ValueError:
                continue  # unreadable: that chunk is simply extracted again
        return out

    def put_chunk_extractions(
        self, path: str, extractor: str, observations: dict[str, dict[str, Any]]
    ) -> None:
        with self._tx() as tx:
            tx.run("DELETE FROM graph_chunk_extractions WHERE org = :org AND path = :path", {"path": path})
            tx.many(
                "INSERT INTO graph_chunk_extractions (org, path, extractor, text_hash, payload) "
                "VALUES (:org, :path, :extractor, :hash, :payload)",
                (
                    {"path": path, "extractor": extractor, "hash": h, "payload": _compact(o)}
                    for h, o in observations.items()
                ),
            )

    def delete_extraction(self, path: str) -> None:
        with self._tx() as tx:
            tx.run("DELETE FROM graph_extractions WHERE org = :org AND path = :path", {"path": path})
