"""The production graph store engine: the same schema on PostgreSQL (`LIBRARIAN_POSTGRES_URL`).

Statements are shared with SQLite (`librarian.graph.sql`); this module only rewrites `:name`
parameters to psycopg's `%(name)s`, pools connections, and creates the schema once under an advisory
lock (concurrent `CREATE TABLE IF NOT EXISTS` from several workers can otherwise collide).

PostgreSQL adds a second guard SQLite has no counterpart for: every table gets row-level security
keyed by `org` (`librarian.pg_tenancy`), and each transaction of an organization's scope sets that
organization first, so a statement that lost its `org = :org` still sees only the scope's rows.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from librarian.errors import ConfigError
from librarian.graph.schema import ALL_TABLES, statements
from librarian.graph.sql.org_graph import SqlGraphStore
from librarian.graph.sql.runner import Engine
from librarian.pg_tenancy import bind_organization, guard_table, warn_if_unguarded

_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_SCHEMA_LOCK_KEY = 0x4C49_4252_4752_0001  # "LIBRGR": graph schema migrations
_CONNECT_TIMEOUT_S = 10.0


def to_psycopg(sql: str) -> str:
    """`:name` → `%(name)s` (the statements contain no literal `%`)."""
    return _PARAM.sub(r"%(\1)s", sql)


class _PgCursor:
    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        self._cursor.execute(to_psycopg(sql), params)
        return self._cursor.fetchall() if self._cursor.description else []

    def executemany(self, sql: str, rows: list[dict[str, Any]]) -> None:
        self._cursor.executemany(to_psycopg(sql), rows)


class _PgEngine:
    def __init__(self, url: str, max_size: int = 4) -> None:
        from psycopg_pool import ConnectionPool, PoolTimeout

        from librarian.checkpoint import describe_postgres_url

        where = describe_postgres_url(url)
        self._pool = ConnectionPool(
            conninfo=url, kwargs={"prepare_threshold": None}, min_size=1, max_size=max_size, open=False
        )
        try:
            self._pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        except PoolTimeout:
            self._pool.close()
            raise ConfigError(
                f"cannot connect to PostgreSQL at {describe_postgres_url(url)} for the graph store: "
                "check LIBRARIAN_POSTGRES_URL and that the server is running"
            ) from None
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK_KEY})")
            for ddl in statements("postgres"):
                cursor.execute(ddl)
            for table in ALL_TABLES:
                guard_table(cursor, table, "org")
            warn_if_unguarded(cursor, where)

    @contextmanager
    def transaction(self, *, write: bool = True, organization_id: str | None = None) -> Iterator[_PgCursor]:
        """A transaction; with `organization_id`, row-level security admits only that organization's rows."""
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cursor:
            if organization_id is not None:
                bind_organization(cursor, organization_id)
            yield _PgCursor(cursor)

    def close(self) -> None:
        self._pool.close()


class _OrganizationEngine:
    """The engine as one organization's scope sees it: each transaction is bound to that organization."""

    def __init__(self, engine: _PgEngine, organization_id: str) -> None:
        self._engine = engine
        self._organization_id = organization_id

    def transaction(self, *, write: bool = True) -> AbstractContextManager[_PgCursor]:
        return self._engine.transaction(write=write, organization_id=self._organization_id)

    def close(self) -> None:
        """The pool belongs to the store, which closes it; a scope has nothing of its own to close."""


class PostgresGraphStore(SqlGraphStore):
    def __init__(self, url: str) -> None:
        self.engine = _PgEngine(url)
        # a dropped store (a discarded Stack) must not keep its pool's connections and threads
        weakref.finalize(self, self.engine.close)

    def engine_for(self, organization_id: str) -> Engine:
        return _OrganizationEngine(self.engine, organization_id)
