"""The SQL behind both graph store engines: one schema, one set of statements, one scoping runner.

Statements are written with `:name` parameters; the PostgreSQL engine rewrites them to psycopg's
`%(name)s`. `_Scoped.run` is the single place statements are executed: it refuses a statement that does
not name `:org` and always binds `org` itself, so no caller can read or write another organization's
rows or forget the organization.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from librarian.graph.model import (
    ChunkRef,
    Claim,
    Community,
    DocumentRef,
    Edge,
    Entity,
    GraphVersion,
    KeywordHit,
    Provenance,
)
from librarian.graph.schema import ALL_TABLES, VERSIONED_TABLES
from librarian.graph.store import GraphStore, OrgGraph
from librarian.tenancy import validate_organization_id

MAX_KEYWORD_TERMS = 16
_BATCH = 500  # values per IN (...) list: far below SQLite's variable limit


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def to_blob(vector: np.ndarray | Sequence[float] | None) -> bytes | None:
    """float32 bytes of the L2-normalised vector (so a dot product is a cosine)."""
    if vector is None:
        return None
    array = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(array))
    if norm > 0:
        array = array / norm
    return array.astype(np.float32).tobytes()


def from_blob(blob: Any) -> np.ndarray | None:
    if blob is None:
        return None
    return np.frombuffer(bytes(blob), dtype=np.float32).copy()


def _stack(vectors: list[np.ndarray]) -> np.ndarray:
    if not vectors:
        return np.zeros((0, 0), dtype=np.float32)
    return np.vstack(vectors).astype(np.float32)


def _batches(values: Sequence[Any], size: int = _BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _in_list(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """`(:p0, :p1, ...)` with the values bound into `params`."""
    names = []
    for i, value in enumerate(values):
        key = f"{prefix}{i}"
        params[key] = value
        names.append(f":{key}")
    return "(" + ", ".join(names) + ")" if names else "(NULL)"


def _like_pattern(term: str) -> str:
    escaped = term.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class Cursor(Protocol):
    """The part of a DB-API cursor the runner needs (engines adapt parameter style)."""

    def execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]: ...

    def executemany(self, sql: str, rows: list[dict[str, Any]]) -> None: ...


class Engine(Protocol):
    def transaction(self, *, write: bool = True) -> AbstractContextManager[Cursor]: ...

    def close(self) -> None: ...


class _Scoped:
    """A transaction bound to one organization: the only way statements reach the database."""

    def __init__(self, cursor: Cursor, org: str) -> None:
        self._cursor = cursor
        self._org = org

    @staticmethod
    def _check(sql: str) -> None:
        if ":org" not in sql:
            raise AssertionError("graph store statement without the organization scope")

    def run(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        self._check(sql)
        return self._cursor.execute(sql, {**(params or {}), "org": self._org})

    def many(self, sql: str, rows: Iterable[dict[str, Any]]) -> None:
        self._check(sql)
        bound = [{**row, "org": self._org} for row in rows]
        if bound:
            self._cursor.executemany(sql, bound)


class SqlOrgGraph(OrgGraph):
    """`OrgGraph` over either engine. Construct only through `SqlGraphStore.scope`."""

    def __init__(self, engine: Engine, org: str) -> None:
        self._engine = engine
        self.org = org

    # --- plumbing -----------------------------------------------------------------------------------
    def _tx(self, *, write: bool = True) -> AbstractContextManager[_Scoped]:
        engine, org = self._engine, self.org

        class _Ctx:
            def __enter__(self_inner) -> _Scoped:
                self_inner._cm = engine.transaction(write=write)
                return _Scoped(self_inner._cm.__enter__(), org)

            def __exit__(self_inner, *exc: Any) -> Any:
                return self_inner._cm.__exit__(*exc)

        return _Ctx()

    def _query(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        with self._tx(write=False) as tx:
            return tx.run(sql, params)

    def _version(self, version: int | None) -> int | None:
        if version is not None:
            return int(version)
        rows = self._query("SELECT version FROM graph_published WHERE org = :org")
        return int(rows[0][0]) if rows else None

    def _in_query(
        self, sql_template: str, values: Iterable[Any], params: dict[str, Any], slots: int = 1
    ) -> list[tuple[Any, ...]]:
        """Run `sql_template` (with `{IN}` placeholders) once per batch of values."""
        items = list(dict.fromkeys(values))
        out: list[tuple[Any, ...]] = []
        with self._tx(write=False) as tx:
            for batch in _batches(items):
                p = dict(params)
                in_sql = _in_list("v", batch, p)
                out.extend(tx.run(sql_template.replace("{IN}", in_sql), p))
        return out

    # --- versions -------------------------------------------------------------------------------------
    def _version_from_row(self, row: tuple[Any, ...]) -> GraphVersion:
        version, status, created, published, extractor, summarizer, model, counts, stats = row
        counts_d = json.loads(counts or "{}")
        return GraphVersion(
            org=self.org,
            version=int(version),
            status=status,
            created_at=created,
            published_at=published,
            documents=int(counts_d.get("documents", 0)),
            entities=int(counts_d.get("entities", 0)),
            edges=int(counts_d.get("edges", 0)),
            claims=int(counts_d.get("claims", 0)),
            communities_per_level={int(k): int(v) for k, v in counts_d.get("communities", {}).items()},
            extractor=extractor,
            summarizer=summarizer,
            embedding_model=model,
            stats=json.loads(stats or "{}"),
        )

    _VERSION_COLS = (
        "version, status, created_at, published_at, extractor, summarizer, embedding_model, counts, stats"
    )

    def published_version(self) -> GraphVersion | None:
        rows = self._query(
            f"SELECT {self._VERSION_COLS} FROM graph_versions WHERE org = :org AND version = "
            "(SELECT version FROM graph_published WHERE org = :org)"
        )
        return self._version_from_row(rows[0]) if rows else None

    def versions(self) -> list[GraphVersion]:
        rows = self._query(
            f"SELECT {self._VERSION_COLS} FROM graph_versions WHERE org = :org ORDER BY version DESC"
        )
        return [self._version_from_row(r) for r in rows]

    # --- reads ----------------------------------------------------------------------------------------
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

    def _live_sources(self, kind: str, items: Sequence[str], v: int) -> dict[str, list[Provenance]]:
        """Sources of items whose document is still part of the version (see `retract_document`)."""
        rows = self._in_query(
            "SELECT s.item, s.path, s.chunk_id FROM graph_sources s JOIN graph_documents d "
            "ON d.org = s.org AND d.version = s.version AND d.path = s.path "
            "WHERE s.org = :org AND s.version = :version AND s.kind = :kind AND s.item IN {IN}",
            items,
            {"version": v, "kind": kind},
        )
        out: dict[str, list[Provenance]] = defaultdict(list)
        for item, path, chunk in rows:
            out[item].append(Provenance(path, chunk))
        for sources in out.values():
            sources.sort()
        return out

    def entities(self, names: Iterable[str] | None = None, *, version: int | None = None) -> list[Entity]:
        v = self._version(version)
        if v is None:
            return []
        cols = "name, display_name, type, description, mentions, degree"
        if names is None:
            rows = self._query(
                f"SELECT {cols} FROM graph_entities WHERE org = :org AND version = :version ORDER BY name",
                {"version": v},
            )
            alias_rows = self._query(
                "SELECT name, alias FROM graph_aliases WHERE org = :org AND version = :version",
                {"version": v},
            )
        else:
            keys = list(names)
            rows = self._in_query(
                f"SELECT {cols} FROM graph_entities WHERE org = :org AND version = :version "
                "AND name IN {IN}",
                keys,
                {"version": v},
            )
            alias_rows = self._in_query(
                "SELECT name, alias FROM graph_aliases WHERE org = :org AND version = :version "
                "AND name IN {IN}",
                keys,
                {"version": v},
            )
        aliases: dict[str, list[str]] = defaultdict(list)
        for name, alias in alias_rows:
            aliases[name].append(alias)
        found = sorted(rows, key=lambda r: r[0])
        sources = self._live_sources("e", [r[0] for r in found], v)
        return [
            Entity(
                name=r[0],
                display_name=r[1],
                type=r[2],
                description=r[3],
                mentions=int(r[4]),
                degree=int(r[5]),
                aliases=sorted(aliases.get(r[0], [])),
                sources=sources.get(r[0], []),
            )
            for r in found
        ]

    def resolve_names(self, keys: Iterable[str], *, version: int | None = None) -> dict[str, str]:
        v = self._version(version)
        wanted = [k for k in dict.fromkeys(keys) if k]
        if v is None or not wanted:
            return {}
        out: dict[str, str] = {}
        for alias, name in self._in_query(
            "SELECT alias, name FROM graph_aliases WHERE org = :org AND version = :version AND alias IN {IN}",
            wanted,
            {"version": v},
        ):
            out[alias] = name
        for (name,) in self._in_query(
            "SELECT name FROM graph_entities WHERE org = :org AND version = :version AND name IN {IN}",
            wanted,
            {"version": v},
        ):
            out[name] = name
        return out

    def entity_name_embeddings(self, *, version: int | None = None) -> tuple[list[str], np.ndarray]:
        v = self._version(version)
        if v is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        rows = self._query(
            "SELECT name, embedding FROM graph_entities WHERE org = :org AND version = :version "
            "AND embedding IS NOT NULL ORDER BY name",
            {"version": v},
        )
        return [r[0] for r in rows], _stack([from_blob(r[1]) for r in rows])  # type: ignore[misc]

    def edges(self, names: Iterable[str] | None = None, *, version: int | None = None) -> list[Edge]:
        v = self._version(version)
        if v is None:
            return []
        cols = "source, target, relation, weight, description"
        if names is None:
            rows = self._query(
                f"SELECT {cols} FROM graph_edges WHERE org = :org AND version = :version",
                {"version": v},
            )
        else:
            keys = list(names)
            rows = self._in_query(
                f"SELECT {cols} FROM graph_edges WHERE org = :org AND version = :version "
                "AND (source IN {IN} OR target IN {IN})",
                keys,
                {"version": v},
            )
        unique = sorted({(r[0], r[1]): r for r in rows}.values())
        sources = self._live_sources("r", [f"{r[0]}\x1f{r[1]}" for r in unique], v)
        return [
            Edge(
                source=r[0],
                target=r[1],
                relation=r[2],
                weight=float(r[3]),
                description=r[4],
                sources=sources.get(f"{r[0]}\x1f{r[1]}", []),
            )
            for r in unique
        ]

    def neighbours(self, names: Iterable[str], hops: int = 2, *, version: int | None = None) -> set[str]:
        v = self._version(version)
        if v is None:
            return set()
        seeds = list(dict.fromkeys(names))
        present = {
            r[0]
            for r in self._in_query(
                "SELECT name FROM graph_entities WHERE org = :org AND version = :version AND name IN {IN}",
                seeds,
                {"version": v},
            )
        }
        reached, frontier = set(present), set(present)
        for _ in range(max(0, hops)):
            if not frontier:
                break
            rows = self._in_query(
                "SELECT source, target FROM graph_edges WHERE org = :org AND version = :version "
                "AND (source IN {IN} OR target IN {IN})",
                sorted(frontier),
                {"version": v},
            )
            nxt = {n for r in rows for n in r} - reached
            reached |= nxt
            frontier = nxt
        return reached

    def communities(
        self,
        *,
        level: int | None = None,
        ids: Iterable[int] | None = None,
        leaves_only: bool = False,
        with_embeddings: bool = False,
        version: int | None = None,
    ) -> list[Community]:
        v = self._version(version)
        if v is None:
            return []
        cols = "id, level, parent, children, is_leaf, fingerprint, title, summary, summarizer, rank"
        if with_embeddings:
            cols += ", embedding"
        where = "org = :org AND version = :version"
        params: dict[str, Any] = {"version": v}
        if level is not None:
            where += " AND level = :level"
            params["level"] = int(level)
        if leaves_only:
            where += " AND is_leaf = 1"
        sql = f"SELECT {cols} FROM graph_communities WHERE {where}"
        if ids is not None:
            rows = self._in_query(sql + " AND id IN {IN}", [int(i) for i in ids], params)
        else:
            rows = self._query(sql, params)
        rows = sorted(rows, key=lambda r: (int(r[1]), int(r[0])))
        members: dict[int, list[str]] = defaultdict(list)
        for community, name in self._in_query(
            "SELECT community, name FROM graph_community_members WHERE org = :org AND version = :version "
            "AND community IN {IN}",
            [int(r[0]) for r in rows],
            {"version": v},
        ):
            members[int(community)].append(name)
        return [
            Community(
                id=int(r[0]),
                level=int(r[1]),
                parent=None if r[2] is None else int(r[2]),
                children=[int(c) for c in json.loads(r[3] or "[]")],
                is_leaf=bool(r[4]),
                fingerprint=r[5],
                title=r[6],
                summary=r[7],
                summarizer=r[8],
                rank=float(r[9]),
                members=sorted(members.get(int(r[0]), [])),
                summary_embedding=from_blob(r[10]) if with_embeddings else None,
            )
            for r in rows
        ]

    def communities_of(self, names: Iterable[str], *, version: int | None = None) -> dict[str, list[int]]:
        v = self._version(version)
        if v is None:
            return {}
        out: dict[str, list[int]] = defaultdict(list)
        for community, name in self._in_query(
            "SELECT community, name FROM graph_community_members WHERE org = :org AND version = :version "
            "AND name IN {IN}",
            list(names),
            {"version": v},
        ):
            out[name].append(int(community))
        return {name: sorted(ids) for name, ids in out.items()}

    def summary_embeddings(
        self, *, level: int | None = None, version: int | None = None
    ) -> tuple[list[int], np.ndarray]:
        v = self._version(version)
        if v is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        sql = (
            "SELECT id, embedding FROM graph_communities WHERE org = :org AND version = :version "
            "AND embedding IS NOT NULL"
        )
        params: dict[str, Any] = {"version": v}
        if level is not None:
            sql += " AND level = :level"
            params["level"] = int(level)
        rows = sorted(self._query(sql, params), key=lambda r: int(r[0]))
        return [int(r[0]) for r in rows], _stack([from_blob(r[1]) for r in rows])  # type: ignore[misc]

    def claims_for(
        self, names: Iterable[str], *, limit: int | None = None, version: int | None = None
    ) -> list[Claim]:
        v = self._version(version)
        if v is None:
            return []
        keys = list(dict.fromkeys(names))
        rows = self._in_query(
            "SELECT id, subject, object, description, chunk_id, path FROM graph_claims "
            "WHERE org = :org AND version = :version AND (subject IN {IN} OR object IN {IN})",
            keys,
            {"version": v},
        )
        unique = {r[0]: r for r in rows}
        sources = self._live_sources("c", list(unique), v)
        subjects = {r[1] for r in unique.values()}
        degree = {
            r[0]: int(r[1])
            for r in self._in_query(
                "SELECT name, degree FROM graph_entities WHERE org = :org AND version = :version "
                "AND name IN {IN}",
                sorted(subjects),
                {"version": v},
            )
        }
        claims = []
        for cid, subject, obj, description, chunk_id, path in unique.values():
            live = sources.get(cid)
            if not live:
                continue
            first = Provenance(path, chunk_id) if Provenance(path, chunk_id) in live else live[0]
            claims.append(
                Claim(
                    id=cid,
                    subject=subject,
                    object=obj,
                    description=description,
                    chunk_id=first.chunk_id,
                    path=first.path,
                    sources=live,
                )
            )
        claims.sort(key=lambda c: (-degree.get(c.subject, 0), c.id))
        return claims[:limit] if limit is not None else claims

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

    # --- extraction cache -----------------------------------------------------------------------------
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
                    "payload": json.dumps(payload, ensure_ascii=False, separators=(",", ":")),
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
                for batch in _batches(paths):
                    params: dict[str, Any] = {}
                    tx.run(
                        f"DELETE FROM {table} WHERE org = :org AND path IN {_in_list('p', batch, params)}",
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
                    {
                        "path": path,
                        "extractor": extractor,
                        "hash": h,
                        "payload": json.dumps(o, ensure_ascii=False, separators=(",", ":")),
                    }
                    for h, o in observations.items()
                ),
            )

    def delete_extraction(self, path: str) -> None:
        with self._tx() as tx:
            tx.run("DELETE FROM graph_extractions WHERE org = :org AND path = :path", {"path": path})

    # --- chunks ---------------------------------------------------------------------------------------
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

    # --- build and publish ----------------------------------------------------------------------------
    def begin_version(self, *, extractor: str, summarizer: str, embedding_model: str) -> int:
        with self._tx() as tx:
            rows = tx.run("SELECT COALESCE(MAX(version), 0) FROM graph_versions WHERE org = :org")
            version = int(rows[0][0]) + 1
            tx.run(
                "INSERT INTO graph_versions (org, version, status, created_at, extractor, summarizer, "
                "embedding_model, counts, stats) VALUES (:org, :version, 'building', :created, :extractor, "
                ":summarizer, :model, '{}', '{}')",
                {
                    "version": version,
                    "created": now(),
                    "extractor": extractor,
                    "summarizer": summarizer,
                    "model": embedding_model,
                },
            )
        return version

    def write_version(
        self,
        version: int,
        *,
        documents: Sequence[DocumentRef],
        entities: Sequence[Entity],
        edges: Sequence[Edge],
        claims: Sequence[Claim],
        entity_embeddings: dict[str, np.ndarray] | None = None,
    ) -> None:
        embeddings = entity_embeddings or {}
        degree: dict[str, int] = defaultdict(int)
        for e in edges:
            degree[e.source] += 1
            degree[e.target] += 1
        v = {"version": int(version)}
        with self._tx() as tx:
            tx.many(
                "INSERT INTO graph_documents (org, version, path, content_hash, extractor, chunk_count) "
                "VALUES (:org, :version, :path, :hash, :extractor, :count)",
                (
                    {
                        **v,
                        "path": d.path,
                        "hash": d.content_hash,
                        "extractor": d.extractor,
                        "count": d.chunk_count,
                    }
                    for d in documents
                ),
            )
            tx.many(
                "INSERT INTO graph_entities (org, version, name, display_name, type, description, mentions, "
                "degree, embedding) VALUES (:org, :version, :name, :display, :type, :description, "
                ":mentions, :degree, :embedding)",
                (
                    {
                        **v,
                        "name": e.name,
                        "display": e.display_name,
                        "type": e.type,
                        "description": e.description,
                        "mentions": e.mentions,
                        "degree": degree.get(e.name, 0),
                        "embedding": to_blob(embeddings.get(e.name)),
                    }
                    for e in entities
                ),
            )
            alias_rows: dict[str, str] = {}
            for e in entities:
                for alias in e.aliases:
                    if alias and alias != e.name:
                        alias_rows.setdefault(alias, e.name)
            tx.many(
                "INSERT INTO graph_aliases (org, version, alias, name) "
                "VALUES (:org, :version, :alias, :name)",
                ({**v, "alias": a, "name": n} for a, n in alias_rows.items()),
            )
            tx.many(
                "INSERT INTO graph_edges (org, version, source, target, relation, weight, description) "
                "VALUES (:org, :version, :source, :target, :relation, :weight, :description)",
                (
                    {
                        **v,
                        "source": e.source,
                        "target": e.target,
                        "relation": e.relation,
                        "weight": float(e.weight),
                        "description": e.description,
                    }
                    for e in edges
                ),
            )
            tx.many(
                "INSERT INTO graph_claims (org, version, id, subject, object, description, chunk_id, path) "
                "VALUES (:org, :version, :id, :subject, :object, :description, :chunk, :path)",
                (
                    {
                        **v,
                        "id": c.id,
                        "subject": c.subject,
                        "object": c.object,
                        "description": c.description,
                        "chunk": c.chunk_id,
                        "path": c.path,
                    }
                    for c in claims
                ),
            )
            sources: set[tuple[str, str, str, str]] = set()
            for e in entities:
                sources.update(("e", e.name, s.path, s.chunk_id) for s in e.sources)
            for r in edges:
                sources.update(("r", f"{r.source}\x1f{r.target}", s.path, s.chunk_id) for s in r.sources)
            for c in claims:
                sources.update(
                    ("c", c.id, s.path, s.chunk_id) for s in (c.sources or [Provenance(c.path, c.chunk_id)])
                )
            tx.many(
                "INSERT INTO graph_sources (org, version, kind, item, path, chunk_id) "
                "VALUES (:org, :version, :kind, :item, :path, :chunk)",
                ({**v, "kind": k, "item": i, "path": p, "chunk": ch} for k, i, p, ch in sorted(sources)),
            )

    def write_communities(self, version: int, communities: Sequence[Community]) -> None:
        v = {"version": int(version)}
        with self._tx() as tx:
            tx.many(
                "INSERT INTO graph_communities (org, version, id, level, parent, children, is_leaf, "
                "fingerprint, "
                "title, summary, embedding, summarizer, rank) VALUES (:org, :version, :id, :level, :parent, "
                ":children, :leaf, :fp, :title, :summary, :embedding, :summarizer, :rank)",
                (
                    {
                        **v,
                        "id": c.id,
                        "level": c.level,
                        "parent": c.parent,
                        "children": json.dumps(sorted(c.children)),
                        "leaf": 1 if c.is_leaf else 0,
                        "fp": c.fingerprint,
                        "title": c.title,
                        "summary": c.summary,
                        "embedding": to_blob(c.summary_embedding),
                        "summarizer": c.summarizer,
                        "rank": float(c.rank),
                    }
                    for c in communities
                ),
            )
            tx.many(
                "INSERT INTO graph_community_members (org, version, community, name) "
                "VALUES (:org, :version, :community, :name)",
                ({**v, "community": c.id, "name": m} for c in communities for m in sorted(set(c.members))),
            )

    def update_summaries(self, version: int, communities: Sequence[Community]) -> None:
        with self._tx() as tx:
            tx.many(
                "UPDATE graph_communities SET title = :title, summary = :summary, summarizer = :summarizer, "
                "embedding = :embedding WHERE org = :org AND version = :version AND id = :id",
                (
                    {
                        "version": int(version),
                        "id": c.id,
                        "title": c.title,
                        "summary": c.summary,
                        "summarizer": c.summarizer,
                        "embedding": to_blob(c.summary_embedding),
                    }
                    for c in communities
                ),
            )

    def reusable_summaries(self, fingerprints: Iterable[str], summarizer: str) -> dict[str, Community]:
        v = self._version(None)
        if v is None:
            return {}
        rows = self._in_query(
            "SELECT fingerprint, title, summary, embedding FROM graph_communities WHERE org = :org "
            "AND version = :version AND summarizer = :summarizer AND summary <> '' AND fingerprint IN {IN}",
            list(fingerprints),
            {"version": v, "summarizer": summarizer},
        )
        out: dict[str, Community] = {}
        for fp, title, summary, embedding in rows:
            out[fp] = Community(
                id=-1,
                level=-1,
                parent=None,
                members=[],
                fingerprint=fp,
                title=title,
                summary=summary,
                summary_embedding=from_blob(embedding),
                summarizer=summarizer,
            )
        return out

    def reusable_entity_embeddings(self, names: Iterable[str], embedding_model: str) -> dict[str, np.ndarray]:
        published = self.published_version()
        if published is None or published.embedding_model != embedding_model:
            return {}
        rows = self._in_query(
            "SELECT name, embedding FROM graph_entities WHERE org = :org AND version = :version "
            "AND embedding IS NOT NULL AND name IN {IN}",
            list(names),
            {"version": published.version},
        )
        return {r[0]: from_blob(r[1]) for r in rows}  # type: ignore[misc]

    def _counts(self, tx: _Scoped, version: int) -> dict[str, Any]:
        p = {"version": version}

        def count(table: str) -> int:
            return int(
                tx.run(f"SELECT COUNT(*) FROM {table} WHERE org = :org AND version = :version", p)[0][0]
            )

        levels = tx.run(
            "SELECT level, COUNT(*) FROM graph_communities WHERE org = :org AND version = :version "
            "GROUP BY level",
            p,
        )
        return {
            "documents": count("graph_documents"),
            "entities": count("graph_entities"),
            "edges": count("graph_edges"),
            "claims": count("graph_claims"),
            "communities": {str(int(level)): int(n) for level, n in levels},
        }

    def publish(self, version: int, stats: dict[str, Any] | None = None) -> GraphVersion:
        version = int(version)
        with self._tx() as tx:
            rows = tx.run(
                "SELECT status FROM graph_versions WHERE org = :org AND version = :version",
                {"version": version},
            )
            if not rows or rows[0][0] != "building":
                raise ValueError(f"graph version {version} is not a build in progress")
            counts = self._counts(tx, version)
            tx.run(
                "UPDATE graph_versions SET status = 'superseded' WHERE org = :org AND status = 'published'"
            )
            tx.run(
                "UPDATE graph_versions SET status = 'published', published_at = :at, counts = :counts, "
                "stats = :stats WHERE org = :org AND version = :version",
                {
                    "version": version,
                    "at": now(),
                    "counts": json.dumps(counts),
                    "stats": json.dumps(stats or {}, default=str),
                },
            )
            tx.run(
                "INSERT INTO graph_published (org, version) VALUES (:org, :version) "
                "ON CONFLICT (org) DO UPDATE SET version = excluded.version",
                {"version": version},
            )
        self._prune()
        published = self.published_version()
        assert published is not None
        return published

    def _prune(self) -> None:
        """Drop superseded and failed versions, then chunks no retained version refers to."""
        with self._tx() as tx:
            for table in VERSIONED_TABLES:
                tx.run(
                    f"DELETE FROM {table} WHERE org = :org AND version IN "
                    "(SELECT version FROM graph_versions "
                    "WHERE org = :org AND status IN ('superseded', 'failed'))"
                )
            tx.run("DELETE FROM graph_versions WHERE org = :org AND status IN ('superseded', 'failed')")
            tx.run(
                "DELETE FROM graph_chunks WHERE org = :org AND NOT EXISTS (SELECT 1 FROM graph_documents d "
                "WHERE d.org = :org AND d.path = graph_chunks.path "
                "AND d.content_hash = graph_chunks.content_hash)"
            )

    def abort(self, version: int) -> None:
        with self._tx() as tx:
            tx.run(
                "UPDATE graph_versions SET status = 'failed' WHERE org = :org AND version = :version "
                "AND status = 'building'",
                {"version": int(version)},
            )
        self._prune()

    def retract_document(self, path: str) -> None:
        with self._tx() as tx:
            tx.run("DELETE FROM graph_documents WHERE org = :org AND path = :path", {"path": path})
            tx.run("DELETE FROM graph_chunks WHERE org = :org AND path = :path", {"path": path})

    def drop_all(self) -> None:
        with self._tx() as tx:
            for table in ALL_TABLES:
                tx.run(f"DELETE FROM {table} WHERE org = :org")


class SqlGraphStore(GraphStore):
    """Shared `scope` for both engines: validation of the organization happens here and only here."""

    engine: Engine

    def scope(self, org: str | None) -> OrgGraph:
        return SqlOrgGraph(self.engine, validate_organization_id(org))

    def close(self) -> None:
        self.engine.close()
