"""What every part of the SQL store shares: scoped transactions, the version to read, batched IN queries.

Each job of the store (versions, writes, reads, documents, extraction cache) is a mixin over this base,
assembled in `org_graph.SqlOrgGraph`; keeping the plumbing here lets each mixin be read on its own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from librarian.graph.model import Provenance
from librarian.graph.sql.runner import Engine, Scoped, batches, in_list
from librarian.graph.store_interface import OrgGraph


class SqlOrgGraphBase(OrgGraph):
    """`OrgGraph` plumbing over either engine. Construct only through `SqlGraphStore.scope`."""

    def __init__(self, engine: Engine, org: str) -> None:
        self._engine = engine
        self.org = org

    def _tx(self, *, write: bool = True) -> AbstractContextManager[Scoped]:
        engine, org = self._engine, self.org

        class _Ctx:
            def __enter__(self_inner) -> Scoped:
                self_inner._cm = engine.transaction(write=write)
                return Scoped(self_inner._cm.__enter__(), org)

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
            for batch in batches(items):
                p = dict(params)
                in_sql = in_list("v", batch, p)
                out.extend(tx.run(sql_template.replace("{IN}", in_sql), p))
        return out

    def _live_sources(self, kind: str, items: Sequence[str], v: int) -> dict[str, list[Provenance]]:
        """Sources of items whose document is still part of the version (see `retract_document`).

        Shared by entity, edge and claim reads, which is why it lives here rather than in one of them.
        """
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
